"""Issue 29: OpenShift on a VPC - router-default with externalTrafficPolicy Local and two replicas on three
nodes.  The pure checks over the stand-in fixture, and the traffic nodePort probe and the post-check against
real sockets on the loopback (127.0.0.11..13 play the three nodes)."""

from __future__ import annotations

import copy
import json
import socket
import threading
import time

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.lb import health as lb_health
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_checks as lb_health_checks
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_probes as lb_health_probes
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_remediation as lb_health_remediation

from tests.kube_api import fixture_objects as objects, of_kind

OBJS = objects("cluster.yaml", "router_vpc.yaml")
NODES = of_kind(OBJS, "Node")
ROUTER = of_kind(OBJS, "Service")[0]
ENDPOINTS = lb_health_checks.local_endpoints(of_kind(OBJS, "EndpointSlice"))
REF = "openshift-ingress/router-default"


def health(node_has_endpoint):
    count = 1 if node_has_endpoint else 0
    body = json.dumps({"service": {"namespace": "openshift-ingress", "name": "router-default"}, "localEndpoints": count,
                       "serviceProxyHealthy": True})
    status = 200 if count else 503
    value, error = lb_health_probes.parse_health(status, body)
    return {"url": "http://x:31920/", "status": status, "local_endpoints": value, "error": error}


PROBES = {"node1": health(True), "node2": health(True), "node3": health(False)}


def traffic(state, detail="-"):
    return {"address": "x:30180", "state": state, "detail": detail}


def test_fixture_is_the_runbook_case():
    assert lb_health_checks.is_local_lb(ROUTER) and ENDPOINTS == {"node1": 1, "node2": 1} and len(NODES) >= 3
    assert lb_health_probes.traffic_port(ROUTER) == 30180


def test_expected_finding_says_no_impact_with_the_pool_view_the_trade_off_and_the_owner():
    silent = {"node1": traffic("answered"), "node2": traffic("answered"), "node3": traffic("silent")}
    found = lb_health_checks.check_service(ROUTER, NODES, ENDPOINTS, PROBES, silent)
    assert [(f["check"], f["severity"]) for f in found] == [("lb.nodes_without_endpoints", "warning")]
    [item] = found
    assert "expected with policy Local: no impact unless the nodes with an endpoint (node1, node2) fail it too" \
        in item["summary"]
    assert item["summary"].endswith("; pool: node1, node2 pass, node3 fail")
    pool = item["evidence"]["pool"]
    assert {n: r["health_check"] for n, r in pool.items()} == {"node1": "pass", "node2": "pass", "node3": "fail"}
    assert pool["node3"]["why"] == "HTTP 503, localEndpoints 0: no local endpoint, taken out of the pool by design"
    assert pool["node3"]["traffic"] == "silent" and pool["node1"]["traffic"] == "answered"
    assert item["evidence"]["expected"] is True and "source IP is lost" in item["evidence"]["trade_off"]
    who = item["evidence"]["owner"]
    assert (who["kind"], who["namespace"], who["name"]) == ("IngressController", "openshift-ingress-operator", "default")
    assert who["owner_references"] == ["Deployment/router-default"]
    assert "has no externalTrafficPolicy setting" in item["remediation"]
    assert "force_policy_switch: true" in item["remediation"]


@pytest.mark.parametrize("state", ["silent", "dropped"])
def test_a_node_without_endpoint_not_answering_is_expected_under_local(state):
    found = lb_health_checks.check_service(ROUTER, NODES, ENDPOINTS, PROBES, {"node3": traffic(state)})
    assert [f["check"] for f in found] == ["lb.nodes_without_endpoints"]


def test_a_serving_node_not_answering_is_critical_and_under_cluster_every_node_must_answer():
    found = lb_health_checks.check_traffic(ROUTER, NODES, ENDPOINTS, {"node1": traffic("silent", "no byte back"),
                                                                      "node3": traffic("silent")})
    assert [(f["check"], f["subject"], f["severity"]) for f in found] == [
        ("lb.nodeport_silent", REF + "@node1", "critical")]
    assert "1 local endpoint(s) with policy Local" in found[0]["summary"]
    cluster = copy.deepcopy(ROUTER)
    cluster["spec"]["externalTrafficPolicy"] = "Cluster"
    found = lb_health_checks.check_traffic(cluster, NODES, ENDPOINTS, {"node3": traffic("dropped")})
    assert [f["subject"] for f in found] == [REF + "@node3"] and "policy Cluster" in found[0]["summary"]


