"""The triage's API half (playbooks/triage.yml with triage_kubeconfig) and kube_logs' events on a real control plane
(tests/lab/cluster.py), where test_triage.py, test_logs.py and test_cni.py use the API stand-in. The Nodes, their
NetworkUnavailable condition, the CNI DaemonSet and its pods, the LoadBalancer Service (its healthCheckNodePort and
EndpointSlices) and the core/v1 Events are the real API server's; kube-proxy answers the health checks. The lab
writes only what a kubelet (and Calico's agent, for NetworkUnavailable) would: pod status, node conditions, and the
Events a kubelet records, POSTed as its event recorder does.

Pod logs need a kubelet (the API server proxies /log to the node's port 10250): they stay on the stand-in
(test_logs.py). Here the real API server's answer to a log read with no kubelet is asserted as what it is.

Independent readers: kubectl built from the same release (field selectors on events included), and urllib for the
health checks. The stand-in answers the same field selectors over the same Events, read back from the real one:
test_events_field_selectors_real_and_stand_in keeps its stand-in (why="parity"), which holds the stand-in (still
used where a real server cannot serve) to the real API server's answers.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from tests.kube_api import StandIn
from tests.kube_api.helpers import checks, kubectl
from tests.lab.cluster import ApiError

NS = "web"
LOCAL = "web/web-local"
CRASH = "calico-node-node3"


def _stamp(seconds_ago=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def _micro(seconds_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - seconds_ago))


def post_event(kube_cluster, namespace, name, involved, kind, reason, message, component="kubelet", host=None,
               count=1):
    """A core/v1 Event as a kubelet's (or node controller's) event recorder POSTs it: the involved object's
    reference (kind, name, namespace and uid, as the recorder takes them from the object), times, a count."""
    first = _stamp(count * 10)
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved, "type": kind, "reason": reason, "message": message,
            "source": dict({"component": component}, **({"host": host} if host else {})),
            "count": count, "firstTimestamp": first, "lastTimestamp": _stamp(5),
            "reportingComponent": component, "reportingInstance": host or ""}
    return kube_cluster.request("POST", "/api/v1/namespaces/%s/events" % namespace, body)


def pod_ref(kube_cluster, namespace, name):
    pod = kube_cluster.request("GET", "/api/v1/namespaces/%s/pods/%s" % (namespace, name))
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace, "uid": pod["metadata"]["uid"],
            "fieldPath": "spec.containers{calico-node}"}


def node_ref(kube_cluster, name):
    node = kube_cluster.request("GET", "/api/v1/nodes/%s" % name)
    return {"kind": "Node", "name": name, "uid": node["metadata"]["uid"]}


@pytest.fixture(scope="module")
def fleet(lab, kube_cluster):
    """Calico's DaemonSet with a pod on every node, node3's crash-looping (7 restarts) with NetworkUnavailable True
    on node3; web/web-local, a LoadBalancer Service (externalTrafficPolicy Local) with pods on node1 and node2; the
    Events the kubelets and the node controller record about them."""
    for node in lab.nodes:
        restarting = node.name == "node3"
        kube_cluster.daemonset_pod("kube-system", "calico-node", node, node.ip, host_network=True,
                                   containers=[{"name": "calico-node", "image": "quay.io/calico/node:v3.30.0"}],
                                   restarts=7 if restarting else 0,
                                   waiting={"reason": "CrashLoopBackOff",
                                            "message": "back-off 5m0s restarting failed container=calico-node "
                                                       "pod=%s" % CRASH} if restarting else None)
    kube_cluster.set_node_condition("node3", "NetworkUnavailable", "True", "CalicoIsDown", "Calico is shutting down")
    service = kube_cluster.web_service(NS, "web-local", nodes=("node1", "node2"))
    events = {
        "backoff": post_event(kube_cluster, "kube-system", CRASH + ".187a0c0b2c3d4e01",
                              pod_ref(kube_cluster, "kube-system", CRASH), "Warning", "BackOff",
                              "Back-off restarting failed container calico-node in pod %s_kube-system" % CRASH,
                              host="node3", count=12),
        "unhealthy": post_event(kube_cluster, "kube-system", "calico-node-node1.187a0c0b2c3d4e02",
                                pod_ref(kube_cluster, "kube-system", "calico-node-node1"), "Warning", "Unhealthy",
                                "Readiness probe failed: calico/node is not ready: BIRD is not ready: BGP not "
                                "established with %s" % lab.node("node3").ip, host="node1", count=3),
        "node3": post_event(kube_cluster, "default", "node3.187a0c0b2c3d4e03", node_ref(kube_cluster, "node3"),
                            "Warning", "ContainerRuntimeNetworkNotReady",
                            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                            "message:Network plugin returns error: cni plugin not initialized", host="node3", count=3),
        "node1": post_event(kube_cluster, "default", "node1.187a0c0b2c3d4e04", node_ref(kube_cluster, "node1"),
                            "Normal", "RegisteredNode", "Node node1 event: Registered Node node1 in Controller",
                            component="node-controller"),
    }
    yield {"service": service, "events": events}


def names(items):
    return sorted(i["metadata"]["name"] for i in items)


# the field selectors kube_logs and service_path send, and a few a user's kubectl sends
SELECTORS = [
    ("kube-system", "involvedObject.kind=Pod"),
    ("kube-system", "involvedObject.kind=Pod,involvedObject.name=%s" % CRASH),
    ("kube-system", "reason=FailedCreate"),
    ("kube-system", "reason=BackOff,type=Warning"),
    ("kube-system", "involvedObject.fieldPath=spec.containers{calico-node}"),
    ("kube-system", "source=kubelet"),
    ("default", "involvedObject.kind=Node"),
    ("default", "involvedObject.kind=Node,involvedObject.name!=node1"),
    ("default", "source=node-controller"),
]


def test_events_field_selectors_real_and_stand_in(lab, kube_cluster, fleet):
    """The real API server's field selectors on core/v1 Events, read with kubectl, against the stand-in's over the
    same Events (read back from the real one): the same Events for every selector kube_logs sends and for
    ``source`` (the API server's field is source.component), and the real 400 for a field it does not index."""
    real = {}
    for namespace, selector in SELECTORS:
        real[(namespace, selector)] = names(kube_cluster.kubectl_json(
            "get", "events", "-n", namespace, "--field-selector", selector)["items"])
    ours = {e["metadata"]["name"] for e in fleet["events"].values()}
    mine = {k: [n for n in v if n in ours] for k, v in real.items()}
    assert mine[("kube-system", "involvedObject.kind=Pod,involvedObject.name=%s" % CRASH)] == [
        fleet["events"]["backoff"]["metadata"]["name"]]
    assert mine[("default", "involvedObject.kind=Node,involvedObject.name!=node1")] == [
        fleet["events"]["node3"]["metadata"]["name"]]
    assert mine[("default", "source=node-controller")] == [fleet["events"]["node1"]["metadata"]["name"]]
    assert len(mine[("kube-system", "source=kubelet")]) == 2
    # the cluster's own Events: kube-proxy's (events.k8s.io, no source: the "source" field is source.component)
    # and the node controller's RegisteredNode of every Node
    proxy = [e for e in kube_cluster.kubectl_json("get", "events", "-n", "default")["items"]
             if e.get("reportingComponent") == "kube-proxy"]
    assert sorted(e["involvedObject"]["name"] for e in proxy) == [n.name for n in lab.nodes]
    assert all(not e.get("source") and e.get("eventTime") and not e.get("lastTimestamp") for e in proxy), proxy
    assert real[("kube-system", "reason=FailedCreate")] == []
    refused = kube_cluster.kubectl("get", "events", "-n", "default", "--field-selector", "message=x", check=False)
    assert refused.returncode != 0 and 'field label not supported: message' in refused.stderr, refused.stderr

    objects = [dict(e, apiVersion="v1", kind="Event") for e in kube_cluster.kubectl_json(
        "get", "events", "-A")["items"]]
    server = StandIn(objects, lab.workdir / "kube-api-events", lab.controller_ip, why="parity").start()
    try:
        for namespace, selector in SELECTORS:
            stand_in = names(server_list(server, namespace, selector))
            assert stand_in == real[(namespace, selector)], (namespace, selector, stand_in)
    finally:
        server.stop()


def server_list(server, namespace, selector):
    return kubectl(server.kubeconfig(), "get", "events", "-n", namespace, "--field-selector", selector)["items"]


def test_kube_logs_reads_the_real_events_of_the_agents_and_nodes(lab, ansible, kube_cluster, fleet):
    """kube_logs on node3: the BackOff Event of its crash-looping calico-node pod and node3's own Warning Event
    (namespace default, as a kubelet's recorder puts a Node's) are read through the real API's field selectors;
    node1's pod event is not on a node asked for. The previous container's log needs node3's kubelet, which the lab
    has none of: the real API server's own error (500, its dial to the kubelet), named as a read that failed."""
    result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                       "nodes": ["node3"]})["localhost"]
    assert not result["failed"], result
    rows = {(e["subject"], e["reason"]) for e in result["events"]}
    assert rows == {("node3/" + CRASH, "BackOff"), ("node3", "ContainerRuntimeNetworkNotReady")}, result["events"]
    assert result["events_count"] == 2
    backoff = [e for e in result["events"] if e["reason"] == "BackOff"][0]
    assert backoff["count"] == 12
    found = checks(result["findings"])
    assert ("log.cni_not_initialized", "node3") in found, result["findings"]
    # independent reader: kubectl's answer to the same selector, the event's count as the API server keeps it
    node3 = kube_cluster.kubectl_json("get", "events", "-n", "default", "--field-selector",
                                      "involvedObject.kind=Node,involvedObject.name=node3")["items"]
    assert [(e["reason"], e.get("count")) for e in node3 if e["type"] == "Warning"] == [
        ("ContainerRuntimeNetworkNotReady", 3)]
    # the log read: the API server proxies it to node3's kubelet (port 10250), dialled by the Node's Hostname address
    with pytest.raises(ApiError) as refused:
        kube_cluster.request("GET", "/api/v1/namespaces/kube-system/pods/%s/log?container=calico-node&previous=true"
                             % CRASH)
    real_error = refused.value
    # the real one: 500, the API server's dial failing (the lab's node names resolve nowhere; no kubelet listens)
    assert real_error.status == 500 and ":10250/containerLogs/kube-system/%s/" % CRASH in real_error.body, real_error
    unreadable = [f for f in result["findings"] if f["check"] == "log.not_readable"]
    assert len(unreadable) == 1, result["findings"]
    errors = unreadable[0]["evidence"]["errors"]
    assert any(CRASH in e and "(previous)" in e and "HTTP 500" in e and ":10250/containerLogs/" in e
               for e in errors), errors
    # what the operator checks: node3's kubelet, its port 10250 reachable from the control plane
    assert unreadable[0]["evidence"]["kubelets_unreachable"] == [{"node": "node3", "port": 10250}], unreadable
    assert "could not reach the kubelet of node3" in unreadable[0]["summary"], unreadable
    assert "port 10250" in unreadable[0]["remediation"] and "on node3" in unreadable[0]["remediation"], unreadable


