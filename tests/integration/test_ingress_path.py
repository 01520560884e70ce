"""Ingress bisection, egress SNAT, packet_capture and reachability over real SSH in the lab.

The path: client namespace (outside the cluster, /usr/bin/python3) -> VIP on node1 (LB node,
venv Python) -> DNAT to the web pod behind node2 (no pyroute2) -> the pod's lxc veth.  Every
break is injected for real and checked with an independent reader (curl from the client, the
switch's nft counter, iptables-save, ip -j route/neigh, tcpdump) besides the role's verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.lab.faults import path as lab_path
from tests.lab.faults import seesaw

ROLE = "k8snet.triage.ingress_path : "


@pytest.fixture(scope="module")
def lb(lab):
    info = lab_path.loadbalancer(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    (lab.workdir / "pcaps").mkdir(exist_ok=True)
    yield info
    lab_path.path_repair(lab)


def curl_from_client(lab, lb):
    return lab.run(["ip", "netns", "exec", lb["client_ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", f"http://{lb['vip']}:{lb['vip_port']}/"], check=False).stdout


def independent_evidence(lab, lb, name):
    """What an operator's own tools show for each break (not our modules)."""
    if name == "break_arp":
        lab.run(["ip", "netns", "exec", lb["client_ns"], "ping", "-c", "1", "-W", "1", lb["vip"]], check=False)
        entries = json.loads(lab.run(["ip", "-n", lb["client_ns"], "-j", "neigh", "show", "to", lb["vip"]]).stdout or "[]")
        return all("lladdr" not in e for e in entries)
    if name == "break_dnat":
        return "k8t-path-dnat" not in lab.ns_run(lb["lb"], ["iptables-save", "-t", "nat"]).stdout
    if name == "break_between_nodes":
        table = json.loads(lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "-j", "list", "table", "bridge",
                                    lab_path.NAT_COMMENT]).stdout)
        counters = [item["counter"]["packets"] for entry in table["nftables"] if "rule" in entry
                    for item in entry["rule"]["expr"] if "counter" in item]
        return counters and counters[0] > 0
    if name == "break_pod_route":
        return lab.ns_run(lb["worker"], ["ip", "-j", "route", "get", lb["pod_ip"]], check=False).returncode != 0
    return True


CASES = [
    ("none", None, "ingress.ok"),
    ("break_arp", "arp", "ingress.arp"),
    ("break_dnat", "nat", "ingress.nat"),
    ("break_between_nodes", "between_nodes", "ingress.between_nodes"),
    ("break_pod_route", "pod", "ingress.pod_forwarding"),
]


@pytest.mark.parametrize("name, vanished, check", CASES, ids=[c[0] for c in CASES])
def test_bisection_finds_the_broken_hop(lab, ansible, lb, name, vanished, check):
    if name != "none":
        getattr(lab_path, name)(lab)
    try:
        extra = {"ingress_path_lb_nodes": [lb["lb"]], "ingress_path_worker": lb["worker"], "ingress_path_vip": lb["vip"],
                 "ingress_path_port": lb["vip_port"], "ingress_path_pod_ip": lb["pod_ip"],
                 "ingress_path_pod_port": lb["pod_port"], "ingress_path_pcap_dir": str(lab.workdir / "pcaps")}
        if name == "none":  # also fetch the pcaps to the controller
            extra["ingress_path_fetch_dir"] = str(lab.workdir / "fetched")
        run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=lb["inventory"])
        assert run.rc == 0, run
        assert (curl_from_client(lab, lb) == "200") == (name == "none")
        assert independent_evidence(lab, lb, name)
    finally:
        lab_path.path_repair(lab)
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    assert bisect["vanished_at"] == vanished, bisect["hops"]
    facts = run.result(ROLE + "Record the findings of this host", "client")["ansible_facts"]
    [finding] = facts["ingress_path_findings"]
    assert finding["check"] == check
    for node in ("node1", "node2", "node3"):
        assert run.result(ROLE + "Record the findings of this host", node)["ansible_facts"]["ingress_path_findings"] == []
    # every hop's capture stopped early on the stop file, and the pcaps were removed
    for host in ("client", "node1", "node2"):
        capture = run.result(ROLE + "Collect the captures", host)
        assert capture["stopped_by_file"] is True and capture["seconds"] < 60
    assert list((lab.workdir / "pcaps").iterdir()) == []
    # and every hop's async job status file (~/.ansible_async) is gone too
    for host in ("client", "node1", "node2"):
        started = run.result(ROLE + "Start the capture on this hop", host)
        assert started["results_file"] and not Path(started["results_file"]).exists(), started["results_file"]
    if name == "none":  # the fetched client pcap, read by tcpdump itself
        [pcap] = (lab.workdir / "fetched" / "client").rglob("*.pcap")
        text = subprocess.run(["tcpdump", "-r", str(pcap), "-nn"], capture_output=True, text=True, check=True).stdout
        assert "> %s.80: Flags [S]" % lb["vip"] in text
    print("\n%s: %s\n  hops %s" % (name, finding["summary"], [(h["hop"], h["packets"]) for h in bisect["hops"]]))


