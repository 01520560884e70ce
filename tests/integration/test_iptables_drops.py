"""iptables_drops and the firewall_drops playbook against the lab: DROP rules and policies in
iptables-legacy, iptables-nft and native nftables, with real bounded traffic between node
namespaces so the counters really grow.  Counters are verified independently with
``iptables-*-save -c`` and ``nft -j``; every rule added is removed again."""

from __future__ import annotations

import re

import pytest

from tests.lab.faults import firewall, pods, undone
from tests.lab.faults import routes as route_faults

INTERVAL = 2


@pytest.fixture
def inject(lab):
    with undone(lab, firewall.restore) as inject_:
        yield inject_
    for node in lab.nodes:  # nothing of ours is left (independent readers)
        assert "k8t lab" not in saved(lab, node, "iptables-legacy-save") + saved(lab, node, "iptables-nft-save")
        assert firewall.NATIVE_TABLE not in lab.ns_run(node, ["nft", "list", "tables"]).stdout


def saved(lab, node, tool):
    return lab.ns_run(node, [tool, "-c"]).stdout


def counter(lab, node, tool, pattern):
    """Packets of the first iptables-save -c line matching ``pattern`` (independent reader)."""
    for line in saved(lab, node, tool).splitlines():
        if re.search(pattern, line):
            return int(line[1:line.index(":")])
    raise AssertionError("%s: no line matches %r" % (tool, pattern))


def nft_counter(lab, node, table):
    data = lab.node_json(node, ["nft", "-j", "list", "table", "inet", table])
    for item in data["nftables"]:
        for stmt in item.get("rule", {}).get("expr", []):
            if "counter" in stmt:
                return stmt["counter"]["packets"]
    raise AssertionError("no counter in table %s" % table)


def drops(ansible, host, **args):
    args.setdefault("interval", INTERVAL)
    args.setdefault("node_name", host)
    return ansible.module(host, "iptables_drops", args)[host]


def grown_while(lab, ansible, host, src, dst, read, proto="icmp", port=None, **args):
    """Run the module while ``src`` sends bounded traffic to ``dst``; return (result, independent delta)."""
    before = read()
    # long enough to outlast ansible's start-up on a busy machine; stopped once the module returned
    proc = firewall.traffic_start(lab, src, dst, proto=proto, seconds=INTERVAL + 20, rate=20, port=port)
    try:
        result = drops(ansible, host, **args)
    finally:
        firewall.traffic_stop(proc, now=True)
    return result, read() - before


@pytest.mark.parametrize("host, backend, src", [
    ("node1", "legacy", "node2"),   # pyroute2 node
    ("node2", "nft", "node3"),      # no pyroute2
    ("node3", "nftables", "node1"),  # Python 3.9
])
def test_growing_drop_in_each_backend(lab, ansible, inject, host, backend, src):
    dst = lab.node(host).ip
    info = inject(firewall.drop_rule, node=host, backend=backend, source=lab.node(src).ip,
                  proto="udp" if backend == "nftables" else "icmp", port=5000 if backend == "nftables" else None)
    if backend == "nftables":
        def read():
            return nft_counter(lab, host, info["table"])
    else:
        tool = {"legacy": "iptables-legacy-save", "nft": "iptables-nft-save"}[backend]

        def read():
            return counter(lab, host, tool, r"-A %s .*k8t lab" % info["chain"])
    result, delta = grown_while(lab, ansible, host, src, dst, read, proto=info["proto"], port=info["port"])
    assert delta > 0  # the traffic really hit the rule
    ours = [d for d in result["drops"] if d["backend"] == backend and d["chain"] == info["chain"]]
    assert len(ours) == 1, result["drops"]
    row = ours[0]
    assert 0 < row["packets"] <= delta
    assert row["pps"] > 1
    assert row["owner"] == {"legacy": "kube-proxy", "nft": "calico", "nftables": "other"}[backend]
    found = [f for f in result["findings"] if f["check"] == "iptables.drops_growing"]
    assert found[0]["evidence"]["rule"] == row["rule"] and found[0]["severity"] == "warning"
    assert [b for b in result["backends"] if b["backend"] == backend and b["read"]]


