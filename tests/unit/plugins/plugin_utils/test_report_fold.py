# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report_fold: pairwise findings at 100 and 500 nodes fold into the finding an operator acts on; a lab of three
reads as before."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding
from ansible_collections.k8snet.triage.plugins.plugin_utils.report_fold import FOLD_MIN, fold


def nodes(n):
    return ["node%d" % i for i in range(1, n + 1)]


def missing(observer, peer, check="route.missing"):
    cidr = "198.19.%d.0/24" % int(peer[4:])
    item = finding(check, "critical", "L3", "%s %s" % (peer, cidr), "no route for %s (pods of %s)" % (cidr, peer),
                   {"cidr": cidr, "peer": peer, "expected": "%s via x" % cidr, "found": None}, "add the route")
    return dict(item, host=observer, scenario="pod_network", scope="host")


def unreachable(prober, target):
    item = finding("reach.unreachable", "critical", "L3", target, "%s answers no probe (icmp, tcp)" % target,
                   {}, "iptables_drops")
    return dict(item, host=prober, scenario="connectivity", scope="host")


def test_no_mesh_at_all_is_one_fleet_finding_at_100_and_500_nodes():
    for n in (100, 500):
        names = nodes(n)
        flat = [missing(o, p) for o in names for p in names if o != p]
        out = fold(flat, set(names))
        assert len(out) == 1, n
        [f] = out
        assert (f["check"], f["subject"], f["scope"], f["severity"]) == ("route.missing", "fleet", "fleet", "critical")
        assert f["summary"].startswith("no node routes any peer's pod CIDR: %d nodes x %d peers" % (n, n - 1))
        assert f["evidence"]["pairs"] == n * (n - 1) and len(f["evidence"]["hosts"]) == 10
        assert f["hosts"] == sorted(names)


def test_one_peer_nobody_routes_is_named_once():
    names = nodes(100)
    flat = [missing(o, "node5") for o in names if o != "node5"] + [missing("node7", "node9")]
    out = fold(flat, set(names))
    by = dict(((f["check"], f["subject"]), f) for f in out)
    f = by[("route.missing", "node5 198.19.5.0/24")]
    assert f["summary"].startswith("the pod CIDR of node5 (198.19.5.0/24) is not routed on 99 nodes: node1, node10")
    assert f["evidence"]["observers"] == 99 and f["evidence"]["folded"] == 99 and f["scope"] == "fleet"
    assert f["host"] == "node5"  # the node the cause is about: its card links to it
    # the one real missing route on node7 still names node7 and its peer
    single = by[("route.missing", "node9 198.19.9.0/24")]
    assert single["host"] == "node7" and single["scope"] == "host"
    assert len(out) == 2


def test_unreachable_from_every_prober_vs_a_prober_that_reaches_nobody():
    names = nodes(100)
    flat = [unreachable(p, "node7") for p in names if p != "node7"]
    flat += [unreachable("node3", t) for t in ("node11", "node12", "node13", "node14")]
    out = fold(flat, set(names))
    by = dict((f["subject"], f) for f in out)
    assert by["node7"]["summary"].startswith("node7 (the target) is unreachable on 99 nodes")
    assert by["prober node3"]["summary"].startswith("prober node3 reaches none of 4 targets (node11, node12, node13, "
                                                    "node14) that the other probers reach")
    assert by["prober node3"]["host"] == "node3" and by["node7"]["host"] == "node7"
    assert len(out) == 2


def test_a_small_lab_reads_as_before():
    names = nodes(3)
    flat = [missing("node1", "node2"), missing("node3", "node2"), unreachable("node1", "node3")]
    assert FOLD_MIN == 3 and fold(flat, set(names)) == flat
    other = dict(finding("arp.stale_entry", "critical", "L2", "x", "y"), host="node1", scope="host")
    assert fold([other], set(names)) == [other]