def test_packet_capture_on_python39_node_matches_tcpdump(lab, ansible, lb):
    """Probes sent as soon as `listening` appears are all captured (the pcap itself exists earlier)."""
    private = lab.workdir / "pcaps" / "node3"
    private.mkdir(mode=0o700)
    try:
        pcap, stop, listening = private / "capture.pcap", private / "stop", private / "listening"
        out = {}
        worker = threading.Thread(target=lambda: out.update(ansible.module("node3", "packet_capture", {
            "interfaces": ["eth0"], "hosts": [lab.node("node1").ip], "protocol": "icmp", "duration": 30,
            "work_dir": str(private)})))
        worker.start()
        deadline = time.time() + 30
        while not listening.exists() and time.time() < deadline:
            time.sleep(0.02)
        assert listening.exists(), "the capture never said it listens"
        assert lab.ping("node1", lab.node("node3").ip, count=3).returncode == 0
        stop.touch()
        worker.join(60)
        res = out["node3"]
        assert res["stopped_by_file"] is True and res["linktype"] == 276 and res["pcap_path"] == str(pcap)
        assert oct(os.stat(pcap).st_mode & 0o777) == oct(0o600)
        assert res["filter"] == "icmp and (host %s)" % lab.node("node1").ip
        assert res["interfaces"] == {"eth0": {"in": 3, "out": 3}}
        lines = subprocess.run(["tcpdump", "-r", str(pcap), "-nn"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        assert len(lines) == res["total"] == 6
        assert sum(1 for line in lines if "echo request" in line) == 3
    finally:
        shutil.rmtree(private, ignore_errors=True)


@pytest.mark.parametrize("bad, message", [
    ({"interfaces": ["eth9"]}, "no interface eth9 on this host"),
    ({"interfaces": ["eth0"], "hosts": ["198.18.0.1 or port 22"]}, "hosts[0]='198.18.0.1 or port 22' is invalid"),
    ({"interfaces": ["eth0"], "ports": [53], "protocol": "icmp"}, "protocol=icmp, which has no ports"),
    ({"interfaces": ["eth0"], "duration": 0}, "duration=0.0 is invalid: give a number more than 0 and at most 300"),
    ({"interfaces": ["eth0"], "route_to": ["web-pod"]}, "route_to[0]='web-pod' is invalid"),
    ({"interfaces": ["eth0"], "work_dir": "/nonexistent/dir"}, "work_dir /nonexistent/dir: No such file or directory"),
    ({"interfaces": ["eth0"], "work_dir": "/var/tmp"}, "work_dir /var/tmp has mode 1777"),
])
def test_packet_capture_bad_input(lab, ansible, lb, bad, message):
    res = ansible.module("node2", "packet_capture", bad)["node2"]
    assert "findings" not in res and message in res["msg"], res.get("msg")
    assert list((lab.workdir / "pcaps").iterdir()) == []


def test_missing_cap_net_raw_is_named(lab, ansible, lb, tmp_path):
    """The module runs under a Python whose bounding set lacks CAP_NET_RAW (setpriv)."""
    python = lab.workdir / "python3-without-cap-net-raw"
    python.write_text("#!/bin/sh\nexec setpriv --bounding-set=-net_raw --inh-caps=-net_raw /usr/bin/python3 \"$@\"\n")
    python.chmod(0o755)
    playbook = tmp_path / "nocap.yml"
    playbook.write_text(
        "- hosts: node2\n  gather_facts: false\n"
        "  vars:\n    ansible_python_interpreter: %s\n"
        "  tasks:\n"
        "    - name: capture\n      k8snet.triage.packet_capture: {interfaces: [eth0], duration: 1}\n      ignore_errors: true\n"
        "    - name: icmp\n      k8snet.triage.reachability: {targets: [{address: %s}], probes: [icmp]}\n"
        "      ignore_errors: true\n" % (python, lab.node("node1").ip))
    run = ansible.playbook(playbook)
    assert "CAP_NET_RAW" in run.result("capture", "node2")["msg"]
    assert "become: true" in run.result("capture", "node2")["msg"]
    assert "CAP_NET_RAW" in run.result("icmp", "node2")["msg"]


def observed_source(lab, lb, port=9):
    """Source address the client sees for a connect from the pod (tcpdump on the client, not our module)."""
    pcap = lab.workdir / "client-observed.pcap"
    proc = subprocess.Popen(["ip", "netns", "exec", lb["client_ns"], "timeout", "10", "tcpdump", "-i", "eth0", "-nn", "-U",
                             "-c", "1", "-w", str(pcap), "tcp", "and", "dst", "port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not pcap.exists() and time.time() < deadline:
        time.sleep(0.05)
    lab.run(["ip", "netns", "exec", lb["pod_ns"], lab.python, "-c",
             "import socket\ntry: socket.create_connection(('%s', %d), timeout=1)\nexcept OSError: pass" % (lb["client"], port)])
    proc.wait(15)
    text = subprocess.run(["tcpdump", "-r", str(pcap), "-nn"], capture_output=True, text=True, check=True).stdout
    pcap.unlink()
    return text.split(" IP ")[1].split(" > ")[0].rsplit(".", 1)[0]


@pytest.mark.parametrize("broken", [False, True], ids=["masquerade", "no_masquerade"])
def test_egress_source_address(lab, ansible, lb, broken):
    if broken:
        lab_path.break_masquerade(lab, lb["worker"])
    try:
        expected_source = lb["pod_ip"] if broken else lab.node(lb["worker"]).ip
        assert observed_source(lab, lb) == expected_source
        extra = {"egress_node": lb["worker"], "egress_pod_ip": lb["pod_ip"], "egress_pod_pid": lb["pod_pid"],
                 "egress_target": lb["client"], "egress_target_port": 9, "egress_pcap_dir": str(lab.workdir / "pcaps")}
        run = ansible.playbook("k8snet.triage.egress", extra_vars=extra)
        assert run.rc == 0, run
    finally:
        lab_path.masquerade(lab)
    [finding] = run.result("k8snet.triage.egress : Record the findings of this host", lb["worker"])["ansible_facts"]["egress_findings"]
    assert finding["check"] == ("egress.no_snat" if broken else "egress.ok")
    # the source address is what matters; without SNAT no reply comes back, so a SYN may be
    # retransmitted within the capture: at least the two probes, all from that one source
    sources = finding["evidence"]["sources"]
    assert list(sources) == [expected_source] and sources[expected_source] >= 2


def test_reachability_from_a_pod_netns_and_on_python39(lab, ansible, lb):
    res = ansible.module("node2", "reachability", {"targets": [{"address": lb["client"], "port": 9}], "probes": ["tcp", "icmp"],
                                                   "netns_pid": lb["pod_pid"], "count": 1})["node2"]
    [row] = res["targets"]
    assert row["tcp"]["status"] == "refused" and row["icmp"]["received"] == 1
    assert res["findings"][0]["check"] == "reach.port_closed" and res["findings"][0]["subject"] == lb["client"]
    res = ansible.module("node3", "reachability", {"targets": [{"address": "198.18.%d.99" % (lab.slot * 32), "name": "ghost"},
                                                               {"address": lab.node("node1").ip, "name": "node1"}],
                                                   "probes": ["icmp", "tcp", "arp"], "count": 1})["node3"]
    rows = dict((r["name"], r) for r in res["targets"])
    assert rows["ghost"]["arp"]["status"] == "no_answer" and rows["node1"]["arp"]["macs"] == [lab.node("node1").mac]
    assert [f["check"] for f in res["findings"]] == ["reach.unreachable"] and res["findings"][0]["layer"] == "L2"
    assert res["answered"] == ["node1"] and res["silent"] == ["ghost"]


def test_connectivity_matrix_partial_drop(lab, ansible, lb):
    rule = ["INPUT", "-s", lab.node("node1").ip, "-p", "tcp", "--dport", "22", "-m", "comment", "--comment", "k8t-path-conn",
            "-j", "DROP"]
    icmp = ["INPUT", "-s", lab.node("node1").ip, "-p", "icmp", "-m", "comment", "--comment", "k8t-path-conn", "-j", "DROP"]
    run = ansible.playbook("k8snet.triage.connectivity", extra_vars={"connectivity_tcp_port": 22})
    assert run.rc == 0, run
    matrix = run.result("k8snet.triage.connectivity : Record the findings of this host and the fleet matrix",
                        "node1")["ansible_facts"]["connectivity_matrix"]
    assert len(matrix["pairs"]) == 6 and matrix["silent_pairs"] == []
    for r in (rule, icmp):
        lab.ns_run("node3", ["iptables", "-w", "-I", *r])
    try:
        assert lab.ping("node1", lab.node("node3").ip).returncode != 0 and lab.ping("node2", lab.node("node3").ip).returncode == 0
        full = ansible.playbook("k8snet.triage.connectivity", extra_vars={"connectivity_tcp_port": 22})
        sampled = ansible.playbook("k8snet.triage.connectivity",
                                   extra_vars={"connectivity_tcp_port": 22, "connectivity_max_peers": 1})
    finally:
        for r in (rule, icmp):
            lab.ns_run("node3", ["iptables", "-w", "-D", *r])
    assert full.rc == 0 and sampled.rc == 0, (full, sampled)
    task = "k8snet.triage.connectivity : Record the findings of this host and the fleet matrix"
    facts = dict(full.result(task, "node1")["ansible_facts"], **full.result("Keep the findings of this host", "node1")["ansible_facts"])
    [seen] = facts["connectivity_findings"]
    assert (seen["check"], seen["subject"], seen["layer"]) == ("reach.unreachable", "node3", "L3")
    assert "answers ARP" in seen["summary"]  # layer 2 works, the firewall drops ICMP and TCP
    assert [(f["check"], f["subject"]) for f in facts["connectivity_matrix"]["findings"]] == [("connectivity.partial", "node3")]
    assert full.result("Keep the findings of this host", "node2")["ansible_facts"]["connectivity_findings"][0]["check"] == "reach.ok"
    # one peer per node (stride 2 on a ring of 3): node1 -> node3, node2 -> node1, node3 -> node2
    facts = sampled.result(task, "node1")["ansible_facts"]["connectivity_matrix"]
    assert sorted((p["from"], p["to"]) for p in facts["pairs"]) == [("node1", "node3"), ("node2", "node1"), ("node3", "node2")]
    assert [(f["check"], f["subject"]) for f in facts["findings"]] == [("connectivity.node_isolated", "node3")]


@pytest.mark.parametrize("broken", [False, True], ids=["forwarding", "not-forwarding"])
def test_a_direct_server_return_lb_is_never_called_nat(lab, ansible, lb, broken):
    """Seesaw (GDC's bundled LB) forwards the VIP's packets without translating them (IPVS DR): with
    ingress_path_lb_mode dsr the walk expects the VIP on the LB node's way out and on the worker's way in, and a
    LB node that stops forwarding is ingress.lb_forward, not ingress.nat."""
    lab_path.dsr_loadbalancer(lab)
    try:
        if broken:
            lab_path.break_dsr_forward(lab)
        # independently: the client gets the page only while the LB node forwards; the LB node has no NAT rule
        assert (curl_from_client(lab, lb) == "200") == (not broken)
        assert "k8t-path-dnat" not in lab.ns_run(lb["lb"], ["iptables-save", "-t", "nat"]).stdout
        extra = {"ingress_path_lb_nodes": [lb["lb"]], "ingress_path_worker": lb["worker"], "ingress_path_vip": lb["vip"],
                 "ingress_path_port": lb["vip_port"], "ingress_path_pod_ip": lb["pod_ip"],
                 "ingress_path_pod_port": lb["pod_port"], "ingress_path_pcap_dir": str(lab.workdir / "pcaps"),
                 "ingress_path_lb_mode": "dsr"}
        run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=lb["inventory"])
        nat = ansible.playbook("k8snet.triage.ingress_path", extra_vars=dict(extra, ingress_path_lb_mode="nat"),
                               inventory=lb["inventory"])
    finally:
        lab_path.dsr_repair(lab)
    assert run.rc == 0 and nat.rc == 0, (run, nat)
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    hops = dict((h["hop"], h["packets"]) for h in bisect["hops"])
    [found] = run.result(ROLE + "Record the findings of this host", "client")["ansible_facts"]["ingress_path_findings"]
    if broken:
        assert bisect["vanished_at"] == "forward" and found["check"] == "ingress.lb_forward", bisect
        assert hops["lb_in"] > 0 and hops["lb_forwarded"] == 0
    else:
        assert bisect["vanished_at"] is None and found["check"] == "ingress.ok", bisect
        assert hops["lb_forwarded"] > 0 and hops["worker_in"] > 0 and hops["pod_veth"] > 0
    assert "lb_translated" not in hops
    # the same path walked as a NAT load balancer blames the LB node for not translating: what dsr avoids
    [wrong] = nat.result(ROLE + "Record the findings of this host", "client")["ansible_facts"]["ingress_path_findings"]
    assert wrong["check"] == "ingress.nat"


def seesaw_inventory(lb, tmp_path, hosts=("node1", "node3")):
    """The path's inventory with the Seesaw pair's group (here lab nodes; in GDC its own VMs)."""
    data = json.loads(Path(lb["inventory"]).read_text())
    data["all"]["children"]["seesaw_nodes"] = {"hosts": dict((h, {}) for h in hosts)}
    path = tmp_path / "seesaw-inventory.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_behind_a_seesaw_pair_its_master_is_the_lb_node_with_nothing_typed(lab, ansible, lb, tmp_path):
    """S004-4 / S004-9: node1 is the Seesaw master (VRRP adverts, gratuitous ARPs for the VIP: tests/lab/faults/seesaw.py)
    and forwards the VIP by direct server return. Neither ingress_path_lb_mode nor ingress_path_lb_nodes is given:
    the role judges the pair on the group's hosts, takes the master as the LB node and walks DSR. Then a master
    that announces another VIP only: seesaw.vip_not_announced joins the path's findings and the walk is not DSR.
    Independent readers: curl from the client, the emitter's own count of what it sent."""
    lab_path.dsr_loadbalancer(lab)
    extra = {"ingress_path_worker": lb["worker"], "ingress_path_vip": lb["vip"], "ingress_path_port": lb["vip_port"],
             "ingress_path_pod_ip": lb["pod_ip"], "ingress_path_pod_port": lb["pod_port"],
             "ingress_path_pcap_dir": str(lab.workdir / "pcaps"), "seesaw_window": 3.5, "seesaw_garp_interval": 1.0}
    inventory = seesaw_inventory(lb, tmp_path)
    try:
        seesaw.seesaw_master(lab, "node1", vips=[lb["vip"]], advert=0.5, garp=1.0)
        assert curl_from_client(lab, lb) == "200"
        run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=inventory)
        sent = seesaw.sent(lab, "node1")
        seesaw.seesaw_master(lab, "node1", vips=[lab.vip(9)], advert=0.5, garp=1.0)
        other = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=inventory)
    finally:
        seesaw.seesaw_stop(lab, "node1")
        lab_path.dsr_repair(lab)
    assert run.rc == 0 and other.rc == 0, (run, other)
    assert sent["vrrp"] >= 6 and sent["garp"] >= 3, sent
    # the pair was judged on its two hosts only, with this VIP as one its master must announce
    captured = sorted(r["host"] for r in run.results(task="k8snet.triage.seesaw : Capture the pair's VRRP advertisements "
                                                          "and gratuitous ARPs on each load-balancer node"))
    assert captured == ["node1", "node3"]
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    hops = dict((h["hop"], h["packets"]) for h in bisect["hops"])
    assert bisect["vanished_at"] is None and hops["lb_forwarded"] > 0 and "lb_translated" not in hops, bisect
    found = dict((f["check"], f) for f in run.result(ROLE + "Record the findings of this host", "client")[
        "ansible_facts"]["ingress_path_findings"])
    assert sorted(found) == ["ingress.ok", "seesaw.pair"], found
    assert found["ingress.ok"]["evidence"]["lb_mode"] == "dsr" and found["ingress.ok"]["evidence"]["lb_nodes"] == ["node1"]
    assert found["ingress.ok"]["evidence"]["seesaw_master"] == "node1"
    assert found["seesaw.pair"]["evidence"]["expected"] == [lb["vip"]]
    # the master announces another VIP only: said, and the path is not taken through it
    found = dict((f["check"], f) for f in other.result(ROLE + "Record the findings of this host", "client")[
        "ansible_facts"]["ingress_path_findings"])
    missing = found["seesaw.vip_not_announced"]
    assert missing["severity"] == "critical" and missing["subject"] == "node1"
    assert missing["evidence"]["not_announced"] == [lb["vip"]] and lab.vip(9) in missing["summary"]
    ingress = [f for f in found.values() if f["check"].startswith("ingress.")]
    assert ingress and all(f["evidence"]["lb_mode"] == "nat" for f in ingress)
