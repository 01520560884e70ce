# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report_fold: pairwise findings at 100 and 500 nodes fold into the finding an operator acts on; a lab of three
reads as before."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import fold as report_fold
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.fold import FOLD_MIN, fold


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


def next_hop(observer, peer):
    ip = "198.18.0.%d" % (10 + int(peer[4:]))
    item = finding("route.next_hop_unresolved", "critical", "L2", "%s %s" % (peer, ip),
                   "the next hop %s (node %s) on eth0 does not resolve: neighbor entry FAILED" % (ip, peer),
                   {"peer": peer, "gateway": ip, "dev": "eth0", "state": ["FAILED"], "mac": None, "cidrs": []},
                   "Check that node %s is up" % peer)
    return dict(item, host=observer, scenario="pod_network", scope="host")


def isolated(target, probers, everyone):
    item = finding("connectivity.node_isolated", "critical", "L3", target,
                   "%s answered none of the %d nodes that probed it" % (target, len(probers)),
                   {"probed_by": sorted(probers)}, "check the node itself first")
    return dict(item, host="localhost", hosts=sorted(everyone), scenario="connectivity", scope="fleet")


def ssh_failed(node, reason="ssh: connect to host 198.18.0.21 port 22: Connection timed out"):
    item = finding("triage.host_unreachable", "critical", "L3", node,
                   "%s could not be reached over SSH: none of its checks ran (%s)" % (node, reason), {"reason": reason},
                   "Check the node is up and sshd answers (ssh %s)" % node)
    return dict(item, host=node, scenario="triage", scope="host")


def test_a_node_that_is_down_is_one_root_cause_with_its_symptoms_counted():
    """Measured on the lab (32 nodes, node11's link down): its SSH timeout, 'answered none of the 8 probers', 8
    probers' reach.unreachable and 7 nodes' unresolved next hop were 17 findings about one fact."""
    names = nodes(32)
    probers = ["node3", "node6", "node9", "node19", "node21", "node24", "node27", "node32"]
    hop_seers = ["node1", "node2", "node4", "node5", "node7", "node8", "node12"]
    flat = [ssh_failed("node11"), isolated("node11", probers, [n for n in names if n != "node11"])]
    flat += [unreachable(p, "node11") for p in probers] + [next_hop(o, "node11") for o in hop_seers]
    flat += [missing("node5", "node6")]  # another cause, untouched
    out = fold(flat, set(names + ["localhost"]))
    assert sorted(f["check"] for f in out) == ["route.missing", "triage.host_unreachable"]
    [root] = [f for f in out if f["check"] == "triage.host_unreachable"]
    assert (root["subject"], root["host"], root["severity"]) == ("node11", "node11", "critical")
    assert "the fleet agrees the node is down or cut off: node11 answered none of the 8 nodes" in root["summary"]
    assert "a next hop that does not resolve (no ARP / ND answer) (7 nodes)" in root["summary"]
    assert "unreachable from probes (8 nodes)" in root["summary"]
    by = dict((c["check"], c) for c in root["evidence"]["corroborated_by"])
    assert by["reach.unreachable"]["observers"] == 8 and by["route.next_hop_unresolved"]["observers"] == 7
    assert root["evidence"]["node_down"] == "node11" and root["remediation"].startswith("one cause: node11 itself")


def test_an_isolated_node_reached_over_ssh_keeps_the_isolation_as_its_root_cause():
    names = nodes(12)
    probers = ["node2", "node5", "node8"]
    flat = [isolated("node4", probers, names)] + [unreachable(p, "node4") for p in probers]
    flat += [next_hop("node1", "node4"), ssh_failed("node9", "Connection refused")]
    out = fold(flat, set(names + ["localhost"]))
    assert sorted(f["check"] for f in out) == ["connectivity.node_isolated", "triage.host_unreachable"]
    [root] = [f for f in out if f["check"] == "connectivity.node_isolated"]
    assert "down or cut off" not in root["summary"] and "unreachable from probes (3 nodes)" in root["summary"]
    # the dead sshd of another node is its own cause, unchanged
    assert [f["subject"] for f in out if f["check"] == "triage.host_unreachable"] == ["node9"]


def test_next_hops_to_one_peer_fold_like_the_other_route_pairs():
    names = nodes(50)
    out = fold([next_hop(o, "node20") for o in names if o != "node20"], set(names))
    [f] = out
    assert (f["check"], f["subject"], f["host"]) == ("route.next_hop_unresolved", "node20", "node20")
    assert "is a next hop that does not resolve (no ARP / ND answer) on 49 nodes" in f["summary"]


def test_an_ssh_refusal_proves_the_host_up_so_its_isolation_stays_its_own_cause():
    names = nodes(12)
    probers = ["node2", "node5", "node8"]
    flat = [isolated("node4", probers, names), ssh_failed("node4", "ssh: connect to host x port 22: Connection refused")]
    out = fold(flat, set(names + ["localhost"]))
    assert sorted(f["check"] for f in out) == ["connectivity.node_isolated", "triage.host_unreachable"]
    assert all("corroborated_by" not in f["evidence"] for f in out if f["check"] == "triage.host_unreachable")


# ssh's words for a node that is down, as ansible-core printed them on the lab (node2's eth0 set down, 2026-12-04):
# a fresh connection once the controller's ARP entry has failed, and a connection through a ControlPersist master
# that an earlier run left open (the master's pipe breaks, then a new connection times out)
NO_ROUTE = ('Data could not be sent to remote host "198.18.160.12". Make sure this host can be reached over ssh: '
            'ssh: connect to host 198.18.160.12 port 22: No route to host')
STALE_MASTER = ('Data could not be sent to remote host "198.18.160.12". Make sure this host can be reached over ssh: '
                'mux_client_request_session: read from master failed: Broken pipe\r\n'
                'ssh: connect to host 198.18.160.12 port 22: Connection timed out')


