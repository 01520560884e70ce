"""conntrack_check, the conntrack playbook and the one pass against the lab: a node's conntrack table
driven past the warning ratio, then full, with real UDP flows to a peer node (the count is kept per
network namespace; nf_conntrack_max is the kernel's and cannot be lowered inside one, so the table is
filled).  Every figure is checked against the kernel's own: nf_conntrack_count / _max and the summed
rows of /proc/net/stat/nf_conntrack, read with cat in the node's namespace."""

from __future__ import annotations

import pytest

from tests.lab.faults import conntrack, undone


@pytest.fixture
def inject(lab):
    with undone(lab, conntrack.restore) as inject_:
        yield inject_
    for node in lab.nodes:  # the tables are empty again and our rules gone (independent readers)
        assert conntrack.read(lab, node)["count"] < 1000
        assert conntrack.NFT_TABLE not in lab.ns_run(node, ["nft", "list", "tables"]).stdout


def check(ansible, host, **args):
    args.setdefault("node_name", host)
    result = ansible.module(host, "conntrack_check", args)[host]
    assert not result["failed"], result
    return result


def test_table_past_the_warning_ratio_then_full(lab, ansible, inject):
    node2, node3 = lab.node("node2"), lab.node("node3")
    before = check(ansible, "node2", interval=0)
    [f] = before["findings"]
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "ok")
    assert before["top_pairs"] is None  # not read below the warning ratio

    inject(conntrack.conntrack_track, node="node2")
    limit = conntrack.read(lab, node2)["max"]
    inject(conntrack.conntrack_fill, node="node2", dst=node3.ip, entries=int(limit * 0.8))
    kernel = conntrack.read(lab, node2)
    assert kernel["count"] >= limit * 0.8
    result = check(ansible, "node2", interval=1)
    [f] = result["findings"]
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "warning")
    after = conntrack.read(lab, node2)
    # the module's count is the kernel's (between the two independent reads around it)
    assert after["count"] - 1000 <= result["usage"]["count"] <= kernel["count"] + 1000
    assert result["usage"]["max"] == limit == kernel["max"]
    top = result["top_pairs"]
    assert top["reader"] == "proc"
    assert top["pairs"][0]["src"] == node2.ip and top["pairs"][0]["dst"] == node3.ip
    assert top["pairs"][0]["count"] >= limit * 0.79
    assert "%s -> %s" % (node2.ip, node3.ip) in f["summary"] and "nf_conntrack_max" in f["remediation"]

    # full: the kernel evicts unreplied flows to make room (early_drop) and keeps the count just below max
    inject(conntrack.conntrack_fill, node="node2", dst=node3.ip, entries=limit + 1)
    kernel = conntrack.read(lab, node2)
    assert kernel["count"] >= limit - max(64, limit // 1000) and kernel["stats"]["early_drop"] > 0
    result = check(ansible, "node2", interval=0)
    [f] = result["findings"]
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "critical")
    assert result["stats"]["early_drop"] >= kernel["stats"]["early_drop"] > 0
    assert f["evidence"]["counters"]["early_drop"] == result["stats"]["early_drop"]

    # a node whose table holds little is ok, from the same kernel counters
    [f] = check(ansible, "node3", interval=0)["findings"]
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "ok")


def test_drops_growing_in_the_window_are_table_full(lab, ansible, inject):
    node1, node3 = lab.node("node1"), lab.node("node3")
    inject(conntrack.conntrack_track, node="node1")
    limit = conntrack.read(lab, node1)["max"]
    inject(conntrack.conntrack_fill, node="node1", dst=node3.ip, entries=limit + 1)
    # new flows keep coming while the module samples its window: the kernel evicts to admit them
    proc = conntrack.fill_start(lab, "node1", node3.ip, seconds=6)
    try:
        result = check(ansible, "node1", interval=3)
    finally:
        proc.wait(timeout=30)
    [f] = result["findings"]
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "critical")
    assert result["window"]["delta"]["early_drop"] > 0
    assert "early_drop +" in f["summary"]
    kernel = conntrack.read(lab, node1)
    assert kernel["stats"]["early_drop"] >= result["window"]["after"]["early_drop"]


def test_playbook_and_one_pass(lab, ansible, inject):
    node1, node3 = lab.node("node1"), lab.node("node3")
    inject(conntrack.conntrack_track, node="node1")
    limit = conntrack.read(lab, node1)["max"]
    inject(conntrack.conntrack_fill, node="node1", dst=node3.ip, entries=int(limit * 0.92))
    run = ansible.playbook("k8snet.triage.conntrack", {"conntrack_interval": 0})
    assert run.rc == 0, run
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in run.results(task="Keep the findings of this host"))
    assert [(f["check"], f["severity"]) for f in facts["node1"]["conntrack_findings"]] == [
        ("conntrack.pressure", "critical")]
    assert facts["node1"]["conntrack_details"]["usage"]["max"] == limit
    assert [f["severity"] for f in facts["node3"]["conntrack_findings"]] == ["ok"]
    # node2 was full in the first test and is emptied now: its counters since then still say so, as info
    [f] = facts["node2"]["conntrack_findings"]
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "info")
    assert "early_drop %d" % conntrack.read(lab, "node2")["stats"]["early_drop"] in f["summary"]
    result = ansible.module("node1", "node_triage", {"node_name": "node1", "scenarios": ["conntrack"],
                                                     "conntrack": {"interval": 1}})["node1"]
    entry = result["scenarios"]["conntrack"]
    assert entry["status"] == "ran"
    assert [(f["check"], f["severity"], f["subject"]) for f in entry["findings"]] == [
        ("conntrack.pressure", "critical", "node1")]
