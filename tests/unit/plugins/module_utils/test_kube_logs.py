# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube_logs: the pods read first, log lines with API timestamps, events as lines (fixture objects)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.logs import kube_logs
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
    # z9t5r is Pending, wrote nothing and no event says why: said so (info), not silently dropped
    assert found == [("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z"),
                     ("log.pod_not_started", "node3/calico-node-z9t5r")]
    assert out["findings"][0]["evidence"]["lines"][0]["time"] == "2026-01-01T11:54:02.131000000Z"
    pending = out["findings"][1]
    assert pending["severity"] == "info" and "no Warning event of it says why" in pending["summary"]


def test_event_lines_carry_reason_and_object():
    event = [e for e in of_kind(OBJECTS, "Event") if e["reason"] == "FailedCreatePodSandBox"][0]
    entry = kube_logs.event_entry(event, "node3/coredns-5d78c9869d-p8k4n")
    assert entry["text"].startswith("Warning FailedCreatePodSandBox Pod/coredns-5d78c9869d-p8k4n: Failed to create")
    assert entry["time"] == "2026-01-01T11:59:40Z"


def test_an_event_series_is_dated_and_counted_by_its_last_observation():
    """The core/v1 view of an events.k8s.io/v1 Event that recurred, as kube-apiserver v1.37 serves it: no
    lastTimestamp, no count; eventTime is its first observation."""
    event = {"metadata": {"name": "calico-node-x.1", "namespace": "kube-system"}, "type": "Warning",
             "reason": "Unhealthy", "message": "Readiness probe failed",
             "involvedObject": {"kind": "Pod", "name": "calico-node-x", "namespace": "kube-system"},
             "eventTime": "2026-01-01T10:00:00.000000Z", "reportingComponent": "kubelet",
             "series": {"count": 40, "lastObservedTime": "2026-01-01T11:59:30.000000Z"}}
    assert kube_logs.event_time(event) == "2026-01-01T11:59:30.000000Z"
    assert kube_logs.event_count(event) == 40
    # pylint: disable-next=protected-access
    entries, warnings = kube_logs._event_entries([(event, "node2/calico-node-x")], 1767265200)  # 11:00:00Z
    assert len(entries) == 1 and [(w["count"], w["time"]) for w in warnings] == [(40, "2026-01-01T11:59:30.000000Z")]
    legacy = dict(event, lastTimestamp="2026-01-01T11:58:00Z", count=3)
    assert (kube_logs.event_time(legacy), kube_logs.event_count(legacy)) == ("2026-01-01T11:58:00Z", 3)


# cilium/cilium#4254 (2018-05, the agent's log as its reporter pasted it): a crash loop no signature knows.
CILIUM_4254 = """level=warning msg="+ ip -6 route add table 2005 fe80::ec42:46ff:fe44:c4d1/128 dev cilium_host"
level=warning msg="RTNETLINK answers: File exists"
level=error msg="Error while initializing daemon" error="exit status 2"
level=fatal msg="Error while creating daemon" error="exit status 2"
"""
# kubernetes/cloud-provider-alibaba-cloud#46 (2019-04): the scheduler's event for a pod no node takes.
FAILED_SCHEDULING = "0/2 nodes are available: 2 node(s) had taints that the pod didn't tolerate."