@pytest.mark.parametrize("reason", [NO_ROUTE, STALE_MASTER, "Timeout, server 198.18.0.21 not responding."])
def test_every_way_ssh_says_no_answer_folds_the_down_node(reason):
    """CI's run of stop 40 met 'No route to host' where the lab had met 'Connection timed out': both are a node
    that does not answer, and both fold its symptoms into the one finding."""
    names = nodes(12)
    probers = ["node2", "node5", "node8"]
    flat = [ssh_failed("node4", reason), isolated("node4", probers, names)] + [unreachable(p, "node4") for p in probers]
    [root] = fold(flat, set(names + ["localhost"]))
    assert root["check"] == "triage.host_unreachable" and "the fleet agrees the node is down" in root["summary"]
    assert report_fold.ssh_failure(reason)[0] == "no answer"


@pytest.mark.parametrize("reason,kind", [
    ("ssh: connect to host x port 22: Connection refused", "refused"),
    ("root@198.18.0.12: Permission denied (publickey,password).", "refused credentials"),
    ("Host key verification failed.", "host key"),
    ("ssh: Could not resolve hostname node4.example: Name or service not known", "unresolved name"),
])
def test_an_ssh_failure_that_proves_the_host_answered_is_not_folded_as_down(reason, kind):
    names = nodes(12)
    probers = ["node2", "node5", "node8"]
    flat = [isolated("node4", probers, names), ssh_failed("node4", reason)]
    out = fold(flat, set(names + ["localhost"]))
    assert report_fold.ssh_failure(reason)[0] == kind
    if kind in report_fold.ANSWERED:
        assert sorted(f["check"] for f in out) == ["connectivity.node_isolated", "triage.host_unreachable"]
    else:  # a name the controller cannot resolve says nothing about the node: the fleet's word decides
        assert [f["check"] for f in out] == ["triage.host_unreachable"]


def bgp_down(observer, address):
    item = finding("bgp.not_established", "warning", "control-plane", "%s (Mesh_%s)" % (address, address.replace(".", "_")),
                   "BGP session with %s is start since 16:50: Connect" % address,
                   {"address": address, "protocol": "Mesh_x", "state": "start", "bgp_state": "Connect"}, "look at BIRD")
    return dict(item, host=observer, scenario="calico", scope="host")


def test_the_bgp_sessions_of_a_node_that_is_down_are_its_symptoms_by_its_address():
    """Measured on the lab at 200 nodes: node11 unplugged left 105 peers' sessions with it not Established, 105
    warnings beside its own finding; the BGP findings name it by its address only."""
    names = nodes(200)
    probers = ["node3", "node6", "node9"]
    flat = [ssh_failed("node11"), isolated("node11", probers, names)] + [unreachable(p, "node11") for p in probers]
    flat += [bgp_down(o, "198.18.0.21") for o in names[20:125]]
    out = fold(flat, set(names + ["localhost"]), {"198.18.0.21": "node11", "198.18.0.22": "node12"})
    [root] = out
    by = dict((c["check"], c) for c in root["evidence"]["corroborated_by"])
    assert by["bgp.not_established"]["observers"] == 105
    assert "a BGP peer whose session is not Established (105 nodes)" in root["summary"]
    # without the inventory's addresses the sessions fold into one finding about the address, beside the root
    out = fold(flat, set(names + ["localhost"]))
    assert sorted((f["check"], f["subject"]) for f in out) == [
        ("bgp.not_established", "198.18.0.21"), ("triage.host_unreachable", "node11")]


def unmeasured(prober, target):
    """pmtu's finding for a peer that answered no probe (its words, pmtu.verdict)."""
    item = finding("net.pmtu_unchecked", "info", "L3", target,
                   "%s answered no 576-byte probe with DF set, so its path MTU was not measured (reachability is the "
                   "connectivity check's)" % target, {"largest": None}, "k8snet.triage.reachability to this peer first")
    return dict(item, host=prober, scenario="pmtu", scope="host")


def test_the_path_mtu_probes_a_down_node_left_unanswered_are_its_symptoms():
    """The 100-node bench with six faults: node11 down gave, beside its SSH failure, one net.pmtu_unchecked from each
    of its 8 probers; they are the down node's symptoms, counted in its one finding."""
    names = nodes(100)
    probers = ["node7", "node15", "node26", "node37", "node48", "node59", "node80", "node91"]
    flat = [ssh_failed("node11"), isolated("node11", probers, [n for n in names if n != "node11"])]
    flat += [unmeasured(p, "node11") for p in probers] + [unreachable(p, "node11") for p in probers]
    out = fold(flat, set(names + ["localhost"]))
    assert [f["check"] for f in out] == ["triage.host_unreachable"]
    [root] = out
    assert "silent to path-MTU probes (8 nodes)" in root["summary"]
    by = dict((c["check"], c) for c in root["evidence"]["corroborated_by"])
    assert by["net.pmtu_unchecked"]["observers"] == 8


def test_a_node_up_but_silent_to_path_mtu_probes_is_one_finding_about_it():
    names = nodes(40)
    probers = ["node3", "node9", "node21", "node33"]
    out = fold([unmeasured(p, "node12") for p in probers] + [unmeasured("node5", "node6")], set(names + ["localhost"]))
    folded = [f for f in out if f.get("scope") == "fleet"]
    assert len(folded) == 1 and len(out) == 2
    [one] = folded
    assert (one["check"], one["severity"], one["subject"], one["host"]) == ("net.pmtu_unchecked", "info", "node12", "node12")
    assert "node12 (the target) is silent to path-MTU probes on 4 nodes" in one["summary"]
    assert one["evidence"]["folded"] == 4
