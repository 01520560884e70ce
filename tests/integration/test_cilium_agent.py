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
        "cilium.agent", "cilium.api_limiter", "cilium.connectivity", "cilium.dropped_flows", "cilium.drops"]
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


def test_the_dropped_flows_from_the_agents_monitor(lab, ansible, node1_agent):
    """The runbook's `cilium monitor --type drop` over SSH: the stand-in's monitor socket on node1 sends the gob
    stream Go's encoder made; drops.json (written by the same Go program) is the independent truth."""
    from pathlib import Path

    truth = json.loads((Path(states.__file__).parent / "monitor" / "drops.json").read_text())
    agent.cilium_agent_state(lab, "node1", "dropping_flows")
    try:
        # the socket is where cilium-dbg monitor looks for it, on the node
        assert lab.node_run("node1", ["test", "-S", "/var/run/cilium/monitor1_2.sock"]).returncode == 0
        result = run(ansible, "node1", metrics_url="")
    finally:
        agent.cilium_agent_state(lab, "node1", "healthy")
    [found] = [f for f in result["findings"] if f["check"] == "cilium.dropped_flows"]
    assert found["severity"] == "warning" and found["subject"] == "node1 cilium datapath flows"
    assert [(r["packets"], r["endpoint"], r["reason"]) for r in found["evidence"]["flows"]] == [
        (t["count"], t["source"], r) for t, r in zip(truth["flows"], ("Policy denied", "Service backend not found",
                                                                      "Policy denied by denylist"))]
    assert found["evidence"]["lost"] == truth["lost"]
    assert result["monitor"]["status"] == "ok" and result["monitor"]["drops"] == 9
    # the pods behind the endpoints, as the agent lists them (read with curl on the node)
    listed = curl_json(lab, "node1", "/var/run/cilium/cilium.sock", "/v1/endpoint")
    pods = {e["id"]: "%s/%s" % (e["status"]["external-identifiers"]["k8s-namespace"],
                                e["status"]["external-identifiers"]["k8s-pod-name"]) for e in listed}
    assert [r["pod"] for r in found["evidence"]["flows"]] == [pods[t["source"]] for t in truth["flows"]]
    # healthy again: the monitor is quiet for the whole window
    quiet = run(ansible, "node1", metrics_url="")
    [ok] = [f for f in quiet["findings"] if f["check"] == "cilium.dropped_flows"]
    assert ok["severity"] == "ok" and quiet["monitor"]["seconds"] >= 0.9


def test_the_triage_report_shows_the_dropped_flows(lab, ansible, node1_agent, tmp_path):
    """One pass, then the report: the flows are node1's details, drawn as a table in its card."""
    agent.cilium_agent_state(lab, "node1", "dropping_flows")
    try:
        run_ = ansible.playbook("k8snet.triage.triage", extra_vars={
            "triage_scenarios": ["cilium_agent"], "cilium_agent_interval": 1, "cilium_agent_metrics_url": "",
            "report_output_dir": str(tmp_path), "report_fail_on_critical": False})
    finally:
        agent.cilium_agent_state(lab, "node1", "healthy")
    assert run_.rc == 0, run_
    report = json.loads((tmp_path / "triage-report.json").read_text())
    flows = report["details"]["node1"]["cilium_agent"]["dropped_flows"]
    assert [(f["flow"], f["packets"]) for f in flows] == [
        ("198.19.1.10:41000 -> 198.19.2.20:8080 tcp", 5), ("198.19.1.11:53000 -> 198.18.96.10:53 udp", 3),
        ("[2001:db8:1::10]:42000 -> [2001:db8:2::20]:443 tcp", 1)]
    [found] = [f for f in report["findings"] if f["check"] == "cilium.dropped_flows"]
    assert found["host"] == "node1" and found["severity"] == "warning"
    # node1's card, built by the page's script in a real browser: the flows as a table
    import shutil
    import subprocess

    from tests.integration.test_triage import CHROMIUM_FLAGS

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by scripts/bootstrap"
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=%s" % (tmp_path / "profile"), "--dump-dom",
                          (tmp_path / "triage-report.html").as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert ("<td>1201</td><td>198.19.1.10:41000 -&gt; 198.19.2.20:8080 tcp</td><td>5</td>"
            "<td>default/web-5d8f7-abcde</td><td>Policy denied</td>") in dom
