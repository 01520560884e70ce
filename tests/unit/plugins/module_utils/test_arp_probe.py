"""arp_probe.py: the probe frame leaves no learnable sender; replies are matched to our probe."""

from __future__ import annotations

import socket
import struct

from ansible_collections.k8snet.triage.plugins.module_utils import arp_probe


def reply(sender_ip, sender_mac, target_mac):
    eth = arp_probe.mac_bytes(target_mac) + arp_probe.mac_bytes(sender_mac) + struct.pack("!H", 0x0806)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + arp_probe.mac_bytes(sender_mac) + socket.inet_aton(sender_ip)
    return eth + arp + arp_probe.mac_bytes(target_mac) + b"\x00" * 4


def test_probe_is_rfc5227_broadcast_with_zero_sender_ip():
    frame = arp_probe.build_request("02:18:00:00:00:03", "0a:11:22:33:44:55", "198.18.0.200")
    assert frame[:6] == b"\xff" * 6
    assert arp_probe.mac_text(frame[6:12]) == "02:18:00:00:00:03"
    htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", frame[14:22])
    assert (htype, ptype, hlen, plen, op) == (1, 0x0800, 6, 4, 1)
    assert arp_probe.mac_text(frame[22:28]) == "0a:11:22:33:44:55"
    assert frame[28:32] == b"\x00" * 4  # sender IP 0.0.0.0: receivers learn nothing
    assert socket.inet_ntoa(frame[38:42]) == "198.18.0.200"


def test_throwaway_mac_is_local_unicast():
    for dummy in range(50):
        first = int(arp_probe.throwaway_mac()[:2], 16)
        assert first & 0x02 and not first & 0x01


def test_reply_to_our_probe_is_read_and_others_ignored():
    ours = "0a:11:22:33:44:55"
    assert arp_probe.parse_reply(reply("198.18.0.200", "02:18:00:00:00:01", ours), ours) == (
        "198.18.0.200", "02:18:00:00:00:01")
    assert arp_probe.parse_reply(reply("198.18.0.200", "02:18:00:00:00:01", "02:18:00:00:00:03"), ours) is None
    assert arp_probe.parse_reply(b"\x00" * 10, ours) is None


def test_probing_out_of_a_downed_interface_is_a_clear_error(monkeypatch):
    """issue 11: probing a downed interface raised OSError (ENETDOWN) as a traceback."""
    import errno

    import pytest

    from ansible_collections.k8snet.triage.plugins.module_utils.errors import ReadError

    class DownSocket(object):
        def __init__(self, *args):
            pass

        def bind(self, address):
            pass

        def setsockopt(self, *args):
            pass

        def setblocking(self, flag):
            pass

        def send(self, frame):
            raise OSError(errno.ENETDOWN, "Network is down")

        def close(self):
            pass

    monkeypatch.setattr(arp_probe.socket, "socket", DownSocket)
    monkeypatch.setattr(arp_probe.socket, "if_nametoindex", lambda name: 7)
    with pytest.raises(ReadError, match=r"could not send ARP probes out of veth9: Network is down \(the interface is "
                                        r"down: `ip link set veth9 up`, or set probe: false\)"):
        arp_probe.probe([{"interface": "veth9", "src_mac": "02:00:00:00:00:01", "target": "198.18.0.9"}], 0.1)