def test_owner_without_the_label_is_the_owner_reference_and_none_without_either():
    svc = copy.deepcopy(ROUTER)
    del svc["metadata"]["labels"][lb_health_checks.OWNER_LABEL]
    assert lb_health_checks.owner(svc)["kind"] == "Deployment" and lb_health_checks.owner(svc)["label"] is None
    del svc["metadata"]["ownerReferences"]
    assert lb_health_checks.owner(svc) is None


def test_the_module_alone_refuses_the_expected_case_the_operator_can_force_it():
    judged = lb_health_checks.patch_reason(ROUTER, NODES, ENDPOINTS, PROBES)
    assert judged[0] is None and judged[1].startswith("expected with externalTrafficPolicy Local: 1 of 3 nodes")
    reason, why_not = lb_health_checks.forced_reason(ROUTER, judged)
    assert why_not is None and reason.startswith("asked explicitly (force_policy_switch): expected with")
    assert "source IP is lost" in reason
    cluster = copy.deepcopy(ROUTER)
    cluster["spec"]["externalTrafficPolicy"] = "Cluster"
    assert lb_health_checks.forced_reason(cluster, lb_health_checks.patch_reason(cluster, NODES, ENDPOINTS, {}))[0] is None


class StoreKube(object):
    """get / merge_patch over one Service, as the API server answers them (healthCheckNodePort released)."""

    def __init__(self, service):
        self.service = copy.deepcopy(service)
        self.service["metadata"]["resourceVersion"] = "7001"
        self.calls = []

    def get(self, plural, name, namespace):
        self.calls.append(("get", "%s/%s" % (namespace, name)))
        return copy.deepcopy(self.service)

    def merge_patch(self, plural, name, namespace, patch, resource_version=None):
        self.calls.append(("patch", "%s/%s" % (namespace, name), resource_version))
        self.service["spec"].update(patch["spec"])
        if self.service["spec"]["externalTrafficPolicy"] == "Cluster":
            self.service["spec"].pop("healthCheckNodePort", None)


def test_forced_switch_in_check_mode_shows_reason_trade_off_and_owner_and_patches_nothing():
    kube = StoreKube(ROUTER)
    reason = lb_health_checks.forced_reason(ROUTER, lb_health_checks.patch_reason(ROUTER, NODES, ENDPOINTS, PROBES))
    out = lb_health_remediation.remediate(kube, [(REF,) + reason], 1, check_mode=True)
    assert out["patched"] == [REF] and [c[0] for c in kube.calls] == ["get"]
    after = out["diffs"][0]["after"]
    assert after.startswith("externalTrafficPolicy: Cluster\n") and "# why: asked explicitly" in after
    assert "# trade-off: externalTrafficPolicy: Cluster makes every node pass" in after
    assert "# warning: the ingress operator owns openshift-ingress/router-default" in after
    assert "owner" not in out["diffs"][0] and out["owners"][REF]["name"] == "default"
    warning = lb_health_remediation.owner_finding(REF, out["owners"][REF], True)
    assert warning["check"] == "lb.owner_may_revert" and "would be patched directly" in warning["summary"]


# ------------------------------------------------------------------ real sockets on the loopback
ADDRESSES = {"node1": "127.0.0.11", "node2": "127.0.0.12", "node3": "127.0.0.13"}


