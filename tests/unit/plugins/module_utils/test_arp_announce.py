# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""arp_announce and service_path.vip_announcer with captures: who announces a VIP, from the candidate nodes'
Ethernet captures decoded by capture.parse_pcap and summarised as packet_capture returns them."""

from __future__ import annotations

import socket
import struct

from ansible_collections.k8snet.triage.plugins.module_utils.arp import announce as arp_announce
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import capture, service as service_path
from ansible_collections.k8snet.triage.plugins.module_utils.arp.announce import node_arp

VIP = "198.18.5.100"
NODE_MAC = bytes([2, 0, 0, 0, 0, 0x11])
CLIENT_MAC = bytes([2, 0, 0, 0, 0, 0x21])
BCAST = b"\xff" * 6


def pcap(frames):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for ts, frame in enumerate(frames):
        out += struct.pack("<IIII", ts, 0, len(frame), len(frame)) + frame
    return out


def arp(op, smac, sip, tmac, tip, dst_mac):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + smac + socket.inet_aton(sip) + tmac + socket.inet_aton(tip)
    return dst_mac + smac + b"\x08\x06" + body


def request():
    return arp(1, CLIENT_MAC, "198.18.5.21", b"\0" * 6, VIP, BCAST)


def reply():
    return arp(2, NODE_MAC, VIP, CLIENT_MAC, "198.18.5.21", CLIENT_MAC)


def garp():
    return arp(1, NODE_MAC, VIP, b"\0" * 6, VIP, BCAST)


def packets(frames):
    _linktype, pkts = capture.parse_pcap(pcap(frames), local_macs={"02:00:00:00:00:11"})
    return pkts


def checks(findings):
    return [(f["check"], f["severity"]) for f in findings]


def test_node_side_counts():
    stats = node_arp(packets([request(), reply(), garp()]), VIP)
    assert stats == {"requests_in": 1, "askers": ["198.18.5.21"], "replies_out": 1, "gratuitous_out": 1}


def flows(frames):
    """What packet_capture returns for these frames: its flows (summarize), on eth0."""
    pkts = packets(frames)
    for p in pkts:
        p["interface"] = "eth0"
    return {"flows": capture.summarize(pkts, ["eth0"])["flows"]}


def client_probe(*macs):
    return {"probes": {VIP: [{"mac": m} for m in macs]}}


NODES = {"node1": {"local": [{"address": "198.18.5.11", "mac": "02:00:00:00:00:11"}]},
         "node2": {"local": [{"address": "198.18.5.12", "mac": "02:00:00:00:00:12"}]}}


def test_a_reply_that_left_a_node_while_the_client_got_none_is_not_delivered():
    out = service_path.vip_announcer(VIP, client_probe(), NODES, ["node1"],
                                     captures={"node1": flows([request(), reply()]), "node2": flows([request()])})
    assert checks(out["findings"]) == [("ingress.vip_reply_not_delivered", "critical")]
    [f] = out["findings"]
    assert "node1 answered" in f["summary"] and f["evidence"]["nodes_arp"]["node1"]["replies_out"] == 1


def test_requests_that_reach_the_nodes_and_no_reply_is_unannounced_and_says_so():
    out = service_path.vip_announcer(VIP, client_probe(), NODES, ["node1"],
                                     captures={"node1": flows([request(), request()]), "node2": flows([request()])})
    [f] = out["findings"]
    assert (f["check"], f["severity"]) == ("ingress.vip_unannounced", "critical")
    assert "requests reached node1, node2 and no reply left" in f["summary"]
    assert f["evidence"]["nodes_arp"]["node1"]["requests_in"] == 2


def test_a_failed_capture_is_listed_not_read_as_silence():
    seen, unread = arp_announce.nodes_view({"node1": flows([request(), reply()]),
                                            "node2": {"failed": True, "msg": "tcpdump not found"}, "node3": {}}, VIP)
    assert sorted(seen) == ["node1"] and unread == ["node2", "node3"]
    out = service_path.vip_announcer(VIP, client_probe(), NODES, ["node1"], captures={"node2": {"failed": True}})
    assert checks(out["findings"]) == [("ingress.vip_unannounced", "critical")]
    assert out["findings"][0]["evidence"]["not_captured"] == ["node2"]


def test_an_off_subnet_client_is_told_who_answered_the_routers_arp():
    client = dict(client_probe(), off_subnet={VIP: {"gateway": "198.18.5.1", "interface": "eth0"}})
    out = service_path.vip_announcer(VIP, client, NODES, ["node1"], captures={"node1": flows([request(), reply()])})
    [f] = out["findings"]
    assert (f["check"], f["severity"]) == ("ingress.client_off_subnet", "info")
    assert "from the nodes' side, node1 answered ARP for it" in f["summary"]


def test_an_answer_the_client_got_keeps_the_client_side_verdict():
    out = service_path.vip_announcer(VIP, client_probe("02:00:00:00:00:11"), NODES, ["node1"],
                                     captures={"node1": flows([request(), reply()])})
    assert out["announcer"] == "node1" and out["findings"] == []


def test_gratuitous_arps_count_as_announcing_not_as_replies():
    view, _unread = arp_announce.nodes_view({"node1": flows([garp()]), "node2": flows([request()])}, VIP)
    assert arp_announce.replying(view) == [] and arp_announce.replying(view, gratuitous=True) == ["node1"]


def test_packet_capture_flows_are_counted():
    pkts = packets([request(), request(), reply()])
    for p in pkts:
        p["interface"] = "eth0"
    flows = capture.summarize(pkts, ["eth0"])["flows"]
    assert node_arp(flows, VIP) == {"requests_in": 2, "askers": ["198.18.5.21"], "replies_out": 1, "gratuitous_out": 0}


def test_an_off_subnet_client_whose_gateway_does_not_resolve_is_critical():
    via = {"gateway": "198.18.5.1", "interface": "eth0", "gateway_neighbor": "198.18.5.1 dev eth0 FAILED",
           "gateway_resolved": False}
    out = service_path.vip_announcer(VIP, dict(client_probe(), off_subnet={VIP: via}), NODES, ["node1"])
    assert checks(out["findings"]) == [("ingress.client_off_subnet", "info"), ("ingress.client_gateway_unresolved", "critical")]
    assert "198.18.5.1 dev eth0 FAILED" in out["findings"][1]["summary"]
    resolved = dict(via, gateway_neighbor="198.18.5.1 dev eth0 lladdr 02:18:00:00:00:01 REACHABLE", gateway_resolved=True)
    out = service_path.vip_announcer(VIP, dict(client_probe(), off_subnet={VIP: resolved}), NODES, ["node1"])
    assert checks(out["findings"]) == [("ingress.client_off_subnet", "info")]