def test_idle_rule_is_a_total_not_growing(lab, ansible, inject):
    info = inject(firewall.drop_rule, node="node2", backend="legacy", source=lab.node("node3").ip)
    firewall.traffic(lab, src="node3", dst=lab.node("node2").ip, seconds=1, rate=10)  # some packets, then silence
    total = counter(lab, "node2", "iptables-legacy-save", r"-A %s .*k8t lab" % info["chain"])
    assert total > 0
    result = drops(ansible, "node2")
    assert counter(lab, "node2", "iptables-legacy-save", r"-A %s .*k8t lab" % info["chain"]) == total
    assert result["drops"] == [] and result["drops_count"] == 0
    assert [f["check"] for f in result["findings"]] == ["iptables.drops"]
    assert [(t["chain"], t["packets_total"]) for t in result["top_totals"]] == [(info["chain"], total)]
    assert result["totals"]["legacy"]["drop_rules"] == 1


def test_drop_policy_on_forward_with_forwarded_traffic(lab, ansible, inject):
    had_mesh = bool(lab.extra.get("pod_mesh"))
    pods.pod_mesh(lab)
    pod = pods.pod(lab, "node1", "fw-a")
    try:
        inject(firewall.drop_policy, node="node1", backend="legacy", chain="FORWARD")
        result, delta = grown_while(
            lab, ansible, "node1", "node2", pod["ip"],
            lambda: int(re.search(r":FORWARD DROP \[(\d+):", saved(lab, "node1", "iptables-legacy-save")).group(1)))
        assert delta > 0
        policy = [d for d in result["drops"] if d["kind"] == "policy"]
        assert [(d["backend"], d["chain"], d["verdict"]) for d in policy] == [("legacy", "FORWARD", "DROP")]
        assert 0 < policy[0]["packets"] <= delta
        checks = set(f["check"] for f in result["findings"])
        assert {"iptables.drops_growing", "iptables.drop_policy"} <= checks
    finally:
        route_faults.restore(lab, {"node": "node1", "undo_pods": ["fw-a"]})
        if not had_mesh:
            for node in lab.nodes:
                lab.ns_run(node, ["ip", "route", "flush", "proto", "static"], check=False)
            lab.remember("pod_mesh", False)


def test_mixed_backends_and_no_double_count(lab, ansible, inject):
    inject(firewall.drop_rule, node="node3", backend="legacy", source=lab.node("node1").ip)
    nft = inject(firewall.drop_rule, node="node3", backend="nft", source=lab.node("node2").ip)
    # both backends really hold rules (independent readers)
    assert "k8t lab" in saved(lab, "node3", "iptables-legacy-save")
    assert "k8t lab" in saved(lab, "node3", "iptables-nft-save")
    result = drops(ansible, "node3", interval=0)
    mixed = [f for f in result["findings"] if f["check"] == "iptables.mixed_backends"]
    assert len(mixed) == 1 and mixed[0]["severity"] == "warning"
    assert mixed[0]["evidence"]["rules"]["legacy"] >= 2 and mixed[0]["evidence"]["rules"]["nft"] >= 2
    # the iptables-nft table is not read again as native nftables
    assert "nftables" not in result["totals"] or result["totals"]["nftables"]["drop_rules"] == 0
    assert result["totals"]["nft"]["drop_rules"] == 1
    assert result["drops"] == [] and nft["chain"] == "cali-fw-lab"


def test_firewall_drops_playbook(lab, ansible, inject):
    inject(firewall.drop_rule, node="node2", backend="nftables", source=lab.node("node1").ip, proto="udp", port=5001)
    proc = firewall.traffic_start(lab, "node1", lab.node("node2").ip, proto="udp", port=5001, seconds=30, rate=50)
    try:
        run = ansible.playbook("playbooks/firewall_drops.yml", extra_vars={"firewall_drops_interval": 3})
    finally:
        firewall.traffic_stop(proc, now=True)
    assert run.rc == 0, run
    by_host = dict((host, {"findings": run.result("Keep the findings of this host", host)["ansible_facts"]["firewall_drops_findings"]})
                   for host in ("node1", "node2", "node3"))
    assert sorted(by_host) == ["node1", "node2", "node3"]
    growing = [f for f in by_host["node2"]["findings"] if f["check"] == "iptables.drops_growing"]
    assert growing and growing[0]["subject"] == "node2 nftables inet k8tlab/input"
    for host in ("node1", "node3"):
        assert [f["check"] for f in by_host[host]["findings"]] == ["iptables.drops"]


@pytest.mark.parametrize("args, text", [
    ({"interval": -1}, "interval=-1.0 is invalid: give a number from 0 to 300 seconds"),
    ({"backends": ["ebtables"]}, "ebtables"),
    ({"warning_pps": 50, "critical_pps": 5}, "warning_pps=50.0 and critical_pps=5.0"),
])
def test_bad_input(lab, ansible, args, text):
    result = drops(ansible, "node2", **args)
    assert result["failed"] and "findings" not in result and text in result["msg"]