class Node(object):
    """A listener on one node address: ``mode`` answered (an HTTP answer), silent (accepts, never answers)."""

    def __init__(self, address, port, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(16)
        self.held = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn = self.sock.accept()[0]
            except OSError:
                return
            if self.mode == "answered":
                conn.recv(4096)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
                conn.close()
            else:
                self.held.append(conn)

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.11", 0))
        return sock.getsockname()[1]


@pytest.fixture
def nodes():
    port = free_port()
    servers = {"node1": Node(ADDRESSES["node1"], port, "answered"), "node2": Node(ADDRESSES["node2"], port, "answered"),
               "node3": Node(ADDRESSES["node3"], port, "silent")}
    yield port, servers
    for server in servers.values():
        server.close()


def test_traffic_probe_answered_silent_refused(nodes):
    port, _servers = nodes
    assert lb_health_probes.traffic_probe(ADDRESSES["node1"], port, 2)["state"] == "answered"
    assert lb_health_probes.traffic_probe(ADDRESSES["node1"], port, 2)["detail"] == "HTTP/1.0 200 OK"
    started = time.monotonic()
    silent = lb_health_probes.traffic_probe(ADDRESSES["node3"], port, 0.5)
    assert silent["state"] == "silent" and 0.4 < time.monotonic() - started < 2
    assert silent["detail"] == "connected (ESTABLISHED, keepalive) and no byte back within 0.5s"
    assert lb_health_probes.traffic_probe("127.0.0.14", port, 1)["state"] == "refused"


def cluster_kube(port):
    svc = copy.deepcopy(ROUTER)
    svc["spec"]["externalTrafficPolicy"] = "Cluster"
    svc["spec"].pop("healthCheckNodePort")
    svc["spec"]["ports"][0]["nodePort"] = port
    return StoreKube(svc)


def test_post_check_waits_until_every_node_answers(nodes):
    """node3 starts forwarding ~1.2 s after the switch (kube-proxy reprogramming): the post-check waits for it."""
    port, servers = nodes
    kube = cluster_kube(port)

    def reprogram():
        time.sleep(1.2)
        servers["node3"].mode = "answered"
        for conn in servers["node3"].held:
            conn.close()
    threading.Thread(target=reprogram, daemon=True).start()
    result = lb_health_remediation.verify_switch(kube, "openshift-ingress", "router-default", NODES, ADDRESSES, 0.5, 10, interval=0.3)
    assert result["passed"] is True and result["policy"] == "Cluster" and result["health_check_node_port"] is None
    assert result["attempts"] >= 2 and 1.0 < result["seconds"] < 10
    assert {n: r["state"] for n, r in result["nodes"].items()} == dict.fromkeys(ADDRESSES, "answered")
    [item] = lb_health_remediation.verify_findings(result, lb_health_checks.owner(ROUTER))
    assert (item["check"], item["severity"]) == ("lb.policy_switched", "ok")
    assert "all 3 pool nodes answer on the traffic nodePort" in item["summary"]


def test_post_check_gives_up_at_the_total_deadline(nodes):
    port, _servers = nodes
    started = time.monotonic()
    result = lb_health_remediation.verify_switch(cluster_kube(port), "openshift-ingress", "router-default", NODES,
                                                 ADDRESSES, 0.4, 1.5, interval=0.3)
    assert result["passed"] is False and time.monotonic() - started < 3.5
    assert result["why"] == "node3 do not answer on the traffic nodePort %d yet" % port
    [item] = lb_health_remediation.verify_findings(result, put_back=lb_health_remediation.put_back_command("openshift-ingress", "router-default", ROUTER))
    assert item["severity"] == "critical" and "post-check failed within 1.5s" in item["summary"]
    # the switch stayed, and the finding says so and how to put it back, with the healthCheckNodePort it had
    assert "the change stayed (nothing was rolled back)" in item["summary"]
    assert item["remediation"].endswith(
        "To put the Service back as it was: kubectl -n openshift-ingress patch svc router-default -p "
        "'{\"spec\":{\"externalTrafficPolicy\":\"Local\",\"healthCheckNodePort\":%d}}'"
        % ROUTER["spec"]["healthCheckNodePort"])
    assert item["evidence"]["put_back"] in item["remediation"]


def test_post_check_reports_a_switch_that_did_not_hold():
    kube = StoreKube(ROUTER)  # still Local: something put it back
    result = lb_health_remediation.verify_switch(kube, "openshift-ingress", "router-default", NODES,
                                                 {"node1": None, "node2": None, "node3": None}, 0.2, 0.5, interval=0.2)
    assert result["passed"] is False and result["why"].startswith("externalTrafficPolicy is Local, not Cluster")


# ------------------------------------------------------------------ issue 47: no node answered the health check
def _nodes_at(addresses):
    """The fixture's Nodes with InternalIPs on the loopback (nothing leaves the machine)."""
    out = copy.deepcopy(NODES[:3])
    for node in out:
        node["status"]["addresses"] = [{"type": "InternalIP", "address": addresses[node["metadata"]["name"]]}]
    return out


class ClusterKube(StoreKube):
    """The reads of a whole lb_health run: the Service, its EndpointSlices and the Nodes."""

    def __init__(self, service, nodes):
        super(ClusterKube, self).__init__(service)
        self.node_list = nodes

    def nodes(self):
        return copy.deepcopy(self.node_list)

    def endpoint_slices(self, namespace, service=None):
        return [s for s in of_kind(OBJS, "EndpointSlice") if s["metadata"]["namespace"] == namespace]

    def services(self, namespace=None):
        return [copy.deepcopy(self.service)]


def _params(**extra):
    return dict({"services": [REF], "namespaces": [], "probe": True, "probe_timeout": 0.5, "address_type": "InternalIP",
                 "remediate": "cluster", "remediate_services": [REF], "max_patch": 1, "force_policy_switch": False,
                 "probe_traffic": False, "verify": True, "verify_timeout": 1.0, "max_probe_nodes": 16,
                 "probe_workers": 32, "probe_deadline": 120.0}, **extra)


def unanswered(error="no answer: Connection refused"):
    return {"url": "http://x:31920/", "status": None, "local_endpoints": None, "error": error}


def test_no_node_answering_at_all_is_no_reason_to_switch_even_forced():
    """Regression (issue 47): every probe refused or timed out - also on the node without an endpoint, where
    kube-proxy answers 503 - blamed the Service for the probe path and switched it."""
    probes = {"node1": unanswered(), "node2": unanswered("no answer: no complete answer within the 2s deadline"),
              "node3": unanswered()}
    reason, why_not = lb_health_checks.patch_reason(ROUTER, NODES, ENDPOINTS, probes)
    assert reason is None and why_not.startswith("no node answered the health check at all (3 probed, node1, node2, "
                                                 "node3: no answer: Connection refused; no answer: no complete answer")
    assert "the probe path" in why_not and "probe: false with force_policy_switch: true" in why_not
    assert lb_health_checks.forced_reason(ROUTER, (reason, why_not), probes) == (None, why_not)
    # one node answering (a 503 from the node without an endpoint) is enough: the probes reach the nodes
    some = dict(probes, node3=health(False))
    assert lb_health_checks.patch_reason(ROUTER, NODES, ENDPOINTS, some)[0].startswith("2 node(s) with a ready endpoint fail")
    # without probes there is no probe evidence to contradict the operator's explicit request
    assert lb_health_checks.forced_reason(ROUTER, lb_health_checks.patch_reason(ROUTER, NODES, ENDPOINTS, {}), {})[0].startswith("asked explicitly")


@pytest.mark.parametrize("force", [False, True])
def test_a_run_whose_probes_reach_no_node_patches_nothing(force):
    """The whole run with real probes to closed ports on the loopback (every connect refused): nothing patched,
    changed false, the Service still Local, and the reason names the probe path."""
    kube = ClusterKube(ROUTER, _nodes_at({"node1": "127.0.0.11", "node2": "127.0.0.12", "node3": "127.0.0.13"}))
    kube.service["spec"]["healthCheckNodePort"] = free_port()
    result = lb_health.api_run(_params(force_policy_switch=force), lambda p: kube)
    assert result["changed"] is False and result["patched"] == [] and result["verification"] == []
    assert [c[0] for c in kube.calls if c[0] == "patch"] == []
    assert kube.service["spec"]["externalTrafficPolicy"] == "Local"
    [item] = result["not_attempted"]
    assert item["service"] == REF and item["reason"].startswith("no node answered the health check at all (3 probed")
    assert {n: p["status"] for n, p in result["services"][0]["probes"].items()} == dict.fromkeys(ADDRESSES)


def test_a_failed_post_check_says_the_switch_stayed_and_how_to_put_it_back():
    """A switch the probes justify (node2 holds an endpoint and answers 503), then nothing answers on the traffic
    nodePort: the module says changed, the Service stays Cluster, and the finding gives the command back."""
    port = ROUTER["spec"]["healthCheckNodePort"]
    servers = [HealthServer(ADDRESSES["node1"], port, 1), HealthServer(ADDRESSES["node2"], port, 0),
               HealthServer(ADDRESSES["node3"], port, 0)]
    try:
        kube = ClusterKube(ROUTER, _nodes_at(ADDRESSES))
        kube.service["spec"]["ports"][0]["nodePort"] = free_port()  # nothing listens: every node refuses
        result = lb_health.api_run(_params(verify_timeout=0.5), lambda p: kube)
    finally:
        for server in servers:
            server.close()
    assert result["changed"] is True and result["patched"] == [REF]
    assert kube.service["spec"]["externalTrafficPolicy"] == "Cluster"
    [check] = result["verification"]
    back = "kubectl -n openshift-ingress patch svc router-default -p " \
           "'{\"spec\":{\"externalTrafficPolicy\":\"Local\",\"healthCheckNodePort\":%d}}'" % port
    assert check["passed"] is False and check["put_back"] == back
    [item] = [f for f in result["findings"] if f["check"] == "lb.policy_switched"]
    assert item["severity"] == "critical" and "the change stayed (nothing was rolled back)" in item["summary"]
    assert item["remediation"].endswith("To put the Service back as it was: " + back)
    assert "put_back" not in (result["diff"] if isinstance(result["diff"], dict) else {})


class HealthServer(object):
    """kube-proxy's health check answer on one loopback address (200 with endpoints, 503 without)."""

    def __init__(self, address, port, count):
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"service": {"namespace": "openshift-ingress", "name": "router-default"},
                                   "localEndpoints": count}).encode()
                self.send_response(200 if count else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = HTTPServer((address, port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
