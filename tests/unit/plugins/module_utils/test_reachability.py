# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""reachability: wire helpers checked against real frames captured in the lab, per-target
diagnosis, and the fleet matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.arp import probe as arp_probe
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import capture
from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability as r
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.plugin_utils import peers as fleet_peers

FIX = Path(__file__).parent / "fixtures" / "capture"


def _ethernet_frames():
    data = (FIX / "eth0_en10mb.pcap").read_bytes()
    offset, frames = 24, []
    while offset + 16 <= len(data):
        incl = int.from_bytes(data[offset + 8:offset + 12], "little")
        frames.append(data[offset + 16:offset + 16 + incl])
        offset += 16 + incl
    return frames


def test_arp_reply_parsed_from_a_real_frame_and_our_request_matches_the_kernels():
    frames = _ethernet_frames()
    assert arp_probe.parse_reply(frames[1]) == ("198.18.160.12", "02:18:05:00:00:02")
    assert arp_probe.parse_reply(frames[0]) is None  # the request
    ours = arp_probe.build_request("02:18:05:00:00:01", "02:18:05:00:00:01", "198.18.160.12", sender_ip="198.18.160.11")
    assert ours[:42] == frames[0][:42]  # same bytes as the kernel's who-has (before the padding)


def test_echo_request_checksum_and_reply_parse_on_a_real_frame():
    frames = _ethernet_frames()
    kernel_request = frames[2][14:]  # IPv4 packet
    icmp = kernel_request[20:]
    assert r.checksum(icmp) == 0  # a valid ICMP checksum sums to zero
    assert r.checksum(r.echo_request(0x1234, 7)) == 0
    reply = frames[3][14:]
    ident = int.from_bytes(icmp[4:6], "big")
    assert r.parse_echo_reply(reply, raw=True) == (ident, 1)
    assert r.parse_echo_reply(reply[20:], raw=False) == (ident, 1)
    assert r.parse_echo_reply(kernel_request, raw=True) is None  # a request is not a reply


def test_targets_validated():
    assert r.validate_targets([{"address": "198.18.160.12"}], 22) == [
        {"address": "198.18.160.12", "name": "198.18.160.12", "port": 22}]
    for bad, message in (({"address": "node2"}, "'node2' is invalid: give an IPv4 address"),
                         ({"address": "fd00::1"}, "this is an IPv6 address, give an IPv4 address"),
                         ({"address": "198.18.160.12", "port": 70000}, "give an integer from 1 to 65535"),
                         # issue 11: port 0 silently became tcp_port (22)
                         ({"address": "198.18.160.12", "port": 0}, r"targets\[0\].port=0 is invalid")):
        with pytest.raises(InputError, match=message):
            r.validate_targets([bad], 22)
    with pytest.raises(InputError, match="targets is empty, so nothing would be probed"):
        r.validate_targets([], 22)


ICMP_OK = {"sent": 2, "received": 2, "rtt_ms": 0.1, "error": None}
ICMP_NONE = {"sent": 2, "received": 0, "rtt_ms": None, "error": None}


