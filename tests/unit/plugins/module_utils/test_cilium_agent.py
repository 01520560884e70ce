"""cilium_agent.py: the Prometheus text parser, the checks on upstream-shaped answers (validated against
Cilium's OpenAPI specs first), the window sampler, and the node check against the stand-in agent's unix
sockets and metrics (the same server the integration tests start inside a lab node)."""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent as ca
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_checks as cilium_agent_checks
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_options as cilium_agent_options
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_reader as cilium_agent_reader
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from tests.cilium_agent import states, validate
from tests.cilium_agent.server import AGENT_ROUTES, HEALTH_ROUTES, METRICS_ROUTES, State, UnixServer, handler, monitor_handler

FIXTURES = Path(__file__).parent / "fixtures" / "cilium_agent"


def fixture_json(name, definition):
    spec = "agent" if definition == "StatusResponse" else "health"
    return validate(spec, definition, json.loads((FIXTURES / name).read_text()))


def by_check(findings):
    out = {}
    for f in findings:
        out.setdefault(f["check"], []).append(f)
    return out


# ---------------------------------------------------------------------------- the specs themselves


def test_the_specs_refuse_what_cilium_does_not_produce():
    good = states.healthz()
    validate("agent", "StatusResponse", good)
    for path, value in ((("cilium", "state"), "Broken"), (("controllers",), {"name": "x"}),
                        (("kube-proxy-replacement", "mode"), "Strict"), (("ipam", "ipv4"), "10.0.0.0/24"),
                        (("stale",), {"ipam": 5})):
        bad = copy.deepcopy(good)
        target = bad
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            validate("agent", "StatusResponse", bad)
    health = states.health()
    validate("health", "HealthStatusResponse", health)
    health["nodes"][0]["host"]["primary-address"]["icmp"]["latency"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        validate("health", "HealthStatusResponse", health)


def test_every_state_the_stand_in_serves_validates():
    base = states.healthy("node1", (("node1", "198.18.0.11", "198.19.1.100"), ("node2", "198.18.0.12", "198.19.2.100")))
    for state in (base, states.failing_controllers(base), states.component_failure(base), states.stale_probes(base),
                  states.ipam_exhausted(base), states.node_unreachable(base, "node2"),
                  states.endpoint_unreachable(base, "node2")):
        validate("agent", "StatusResponse", state["healthz"])
        validate("health", "HealthStatusResponse", state["health"])


# ---------------------------------------------------------------------------- the Prometheus text parser


def test_metrics_text_is_parsed_with_labels_escapes_and_timestamps():
    samples = cilium_agent_reader.parse_metrics((FIXTURES / "metrics.txt").read_text())
    names = set(name for name, _labels, _value in samples)
    assert "cilium_bpf_map_pressure" not in names  # NaN is no value
    assert ("cilium_agent_bootstrap_seconds", {"outcome": "success", "scope": "overall"}, 2.625005) in samples
    drops = cilium_agent_reader.sum_by(samples, cilium_agent_reader.DROP_METRIC, ("reason", "direction"))
    assert drops[("Policy denied", "INGRESS")] == 1234500.0 and drops[("CT: Map insertion failed", "INGRESS")] == 4120
    assert cilium_agent_reader.sum_by(samples, cilium_agent_reader.LIMITER_METRIC, ("api_call",), {"outcome": "fail"}) == {("endpoint-create",): 12.0}
    only = cilium_agent_reader.parse_metrics((FIXTURES / "metrics.txt").read_text(), [cilium_agent_reader.DROP_METRIC])
    assert len(only) == 4 and all(name == cilium_agent_reader.DROP_METRIC for name, _l, _v in only)
    text = 'm{a="x\\"y",b="back\\\\slash",c="new\\nline"} 3\nm{broken="x} 4\nm 5 \n# comment\n\nbad line\n'
    assert cilium_agent_reader.parse_metrics(text) == [("m", {"a": 'x"y', "b": "back\\slash", "c": "new\nline"}, 3.0), ("m", {}, 5.0)]


def test_counter_growth_counts_a_reset_from_zero():
    assert cilium_agent_reader.growth({("a",): 10, ("b",): 50}, {("a",): 15, ("b",): 7, ("c",): 2}) == {("a",): 5, ("b",): 7, ("c",): 2}


# ---------------------------------------------------------------------------- checks


def test_a_healthy_agent_gives_only_ok():
    found = cilium_agent_checks.agent_findings(states.healthz(), "node1")
    assert [(f["check"], f["severity"]) for f in found] == [("cilium.agent", "ok")]
    assert found[0]["evidence"]["controllers"] == len(states.CONTROLLERS)
    nodes = (("node1", "198.18.0.11", "198.19.1.100"), ("node2", "198.18.0.12", "198.19.2.100"))
    [f] = cilium_agent_checks.health_findings(states.health("node1", nodes), "node1")
    assert (f["check"], f["severity"], f["evidence"]["probes"]) == ("cilium.connectivity", "ok", 8)


def test_a_degraded_agent_names_components_controllers_and_the_hung_probe():
    found = by_check(cilium_agent_checks.agent_findings(fixture_json("healthz_degraded.json", "StatusResponse"), "worker-1"))
    assert set(found) == {"cilium.agent_unhealthy"}
    bad = dict((f["subject"], f) for f in found["cilium.agent_unhealthy"])
    assert bad["worker-1 cilium-agent kvstore"]["severity"] == "critical"
    assert "quorum check failed" in bad["worker-1 cilium-agent kvstore"]["summary"]
    assert bad["worker-1 cilium-agent cilium"]["severity"] == "warning"
    controllers = bad["worker-1 cilium-agent controllers"]
    assert controllers["evidence"]["failing_count"] == 2 and controllers["evidence"]["controllers"] == 3
    assert controllers["evidence"]["failing"][0]["name"] == "sync-lb-maps-with-k8s-services"  # most failures first
    assert "the map is full" in controllers["summary"]
    stale = bad["worker-1 cilium-agent status probes"]
    assert stale["severity"] == "critical" and stale["evidence"]["areas"] == ["kube-proxy replacement"]
    assert "cilium-agent ipam" not in " ".join(bad)  # 3/254 allocated is no IPAM error


def test_ipam_without_addresses_and_kpr_without_devices():
    healthz = states.ipam_exhausted(states.healthy())["healthz"]
    healthz["kube-proxy-replacement"] = {"mode": "True", "devices": []}
    validate("agent", "StatusResponse", healthz)
    found = dict((f["subject"], f) for f in cilium_agent_checks.agent_findings(healthz, "n1"))
    assert found["n1 cilium-agent ipam"]["severity"] == "critical"
    assert "no more IPs" in found["n1 cilium-agent ipam"]["summary"]
    assert found["n1 cilium-agent kube-proxy-replacement"]["severity"] == "warning"
    # an IPAM range without an error, and kube-proxy replacement off, are fine
    healthz = states.healthz()
    healthz["kube-proxy-replacement"] = {"mode": "False"}
    assert [f["check"] for f in cilium_agent_checks.agent_findings(healthz, "n1")] == ["cilium.agent"]


def test_nodes_and_health_endpoints_that_do_not_answer():
    found = cilium_agent_checks.health_findings(fixture_json("health_status.json", "HealthStatusResponse"), "worker-1")
    got = sorted((f["check"], f["subject"], f["severity"]) for f in found)
    assert got == [
        ("cilium.endpoint_unreachable", "worker-1 -> kind-kind/worker-2", "critical"),  # ICMP and HTTP fail
        ("cilium.endpoint_unreachable", "worker-1 -> kind-kind/worker-3", "warning"),   # HTTP only
        ("cilium.endpoint_unreachable", "worker-1 -> kind-kind/worker-4", "warning"),   # the deprecated endpoint field
        ("cilium.node_unreachable", "worker-1 -> kind-kind/worker-2", "critical"),
    ]
    node2 = [f for f in found if f["check"] == "cilium.node_unreachable"][0]
    assert node2["evidence"]["failed_paths"] == [{"ip": "10.0.0.12", "kind": "primary", "errors": {
        "icmp": "Connection timed out",
        "http": "Get \"http://10.0.0.12:4240/hello\": dial tcp 10.0.0.12:4240: connect: no route to host"}}]
    assert "no route to host" in node2["summary"]
    # only a secondary address failing is a warning
    status = fixture_json("health_status.json", "HealthStatusResponse")
    status["nodes"] = [status["nodes"][0]]
    status["nodes"][0]["host"]["secondary-addresses"] = [{"ip": "fd00::11", "icmp": {"latency": 0, "status": "timeout"}}]
    [f] = cilium_agent_checks.health_findings(validate("health", "HealthStatusResponse", status), "worker-1")
    assert (f["check"], f["severity"]) == ("cilium.node_unreachable", "warning")
    # the first round not finished: not checked, not ok
    [f] = cilium_agent_checks.health_findings({"timestamp": "2026-12-01T00:00:00Z", "local": {"name": "x"}}, "worker-1")
    assert (f["check"], f["severity"]) == ("cilium.health_unavailable", "info")


def test_findings_per_kind_are_capped():
    nodes = tuple(("n%d" % i, "198.18.1.%d" % i, "198.19.%d.1" % i) for i in range(1, 31))
    state = states.healthy("n1", nodes)
    for name, _ip, _ep in nodes:
        state = states.node_unreachable(state, name)
    found = cilium_agent_checks.health_findings(state["health"], "n1", limit=5)
    assert len(found) == 5 and found[0]["evidence"]["more_nodes"] == 25


def test_the_rate_limiter_refusing_endpoint_creation():
    samples = cilium_agent_reader.parse_metrics((FIXTURES / "metrics.txt").read_text())
    later = [(n, l, v + 9 if (n == cilium_agent_reader.LIMITER_METRIC and l["outcome"] == "fail") else v) for n, l, v in samples]
    [f] = cilium_agent_checks.limiter_findings(samples, later, 5.0, "n1")
    assert (f["check"], f["severity"]) == ("cilium.api_rate_limited", "critical")
    assert "refused 9 requests in 5s (endpoint-create)" in f["summary"] and "putEndpointIdTooManyRequests" in f["summary"]
    row = f["evidence"]["window"]["refused"][0]
    assert row == {"api_call": "endpoint-create", "return_code": "429", "refused": 9, "rate_limit": 0.347894, "burst": 4.0,
                   "in_flight": 4.0, "parallel_limit": 4.0}
    assert "api-rate-limit" in f["remediation"]
    # refused only before the window: info; read once: info with the totals
    [f] = cilium_agent_checks.limiter_findings(samples, samples, 5.0, "n1")
    assert (f["check"], f["severity"]) == ("cilium.api_rate_limited", "info") and "none in the 5s window" in f["summary"]
    [f] = cilium_agent_checks.limiter_findings(None, samples, 0.0, "n1")
    assert f["severity"] == "info" and "totals only" in f["summary"]
    # another call refused: a warning; nothing refused: ok; no limiter metrics at all: nothing said
    other = [(n, dict(l, api_call="endpoint-list") if l.get("outcome") == "fail" else l, v) for n, l, v in later]
    assert cilium_agent_checks.limiter_findings(samples, other, 5.0, "n1")[0]["severity"] == "warning"
    clean = [s for s in samples if s[1].get("outcome") != "fail"]
    assert [(f["check"], f["severity"]) for f in cilium_agent_checks.limiter_findings(clean, clean, 5.0, "n1")] == [("cilium.api_limiter", "ok")]
    assert cilium_agent_checks.limiter_findings([], [], 5.0, "n1") == []


def test_drop_reasons_growing_in_the_window():
    samples = cilium_agent_reader.parse_metrics((FIXTURES / "metrics.txt").read_text())
    grow = {("Policy denied", "INGRESS"): 1000, ("CT: Map insertion failed", "INGRESS"): 20, ("Policy denied", "EGRESS"): 2}
    later = [(n, l, v + grow.get((l.get("reason"), l.get("direction")), 0) if n == cilium_agent_reader.DROP_METRIC else v)
             for n, l, v in samples]
    found = cilium_agent_checks.drop_findings(samples, later, 5.0, "n1", top=2)
    assert [(f["evidence"]["reason"], f["severity"], f["evidence"]["pps"]) for f in found] == [
        ("Policy denied", "critical", 200.0), ("CT: Map insertion failed", "warning", 4.0)]
    assert found[0]["evidence"]["reasons_grown"] == 3 and found[0]["evidence"]["packets_total"] == 1235500
    assert found[0]["subject"] == "n1 cilium datapath ingress Policy denied"
    [f] = cilium_agent_checks.drop_findings(samples, samples, 5.0, "n1")
    assert (f["check"], f["severity"]) == ("cilium.drops", "ok")
    assert f["evidence"]["top_totals"][0] == {"reason": "Policy denied", "direction": "INGRESS", "packets": 1234500}
    [f] = cilium_agent_checks.drop_findings(None, samples, 0.0, "n1")
    assert f["severity"] == "info" and "totals only" in f["summary"]


def test_the_sampler_reads_twice_around_the_status_reads():
    calls, clock = [], [100.0]

    def read(url, timeout):
        calls.append(("metrics", clock[0]))
        return [("m", {}, clock[0])]

    def during():
        calls.append(("status", clock[0]))
        clock[0] += 1.5

    def sleep(seconds):
        clock[0] += seconds

    before, after, seconds = ca.sample_metrics("u", 5, 1, read=read, sleep=sleep, clock=lambda: clock[0], during=during)
    assert calls == [("metrics", 100.0), ("status", 100.0), ("metrics", 105.0)]
    assert (before, after, seconds) == ([("m", {}, 100.0)], [("m", {}, 105.0)], 5.0)
    calls[:] = []
    assert ca.sample_metrics("u", 0, 1, read=read, sleep=sleep, clock=lambda: clock[0], during=during)[0] is None
    assert [c[0] for c in calls] == ["status", "metrics"]


def test_metrics_urls_are_node_addresses_over_http():
    assert cilium_agent_options.split_url("http://127.0.0.1:9962/metrics") == ("127.0.0.1", 9962, "/metrics")
    assert cilium_agent_options.split_url("http://[::1]:9962") == ("::1", 9962, "/metrics")
    assert cilium_agent_options.split_url("http://localhost:9090/metrics") == ("localhost", 9090, "/metrics")
    for bad in ("https://127.0.0.1:9962/metrics", "http://metrics.example.com:9962/", "http://127.0.0.1/metrics",
                "http://127.0.0.1:99999/", "http://999.1.1.1:80/", "file:///etc/passwd", "http://127.0.0.1:80/a b"):
        with pytest.raises(InputError):
            cilium_agent_options.split_url(bad)


# ---------------------------------------------------------------------------- the node check over real sockets


class StandIn(object):
    """The stand-in agent's servers in this process (threads): unix sockets and a metrics port."""

    def __init__(self, tmp_path, state):
        self.dir = tmp_path / "run" / "cilium"
        self.dir.mkdir(parents=True)
        self.state_path = tmp_path / "state.json"
        self.set(state)
        self.state = State(str(self.state_path))
        self.agent, self.health = str(self.dir / "cilium.sock"), str(self.dir / "health.sock")
        self.monitor = str(self.dir / "monitor1_2.sock")
        self.servers = [UnixServer(self.agent, handler(self.state, AGENT_ROUTES)),
                        UnixServer(self.health, handler(self.state, HEALTH_ROUTES)),
                        ThreadingHTTPServer(("127.0.0.1", 0), handler(self.state, METRICS_ROUTES)),
                        UnixServer(self.monitor, monitor_handler(self.state))]
        self.url = "http://127.0.0.1:%d/metrics" % self.servers[2].server_address[1]
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def set(self, state):
        self.state_path.write_text(json.dumps(state))

    def params(self, **extra):
        return dict(dict(agent_socket=self.agent, health_socket=self.health, monitor_socket=self.monitor,
                         metrics_url=self.url, interval=0.5,
                         timeout=2.0, node_name="node1", cni_conf_dir=str(self.dir)), **extra)

    def close(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


@pytest.fixture
def stand_in(tmp_path):
    nodes = (("node1", "198.18.0.11", "198.19.1.100"), ("node2", "198.18.0.12", "198.19.2.100"))
    agent = StandIn(tmp_path, states.healthy("node1", nodes))
    yield agent
    agent.close()


def test_a_healthy_stand_in_gives_only_ok_findings(stand_in):
    out = ca.node_check(stand_in.params())
    assert sorted((f["check"], f["severity"]) for f in out["findings"]) == [
        ("cilium.agent", "ok"), ("cilium.api_limiter", "ok"), ("cilium.connectivity", "ok"),
        ("cilium.dropped_flows", "ok"), ("cilium.drops", "ok")]
    data = out["data"]
    # the monitor was read for the metrics' window, and it was quiet
    assert data["monitor"]["status"] == "ok" and data["monitor"]["drops"] == 0 and data["monitor"]["seconds"] >= 0.4
    assert data["applicable"] is True and data["agent"]["status"] == "ok" and data["health"]["nodes"] == 2
    assert data["metrics"]["status"] == "ok" and data["metrics"]["seconds"] >= 0.5


@pytest.mark.parametrize("make, check, severity", [
    (states.failing_controllers, "cilium.agent_unhealthy", "warning"),
    (states.component_failure, "cilium.agent_unhealthy", "critical"),
    (states.stale_probes, "cilium.agent_unhealthy", "critical"),
    (states.ipam_exhausted, "cilium.agent_unhealthy", "critical"),
    (lambda s: states.node_unreachable(s, "node2"), "cilium.node_unreachable", "critical"),
    (lambda s: states.endpoint_unreachable(s, "node2"), "cilium.endpoint_unreachable", "warning"),
    (states.rate_limited, "cilium.api_rate_limited", "critical"),
    (states.dropping, "cilium.drops", "critical"),
    (states.agent_error, "cilium.agent_unhealthy", "critical"),
    (states.dropping_flows, "cilium.dropped_flows", "warning"),
])
def test_each_unhealthy_state_gives_its_finding(stand_in, make, check, severity):
    nodes = (("node1", "198.18.0.11", "198.19.1.100"), ("node2", "198.18.0.12", "198.19.2.100"))
    stand_in.set(make(states.healthy("node1", nodes)))
    found = [f for f in ca.node_check(stand_in.params())["findings"] if f["severity"] != "ok"]
    assert [(f["check"], f["severity"]) for f in found] == [(check, severity)]


def test_an_absent_agent_is_no_finding_on_a_node_without_cilium(tmp_path):
    params = dict(agent_socket=str(tmp_path / "cilium.sock"), health_socket=str(tmp_path / "health.sock"),
                  metrics_url="", cni_conf_dir=str(tmp_path), node_name="n1")
    out = ca.node_check(params)
    assert out["findings"] == [] and out["data"]["applicable"] is False
    assert out["data"]["skip_reason"].startswith("not a Cilium node: no agent socket (%s)" % params["agent_socket"])
    # the same absent socket is the agent down where the node shows Cilium (a cilium-cni configuration) ...
    (tmp_path / "05-cilium.conflist").write_text(json.dumps(
        {"cniVersion": "0.3.1", "name": "cilium", "plugins": [{"type": "cilium-cni", "enable-debug": False}]}))
    [f] = ca.node_check(params)["findings"]
    assert (f["check"], f["severity"]) == ("cilium.agent_unhealthy", "critical") and "cni_config: True" in f["summary"]
    # ... or where the inventory says the node runs Cilium
    (tmp_path / "05-cilium.conflist").unlink()
    [f] = ca.node_check(dict(params, when_not_cilium="critical"))["findings"]
    assert (f["check"], f["severity"]) == ("cilium.agent_unhealthy", "critical")


def test_sockets_that_do_not_answer_and_metrics_not_served(tmp_path, stand_in):
    # a socket file nobody listens on: refused, the agent is down
    dead = tmp_path / "dead.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(dead))
    sock.close()
    out = ca.node_check(stand_in.params(agent_socket=str(dead), metrics_url=""))
    found = by_check(out["findings"])
    assert found["cilium.agent_unhealthy"][0]["severity"] == "critical"
    assert out["data"]["agent"]["status"] == "refused" and "cilium.connectivity" in found
    # a socket that accepts and never answers: the timeout ends it
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(tmp_path / "silent.sock"))
    silent.listen(1)
    try:
        out = ca.node_check(stand_in.params(health_socket=str(tmp_path / "silent.sock"), timeout=0.3, metrics_url=""))
    finally:
        silent.close()
    [f] = by_check(out["findings"])["cilium.health_unavailable"]
    assert f["severity"] == "warning" and out["data"]["health"]["status"] == "timeout"
    # metrics on a closed port: said, and neither the limiter nor the drops reported ok
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    out = ca.node_check(stand_in.params(metrics_url="http://127.0.0.1:%d/metrics" % port))
    found = by_check(out["findings"])
    assert found["cilium.metrics_unavailable"][0]["severity"] == "info"
    assert "cilium.drops" not in found and "cilium.api_limiter" not in found and "cilium.agent" in found


def test_an_answer_larger_than_the_cap_is_refused(stand_in):
    with pytest.raises(cilium_agent_reader.Unreachable, match="larger than 100 bytes"):
        cilium_agent_reader.get_json(stand_in.agent, cilium_agent_reader.HEALTHZ_PATH, timeout=2, max_bytes=100)


def test_an_answer_that_trickles_in_is_cut_at_the_deadline(tmp_path):
    path = str(tmp_path / "slow.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    stop = threading.Event()

    def trickle():
        conn, _addr = server.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        while not stop.is_set():
            try:
                conn.sendall(b" ")
            except OSError:
                break
            stop.wait(0.05)
        conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(cilium_agent_reader.Unreachable, match=r"no complete answer within the 0.5s deadline"):
            cilium_agent_reader.get_json(path, cilium_agent_reader.HEALTHZ_PATH, timeout=0.5)
    finally:
        stop.set()
        server.close()
    assert time.monotonic() - started < 2.0  # each byte came within the socket timeout; the deadline ended it


def test_a_shape_the_spec_refuses_is_never_served(stand_in):
    state = states.healthy()
    state["healthz"]["cilium"]["state"] = "Broken"
    stand_in.set(state)
    with pytest.raises(cilium_agent_reader.Unreachable, match="HTTP 500.*does not validate"):
        cilium_agent_reader.get_json(stand_in.agent, cilium_agent_reader.HEALTHZ_PATH, timeout=2)


def test_bad_options_fail_clearly():
    for params in ({"warning_pps": 10.0, "critical_pps": 1.0}, {"metrics_url": "http://example.com/metrics"},
                   {"agent_socket": "relative.sock"}):
        with pytest.raises(InputError):
            ca.node_check(dict(params, node_name="n1"))
    assert os.path.isabs(cilium_agent_options.AGENT_SOCKET)


def test_metrics_url_outside_the_node_is_refused():
    def never():
        raise AssertionError("a loopback URL needs no address read")

    for url in ("http://127.0.0.1:9962/metrics", "http://127.0.0.53:9962/metrics", "http://[::1]:9962/metrics",
                "http://localhost:9962/metrics"):
        ca.check_metrics_host(url, never)

    def own():
        return ["127.0.0.1", "198.18.2.11", "fe80::1"]

    ca.check_metrics_host("http://198.18.2.11:9962/metrics", own)
    with pytest.raises(InputError) as info:
        ca.check_metrics_host("http://198.18.2.12:9962/metrics", own)
    assert "198.18.2.12 is not an address of this node" in str(info.value) and "198.18.2.11" in str(info.value)
    # refused before anything is read: no socket, no metrics request
    with pytest.raises(InputError, match="not an address of this node"):
        ca.node_check({"node_name": "n1", "metrics_url": "http://198.51.100.7:9962/metrics",
                       "agent_socket": "/nonexistent/agent.sock"},
                      read_metrics=lambda *a: never(), own_addresses=own)


def test_the_dropped_flows_come_from_the_monitor_with_their_reason_and_endpoint(stand_in):
    """The runbook's `cilium monitor --type drop`: the stand-in's monitor socket sends the stream Go's encoding/gob
    made (tests/cilium_agent/monitor/gen_drops.go); drops.json, written by the same program, is the reader's
    independent truth."""
    truth = json.loads((Path(states.__file__).parent / "monitor" / "drops.json").read_text())
    nodes = (("node1", "198.18.0.11", "198.19.1.100"),)
    stand_in.set(states.dropping_flows(states.healthy("node1", nodes)))
    out = ca.node_check(stand_in.params(metrics_url=""))
    [f] = [f for f in out["findings"] if f["check"] == "cilium.dropped_flows"]
    assert f["severity"] == "warning"
    rows = f["evidence"]["flows"]
    expected = [(("[%s]:%d -> [%s]:%d %s" if t["ipv6"] else "%s:%d -> %s:%d %s") % (
        t["src"], t["sport"], t["dst"], t["dport"], t["proto"]), t["count"], t["source"]) for t in truth["flows"]]
    assert [(r["flow"], r["packets"], r["endpoint"]) for r in rows] == expected
    assert [r["reason"] for r in rows] == ["Policy denied", "Service backend not found", "Policy denied by denylist"]
    assert f["evidence"]["lost"] == truth["lost"] and f["evidence"]["other"] == truth["other"]
    assert f["summary"].startswith("the datapath dropped 9 packets of 3 flows in ")
    assert "the kernel lost 7 notifications" in f["summary"]
    # each source endpoint named as the pod the agent's endpoint list (GET /v1/endpoint) gives for it
    assert "198.19.1.10:41000 -> 198.19.2.20:8080 tcp (Policy denied, endpoint 1201 default/web-5d8f7-abcde) x5" in (
        f["summary"])
    endpoints = {e["id"]: e["status"]["external-identifiers"] for e in stand_in.state.read()["endpoints"]}
    assert [r["pod"] for r in rows] == ["%s/%s" % (endpoints[r["endpoint"]]["k8s-namespace"],
                                                   endpoints[r["endpoint"]]["k8s-pod-name"]) for r in rows]
    assert "cilium-dbg endpoint get 1201" in f["remediation"]
    assert out["data"]["monitor"]["flows"] == rows
    # without the endpoint list (an agent whose API refuses it) the flows keep their endpoint ids and say why
    state = states.dropping_flows(states.healthy("node1", nodes))
    state["endpoints"] = {"not": "a list"}
    stand_in.set(state)
    [f] = [f for f in ca.node_check(stand_in.params(metrics_url=""))["findings"] if f["check"] == "cilium.dropped_flows"]
    assert [r["pod"] for r in f["evidence"]["flows"]] == [None, None, None]
    assert "does not validate" in f["evidence"]["endpoints_error"] or "HTTP 500" in f["evidence"]["endpoints_error"]


def test_a_missing_or_foreign_monitor_socket_is_said(stand_in, tmp_path):
    out = ca.node_check(stand_in.params(monitor_socket=str(tmp_path / "absent.sock"), metrics_url=""))
    [f] = [f for f in out["findings"] if f["check"] == "cilium.monitor_unavailable"]
    assert f["severity"] == "info" and "does not exist" in f["summary"]
    assert out["data"]["monitor"]["status"] == "absent"
    # a socket that speaks something else: the stream is refused, not read as no drops
    junk = tmp_path / "junk.sock"
    server = UnixServer(str(junk), _Sender(b"HTTP/1.1 400 Bad Request\r\n\r\n"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = ca.node_check(stand_in.params(monitor_socket=str(junk), metrics_url=""))
    finally:
        server.shutdown()
        server.server_close()
    [f] = [f for f in out["findings"] if f["check"] == "cilium.monitor_unavailable"]
    assert f["severity"] == "warning" and "gob" in f["summary"]
    assert "cilium.dropped_flows" not in [g["check"] for g in out["findings"]]
    # '' reads no flows and says nothing of them
    out = ca.node_check(stand_in.params(monitor_socket="", metrics_url=""))
    assert not [g for g in out["findings"] if g["check"].startswith(("cilium.dropped", "cilium.monitor"))]


def _Sender(data):  # noqa: N802 (a class factory)
    import socketserver

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.sendall(data)
    return Handler
