"""Route checks on ``ip -json`` output captured in the lab with every route fault injected
(fixtures/routes/node*_*.json) and on IPv6 output in the same format (``*_constructed.json``:
the lab may only use 198.18.0.0/15, so IPv6 tables are written by hand in ip -json's format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import netlink
from ansible_collections.k8snet.triage.plugins.module_utils.routes import checks as routes_checks, index as routes_index
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding

FIX = Path(__file__).parent / "fixtures" / "routes"

PEERS = [
    {"node": "node1", "node_ip": "198.18.32.11", "node_ips": ["fd00:198:18::11"],
     "pod_cidrs": ["198.19.32.0/24", "fd00:198:19:20::/64"]},
    {"node": "node2", "node_ip": "198.18.32.12", "node_ips": ["fd00:198:18::12"],
     "pod_cidrs": ["198.19.33.0/24", "fd00:198:19:21::/64"]},
    {"node": "node3", "node_ip": "198.18.32.13", "node_ips": ["fd00:198:18::13"],
     "pod_cidrs": ["198.19.34.0/24", "fd00:198:19:22::/64"]},
]


def _text(name):
    return (FIX / name).read_text()


def load(node, v6=False):
    table = netlink.parse_routes(_text("%s_route4.json" % node), 4)
    neigh = netlink.parse_neighbors(_text("%s_neigh4.json" % node))
    if v6:
        table += netlink.parse_routes(_text("%s_route6_constructed.json" % node), 6)
        neigh += netlink.parse_neighbors(_text("%s_neigh6_constructed.json" % node))
    links = netlink.parse_links(_text("%s_link.json" % node))
    addresses = [a["address"] for a in netlink.parse_addresses(_text("%s_addr.json" % node))]
    return table, neigh, links, addresses


def v4_only(peers):
    return [dict(p, pod_cidrs=[c for c in p["pod_cidrs"] if ":" not in c]) for p in peers]


def run(node, v6=False, peers=None, mode="direct", tunnel=None):
    table, neigh, links, addresses = load(node, v6)
    peers = peers or PEERS
    peers = peers if v6 else v4_only(peers)
    local, remote = routes_index.normalize_peers(peers, None, addresses + (["fd00:198:18::11"] if node == "node1" else []))
    index = routes_index.RouteIndex(table)
    found, results = routes_checks.check_peer_routes(index, remote, local["node"], mode, tunnel, neigh)
    found += routes_checks.check_overlaps(local, remote, local["node"])
    found += routes_checks.check_local_cidrs(index, local, local["node"])
    pods, _checked = routes_checks.check_pod_routes(table, links, local["node"], local)
    return found + pods, results


def by_check(found):
    out = {}
    for item in found:
        out.setdefault(item["check"], []).append(item)
    return out


def test_local_node_is_recognised_by_address():
    _table, _neigh, _links, addresses = load("node2")
    local, remote = routes_index.normalize_peers(PEERS, None, addresses)
    assert local["node"] == "node2"
    assert [p["node"] for p in remote] == ["node1", "node3"]


def test_local_node_is_recognised_by_name():
    local, remote = routes_index.normalize_peers(PEERS, "node3", [])
    assert local["node"] == "node3" and len(remote) == 2


def test_node1_blackhole_over_part_and_failed_next_hop():
    found = by_check(run("node1")[0])
    assert set(found) == {"route.unreachable", "route.next_hop_unresolved"}
    unreachable = found["route.unreachable"][0]
    assert unreachable["subject"] == "node2 198.19.33.0/24"
    assert unreachable["evidence"]["covers"] == "part"
    assert unreachable["evidence"]["routes"] == ["blackhole 198.19.33.0/26"]
    hop = found["route.next_hop_unresolved"][0]
    assert hop["evidence"]["gateway"] == "198.18.32.13" and hop["evidence"]["state"] == ["FAILED"]


def test_node2_missing_route_local_cidr_routed_away_and_pod_device_down():
    found = by_check(run("node2")[0])
    assert set(found) == {"route.missing", "route.overlap", "route.pod_device_down"}
    assert found["route.missing"][0]["subject"] == "node3 198.19.34.0/24"
    assert found["route.missing"][0]["evidence"]["found"] is None
    assert found["route.overlap"][0]["evidence"]["routes"] == ["198.19.33.240/28 via 198.18.32.11 dev eth0 proto static"]
    down = found["route.pod_device_down"][0]["evidence"]
    assert down["count"] == 1 and down["routes"][0]["dev"] == "cali51edf1b13a5"


def test_node3_wrong_gateway_and_pod_route_without_device():
    found, results = run("node3")
    found = by_check(found)
    assert set(found) == {"route.wrong_gateway", "route.pod_device_missing"}
    wrong = found["route.wrong_gateway"][0]
    assert wrong["evidence"]["expected"] == "198.19.32.0/24 via 198.18.32.11 dev eth0"
    assert wrong["evidence"]["found"] == "198.19.32.0/24 via 198.18.32.12 dev eth0 proto static"
    assert found["route.pod_device_missing"][0]["evidence"]["routes"][0]["route"] == "198.19.34.2/32 dev eth0 proto static"
    assert [r["status"] for r in results] == [["wrong_gateway"], ["ok"]]


def test_ipv6_checks_on_ip_json_format():
    found, results = run("node1", v6=True)
    v6 = [f for f in found if ":" in f["subject"]]
    checks = sorted((f["check"], f["subject"]) for f in v6)
    assert ("route.unreachable", "node2 fd00:198:19:21::/64") in checks
    assert ("route.next_hop_unresolved", "node2 fd00:198:18::12") in checks
    # multipath route: node3's address is one of the next hops, so it is accepted
    assert not [c for c in checks if c[1] == "node3 fd00:198:19:22::/64"]
    # the /128 route to a cali device that is not in node1's captured link table
    gone = [f for f in found if f["check"] == "route.pod_device_missing"][0]
    assert gone["evidence"]["routes"] == [{"route": "fd00:198:19:20::5/128 dev cali1f2e3d4c5b6", "dev": "cali1f2e3d4c5b6"}]
    rows = dict((r["cidr"], r) for r in results)
    assert rows["fd00:198:19:22::/64"]["status"] == ["ok"]


def test_ipv6_host_route_is_normalised_to_128():
    table = netlink.parse_routes(_text("node1_route6_constructed.json"), 6)
    dsts = [r["dst"] for r in table]
    assert "fd00:198:19:20::5/128" in dsts and "::/0" in dsts


def test_covering_default_route_is_still_missing():
    table = netlink.parse_routes(json.dumps([
        {"dst": "default", "gateway": "198.18.32.1", "dev": "eth0", "flags": []},
        {"dst": "198.18.32.0/24", "dev": "eth0", "protocol": "kernel", "scope": "link", "flags": []},
    ]), 4)
    local, remote = routes_index.normalize_peers(PEERS[:2], "node1", [])
    found, _results = routes_checks.check_peer_routes(routes_index.RouteIndex(table), [p for p in remote if p["node"] == "node2"], "node1")
    missing = [f for f in found if f["check"] == "route.missing" and "198.19.33" in f["subject"]]
    assert missing and missing[0]["evidence"]["found"] == "0.0.0.0/0 via 198.18.32.1 dev eth0"


def test_blackhole_over_the_whole_cidr_via_a_shorter_prefix():
    table = netlink.parse_routes(json.dumps([
        {"dst": "198.18.32.0/24", "dev": "eth0", "protocol": "kernel", "scope": "link", "flags": []},
        {"type": "unreachable", "dst": "198.19.32.0/19", "flags": []},
    ]), 4)
    _local, remote = routes_index.normalize_peers(v4_only(PEERS), "node1", [])
    found, _results = routes_checks.check_peer_routes(routes_index.RouteIndex(table), remote, "node1")
    assert {f["check"] for f in found} == {"route.unreachable"}
    assert all(f["evidence"]["covers"] == "all" for f in found if "198.19" in f["subject"])


def test_overlay_mode_wants_the_tunnel_device():
    table = netlink.parse_routes(_text("node2_route4.json"), 4)
    _local, remote = routes_index.normalize_peers(v4_only(PEERS), "node2", [])
    found, _results = routes_checks.check_peer_routes(routes_index.RouteIndex(table), remote, "node2", "overlay", "vxlan.calico")
    wrong = [f for f in found if f["check"] == "route.wrong_device"]
    assert wrong and wrong[0]["evidence"]["expected"] == "198.19.32.0/24 dev vxlan.calico"


def test_peers_cidrs_overlap():
    peers = [dict(PEERS[0]), dict(PEERS[1], pod_cidrs=["198.19.32.128/25"]), PEERS[2]]
    local, remote = routes_index.normalize_peers(peers, "node3", [])
    found = routes_checks.check_overlaps(local, remote, "node3")
    assert len(found) == 1
    assert found[0]["evidence"] == {"cidr": "198.19.32.128/25", "node": "node2",
                                    "overlaps": "198.19.32.0/24", "other_node": "node1"}


@pytest.mark.parametrize("peer, text", [
    ({"node": "x", "node_ip": "198.18.32.11", "pod_cidrs": ["198.19.32.1/24"]}, "'198.19.32.1/24' is not a valid CIDR"),
    ({"node": "x", "node_ip": "198.18.32.11", "pod_cidrs": ["nonsense"]}, "'nonsense' is not a valid CIDR"),
    ({"node": "x", "node_ip": "198.18.32.300", "pod_cidrs": []}, "'198.18.32.300' is not a valid IP address"),
])
def test_bad_peers_name_the_value(peer, text):
    with pytest.raises(InputError) as exc:
        routes_index.normalize_peers([peer], None, [])
    assert text in str(exc.value) and "peer x" in str(exc.value)


def test_unknown_tunnel_device_names_it():
    links = netlink.parse_links(_text("node1_link.json"))
    with pytest.raises(InputError) as exc:
        routes_checks.validate_tunnel("vxlan.calico", links)
    assert "'vxlan.calico' is not a device on this host" in str(exc.value) and "eth0" in str(exc.value)


def test_bad_destination():
    with pytest.raises(InputError) as exc:
        routes_checks.validate_destinations(["198.19.33.2", "pod-b"])
    assert "'pod-b'" in str(exc.value)


def test_index_on_many_routes_is_exact():
    rows = [{"dst": "198.%d.%d.%d" % (18 + (i >> 16), (i >> 8) & 255, i & 255), "gateway": "198.18.40.2",
             "dev": "eth1", "protocol": "static", "flags": []} for i in range(20000)]
    rows.append({"type": "blackhole", "dst": "198.18.7.0/28", "flags": []})
    index = routes_index.RouteIndex(netlink.parse_routes(json.dumps(rows), 4))
    import ipaddress
    inside = index.inside(ipaddress.ip_network("198.18.7.0/24"))
    assert len(inside) == 257  # 256 host routes + the blackhole
    assert index.lookup("198.18.7.3")["dst"] == "198.18.7.3/32"
    assert index.covering(ipaddress.ip_network("198.18.7.0/29"))["type"] == "blackhole"


def test_nothing_checked_is_not_ok():
    """No peer pod CIDR and no local pod route: an info finding saying so, never route.mesh ok."""
    [item] = routes_checks.summary([], [], "node1", 0)
    assert item["check"] == "route.nothing_checked" and item["severity"] == "info"
    assert routes_checks.summary([], [{"cidr": "198.19.1.0/24"}], "node1", 0)[0]["severity"] == "ok"


class _Clock(object):
    """A clock that advances only when the code under test sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _confirm(states_after, sent=None):
    """node1's FAILED next hop (198.18.32.13) confirmed against entries that read ``states_after`` in turn
    (the last one repeats)."""
    found, results = run("node1")
    clock, reads, sends = _Clock(), [], []

    def read(address, interface):
        reads.append((address, interface))
        states = states_after[min(len(reads), len(states_after)) - 1]
        return {"address": address, "interface": interface, "state": states, "mac": "02:00:00:00:00:13"} \
            if states else None

    def send(address):
        sends.append(address)
        return sent

    out = routes_checks.confirm_next_hops(found, results, read, send, clock=clock, sleep=clock.sleep)
    return by_check(out), results, reads, sends, clock


