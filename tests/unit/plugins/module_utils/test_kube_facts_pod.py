"""kube_facts.pod_facts: the pod the dns role's dns_pod names, read from fixture Pods validated
against the official client's models (a running pod, a Pending one, one on a node9)."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts as kf
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

from tests.kube_api import fixture_objects, of_kind

PODS = dict((p["metadata"]["name"], p) for p in of_kind(fixture_objects("dns_pod.yaml"), "Pod"))


def test_running_pod():
    assert kf.pod_facts(PODS["dns-client-5f7d9c8b6-k2x9p"], "default/dns-client-5f7d9c8b6-k2x9p") == {
        "namespace": "default", "name": "dns-client-5f7d9c8b6-k2x9p", "ip": "198.19.1.3", "ips": ["198.19.1.3"],
        "node": "node2", "phase": "Running", "host_network": False}


def test_missing_and_pending_pods_fail_with_the_fix():
    with pytest.raises(InputError, match=r"pod default/nope does not exist \(kubectl -n default get pod nope\)"):
        kf.pod_facts(None, "default/nope")
    with pytest.raises(InputError, match=r"is not running \(phase Pending, IP none, node none\)"):
        kf.pod_facts(PODS["dns-client-5f7d9c8b6-pend1"], "default/dns-client-5f7d9c8b6-pend1")


class FakeKube(object):
    def __init__(self):
        self.asked = []

    def get(self, plural, name, namespace=None):
        self.asked.append((plural, namespace, name))
        return PODS.get(name)


def test_gather_pod_reads_one_object():
    kube = FakeKube()
    out = kf.gather(kube, ["pod"], pod="default/dns-client-5f7d9c8b6-far9z")
    assert out["pod"]["node"] == "node9" and kube.asked == [("pods", "default", "dns-client-5f7d9c8b6-far9z")]
    with pytest.raises(InputError, match="give pod: namespace/name"):
        kf.gather(kube, ["pod"])
    with pytest.raises(InputError, match="is not namespace/name"):
        kf.gather(kube, ["pod"], pod="just-a-name")