def _pod(name, node, phase, statuses, ready=False):
    return {"metadata": {"namespace": "kube-system", "name": name, "labels": {"k8s-app": "cilium"}},
            "spec": {"nodeName": node, "containers": [{"name": "cilium-agent"}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "containerStatuses": statuses}}


class CrashKube(object):
    """A crash-looping agent with a log no signature matches, and an agent no node takes."""

    def __init__(self):
        crashed = {"name": "cilium-agent", "restartCount": 5,
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                   "lastState": {"terminated": {"reason": "Error", "exitCode": 1,
                                                "finishedAt": "2026-01-01T11:59:00Z"}}}
        self.objects = [_pod("cilium-x1", "node2", "Running", [crashed]),
                        _pod("cilium-p2", None, "Pending", [])]

    def pods(self, namespace, label_selector=None):
        return [p for p in self.objects if p["metadata"]["namespace"] == namespace]

    def pod_log(self, namespace, name, container, previous=False, **bounds):
        lines = CILIUM_4254.splitlines()
        return "".join("2026-01-01T11:58:5%dZ %s\n" % (i, line) for i, line in enumerate(lines)) if previous else ""

    def events(self, namespace, field_selector=None):
        return [{"metadata": {"namespace": namespace, "name": "cilium-p2.1"}, "type": "Warning",
                 "reason": "FailedScheduling", "message": FAILED_SCHEDULING, "count": 25,
                 "lastTimestamp": "2026-01-01T11:59:30Z",
                 "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "cilium-p2"}}]


def test_a_crash_no_signature_knows_shows_its_last_lines_and_a_pending_pod_its_events():
    target = {"name": "cilium", "namespace": "kube-system", "label_selector": "k8s-app=cilium"}
    out = kube_logs.api_check({"targets": [target]}, lambda params: CrashKube(), now=1767268800)
    found = dict((f["check"], f) for f in out["findings"])
    assert sorted(found) == ["log.crash_unexplained", "log.no_signature", "log.pod_not_started"]
    crash = found["log.crash_unexplained"]
    assert crash["subject"] == "node2/cilium-x1" and crash["severity"] == "info"
    # the text the operator needs, in order, with its time and where it was read
    assert [line["text"] for line in crash["evidence"]["last_lines"]] == CILIUM_4254.splitlines()
    assert crash["evidence"]["last_lines"][-1]["origin"] == "kube-system/cilium-x1 cilium-agent previous"
    assert 'Error while creating daemon' in crash["summary"] and "5 restarts" in crash["summary"]
    assert "last exit 1 (Error)" in crash["summary"] and "--previous" in crash["remediation"]
    pending = found["log.pod_not_started"]
    assert pending["severity"] == "warning" and pending["subject"] == "kube-system/cilium-p2"
    assert "FailedScheduling " + FAILED_SCHEDULING in pending["summary"] and "(not scheduled)" in pending["summary"]
    assert pending["evidence"]["events"][0]["count"] == 25


def test_a_matched_or_healthy_pod_gives_no_unexplained_finding():
    healthy = _pod("cilium-ok", "node1", "Running", [{"name": "cilium-agent", "restartCount": 0,
                                                      "state": {"running": {}}}], ready=True)
    assert kube_logs.unexplained(healthy, [], []) == []
    # m4q8z's previous log matches calico's signature: the signature finding speaks, nothing else
    fake = FakeKube()
    target = {"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node"}
    out = kube_logs.api_check({"targets": [target], "max_pods": 1}, lambda params: fake, now=1767268800)
    assert [f["check"] for f in out["findings"]] == ["log.calico_network_unavailable_update_failed"]


class QuietKube(object):
    """One Running, ready agent that logs errors no signature knows (cilium/cilium#4254's lines), and a token."""

    def __init__(self, text):
        self.text = text

    def pods(self, namespace, label_selector=None):
        running = {"running": {"startedAt": "2026-01-01T10:00:00Z"}}
        return [_pod("cilium-ok", "node1", "Running", [{"name": "cilium-agent", "restartCount": 0,
                                                        "state": running, "ready": True}], ready=True)]

    def pod_log(self, namespace, name, container, previous=False, **bounds):
        return "" if previous else "".join("2026-01-01T11:58:%02dZ %s\n" % (i, line)
                                           for i, line in enumerate(self.text.splitlines()))

    def events(self, namespace, field_selector=None):
        return []


def _no_signature(text):
    target = {"name": "cilium", "namespace": "kube-system", "label_selector": "k8s-app=cilium"}
    out = kube_logs.api_check({"targets": [target]}, lambda params: QuietKube(text), now=1767268800)
    [found] = out["findings"]
    assert found["check"] == "log.no_signature"
    return found


def test_a_ready_agent_logging_errors_no_signature_knows_shows_them_bounded_and_masked():
    noise = "".join('level=info msg="Regenerated endpoint %d"\n' % i for i in range(30))
    token = 'level=error msg="connect" error="Authorization: Bearer abc.def.ghi refused"\n'
    found = _no_signature(noise + CILIUM_4254 + token)
    shown = found["evidence"]["shown"]
    assert found["evidence"]["shown_kind"] == "errors" and len(shown) == 5
    assert [line["text"] for line in shown[:4]] == CILIUM_4254.splitlines()  # RTNETLINK's warning among them
    assert "abc.def.ghi" not in shown[-1]["text"] and "***" in shown[-1]["text"]
    assert shown[0]["origin"] == "kube-system/cilium-ok cilium-agent" and shown[0]["subject"] == "node1/cilium-ok"
    assert "5 lines at error or warning level" in found["summary"] and "evidence.shown" in found["remediation"]
    many = _no_signature("".join('level=error msg="sync failed %d"\n' % i for i in range(40)))
    assert [line["text"] for line in many["evidence"]["shown"]][-1] == 'level=error msg="sync failed 39"'
    assert len(many["evidence"]["shown"]) == 10  # the newest ten


def test_without_an_error_line_the_last_lines_are_shown():
    found = _no_signature("".join('level=info msg="Regenerated endpoint %d"\n' % i for i in range(30)))
    assert found["evidence"]["shown_kind"] == "last" and len(found["evidence"]["shown"]) == 10
    assert found["evidence"]["shown"][-1]["text"] == 'level=info msg="Regenerated endpoint 29"'
    assert "at error or warning level" not in found["summary"]


class NoKubelet(FakeKube):
    """The API server's answers when it cannot reach the node's kubelet (500), or the read is forbidden (403)."""

    def pod_log(self, namespace, name, container, previous=False, **bounds):
        from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError

        if name == "calico-node-m4q8z":
            raise ReadError('read the log of %s: HTTP 500: Get "https://node2:10250/containerLogs/%s/%s/%s'
                            '?previous=true": dial tcp: lookup node2: no such host' % (name, namespace, name, container))
        raise PrivilegeError('HTTP 403: pods "%s" is forbidden: cannot get resource "pods/log"' % name)


def test_a_log_read_the_kubelet_did_not_answer_names_the_node_and_port_to_check():
    target = {"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node"}
    out = kube_logs.api_check({"targets": [target], "max_pods": 3, "tail_lines": 50}, lambda params: NoKubelet(),
                              now=1767268800)
    [unreadable] = [f for f in out["findings"] if f["check"] == "log.not_readable"]
    # node2's kubelet (500 naming its log endpoint); node1's 403 is RBAC, not a kubelet to check
    assert unreadable["evidence"]["kubelets_unreachable"] == [{"node": "node2", "port": 10250}]
    assert "could not reach the kubelet of node2" in unreadable["summary"]
    assert "on node2 check that the kubelet runs and that port 10250" in unreadable["remediation"]
    assert "RBAC needs get on pods/log" in unreadable["remediation"]


def test_a_forbidden_log_read_names_no_kubelet():
    class Forbidden(NoKubelet):
        def pod_log(self, namespace, name, container, previous=False, **bounds):
            return NoKubelet.pod_log(self, namespace, "other", container, previous, **bounds)

    target = {"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node"}
    out = kube_logs.api_check({"targets": [target], "max_pods": 3, "tail_lines": 50}, lambda params: Forbidden(),
                              now=1767268800)
    [unreadable] = [f for f in out["findings"] if f["check"] == "log.not_readable"]
    assert "kubelets_unreachable" not in unreadable["evidence"] and "kubelet" not in unreadable["summary"]


def test_after_the_kubelet_did_not_answer_the_nodes_other_pods_are_not_asked():
    class AllDown(FakeKube):
        def pod_log(self, namespace, name, container, previous=False, **bounds):
            from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

            self.asked.append((name, previous, bounds["tail_lines"]))
            raise ReadError('HTTP 500 (Get "https://node1:10250/containerLogs/%s/%s/%s": dial tcp: i/o timeout); '
                            "retried 4 times" % (namespace, name, container))

    fake = AllDown()
    targets = [{"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node"},
               {"name": "coredns", "namespace": "kube-system", "label_selector": "k8s-app=kube-dns"}]
    out = kube_logs.api_check({"targets": targets, "max_pods": 3, "tail_lines": 50}, lambda params: fake,
                              now=1767268800)
    nodes = dict((p["name"], p["node"]) for p in out["data"]["pods"])
    asked_nodes = [nodes[name] for name, _previous, _tail in fake.asked]
    assert len(asked_nodes) == len(set(asked_nodes))  # one read per node whose kubelet did not answer
    assert asked_nodes.count("node1") == 1 and [n for n in nodes.values() if n == "node1"] != ["node1"]
    [unreadable] = [f for f in out["findings"] if f["check"] == "log.not_readable"]
    assert any("not asked: the API server could not reach the kubelet of node1" in e
               for e in unreadable["evidence"]["errors"]), unreadable["evidence"]["errors"]
