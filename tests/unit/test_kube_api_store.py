"""The stand-in API's store: fixture validation, selectors, paging, merge patch."""

from __future__ import annotations

import pytest

from tests.kube_api import FIXTURES, FixtureError, Store, load_yaml, validate
from tests.kube_api.store import merge_patch, parse_label_selector

ALL = load_yaml(sorted(FIXTURES.glob("**/*.yaml")))


def test_fixtures_validate_and_bad_objects_are_refused():
    assert len(ALL) > 30
    with pytest.raises(FixtureError, match="Extra inputs are not permitted"):
        validate({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}, "spec": {"podCidr": "10.0.0.0/24"}})
    with pytest.raises(FixtureError, match="needs apiVersion discovery.k8s.io/v1"):
        validate({"apiVersion": "v1", "kind": "EndpointSlice", "metadata": {"name": "x"}, "addressType": "IPv4", "endpoints": []})
    with pytest.raises(FixtureError, match="valid integer"):
        validate({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": "80"}]}})


def names(items):
    return [o["metadata"]["name"] for o in items]


def test_label_and_field_selectors():
    store = Store(ALL)
    items, dummy = store.list("pods", label_selector="k8s-app=calico-node")
    assert len(items) == 3
    items, dummy = store.list("pods", "kube-system", field_selector="spec.nodeName=node2,status.phase=Running")
    assert sorted(names(items)) == ["calico-node-m4q8z", "coredns-7db6d8ff4d-9wq7b"]  # cni.yaml, network.yaml
    items, dummy = store.list("configmaps", "web", label_selector="f5type in (virtual-server)")
    assert len(items) == 8  # 7 of cluster A, 1 of cluster B
    items, dummy = store.list("nodes", label_selector="!node-role.kubernetes.io/control-plane,kubernetes.io/os")
    assert names(items) == ["node2", "node3", "node4"]
    with pytest.raises(ValueError, match="field label not supported"):
        store.list("pods", field_selector="spec.containers=x")
    assert parse_label_selector("a!=b")[0]({"a": "c"})


def test_paging():
    store = Store(ALL)
    first, token = store.list("nodes", limit=3)
    rest, end = store.list("nodes", limit=3, token=token)
    assert len(first) == 3 and len(rest) == 1 and end is None
    with pytest.raises(ValueError):
        store.list("nodes", limit=3, token="garbage")


def test_merge_patch():
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
