# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""arp_announce: who announces a VIP, from the candidate nodes' Ethernet captures decoded by capture.parse_pcap."""

from __future__ import annotations

import socket
import struct

from ansible_collections.k8snet.triage.plugins.module_utils import capture
from ansible_collections.k8snet.triage.plugins.module_utils.arp_announce import announce_check, node_arp

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


def test_no_node_announces():
    out = announce_check(VIP, {"node1": packets([request(), request()]), "node2": packets([])}, client_got_reply=False)
    assert checks(out) == [("ingress.vip_unannounced", "critical")]
    assert out[0]["evidence"]["nodes"]["node1"]["requests_in"] == 2


def test_reply_not_delivered():
    out = announce_check(VIP, {"node1": packets([request(), reply()])}, client_got_reply=False)
    assert checks(out) == [("ingress.vip_reply_not_delivered", "critical")]
    assert "node1" in out[0]["summary"]


def test_announced_and_delivered():
    out = announce_check(VIP, {"node1": packets([request(), reply()]), "node2": packets([request()])},
                         client_got_reply=True)
    assert checks(out) == [("ingress.vip_announced", "ok")]
    assert out[0]["summary"].startswith("node1 ")


def test_off_subnet_client_is_never_critical_from_silence():
    out = announce_check(VIP, {"node1": packets([]), "node2": packets([])}, client="198.18.7.2",
                         client_on_subnet=False, client_got_reply=False)
    assert checks(out) == [("ingress.client_off_subnet", "info"), ("ingress.vip_arp_not_seen", "info")]


def test_off_subnet_client_gateway_asks_node_answers():
    out = announce_check(VIP, {"node1": packets([request(), reply()])}, client_on_subnet=False, client_got_reply=False)
    assert checks(out) == [("ingress.client_off_subnet", "info"), ("ingress.vip_announced", "ok")]


def test_two_announcers():
    out = announce_check(VIP, {"node1": packets([garp()]), "node2": packets([garp()])})
    assert checks(out) == [("ingress.vip_multiple_announcers", "warning")]


def test_packet_capture_flows_are_counted():
    pkts = packets([request(), request(), reply()])
    for p in pkts:
        p["interface"] = "eth0"
    flows = capture.summarize(pkts, ["eth0"])["flows"]
    assert node_arp(flows, VIP) == {"requests_in": 2, "askers": ["198.18.5.21"], "replies_out": 1, "gratuitous_out": 0}
