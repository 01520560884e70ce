"""cilium_agent_status over real SSH, and the triage's one pass, against the stand-in agent inside lab nodes.

node1 runs the stand-in (tests/cilium_agent) on its own /var/run/cilium/cilium.sock and health.sock and
its metrics on 127.0.0.1:9962 in its network namespace; every answer is validated against Cilium's OpenAPI
specs before it is served.  node2 has no agent and nothing else of Cilium.  What the module reports is
checked against what the agent serves, read independently on the node with curl (the unix sockets and the
metrics port), never with our own reader."""

from __future__ import annotations

import json

import pytest

from tests.cilium_agent import states
from tests.lab.faults import cilium_agent as agent


@pytest.fixture(scope="module")
def node1_agent(lab):
    agent.cilium_agent_start(lab, "node1")
    yield lab.node("node1")
    agent.cilium_agent_stop(lab, "node1")
    assert not agent.paths(lab, "node1")["agent"].exists()


def curl_json(lab, node, socket, path):
    out = lab.node_run(node, ["curl", "-sS", "--max-time", "5", "--unix-socket", socket, "http://localhost" + path])
    return json.loads(out.stdout)


def curl_metrics(lab, node):
    return lab.ns_run(node, ["curl", "-sS", "--max-time", "5", "http://127.0.0.1:9962/metrics"]).stdout


def run(ansible, host, **args):
    args.setdefault("node_name", host)
    args.setdefault("interval", 1)
    result = ansible.module(host, "cilium_agent_status", args)[host]
    assert not result["failed"], result
    return result


def problems(result):
    return sorted((f["check"], f["severity"]) for f in result["findings"] if f["severity"] != "ok")


def test_a_healthy_agent_gives_only_ok(lab, ansible, node1_agent):
    result = run(ansible, "node1")
    assert problems(result) == []
    assert sorted(f["check"] for f in result["findings"]) == [
        "cilium.agent", "cilium.api_limiter", "cilium.connectivity", "cilium.drops"]
    # the module saw what the agent serves, read on the node with curl through the same sockets
    healthz = curl_json(lab, "node1", "/var/run/cilium/cilium.sock", "/v1/healthz")
    health = curl_json(lab, "node1", "/var/run/cilium/health.sock", "/v1beta/status")
    assert result["agent"]["controllers"] == len(healthz["controllers"]) == len(states.CONTROLLERS)
    assert result["agent"]["components"]["kubernetes"] == healthz["kubernetes"]["state"] == "Ok"
    assert result["agent"]["ipam"] == healthz["ipam"]["ipv4"] == [states.healthz()["ipam"]["ipv4"][0]]
    assert result["health"]["nodes"] == len(health["nodes"]) == len(lab.nodes)
    assert result["metrics"]["status"] == "ok" and result["metrics"]["seconds"] >= 1
    assert "cilium_drop_count_total" in curl_metrics(lab, "node1")


@pytest.mark.parametrize("state, kwargs, expected", [
    ("component_failure", {}, [("cilium.agent_unhealthy", "critical")]),
    ("failing_controllers", {}, [("cilium.agent_unhealthy", "warning")]),
    ("stale_probes", {}, [("cilium.agent_unhealthy", "critical")]),
    ("ipam_exhausted", {}, [("cilium.agent_unhealthy", "critical")]),
    ("node_unreachable", {"peer": "node3"}, [("cilium.node_unreachable", "critical")]),
    ("endpoint_unreachable", {"peer": "node2"}, [("cilium.endpoint_unreachable", "warning")]),
    ("rate_limited", {}, [("cilium.api_rate_limited", "critical")]),
    ("dropping", {}, [("cilium.drops", "critical")]),
    ("agent_error", {}, [("cilium.agent_unhealthy", "critical")]),
])
def test_each_unhealthy_state_gives_its_finding(lab, ansible, node1_agent, state, kwargs, expected):
    agent.cilium_agent_state(lab, "node1", state, **kwargs)
    try:
        result = run(ansible, "node1")
    finally:
        agent.cilium_agent_state(lab, "node1", "healthy")
    assert problems(result) == expected, result["findings"]
    [f] = [f for f in result["findings"] if f["severity"] != "ok"]
    if state == "node_unreachable":
        health = curl_json(lab, "node1", "/var/run/cilium/health.sock", "/v1beta/status")
        assert health["nodes"][0]["host"]["primary-address"]["icmp"]["status"] == ""  # healthy again
        assert f["subject"] == "node1 -> default/node3" and f["evidence"]["failed_paths"][0]["ip"] == lab.node("node3").ip
    if state == "dropping":
        assert f["evidence"]["reason"] == "Policy denied" and f["evidence"]["pps"] >= 100
    if state == "rate_limited":
        assert f["evidence"]["window"]["refused"][0]["api_call"] == "endpoint-create"
        assert "putEndpointIdTooManyRequests" in f["summary"]
    if state == "agent_error":
        assert result["agent"]["status"] == "http" and "HTTP 500" in f["summary"]