@pytest.mark.parametrize("row, check, layer", [
    ({"icmp": ICMP_OK, "tcp": {"port": 22, "status": "open"}}, None, None),
    ({"icmp": ICMP_NONE, "arp": {"status": "no_answer", "interface": "eth0", "macs": []}}, "reach.unreachable", "L2"),
    ({"tcp": {"port": 22, "status": "unreachable", "error": "No route to host"}}, "reach.unreachable", "L3"),
    ({"icmp": ICMP_NONE, "tcp": {"port": 22, "status": "timeout", "error": "x"},
      "arp": {"status": "answered", "interface": "eth0", "macs": ["02:18:05:00:00:03"]}}, "reach.unreachable", "L3"),
    ({"arp": {"status": "answered", "interface": "eth0", "macs": ["02:18:05:00:00:03"]}}, None, None),
    ({"icmp": ICMP_NONE, "tcp": {"port": 22, "status": "timeout", "error": "x"}}, "reach.unreachable", "L3"),
    ({"icmp": ICMP_OK, "tcp": {"port": 81, "status": "refused", "error": "Connection refused"}}, "reach.port_closed", "L4"),
    ({"icmp": ICMP_OK, "tcp": {"port": 22, "status": "timeout", "error": "x"}}, "reach.port_filtered", "L4"),
    ({"icmp": {"sent": 3, "received": 2}, "tcp": {"port": 22, "status": "open"}}, "reach.loss", "L3"),
    ({"arp": {"status": "answered", "interface": "eth0", "macs": ["02:00:00:00:00:01", "02:00:00:00:00:02"]}},
     "reach.arp_conflict", "L2"),
])
def test_diagnosis(row, check, layer):
    row = dict(row, name="node2", address="198.18.160.12")
    row["reachable"] = r.judge(row)
    [f] = r.check([row], "node1")
    assert (f["check"], f["layer"]) == (check or "reach.ok", layer or "L3")


def result(*rows):
    return {"targets": [{"name": name, "reachable": ok} for name, ok in rows]}


def test_matrix_isolated_partial_ok():
    got = fleet_peers.matrix({"node1": result(("node2", True), ("node3", False)),
                              "node2": result(("node3", False), ("node1", True)),
                              "node3": result(("node1", False), ("node2", True))})
    by_check = dict((f["subject"], f["check"]) for f in got["findings"])
    assert by_check == {"node3": "connectivity.node_isolated", "node1": "connectivity.partial"}
    assert len(got["pairs"]) == 6 and len(got["silent_pairs"]) == 3
    assert fleet_peers.matrix({"node1": result(("node2", True))})["findings"][0]["check"] == "connectivity.ok"


def test_capture_and_reachability_agree_on_tcp_flags():
    # the SYN of our own TCP probe as tcpdump saw it
    packets = capture.parse_pcap((FIX / "any_sll2.pcap").read_bytes(), {2: "eth0"})[1]
    assert [p["flags"] for p in packets if p["dport"] == 81] == ["S"]


def test_peer_sample_below_n_squared_and_covering_everyone():
    nodes = ["node%02d" % i for i in range(1, 41)]
    probed_by = dict((n, 0) for n in nodes)
    for me in nodes:
        peers = fleet_peers.sample_peers(nodes, me, 8)
        assert len(peers) == 8 and me not in peers and len(set(peers)) == 8
        for peer in peers:
            probed_by[peer] += 1
    assert set(probed_by.values()) == {8}  # 40 * 8 probes instead of 40 * 39, each node probed 8 times
    assert fleet_peers.sample_peers(["a", "b", "c"], "a", 8) == ["b", "c"]
    assert fleet_peers.sample_peers(["a", "b", "c"], "a", 1) == ["c"]
    assert fleet_peers.sample_peers(["a"], "a", 3) == []
    with pytest.raises(InputError, match="not one of the nodes"):
        fleet_peers.sample_peers(["a", "b"], "z", 1)


def test_enter_pod_takes_one_namespace_and_names_it(monkeypatch):
    from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import pod_netns
    entered = []
    monkeypatch.setattr(r, "enter_netns", lambda pid, path=None: entered.append((pid, path)))
    with pytest.raises(InputError, match="give one of them"):
        r.enter_pod({"netns_pid": 42, "pod_ip": "198.19.1.3"}, None)
    assert entered == [] and r.enter_pod({}, None) is None
    assert r.enter_pod({"netns_pid": 42}, None) == "netns of pid 42" and entered == [(42, None)]
    monkeypatch.setattr(pod_netns, "find_by_ip", lambda ip, runner: {"ip": ip, "pids": [7, 9], "netns_name": None})
    assert r.enter_pod({"pod_ip": "198.19.1.3"}, None) == "pod 198.19.1.3 (netns of pid 7)" and entered[-1] == (7, None)
    monkeypatch.setattr(pod_netns, "find_by_ip", lambda ip, runner: {"ip": ip, "pids": [], "netns_name": "cni-1"})
    monkeypatch.setattr(pod_netns, "named_path", lambda name: "/var/run/netns/" + name)
    assert r.enter_pod({"pod_ip": "198.19.1.3"}, None) == "pod 198.19.1.3 (netns cni-1)"
    assert entered[-1] == (0, "/var/run/netns/cni-1")


