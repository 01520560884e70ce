"""arp_probe.py: the probe frame leaves no learnable sender; replies are matched to our probe."""

from __future__ import annotations

import socket
import struct

import errno

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.arp import probe as arp_probe
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.macs import mac_bytes, mac_text


def reply(sender_ip, sender_mac, target_mac):
    eth = mac_bytes(target_mac) + mac_bytes(sender_mac) + struct.pack("!H", 0x0806)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac_bytes(sender_mac) + socket.inet_aton(sender_ip)
    return eth + arp + mac_bytes(target_mac) + b"\x00" * 4


def test_probe_is_rfc5227_broadcast_with_zero_sender_ip():
    frame = arp_probe.build_request("02:18:00:00:00:03", "0a:11:22:33:44:55", "198.18.0.200")
    assert frame[:6] == b"\xff" * 6
    assert mac_text(frame[6:12]) == "02:18:00:00:00:03"
    htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", frame[14:22])
    assert (htype, ptype, hlen, plen, op) == (1, 0x0800, 6, 4, 1)
    assert mac_text(frame[22:28]) == "0a:11:22:33:44:55"
    assert frame[28:32] == b"\x00" * 4  # sender IP 0.0.0.0: receivers learn nothing
    assert socket.inet_ntoa(frame[38:42]) == "198.18.0.200"


def test_request_with_a_sender_ip_is_an_ordinary_who_has():
    frame = arp_probe.build_request("02:18:00:00:00:03", "02:18:00:00:00:03", "198.18.0.200", sender_ip="198.18.0.11")
    assert socket.inet_ntoa(frame[28:32]) == "198.18.0.11" and mac_text(frame[22:28]) == "02:18:00:00:00:03"
    assert frame[32:38] == b"\x00" * 6 and len(frame) == 42


def test_reply_to_our_probe_is_read_and_others_ignored():
    ours = "0a:11:22:33:44:55"
    assert arp_probe.parse_reply(reply("198.18.0.200", "02:18:00:00:00:01", ours), ours) == (
        "198.18.0.200", "02:18:00:00:00:01")
    assert arp_probe.parse_reply(reply("198.18.0.200", "02:18:00:00:00:01", "02:18:00:00:00:03"), ours) is None
    assert arp_probe.parse_reply(b"\x00" * 10, ours) is None


def test_any_reply_is_read_when_no_sender_is_given():
    assert arp_probe.parse_reply(reply("198.18.0.200", "02:18:00:00:00:01", "02:18:00:00:00:03")) == (
        "198.18.0.200", "02:18:00:00:00:01")


def test_a_request_is_not_a_reply():
    frame = arp_probe.build_request("02:18:00:00:00:03", "02:18:00:00:00:03", "198.18.0.200")
    assert arp_probe.parse_reply(frame) is None


class FakeSocket(object):
    def __init__(self, *args, **kwargs):
        self.bound = None
        self.closed = False
        FakeSocket.made.append(self)

    def bind(self, address):
        if address[0] == "gone0":
            raise OSError(errno.ENODEV, "No such device")
        self.bound = address

    def close(self):
        self.closed = True


@pytest.mark.parametrize("error, expected", [
    (errno.EPERM, PrivilegeError), (errno.EACCES, PrivilegeError), (errno.EAFNOSUPPORT, ReadError)])
def test_packet_socket_refused_is_a_clear_error(monkeypatch, error, expected):
    def refuse(*args):
        raise OSError(error, "refused")

    monkeypatch.setattr(arp_probe.socket, "socket", refuse)
    with pytest.raises(expected) as err:
        arp_probe.open_socket("eth0", "ARP probing needs CAP_NET_RAW")
    assert "CAP_NET_RAW" in err.value.message if expected is PrivilegeError else "eth0" in err.value.message


def test_packet_socket_is_bound_to_the_interface_and_closed_when_bind_fails(monkeypatch):
    FakeSocket.made = []
    monkeypatch.setattr(arp_probe.socket, "socket", FakeSocket)
    sock = arp_probe.open_socket("eth0", "denied")
    assert sock.bound == ("eth0", arp_probe.ETH_P_ARP)
    with pytest.raises(OSError):
        arp_probe.open_socket("gone0", "denied")
    assert FakeSocket.made[-1].closed


def test_probing_out_of_a_downed_interface_is_a_clear_error(monkeypatch):
    """issue 11: probing a downed interface raised OSError (ENETDOWN) as a traceback."""
    import errno

    import pytest

    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

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