def test_no_agent_on_a_node_without_cilium_is_not_a_finding(lab, ansible, node1_agent):
    assert lab.node_run("node2", ["test", "-e", "/var/run/cilium/cilium.sock"], check=False).returncode == 1
    result = run(ansible, "node2")
    assert result["findings"] == [] and result["applicable"] is False
    assert result["skip_reason"].startswith("not a Cilium node: no agent socket (/var/run/cilium/cilium.sock)")
    # where the node is known to run Cilium, the same absence is the agent down
    result = run(ansible, "node2", when_not_cilium="critical")
    assert problems(result) == [("cilium.agent_unhealthy", "critical")]


def test_the_one_pass_runs_it_where_it_applies(lab, ansible, node1_agent, tmp_path):
    agent.cilium_agent_state(lab, "node1", "rate_limited")
    try:
        run_ = ansible.playbook("k8snet.triage.triage", extra_vars={
            "triage_scenarios": ["cilium_agent"], "cilium_agent_interval": 1, "report_output_dir": str(tmp_path),
            "report_fail_on_critical": False})
    finally:
        agent.cilium_agent_state(lab, "node1", "healthy")
    assert run_.rc == 0, run_
    report = json.loads((tmp_path / "triage-report.json").read_text())
    hosts = report["hosts"]
    assert hosts["node1"]["scenarios"]["cilium_agent"]["status"] == "ran"
    for name in ("node2", "node3"):
        scenario = hosts[name]["scenarios"]["cilium_agent"]
        assert scenario["status"] == "skipped" and scenario["reason"].startswith("not a Cilium node"), (name, scenario)
    found = [(f["host"], f["check"], f["severity"]) for f in report["findings"] if f["check"].startswith("cilium.")]
    assert ("node1", "cilium.api_rate_limited", "critical") in found
    assert all(host == "node1" for host, _check, _severity in found)
    # triage_cni calico: not asked on any node
    run_ = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_scenarios": ["cilium_agent"], "triage_cni": "calico", "report_output_dir": str(tmp_path),
        "report_fail_on_critical": False})
    assert run_.rc != 0, run_  # nothing was checked: never green
    report = json.loads((tmp_path / "triage-report.json").read_text())
    [nothing] = [f for f in report["findings"] if f["check"] == "triage.nothing_checked"]
    assert "cilium_agent: skipped (triage_cni is calico) on node1" in nothing["summary"], nothing
    hosts = report["hosts"]
    assert hosts["node1"]["scenarios"]["cilium_agent"] == {**hosts["node1"]["scenarios"]["cilium_agent"],
                                                           "status": "skipped", "reason": "triage_cni is calico"}


def test_the_scenario_playbook_keeps_findings_and_skip_reasons_per_host(lab, ansible, node1_agent):
    agent.cilium_agent_state(lab, "node1", "dropping")
    try:
        run_ = ansible.playbook("k8snet.triage.cilium_agent", extra_vars={"cilium_agent_interval": 1})
    finally:
        agent.cilium_agent_state(lab, "node1", "healthy")
    assert run_.rc == 0, run_
    facts = dict((host, run_.result("Keep the findings of this host", host)["ansible_facts"])
                 for host in ("node1", "node2", "node3"))
    assert facts["node1"]["cilium_agent_skip_reason"] == ""
    assert ("cilium.drops", "critical") in [(f["check"], f["severity"]) for f in facts["node1"]["cilium_agent_findings"]]
    assert facts["node1"]["cilium_agent_details"]["metrics"]["status"] == "ok"
    for host in ("node2", "node3"):
        assert facts[host]["cilium_agent_findings"] == [], host
        assert facts[host]["cilium_agent_skip_reason"].startswith("not a Cilium node"), host


def test_metrics_url_outside_the_node_is_refused(lab, ansible, node1_agent):
    # another node's address: refused, naming it; the node's own address is accepted (read with ip -j address)
    other = lab.node("node2").ip
    result = ansible.module("node1", "cilium_agent_status",
                            {"node_name": "node1", "interval": 0, "metrics_url": "http://%s:9962/metrics" % other})["node1"]
    assert result["failed"] and "%s is not an address of this node" % other in result["msg"], result
    own = [a["local"] for link in json.loads(lab.ns_run("node1", ["ip", "-j", "address", "show"]).stdout)
           for a in link.get("addr_info", []) if a["family"] == "inet" and not a["local"].startswith("127.")]
    assert lab.node("node1").ip in own and other not in own
    result = run(ansible, "node1", interval=0, metrics_url="http://%s:9962/metrics" % lab.node("node1").ip)
    assert result["metrics"]["url"] == "http://%s:9962/metrics" % lab.node("node1").ip
