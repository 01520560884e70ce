"""One host's mistake is that host's: a bad inventory variable on one node fails that node alone, with a
finding naming the variable, its value (escaped) and the fix; the other nodes leave it out of the peer
lists that need that variable, say so in their record, and are checked (issue 27).

Before, every pass carried every peer: one bad k8s_pod_cidr failed every node scenario on every host.

The fleet's API reads go to the real control plane (tests/lab/cluster.py); nothing here uses the API stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT

SCENARIOS = ["cni", "pod_network", "connectivity"]
PASS = "One pass per host - its checks built on the controller, run on the node, and recorded"


@pytest.mark.parametrize("variable, value, shown", [
    ("k8s_pod_cidr", "198.19.98.0/33", "k8s_pod_cidr='198.19.98.0/33' is invalid"),
    ("k8s_node_name", "node1\nkube-system", "k8s_node_name='node1\\nkube-system' is invalid"),
])
def test_one_hosts_bad_variable_fails_that_host_only(lab, ansible, tmp_path, variable, value, shown):
    data = json.loads(Path(lab.inventory_path).read_text())
    data["all"]["children"]["k8s_nodes"]["hosts"]["node1"][variable] = value
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps(data))
    out = tmp_path / "report"
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", inventory=inventory,
                           extra_vars={"triage_scenarios": SCENARIOS, "report_output_dir": str(out)})
    # the bad variable is critical: the run fails, after the report
    assert run.rc != 0, run
    report = json.loads((out / "triage-report.json").read_text())
    hosts = report["hosts"]
    assert hosts["node1"]["status"] == "failed", hosts["node1"]
    [bad] = [f for f in report["findings"] if f["check"] == "triage.bad_host_variable"]
    assert bad["host"] == "node1" and bad["severity"] == "critical" and bad["evidence"]["variable"] == variable
    assert shown in bad["summary"] and "\n" not in bad["summary"] and variable in bad["remediation"], bad
    # the other nodes were checked: every scenario ran there (read from the pass's own task results too)
    for host in ("node2", "node3"):
        assert hosts[host]["status"] == "reached", hosts[host]
        assert {name: hosts[host]["scenarios"][name]["status"] for name in SCENARIOS} == dict.fromkeys(SCENARIOS, "ran")
        assert shown in hosts[host]["peers_left_out"]["node1"], hosts[host]
        task = run.result(PASS, host)
        assert task["host_status"]["status"] == "reached" and set(task["scenarios"].values()) == {"ran"}, task
    failed = [(r["host"], name) for r in run.results(task=PASS) for name, status in r["result"]["scenarios"].items()
              if status == "failed"]
    assert sorted(failed) == [("node1", name) for name in sorted(SCENARIOS)], failed  # 3, not 3 x 3
    # the peers left out are said once for the fleet, naming the lists
    [note] = [f for f in report["findings"] if f["check"] == "triage.peers_left_out"]
    assert note["subject"] == "node1" and "pod_network peers" in note["summary"], note
    # node1's address is fine: the others still probed it, and its real MAC answered their ARP probes
    mac = data["all"]["children"]["k8s_nodes"]["hosts"]["node1"]["lab_mac"]
    probed = dict((f["host"], f["evidence"]["arp"]["macs"]) for f in report["findings"]
                  if f["check"].startswith("reach.") and f["subject"] == "node1")
    assert probed == {"node2": [mac], "node3": [mac]}, report["findings"]
    # the HTML carries the same report
    html = (out / "triage-report.html").read_text()
    assert "triage.bad_host_variable" in html and "triage.peers_left_out" in html


def test_a_bad_node_name_leaves_the_fleets_api_reads_alone(lab, ansible, kube_cluster, tmp_path):
    """The agents' logs and the nodes' events are read once for the fleet, by the nodes' Kubernetes
    names: node1's bad k8s_node_name is left out of that read instead of failing it for every node. The reads go to
    the real API server (cluster.yaml's nodes loaded into it); its audit log shows them answered."""
    from tests.lab.cluster_objects import RealApi

    api = RealApi(kube_cluster, "cluster.yaml")
    data = json.loads(Path(lab.inventory_path).read_text())
    data["all"]["children"]["k8s_nodes"]["hosts"]["node1"]["k8s_node_name"] = "node1\nkube-system"
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps(data))
    before = len(api.requests)
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", inventory=inventory, extra_vars={
        "triage_scenarios": ["cni", "logs"], "triage_api_scenarios": [], "report_output_dir": str(tmp_path),
        "triage_kubeconfig": str(api.kubeconfig())})
    read = run.result("Read the network agents' pod logs and events, and the nodes' events, once", "node1")
    assert not read.get("failed") and "findings" in read, read
    assert read["invocation"]["module_args"]["nodes"] == ["node2", "node3"], read["invocation"]
    sent = api.requests[before:]
    node_events = [r for r in sent if r["path"] == "/api/v1/namespaces/default/events"
                   and r["query"].get("fieldSelector") == "involvedObject.kind=Node"]
    assert node_events and {r["code"] for r in node_events} == {200}, sent
    assert not [r for r in sent if any("\n" in v for v in list(r["query"].values()) + r["parts"])], sent
    report = json.loads((tmp_path / "triage-report.json").read_text())
    assert report["hosts"]["localhost"]["scenarios"]["logs"]["status"] == "ran", report["hosts"]["localhost"]
    assert report["hosts"]["node1"]["status"] == "failed"
    assert {h: report["hosts"][h]["scenarios"]["logs"]["status"] for h in ("node2", "node3")} == \
        {"node2": "ran", "node3": "ran"}
