# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube_logs: the pods read first, log lines with API timestamps, events as lines (fixture objects)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils import kube_logs
from tests.kube_api import fixture_objects, of_kind

OBJECTS = fixture_objects("cluster.yaml", "cni.yaml", "events.yaml")


class FakeKube(object):
    def __init__(self):
        self.asked = []

    def pods(self, namespace, label_selector=None):
        key, _sep, value = label_selector.partition("=")
        return [p for p in of_kind(OBJECTS, "Pod") if p["metadata"]["namespace"] == namespace
                and p["metadata"].get("labels", {}).get(key) == value]

    def pod_log(self, namespace, name, container, previous=False, **bounds):
        self.asked.append((name, previous, bounds["tail_lines"]))
        return "2026-01-01T11:54:02.131000000Z Failed to set NetworkUnavailable to False; will retry\n" if previous else ""

    def events(self, namespace, field_selector=None):
        return [e for e in of_kind(OBJECTS, "Event") if e["metadata"]["namespace"] == namespace]


def test_unhealthy_pods_first_and_previous_logs_only_after_a_restart():
    fake = FakeKube()
    target = {"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node"}
    out = kube_logs.api_check({"targets": [target], "max_pods": 2, "tail_lines": 50}, lambda params: fake,
                              now=1767268800)  # 2026-01-01T12:00:00Z: the fixture events are recent
    # max_pods 2: the crash-looping and the pending pod, not the healthy one
    assert [p["name"] for p in out["data"]["pods"]] == ["calico-node-m4q8z", "calico-node-z9t5r"]
    assert fake.asked == [("calico-node-m4q8z", True, 50)]  # m4q8z is waiting (no current log); z9t5r never started
    found = [(f["check"], f["subject"]) for f in out["findings"]]
    assert found == [("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z")]
    assert out["findings"][0]["evidence"]["lines"][0]["time"] == "2026-01-01T11:54:02.131000000Z"


def test_event_lines_carry_reason_and_object():
    event = [e for e in of_kind(OBJECTS, "Event") if e["reason"] == "FailedCreatePodSandBox"][0]
    entry = kube_logs.event_entry(event, "node3/coredns-5d78c9869d-p8k4n")
    assert entry["text"].startswith("Warning FailedCreatePodSandBox Pod/coredns-5d78c9869d-p8k4n: Failed to create")
    assert entry["time"] == "2026-01-01T11:59:40Z"
