"""A green run is a true run at fleet size: a healthy fleet of 32 nodes (pod mesh, Calico's files, BIRD in a full
mesh with every session Established, a kubelet port, a kubelet log) gives no warning and no critical finding while
every node's checks ran; the same fleet with six faults of six kinds gives six findings, one per fault, each about
its own cause (a node that is down is one finding, not the probes, next hops and SSH failure it causes).

Each fault is confirmed with the kernel's or the daemon's own tools (ip -j neigh, ip -j route, nft, bpftool, ssh,
birdc), not with the collection's modules.  bench/fleet_triage.py --fleet healthy,faults runs the same at 100 and
190 nodes."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, Ansible
from tests.lab import Lab
from tests.lab.core import NEIGH_THRESHOLDS
from tests.lab.faults import arp, bgp, bpf, firewall, healthy

NODES = 32


def thresholds():
    return [int(Path(NEIGH_THRESHOLDS % i).read_text()) for i in (2, 3)]


def test_the_lab_sizes_the_shared_arp_table_and_puts_it_back():
    """Every namespace shares the kernel's ARP table: 40 nodes that talk to each other need about 1,600 entries,
    more than the default 1,024 (at 100 nodes the overflow failed BGP and probes with ENOBUFS)."""
    before = thresholds()
    lab = Lab(nodes=40).up()
    try:
        during = thresholds()
        assert during[1] >= 40 * 40 and during[0] >= 40 * 40 // 2, during
    finally:
        lab.down(quiet=True)
    assert thresholds() == before


@pytest.fixture(scope="module")
def fleet():
    lab = Lab(nodes=NODES).up()
    info = healthy.healthy_fleet(lab)
    arp.bind_vip(lab, "node1", lab.vip(0))
    yield lab, info
    if os.environ.get("K8SNET_KEEP_LAB") != "1":
        lab.down(quiet=True)


def triage(lab, tmp):
    run = Ansible(lab).playbook(ROOT / "playbooks" / "triage.yml", extra_vars={
        "stale_arp_vips": [lab.vip(0)], "report_output_dir": str(tmp), "report_fail_on_critical": False})
    assert run.rc == 0, run
    return json.loads((tmp / "triage-report.json").read_text())


def problems(report):
    return [f for f in report["findings"] if f["severity"] in ("warning", "critical")]


@pytest.fixture(scope="module")
def healthy_report(fleet, tmp_path_factory):
    lab, info = fleet
    return triage(lab, tmp_path_factory.mktemp("healthy"))


def test_the_healthy_fleet_is_healthy_by_the_daemons_own_tools(fleet):
    lab, info = fleet
    assert info["bgp_sessions"] == NODES * (NODES - 1)
    for node in ("node1", "node16", "node32"):
        sessions = bgp.protocols(lab, node)
        assert len(sessions) == NODES - 1 and all(i.strip() == "Established" for s, i in sessions.values()), sessions
        routes_seen = lab.node_json(node, ["ip", "-j", "route", "show", "proto", "static"])
        assert len(routes_seen) == NODES - 1
        listening = lab.node_run(node, ["ss", "-H", "-ltn", "sport", "=", ":10250"], check=False).stdout
        assert lab.node(node).ip + ":10250" in listening


def test_a_healthy_fleet_gives_no_warning_and_every_check_ran(fleet, healthy_report):
    report = healthy_report
    assert problems(report) == []
    assert report["coverage"]["hosts"] == {"controller": 1, "reached": NODES}
    ok = {}
    for f in report["findings"]:
        if f["severity"] == "ok":
            ok.setdefault(f["check"], set()).add(f.get("host"))
    # not green by omission: each node's own checks ran and said ok
    everyone = set("node%d" % i for i in range(1, NODES + 1))
    for check in ("route.mesh", "reach.ok", "bgp.sessions", "iptables.drops", "node.cni_files_ok", "net.pmtu",
                  "conntrack.pressure", "sysctl.ok"):
        assert ok.get(check) == everyone, (check, sorted(everyone - ok.get(check, set())))
    ran = dict((h, set(s for s, r in e["scenarios"].items() if r["status"] == "ran"))
               for h, e in report["hosts"].items() if h != "localhost")
    assert set(ran) == everyone
    for host, scenarios in ran.items():
        assert scenarios >= {"cni", "calico", "pod_network", "connectivity", "firewall_drops", "logs", "pmtu",
                             "conntrack", "sysctl"}, (host, scenarios)
    # the VIP's clients (admin_control_plane) compared their caches with the owner's MAC
    clients = set(n.name for n in fleet[0].group("admin_control_plane"))
    assert clients and all("stale_arp" in ran[c] for c in clients)


@pytest.fixture(scope="module")
def faulty(fleet, healthy_report, tmp_path_factory):
    """Six faults of six kinds, one node each (after the healthy run)."""
    lab, dummy = fleet
    done = healthy.six_faults(lab)
    try:
        report = triage(lab, tmp_path_factory.mktemp("faults"))
    finally:
        firewall.traffic_stop(done.pop("traffic"), now=True)
    return lab, done, report


def test_six_faults_are_six_findings_each_about_its_cause(faulty):
    lab, done, report = faulty
    found = sorted((f["check"], f.get("host"), str(f["subject"])) for f in problems(report))
    assert found == sorted([
        ("arp.stale_entry", "node4", "%s dev eth0" % lab.vip(0)),
        ("bpf.map_full", "node9", done["full"]["path"]),
        ("iptables.drops_growing", "node7", "node7 nft ipv4 filter/cali-fw-lab"),
        ("route.unreachable", "node5", "node6 %s" % lab.node("node6").pod_cidr),
        ("triage.host_unreachable", "node10", "node10"),
        ("triage.host_unreachable", "node11", "node11"),
    ]), json.dumps(problems(report), indent=1)[:3000]
    assert report["coverage"]["hosts"] == {"controller": 1, "reached": NODES - 2, "unreachable": 2}


def test_each_fault_is_confirmed_by_the_kernels_own_tools(faulty):
    lab, done, report = faulty
    [entry] = lab.neighbors("node4", lab.vip(0))
    assert entry["lladdr"] == done["stale"]["mac"]
    hole = lab.node_json("node5", ["ip", "-j", "route", "show", "type", "blackhole"])
    cidr = ipaddress.ip_network(lab.node("node6").pod_cidr)
    assert hole and all(ipaddress.ip_network(r["dst"]).subnet_of(cidr) for r in hole), hole
    dropped = re.findall(r"counter packets (\d+) bytes \d+ drop", lab.node_run("node7", ["nft", "list", "ruleset"]).stdout)
    assert dropped and int(dropped[0]) > 0, dropped
    assert bpf.bpftool_count(lab, "node9", done["full"]["path"]) == done["full"]["max_entries"]
    refused = subprocess.run(["ssh", "-o", "ConnectTimeout=3", "-o", "BatchMode=yes", "-i", str(lab.ssh_key),
                              "root@%s" % lab.node("node10").ip, "true"], capture_output=True, text=True, check=False)
    assert refused.returncode == 255 and "refused" in refused.stderr
    assert lab.ping("node1", lab.node("node11").ip).returncode != 0


def test_a_node_that_is_down_is_one_finding_with_what_the_fleet_saw(faulty):
    lab, done, report = faulty
    [down] = [f for f in report["findings"] if f["check"] == "triage.host_unreachable" and f["subject"] == "node11"]
    # ssh says "Connection timed out" or "No route to host" (once the controller's ARP entry failed): either way
    # the node does not answer, in plain words
    assert "the node does not answer" in down["summary"] and down["evidence"]["ssh_failure"] == "no answer"
    assert "the fleet agrees the node is down or cut off" in down["summary"]
    checks = dict((c["check"], c) for c in down["evidence"]["corroborated_by"])
    assert "connectivity.node_isolated" in checks and checks["reach.unreachable"]["observers"] >= 3
    # nothing else about node11 is left in the findings: its probes and next hops are in the one finding
    about = [f for f in report["findings"] if f is not down and "node11" in str(f["subject"])
             and f["severity"] in ("warning", "critical")]
    assert about == []
    [dead_sshd] = [f for f in report["findings"] if f["check"] == "triage.host_unreachable" and f["subject"] == "node10"]
    assert "refused" in dead_sshd["summary"] and "corroborated_by" not in dead_sshd["evidence"]