def test_a_target_silent_in_the_first_round_is_probed_once_more_before_it_is_unreachable(monkeypatch):
    """At 100 nodes the lab had 372 reach.unreachable between nodes that ping each other: a loaded prober loses
    answers of its own burst.  The silent ones are probed again, a few at a time."""
    monkeypatch.setattr(r, "RETRY_PAUSE", 0)
    answers = {"198.18.0.12": [False, True], "198.18.0.13": [False, False], "198.18.0.14": [True]}
    calls = []

    class Prober(r.Prober):
        def _one(self, target, kind):
            calls.append(target["address"])
            ok = answers[target["address"]].pop(0)
            return {"sent": 1, "received": 1 if ok else 0}

    targets = [{"address": a, "name": a, "port": 22} for a in sorted(answers)]
    rows = Prober(None, ["icmp"], 1, 0.1).run(targets)
    assert [(row["name"], row["reachable"], row.get("retried", False)) for row in rows] == [
        ("198.18.0.12", True, True), ("198.18.0.13", False, True), ("198.18.0.14", True, False)]
    assert sorted(calls) == ["198.18.0.12", "198.18.0.12", "198.18.0.13", "198.18.0.13", "198.18.0.14"]
    [found] = r.check(rows, "node1")
    assert found["check"] == "reach.unreachable" and found["evidence"]["retried"] is True


def test_a_target_that_lost_echoes_is_asked_again_with_more_before_it_is_lossy(monkeypatch):
    """One lost echo of a loaded prober or peer is not a lossy path: the target is asked again with
    LOSS_RECHECK_COUNT echoes; all back, no finding; lost again, reach.loss with both counts."""
    first = {"198.18.0.12": {"sent": 2, "received": 1}, "198.18.0.13": {"sent": 2, "received": 1},
             "198.18.0.14": {"sent": 2, "received": 2}, "198.18.0.15": {"sent": 2, "received": 0}}
    again = {"198.18.0.12": 10, "198.18.0.13": 7}
    asked = []
    tcp = {"port": 22, "status": "open", "attempts": 1, "ms": 1.0, "error": None}

    def probe_icmp(address, count, timeout, interval, pace, until_lost):
        asked.append((address, count, interval, until_lost))
        return {"sent": count, "received": again[address], "rtt_ms": 0.2, "error": None}

    class Prober(r.Prober):
        def _one(self, target, kind):
            return dict(first[target["address"]], rtt_ms=0.1, error=None) if kind == "icmp" else tcp

    monkeypatch.setattr(r, "probe_icmp", probe_icmp)
    targets = [{"address": a, "name": a, "port": 22} for a in sorted(first)]
    rows = Prober(None, ["icmp", "tcp"], 2, 0.1).run(targets)
    # not the target that lost none, nor the one whose every echo was lost while TCP answered (ICMP filtered)
    assert sorted(asked) == [("198.18.0.12", 10, 0.05, True), ("198.18.0.13", 10, 0.05, True)]
    found = r.check(rows, "node1")
    assert [(f["check"], f["subject"]) for f in found] == [("reach.loss", "198.18.0.13"), ("reach.loss", "198.18.0.15")]
    found = found[0]
    assert found["summary"] == "198.18.0.13 lost 1 of 2 ICMP echoes, then 3 of 10 asked again"
