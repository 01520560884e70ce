"""The one-pass node triage against today's scenario roles, on the same lab in the same state.

Faults injected once (tests/lab/faults): a stale ARP entry for a VIP on a client (node3), a
blackhole route over part of node3's pod CIDR on node2, a DROP rule on node2 whose counter
grows (ICMP from node3 the whole time), Cilium LB maps with orphaned backends on node1 and a
full backends map on node2, and Calico's BGP mesh with a dead peer (an address nobody holds)
and a bad-AS pair. Then the scenario roles (tests/integration/playbooks/roles_triage.yml, the
triage as it ran before the one pass) and triage.yml (the one pass) run on the same lab; per host
and scenario, the status, the reason and the findings must be the same sets of
(check, subject, severity), the fleet conclusions the same once, and triage.yml must cost one
module invocation and at most 5 tasks per node.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.lab.faults import arp, bgp, firewall, routes
from tests.lab.faults import bpf as lb

ROOT = Path(__file__).resolve().parents[2]
NODE_SCENARIOS = ["cni", "calico", "cilium_maps", "pod_network", "firewall_drops", "connectivity"]


def _key(found):
    return sorted(set((f["check"], str(f["subject"]), f["severity"]) for f in found))


@pytest.fixture(scope="module")
def faults(lab):
    n1, n2, n3 = lab.nodes[:3]
    vip = lab.vip(3)
    undo_routes, undo_fw, traffic = [], [], None
    info = bgp.bgp_mesh(lab)
    try:
        arp.bind_vip(lab, n1.name, vip)
        arp.stale_neighbor(lab, n3.name, vip, "02:de:ad:00:be:ef")
        undo_routes.append(routes.route_blackhole(lab, n2.name, n3.name))
        undo_fw.append(firewall.drop_rule(lab, n2.name, "legacy", n3.ip))
        lb.cilium_lb_maps(lab, n1.name, orphans=5)
        lb.full_map(lab, n2.name, entries=256)
        stale = bgp.protocol_name(info["stale"])
        for node, peer in ((n1, n2.ip), (n1, n3.ip), (n2, n1.ip), (n3, n1.ip)):
            bgp.wait_for(lab, node.name, bgp.protocol_name(peer), lambda state, text: text.startswith("Established"))
        for node in (n1, n2, n3):
            bgp.wait_for(lab, node.name, stale, lambda state, text: "No route to host" in text)
        # ICMP node3 -> node2 is dropped by node2's rule for as long as both runs last
        traffic = firewall.traffic_start(lab, n3.name, n2.ip, proto="icmp", seconds=400, rate=20)
        time.sleep(1)
        yield {"vip": vip, "stale_peer": info["stale"]}
    finally:
        if traffic is not None:
            firewall.traffic_stop(traffic, now=True)
        for item in undo_fw:
            firewall.restore(lab, item)
        for item in undo_routes:
            routes.restore(lab, item)
        for node in lab.nodes:
            lb.remove_bpf_maps(lab, node.name)
        lab.ns_run(n1.name, ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        lab.ns_run(n3.name, ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)
        bgp.bgp_down(lab)


@pytest.fixture(scope="module")
def both_runs(lab, ansible, faults, tmp_path_factory):
    before, after = tmp_path_factory.mktemp("roles"), tmp_path_factory.mktemp("onepass")
    extra = {"stale_arp_vips": [faults["vip"]], "report_fail_on_critical": False,
             "triage_scenarios": NODE_SCENARIOS + ["stale_arp"], "firewall_drops_interval": 3}
    roles = ansible.playbook(ROOT / "tests" / "integration" / "playbooks" / "roles_triage.yml",
                             extra_vars=dict(extra, report_output_dir=str(before)))
    assert roles.rc == 0, roles
    one = ansible.playbook("k8snet.triage.triage", extra_vars=dict(extra, report_output_dir=str(after)))
    assert one.rc == 0, one
    return (json.loads((before / "triage-report.json").read_text()), one,
            json.loads((after / "triage-report.json").read_text()))


def _pass_results(run):
    results = {}
    for rec in run.results(action="node_pass"):
        results[rec["host"]] = rec["result"]["ansible_facts"]["triage_results"]
    return results


def _fleet(report, scenario):
    return [f for f in report["findings"] if f["scenario"] == scenario and f.get("scope") == "fleet"]


def test_findings_equal_the_scenario_roles_on_every_host(lab, both_runs):
    roles, one, report = both_runs
    compared = 0
    for host in [n.name for n in lab.nodes]:
        for scenario in NODE_SCENARIOS + ["stale_arp"]:
            # the same per-node decision as the roles (triage_cni auto: "not a Cilium node" ...)
            mine, theirs = report["hosts"][host]["scenarios"][scenario], roles["hosts"][host]["scenarios"][scenario]
            assert (mine["status"], mine["reason"]) == (theirs["status"], theirs["reason"]), (host, scenario)
            # what this host showed; the fleet conclusions (scope fleet) are compared below, once
            found = [[f for f in r["findings"] if f["host"] == host and f["scenario"] == scenario and f["scope"] == "host"]
                     for r in (report, roles)]
            assert _key(found[0]) == _key(found[1]), (host, scenario)
            compared += 1
    assert compared == 3 * (len(NODE_SCENARIOS) + 1)
    # the fleet conclusions (the VIP owners', the connectivity matrix's): the same, each once
    for scenario in ("stale_arp", "connectivity"):
        assert _key(_fleet(report, scenario)) == _key(_fleet(roles, scenario)), scenario
        assert len(_fleet(report, scenario)) == len(_key(_fleet(report, scenario)))
    assert report["counts"]["severity"] == roles["counts"]["severity"]
    # the details the HTML report draws travel too (and the controller's: the connectivity matrix)
    nodes = [n.name for n in lab.nodes]
    assert ({h: sorted(d) for h, d in report["details"].items() if h in nodes}
            == {h: sorted(d) for h, d in roles["details"].items() if h in nodes})
    assert report["details"]["localhost"]["connectivity"]["silent_pairs"] is not None


def test_the_faults_are_in_the_findings(lab, both_runs, faults):
    passes = _pass_results(both_runs[1])
    n1, n2, n3 = (n.name for n in lab.nodes[:3])

    def checks(host, scenario, severity=None):
        return set(f["check"] for f in passes[host][scenario]["findings"]
                   if severity is None or f["severity"] == severity)

    assert "arp.stale_entry" in checks(n3, "stale_arp", "critical")
    assert "arp.stale_entry" not in checks(n2, "stale_arp")
    assert any(c.startswith("route.") for c in checks(n2, "pod_network", "critical"))
    assert any(c.startswith("iptables.") for c in checks(n2, "firewall_drops") - checks(n2, "firewall_drops", "ok"))
    assert not checks(n1, "firewall_drops") - checks(n1, "firewall_drops", "ok")
    assert checks(n1, "cilium_maps") - checks(n1, "cilium_maps", "ok")
    assert "bpf.map_full" in checks(n2, "cilium_maps", "critical")
    # the dead peer (an address no node holds) is a stale mesh peer on every node
    for node in (n1, n2, n3):
        stale = [f for f in passes[node]["calico"]["findings"] if f["check"] == "bgp.stale_peer"]
        assert [f["subject"].split(" ")[0] for f in stale] == [faults["stale_peer"]] and stale[0]["severity"] == "critical"


def test_one_task_and_one_module_invocation_per_node(lab, both_runs):
    one = both_runs[1]
    nodes = sorted(n.name for n in lab.nodes)
    ours = [r for r in one.records if r["action"].startswith("k8snet.triage.") and r["status"] != "skipped"]
    per_host = {}
    for rec in ours:
        if rec["action"].endswith("node_pass"):  # one task: parameters, node_triage on the node, record
            per_host.setdefault(rec["host"], []).append(rec)
    assert sorted(per_host) == nodes
    assert all(len(recs) == 1 for recs in per_host.values())
    # the other steps: the credentials probe (no credentials here: answered in the controller's process,
    # no module started, and the API reads skipped), and the VIP owners' pre-read, once per owner (the
    # owners of the play at once, in one task), not per client; on the controller, the report
    # (report_write, an action that runs no module)
    others = sorted(set(r["action"] for r in ours if not r["action"].endswith("node_pass")))
    assert others == ["k8snet.triage.arp_check", "k8snet.triage.kube_credentials_info", "k8snet.triage.report_write"], others
    probe = [r for r in ours if r["action"].endswith("kube_credentials_info")]
    assert [(r["host"], r["result"]["answered_by"], r["result"]["credential_source"]) for r in probe] == [
        ("localhost", "controller", None)], probe
    # the report: its options checked in the first play (validate_only), then written once, both on the controller
    writes = [r for r in ours if r["action"].endswith("report_write")]
    assert [(r["host"], r["result"].get("msg") == "report options valid") for r in writes] == [
        ("localhost", True), ("localhost", False)], writes
    owners = [r for r in ours if r["action"].endswith("arp_check")]
    assert sorted(r["host"] for r in owners) == sorted(n.name for n in lab.group("control_plane")), owners
    assert len(set(r["task"] for r in owners)) == 1
    # tasks per node: what runs for every node (run_once steps run once for the whole fleet)
    recap = dict((line.split()[0], line) for line in one.stdout.split("PLAY RECAP")[1].splitlines() if ":" in line)
    totals = {}
    for name in nodes:
        counts = dict(part.split("=") for part in recap[name].split(":", 1)[1].split())
        totals[name] = sum(int(counts[k]) for k in ("ok", "changed", "failed", "skipped", "unreachable"))
    assert sorted(totals.values())[len(totals) // 2] <= 5, totals  # the bound; it is 1 here
    tasks = {}
    for rec in one.records:
        if rec["host"] in nodes:
            tasks.setdefault(rec["task"], set()).add(rec["host"])
    every_node = [task for task, hosts in tasks.items() if len(hosts) == len(nodes)]
    assert len(every_node) <= 5, every_node
    # the window was paid once: each pass took about the 3 s firewall window, not window + probes
    for recs in per_host.values():
        timing = recs[0]["result"]["timing"]
        assert 3.0 <= timing["seconds"] < 6.0 and timing["cpu_seconds"] > 0, (recs[0]["host"], timing)


def test_api_half_of_cni_runs_once_and_is_published_once(lab, ansible, kube_cluster, tmp_path):
    """With a kubeconfig, node_network_status (the cni scenario's API half) and kube_network_info
    run once on the controller; their findings are fleet results, not copied onto every node, and
    equal the cni role's on the same API: the real control plane (tests/lab/cluster.py) with the
    fixtures loaded through it (tests/lab/cluster_objects.py)."""
    from tests.lab.cluster_objects import RealApi

    api = RealApi(kube_cluster, "cluster.yaml", "cni.yaml", "node4.yaml")
    kubeconfig = str(api.kubeconfig())
    play = tmp_path / "node_pass.yml"
    play.write_text(
        "- name: One pass per node\n"
        "  hosts: k8s_nodes\n"
        "  gather_facts: false\n"
        "  module_defaults:\n"
        "    group/k8snet.triage.kube:\n"
        "      kubeconfig: '{{ triage_kubeconfig }}'\n"
        "  tasks:\n"
        "    - name: Node pass\n"
        "      ansible.builtin.include_role:\n"
        "        name: k8snet.triage.node_pass\n")
    one = ansible.playbook(play, extra_vars={"triage_kubeconfig": kubeconfig, "triage_scenarios": ["cni"]})
    assert one.rc == 0, one
    role = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": kubeconfig})
    assert role.rc == 0, role
    api_nodes = sorted(n["metadata"]["name"] for n in kube_cluster.kubectl_json("get", "nodes")["items"])
    assert api_nodes == ["node1", "node2", "node3", "node4"]
    api_runs = one.results(action="node_network_status")
    assert len(api_runs) == 1 and api_runs[0]["status"] == "ok"
    publish = one.results(task="Publish the fleet results once")
    assert len(publish) == 1
    fleet = publish[0]["result"]["ansible_facts"]["node_pass_fleet_results"]
    expected_api = (role.results(action="node_network_status")[0]["result"]["findings"]
                    + role.results(action="webhook_deadlock")[0]["result"]["findings"])
    assert fleet["cni"]["status"] == "ran" and _key(fleet["cni"]["findings"]) == _key(expected_api)
    # the API's nodes, as kubectl lists them, that are inventory hosts are the hosts the API findings concern
    # (node4 is the API's alone: at 5,000 nodes, the cluster's names on every finding were 70 kB each)
    inventory = sorted(n.name for n in lab.nodes)
    assert inventory == ["node1", "node2", "node3"]
    assert fleet["cni"]["hosts"] == [n for n in api_nodes if n in inventory]
    assert fleet["kube"]["status"] == "ran"
    # the role is the same pass narrowed to cni: its record of each node holds the node's own files' findings
    node_side = dict((r["host"], r["result"]["ansible_facts"]["triage_results"]["cni"]["findings"])
                     for r in role.results(action="node_pass"))
    assert sorted(node_side) == ["node1", "node2", "node3"]
    for host, scenarios in _pass_results(one).items():
        assert list(scenarios) == ["cni"]
        # the node's own files only: the API findings are not copied onto each node
        assert _key(scenarios["cni"]["findings"]) == _key(node_side[host])