def health(address, port):
    """The load balancer's probe of a node: the HTTP status, or None."""
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, port), timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def test_triage_api_half_on_the_real_cluster(lab, ansible, kube_cluster, fleet, tmp_path):
    """triage.yml with triage_kubeconfig: the cni and logs scenarios' API reads (node_network_status, kube_logs) and
    the lb_health API scenario against the real API server; the report names what the API said: node3's
    NetworkUnavailable and its crash-looping calico-node pod, node3's kubelet Event, and the Service whose
    health check fails on node3 (kube-proxy's own 503)."""
    port = fleet["service"]["health_check_node_port"]
    assert {n.name: health(n.ip, port) for n in lab.nodes} == {"node1": 200, "node2": 200, "node3": 503}
    node3 = kube_cluster.kubectl_json("get", "node", "node3")
    assert [(c["status"], c["reason"]) for c in node3["status"]["conditions"] if c["type"] == "NetworkUnavailable"] == [
        ("True", "CalicoIsDown")]
    crash = kube_cluster.kubectl_json("get", "pod", "-n", "kube-system", CRASH)
    assert crash["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert crash["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"

    out = tmp_path / "report"
    out.mkdir()
    run = ansible.playbook("k8snet.triage.triage", {
        "triage_kubeconfig": str(kube_cluster.kubeconfig()), "triage_scenarios": ["cni", "logs"],
        "triage_api_scenarios": ["lb_health"], "lb_health_namespaces": [NS],
        "report_output_dir": str(out), "report_fail_on_critical": False})
    assert run.rc == 0, run
    report = json.loads((out / "triage-report.json").read_text())
    found = {(f["check"], f["subject"]) for f in report["findings"]}
    assert ("node.network_unavailable", "node3") in found, sorted(found)
    assert ("node.cni_pod_crashloop", "node3/" + CRASH) in found, sorted(found)
    # node3's kubelet Event is the evidence of its NetworkUnavailable (the finding it explains), not a finding beside it
    nu = [f for f in report["findings"] if f["check"] == "node.network_unavailable"][0]
    assert [(e["check"], [line["origin"] for line in e["lines"]]) for e in nu["evidence"]["logs"]] == [
        ("log.cni_not_initialized", ["event default/" + fleet["events"]["node3"]["metadata"]["name"]])], nu
    assert (nu["evidence"]["reason"], nu["evidence"]["message"]) == ("CalicoIsDown", "Calico is shutting down")
    # the taint is the real node lifecycle controller's, put on when NetworkUnavailable went True
    taints = kube_cluster.kubectl_json("get", "node", "node3")["spec"].get("taints") or []
    assert ["%s:%s" % (t["key"], t["effect"]) for t in taints] == nu["evidence"]["taints"] == [
        "node.kubernetes.io/network-unavailable:NoSchedule"]
    assert ("lb.nodes_without_endpoints", LOCAL) in found, sorted(found)
    # nothing about the healthy nodes' network: their conditions and agents are as the API said
    api_checks = ("node.network_unavailable", "node.cni_pod_crashloop", "node.cni_pod_pending", "node.cni_not_ready")
    assert not [s for c, s in found if c in api_checks and s.split("/")[0] in ("node1", "node2")], sorted(found)
    lb = [f for f in report["findings"] if f["check"] == "lb.nodes_without_endpoints"][0]
    assert lb["evidence"]["nodes_without"] == ["node3"], lb
    assert sorted(lb["evidence"]["nodes_with"]) == ["node1", "node2"], lb


def test_kube_logs_reads_an_event_series_at_its_last_observation(lab, ansible, kube_cluster, fleet):
    """An Event written through events.k8s.io/v1 as client-go's new recorder writes a recurring one (kube-proxy's
    recorder, the scheduler's, an agent built on it): eventTime is its first observation, series its count and last
    observation; the core/v1 view the triage reads has no lastTimestamp and no count. First seen two hours ago and
    seen 40 times, the last 30 s ago: it is read (within since_seconds, 3600), at its last time and count."""
    ref = pod_ref(kube_cluster, "kube-system", "calico-node-node2")
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "calico-node-node2.187a0c0b2c3d4e05", "namespace": "kube-system"},
            "regarding": ref, "type": "Warning", "reason": "Unhealthy", "action": "Probe",
            "note": "Readiness probe failed: calico/node is not ready: BIRD is not ready: BGP not established with "
                    "%s" % lab.node("node1").ip,
            "reportingController": "kubelet", "reportingInstance": "kubelet-node2",
            "eventTime": _micro(7200), "series": {"count": 40, "lastObservedTime": _micro(30)}}
    kube_cluster.request("POST", "/apis/events.k8s.io/v1/namespaces/kube-system/events", body)
    # independent reader: kubectl's core/v1 view of it
    [core] = kube_cluster.kubectl_json("get", "events", "-n", "kube-system", "--field-selector",
                                       "involvedObject.name=calico-node-node2")["items"]
    assert core["series"]["count"] == 40 and not core.get("count") and not core.get("lastTimestamp"), core
    assert core["eventTime"] < core["series"]["lastObservedTime"]
    result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                       "nodes": ["node2"]})["localhost"]
    assert not result["failed"], result
    rows = [e for e in result["events"] if e["subject"] == "node2/calico-node-node2"]
    assert [(e["reason"], e["count"], e["time"]) for e in rows] == [
        ("Unhealthy", 40, core["series"]["lastObservedTime"])], result["events"]
    assert ("log.calico_bgp_not_established", "node2/calico-node-node2") in checks(result["findings"])