def test_a_next_hop_that_resolves_when_asked_again_is_not_critical():
    # FAILED in the table read, INCOMPLETE while the kernel asks, then REACHABLE: a past failure, not a fault
    found, results, reads, sends, clock = _confirm([["INCOMPLETE"], ["INCOMPLETE"], ["REACHABLE"]])
    assert sends == ["198.18.32.13"] and reads == [("198.18.32.13", "eth0")] * 3
    assert "route.next_hop_unresolved" not in found
    [recovered] = found["route.next_hop_recovered"]
    assert recovered["severity"] == "info" and recovered["subject"] == "node3 198.18.32.13"
    assert recovered["evidence"]["confirm"]["state"] == ["REACHABLE"]
    assert recovered["evidence"]["confirm"]["seconds"] == pytest.approx(0.2)
    assert "read FAILED, then resolved in 0.2 s" in recovered["summary"]
    assert [r["status"] for r in results if r["node"] == "node3"] == [["ok"]]
    assert clock.now < routes_checks.CONFIRM_SECONDS  # it stopped as soon as the entry resolved


def test_a_next_hop_that_stays_unresolved_is_critical_with_what_the_confirmation_saw():
    found, results, reads, sends, clock = _confirm([["INCOMPLETE"], ["FAILED"]])
    [hop] = found["route.next_hop_unresolved"]
    assert hop["severity"] == "critical" and "route.next_hop_recovered" not in found
    assert hop["evidence"]["confirm"] == {"sent": "a UDP datagram to port 9", "seconds": pytest.approx(1.5),
                                          "state": ["FAILED"], "mac": "02:00:00:00:00:13"}
    assert hop["summary"].endswith("and FAILED 1.5 s after a packet asked for it again")
    assert clock.now == pytest.approx(routes_checks.CONFIRM_SECONDS)  # bounded by the confirmation's time
    assert ["next_hop_unresolved"] in [r["status"] for r in results if r["node"] == "node3"]


def test_a_next_hop_whose_packet_could_not_be_sent_says_so():
    found, results, reads, sends, clock = _confirm([None], sent="Network is unreachable")
    [hop] = found["route.next_hop_unresolved"]
    assert "no entry 1.5 s after" in hop["summary"] and "(could not send it: Network is unreachable)" in hop["summary"]


def test_findings_without_an_unresolved_next_hop_are_not_confirmed():
    found, results = run("node2")
    out = routes_checks.confirm_next_hops(found, results, read=pytest.fail, send=pytest.fail)
    assert out == found


def test_an_only_recovered_next_hop_leaves_the_mesh_ok():
    recovered = finding("route.next_hop_recovered", "info", "L2", "node3 198.18.32.13", "resolved")
    [ok] = routes_checks.summary([recovered], [{"node": "node3"}], "node1")
    assert ok["check"] == "route.mesh" and ok["severity"] == "ok"
