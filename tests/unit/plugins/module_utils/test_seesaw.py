# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seesaw: the pair judged from its nodes' captures; capture: VRRP advertisements and gratuitous ARPs decoded.

The frames are built as Seesaw sends them (github.com/google/seesaw ha/net.go: VRRP v3, RFC 5798; ncc/arp.go
gratuitousARPReply: an ARP reply from the VIP and the virtual MAC to ff:ff:ff:ff:ff:ff / 255.255.255.255)."""

from __future__ import annotations

import socket
import struct

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import capture
from ansible_collections.k8snet.triage.plugins.module_utils.lb.seesaw import pair_check, pair_view

VMAC = bytes([0, 0, 0x5E, 0, 1, 60])


def pcap(frames):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for ts, frame in frames:
        out += struct.pack("<IIII", int(ts), int((ts % 1) * 1e6), len(frame), len(frame)) + frame
    return out


def vrrp_frame(src, vrid=60, priority=255, centiseconds=100, version=3):
    body = bytes([(version << 4) | 1, vrid, priority, 0]) + (
        struct.pack("!H", centiseconds & 0x0FFF) if version == 3 else bytes([0, centiseconds])) + b"\0\0"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0, 255, 112, 0, socket.inet_aton(src),
                     socket.inet_aton("224.0.0.18"))
    return b"\x01\x00\x5e\x00\x00\x12" + VMAC + b"\x08\x00" + ip + body


def garp_frame(vip):
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + VMAC + socket.inet_aton(vip) + b"\xff" * 6 + b"\xff" * 4
    return b"\xff" * 6 + VMAC + b"\x08\x06" + arp


def capture_of(frames, local=(), seconds=21.0):
    _linktype, packets = capture.parse_pcap(pcap(frames), local_macs=local)
    for p in packets:
        p["interface"] = "eth0"
    return dict(capture.summarize(packets, ["any"]), seconds=seconds)


def test_vrrp_v3_and_v2_and_seesaw_garps_are_decoded():
    _linktype, packets = capture.parse_pcap(pcap([(1.0, vrrp_frame("198.18.0.11")),
                                                  (2.0, vrrp_frame("198.18.0.12", version=2, centiseconds=1))]))
    assert [p["vrrp"] for p in packets] == [{"version": 3, "vrid": 60, "priority": 255, "interval": 1.0},
                                            {"version": 2, "vrid": 60, "priority": 255, "interval": 1.0}]
    out = capture_of([(10.0, garp_frame("198.18.128.200")), (20.0, garp_frame("198.18.128.200"))])
    [garp] = out["announcements"]["gratuitous_arp"]
    assert (garp["address"], garp["mac"], garp["packets"], garp["mean_gap"]) == (
        "198.18.128.200", "00:00:5e:00:01:3c", 2, 10.0)
    # a capture without either has no announcements key (the other captures' results are unchanged)
    assert "announcements" not in capture.summarize([], ["any"])


def master_capture(adverts=21, garps=(0.0, 10.0, 20.0), vip="198.18.128.200"):
    frames = [(t * 1.0, vrrp_frame("198.18.0.11")) for t in range(adverts)]
    frames += [(t, garp_frame(vip)) for t in garps]
    return capture_of(sorted(frames), local={"00:00:5e:00:01:3c"})


def backup_capture(adverts=21):
    return capture_of([(t * 1.0, vrrp_frame("198.18.0.11")) for t in range(adverts)])


def test_a_healthy_pair():
    [ok] = pair_check({"lb1": master_capture(), "lb2": backup_capture()})
    assert (ok["check"], ok["severity"]) == ("seesaw.pair", "ok")
    assert ok["summary"] == ("lb1 is the Seesaw master (VRID 60, priority 255, advertising every 1.0s); lb2 hears it; "
                             "it announces 198.18.128.200 by gratuitous ARP every 10.0s from the VRRP virtual MAC "
                             "00:00:5e:00:01:3c")


def test_a_deaf_peer_a_late_announcement_a_missing_capture():
    found = pair_check({"lb1": master_capture(garps=(0.0, 19.0)), "lb2": capture_of([]), "lb3": None})
    got = sorted((f["check"], f["severity"], f["subject"]) for f in found)
    assert got == [("seesaw.garp_irregular", "warning", "lb1"), ("seesaw.not_checked", "warning", "lb3"),
                   ("seesaw.peer_not_hearing", "critical", "lb2")]


def test_a_short_window_does_not_judge_the_cadence():
    short = master_capture(adverts=5, garps=())
    short["seconds"] = 5.0
    backup = backup_capture(adverts=5)
    backup["seconds"] = 5.0
    found = pair_check({"lb1": short, "lb2": backup})
    assert sorted(f["check"] for f in found) == ["seesaw.garp_not_checked", "seesaw.pair"]


def test_another_vrid_is_not_this_pair():
    [none] = pair_check({"lb1": master_capture(), "lb2": backup_capture()}, vrid=61)
    assert none["check"] == "seesaw.no_master" and "advertisements from" not in none["summary"]


def test_a_late_gratuitous_arp_without_an_address_names_no_vip():
    """Before: a late gratuitous ARP entry whose address is None made pair_check raise TypeError."""
    master = master_capture()
    master["announcements"]["gratuitous_arp"].append(
        {"address": None, "mac": "00:00:5e:00:01:3c", "direction": "out", "interface": "eth0", "op": "reply",
         "packets": 2, "first": 0.0, "last": 19.0, "max_gap": 19.0, "mean_gap": 19.0})
    [ok] = pair_check({"lb1": master, "lb2": backup_capture()})
    assert (ok["check"], ok["severity"]) == ("seesaw.pair", "ok")
    assert "it announces 198.18.128.200 by gratuitous ARP every 10.0s" in ok["summary"]


# ------------------------------------------------------------------ the VIPs it should announce (S004-9)
def test_a_master_that_announces_some_vips_but_not_an_expected_one_is_not_ok():
    expected = {"vips": ["198.18.128.200", "198.18.128.201"], "source": "the LoadBalancer Services"}
    view = pair_view({"lb1": master_capture(), "lb2": backup_capture()}, expected=expected)
    assert view["master"] == "lb1" and view["announced"] == ["198.18.128.200"]
    [missing] = view["findings"]  # no seesaw.pair ok beside it
    assert (missing["check"], missing["severity"], missing["subject"]) == ("seesaw.vip_not_announced", "critical", "lb1")
    assert "announces 198.18.128.200 by gratuitous ARP but not 198.18.128.201 (the LoadBalancer Services)" in missing["summary"]
    assert missing["evidence"]["not_announced"] == ["198.18.128.201"]
    assert missing["evidence"]["expected_from"] == "the LoadBalancer Services"


def test_every_expected_vip_announced_is_ok_and_a_short_window_judges_none():
    expected = {"vips": ["198.18.128.200"], "source": "seesaw_vips"}
    [ok] = pair_check({"lb1": master_capture(), "lb2": backup_capture()}, expected=expected)
    assert ok["check"] == "seesaw.pair" and ok["evidence"]["expected"] == ["198.18.128.200"]
    short = master_capture(adverts=5, garps=())
    short["seconds"] = 5.0
    found = pair_check({"lb1": short, "lb2": backup_capture(adverts=5)}, expected={"vips": ["198.18.128.201"],
                                                                                   "source": "seesaw_vips"})
    assert sorted(f["check"] for f in found) == ["seesaw.garp_not_checked", "seesaw.pair"]


def test_no_master_or_two_has_no_master_in_the_view():
    assert pair_view({"lb1": backup_capture(), "lb2": backup_capture()})["master"] is None
    assert pair_view({"lb1": master_capture(), "lb2": master_capture()})["master"] is None
    assert pair_view({"lb1": None})["master"] is None
