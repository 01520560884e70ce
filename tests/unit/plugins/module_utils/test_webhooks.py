# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""webhooks: the CNI <-> admission webhook cycle, from the stand-in's fixture objects (validated with the client's models)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import webhooks
from tests.kube_api import fixture_objects, of_kind

OBJECTS = fixture_objects("cluster.yaml", "cni.yaml", "webhooks.yaml")
CNI_NS = ["kube-system", "calico-system"]


def run(objects=None):
    objects = OBJECTS if objects is None else objects
    configurations = [(o["kind"], o) for o in objects if o["kind"].endswith("WebhookConfiguration")]
    pods = of_kind(objects, "Pod")
    cni = [p for p in pods if p["metadata"]["namespace"] in CNI_NS
           and any(r.get("kind") == "DaemonSet" for r in p["metadata"].get("ownerReferences", []))]
    return webhooks.check(configurations, of_kind(objects, "Namespace"), of_kind(objects, "Service"),
                          of_kind(objects, "EndpointSlice"), pods, of_kind(objects, "Node"), cni, CNI_NS)


def test_the_ibm_cycle_is_named_link_by_link():
    model, found = run()
    assert [(f["check"], f["subject"]) for f in found] == [
        ("webhook.cni_deadlock", "webhook:policy-guard/validate.policy-guard.example.com")]
    links = found[0]["evidence"]["links"]
    assert links[0].startswith("webhook ValidatingWebhookConfiguration policy-guard/validate.policy-guard.example.com")
    assert links[1] == "Service policy-guard/policy-guard-webhook (no ready endpoint)"
    assert links[2] == "pods policy-guard-6d8f7b9c4-tq5lw (Pending on node2)"
    assert links[3].startswith("nodes node2 (NetworkUnavailable")
    assert links[4] == "CNI pod kube-system/calico-node-m4q8z"
    assert "/webhooks/0/failurePolicy" in found[0]["remediation"] and "security trade-off" in found[0]["remediation"]
    why = dict((m["webhook"], m["why_not"]) for m in model)
    assert why["audit.policy-guard.example.com"].startswith("failurePolicy Ignore")
    assert why["pods.tenant-quota.example.com"].startswith("its selectors exclude")
    assert why["inject.external.example.com"].startswith("its backend is a URL")


def _edit(func):
    objects = copy.deepcopy(OBJECTS)
    func(objects)
    return run(objects)[1]


def test_no_cycle_when_a_link_is_missing():
    def ready_endpoint_on_node1(objects):
        item = [o for o in objects if o["metadata"]["name"] == "policy-guard-webhook-8xq2d"][0]
        item["endpoints"] = [{"addresses": ["198.19.1.9"], "conditions": {"ready": True}, "nodeName": "node1",
                              "targetRef": {"kind": "Pod", "name": "policy-guard-x", "namespace": "policy-guard"}}]

    def cni_recovers(objects):
        for o in objects:
            if o["kind"] == "Pod" and o["metadata"]["name"] in ("calico-node-m4q8z", "calico-node-z9t5r"):
                o["status"]["phase"] = "Running"
                o["status"]["conditions"] = [{"type": "Ready", "status": "True"}]

    def excludes_kube_system_and_not_nodes(objects):
        hook = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"
                and o["metadata"]["name"] == "policy-guard"][0]["webhooks"][0]
        hook["namespaceSelector"]["matchExpressions"][0]["values"] += ["kube-system", "calico-system"]
        hook["rules"][0]["resources"] = ["pods"]

    def ignore(objects):
        hook = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"
                and o["metadata"]["name"] == "policy-guard"][0]["webhooks"][0]
        hook["failurePolicy"] = "Ignore"

    for edit in (ready_endpoint_on_node1, cni_recovers, excludes_kube_system_and_not_nodes, ignore):
        assert _edit(edit) == [], edit.__name__


def test_an_endpoint_ready_only_on_a_node_without_network_still_closes_it():
    def ready_on_node2(objects):
        item = [o for o in objects if o["metadata"]["name"] == "policy-guard-webhook-8xq2d"][0]
        item["endpoints"] = [{"addresses": ["198.19.2.9"], "conditions": {"ready": True}, "nodeName": "node2",
                              "targetRef": {"kind": "Pod", "name": "policy-guard-6d8f7b9c4-tq5lw",
                                            "namespace": "policy-guard"}}]
    found = _edit(ready_on_node2)
    assert found[0]["evidence"]["links"][1].endswith("(ready endpoints only on nodes without network)")


@pytest.mark.parametrize("selector, labels, expected", [
    ({}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {}, False),
    ({"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["x"]}]}, {}, True),
    ({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]}, {"k": "x"}, True),
    ({"matchExpressions": [{"key": "k", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}, {"k": "1"}, False),
])
def test_label_selectors(selector, labels, expected):
    assert webhooks.selector_matches(selector, labels) is expected


def test_rules_subresources_are_read_as_the_api_server_does():
    def hook(resources, operations=("UPDATE",)):
        return {"rules": [{"apiGroups": [""], "operations": list(operations), "resources": resources}]}
    assert webhooks.intercepts(hook(["nodes"])) == {"pods": False, "nodes": False}  # nodes, not nodes/status
    assert webhooks.intercepts(hook(["*"], ["CREATE"])) == {"pods": True, "nodes": False}
    assert webhooks.intercepts(hook(["*/*"], ["*"])) == {"pods": True, "nodes": True}
    assert webhooks.intercepts(hook(["pods/*"], ["CREATE"])) == {"pods": False, "nodes": False}  # subresources only
