# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""ARP frames and raw packet sockets (the one home for both), and ARP probing (stdlib only;
needs CAP_NET_RAW).

All requests of one interface go out together and every reply is collected until the
timeout, so several addresses cost one timeout, and every MAC that answers one address is
seen (which is how an IP conflict shows).

Probing must not change any neighbor cache, ours or theirs:

* requests are RFC 5227 probes (sender IP 0.0.0.0): a receiver answers only if it holds the
  address, and learns nothing from the request;
* the sender hardware address is a throwaway, locally administered MAC, so replies are
  addressed to it: this host's ARP stack drops them as "not for us" (otherwise the kernel
  would refresh a stale entry from the reply and hide the very fault we look for), while our
  packet socket, in promiscuous mode for the probe's duration, still reads them.
"""

from __future__ import annotations

import errno
import select
import socket
import struct
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.macs import mac_bytes, mac_text, random_local_mac

ETH_P_ARP = 0x0806
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
ARPOP_REQUEST = 1
ARPOP_REPLY = 2
PACKET_OUTGOING = 4
BROADCAST = b"\xff" * 6


def build_request(eth_src, sender_mac, target_ip, sender_ip="0.0.0.0"):
    """A broadcast ARP request for ``target_ip``: an RFC 5227 probe (sender IP 0.0.0.0) unless
    ``sender_ip`` is given (then an ordinary who-has, as the kernel sends it)."""
    eth = BROADCAST + mac_bytes(eth_src) + struct.pack("!H", ETH_P_ARP)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, ARPOP_REQUEST)
    arp += mac_bytes(sender_mac) + socket.inet_aton(sender_ip) + b"\x00" * 6 + socket.inet_aton(target_ip)
    return eth + arp


def parse_reply(frame, sender_mac=None):
    """(sender_ip, sender_mac) of an ARP reply frame (to ``sender_mac`` if given), or None."""
    if len(frame) < 42 or struct.unpack("!H", frame[12:14])[0] != ETH_P_ARP:
        return None
    htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", frame[14:22])
    if (htype, ptype, hlen, plen, op) != (1, 0x0800, 6, 4, ARPOP_REPLY):
        return None
    if sender_mac and mac_text(frame[32:38]) != sender_mac:
        return None  # an ordinary reply to someone else, not to our probe
    return socket.inet_ntoa(frame[28:32]), mac_text(frame[22:28])


def open_socket(interface, denied):
    """A raw packet socket for ARP bound to ``interface``.  ``denied`` is the message of the
    PrivilegeError raised when CAP_NET_RAW is missing (it names what the caller was doing)."""
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES):
            raise PrivilegeError(denied)
        raise ReadError("could not open a packet socket on %s: %s" % (interface, exc))
    try:
        sock.bind((interface, ETH_P_ARP))
    except BaseException:
        sock.close()
        raise
    return sock


def promiscuous(sock, interface):
    """Receive frames addressed to any MAC on ``interface`` for the socket's lifetime."""
    mreq = struct.pack("iHH8s", socket.if_nametoindex(interface), PACKET_MR_PROMISC, 0, b"")
    sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)


def probe(requests, timeout):
    """Send ARP requests and collect every answer.

    ``requests`` is a list of {"interface", "src_mac", "target"}; returns
    {target: [mac, ...]} in the order the answers came (duplicates removed).
    """
    answers = dict((r["target"], []) for r in requests)
    sender = random_local_mac()
    by_interface = {}
    for request in requests:
        by_interface.setdefault(request["interface"], []).append(request)
    sockets = []
    try:
        for interface, items in by_interface.items():
            sock = open_socket(interface, "ARP probing needs CAP_NET_RAW (a raw packet socket on %s was refused): "
                                          "run the task with become: true, or set probe: false" % interface)
            sockets.append(sock)
            try:
                promiscuous(sock, interface)
                sock.setblocking(False)
                for request in items:
                    sock.send(build_request(request["src_mac"], sender, request["target"]))
            except OSError as exc:
                hint = " (the interface is down: `ip link set %s up`, or set probe: false)" % interface \
                    if exc.errno == errno.ENETDOWN else " (set probe: false to only read the neighbor table)"
                raise ReadError("could not send ARP probes out of %s: %s%s"
                                % (interface, exc.strerror or exc, hint), interface=interface)
        deadline = time.time() + timeout
        while sockets:
            left = deadline - time.time()
            if left <= 0:
                break
            readable = select.select(sockets, [], [], left)[0]
            for sock in readable:
                try:
                    frame, info = sock.recvfrom(2048)
                except (BlockingIOError, InterruptedError):
                    continue
                if info[2] == PACKET_OUTGOING:
                    continue
                reply = parse_reply(frame, sender)
                if reply and reply[0] in answers and reply[1] not in answers[reply[0]]:
                    answers[reply[0]].append(reply[1])
    finally:
        for sock in sockets:
            sock.close()
    return answers
