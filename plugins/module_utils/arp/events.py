# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the kernel really deleted from its neighbour table, and putting an entry back (stdlib only).

A delete of ``ADDRESS dev DEVICE`` takes whatever entry holds that key at that instant: re-reading
it right before cannot exclude another writer replacing it in between.  ``NeighborEvents`` subscribes
a NETLINK_ROUTE socket to the RTNLGRP_NEIGH multicast group BEFORE the re-read; after the delete,
``deleted()`` waits (with a deadline) for the kernel's own RTM_DELNEIGH notification and returns the
entry it removed (lladdr, state, flags): the last RTM_NEWNEIGH of that key since the subscription, as
the kernel shows a deleted entry FAILED and without its lladdr, or the re-read when nothing changed; and ``restore()`` writes an entry back with RTM_NEWNEIGH
(create|replace: what ``ip neigh replace ADDRESS lladdr MAC dev DEVICE nud STATE`` does).

Layouts: ``struct nlmsghdr`` and ``struct ndmsg`` (linux/netlink.h, linux/neighbour.h), NUD_* and
NTF_* bits as in linux/neighbour.h.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, PrivilegeError, ReadError

NETLINK_ROUTE = 0
RTMGRP_NEIGH = 0x4  # 1 << (RTNLGRP_NEIGH - 1)
RTM_NEWNEIGH, RTM_DELNEIGH = 28, 29
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 0x1, 0x4, 0x100, 0x400
NDA_DST, NDA_LLADDR = 1, 2
_NLMSG = struct.Struct("=IHHII")
_NDMSG = struct.Struct("=BxxxiHBB")
_RTA = struct.Struct("=HH")

NUD_STATES = (("INCOMPLETE", 0x01), ("REACHABLE", 0x02), ("STALE", 0x04), ("DELAY", 0x08), ("PROBE", 0x10),
              ("FAILED", 0x20), ("NOARP", 0x40), ("PERMANENT", 0x80))
NTF_FLAGS = (("proxy", 0x08), ("extern_learn", 0x10), ("router", 0x80))
DEFAULT_WAIT = 2.0


def _bits(value, table):
    return [name for name, bit in table if value & bit]


def _value(names, table):
    return sum(bit for name, bit in table if name in names)


def _align(size):
    return (size + 3) & ~3


def _attrs(data):
    out = {}
    while len(data) >= _RTA.size:
        size, kind = _RTA.unpack_from(data)
        if size < _RTA.size:
            break
        out[kind] = data[_RTA.size:size]
        data = data[_align(size):]
    return out


def parse_messages(data):
    """Netlink bytes -> [(type, flags, payload)] (pure)."""
    out = []
    while len(data) >= _NLMSG.size:
        size, kind, flags, _seq, _pid = _NLMSG.unpack_from(data)
        if size < _NLMSG.size or size > len(data):
            break
        out.append((kind, flags, data[_NLMSG.size:size]))
        data = data[_align(size):]
    return out


def parse_neighbor(payload):
    """A ``struct ndmsg`` and its attributes -> {address, family, ifindex, mac, state, flags} (pure), or None."""
    if len(payload) < _NDMSG.size:
        return None
    family, ifindex, state, flags, _kind = _NDMSG.unpack_from(payload)
    attrs = _attrs(payload[_NDMSG.size:])
    dst = attrs.get(NDA_DST)
    if family not in (socket.AF_INET, socket.AF_INET6) or dst is None:
        return None
    lladdr = attrs.get(NDA_LLADDR)
    return {"address": socket.inet_ntop(family, dst), "family": 4 if family == socket.AF_INET else 6,
            "ifindex": ifindex, "mac": ":".join("%02x" % b for b in lladdr) if lladdr else None,
            "state": _bits(state, NUD_STATES) or ["NONE"], "flags": _bits(flags, NTF_FLAGS)}


def new_neighbor_request(entry, ifindex, seq=1):
    """The RTM_NEWNEIGH (create|replace) message that writes ``entry`` back on ``ifindex`` (pure)."""
    family = socket.AF_INET if entry["family"] == 4 else socket.AF_INET6
    body = _NDMSG.pack(family, ifindex, _value(entry["state"], NUD_STATES), _value(entry["flags"], NTF_FLAGS), 0)
    for kind, value in ((NDA_DST, socket.inet_pton(family, entry["address"])),
                        (NDA_LLADDR, bytes(int(part, 16) for part in entry["mac"].split(":")) if entry.get("mac") else None)):
        if value is None:
            continue
        attr = _RTA.pack(_RTA.size + len(value), kind) + value
        body += attr + b"\0" * (_align(len(attr)) - len(attr))
    return _NLMSG.pack(_NLMSG.size + len(body), RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
                       seq, 0) + body


class NeighborEvents(object):
    """The kernel's neighbour notifications of this network namespace, from the moment it is opened."""

    def __init__(self, wait=DEFAULT_WAIT):
        self.wait = wait
        self.latest, self.dels = {}, set()
        try:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self.sock.bind((0, RTMGRP_NEIGH))
        except OSError as exc:
            raise ReadError("cannot subscribe to the kernel's neighbour notifications (NETLINK_ROUTE, RTNLGRP_NEIGH): "
                            "%s; the flush needs them to know what each delete removed" % os.strerror(exc.errno or errno.EIO))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    @staticmethod
    def ifindex(interface):
        """The index of ``interface`` (ChangeError when the device is gone)."""
        try:
            return socket.if_nametoindex(interface)
        except OSError:
            raise ChangeError("deleting a neighbor entry on %s failed: the device %s does not exist (any more)"
                              % (interface, interface))

    def deleted(self, address, ifindex, before):
        """What the kernel deleted for ``address`` on ``ifindex``, or None when its RTM_DELNEIGH did not come
        within ``wait`` seconds.

        The kernel's RTM_DELNEIGH of an administrative delete shows the entry already FAILED, without its
        lladdr; what it held is its last RTM_NEWNEIGH since the subscription (a writer replacing it after
        the re-read sends one), or, when none came, ``before`` (the re-read: the entry did not change)."""
        key = (address, ifindex)
        deadline = time.monotonic() + self.wait
        while key not in self.dels:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                return None
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:  # notifications were lost: ours may be among them
                    raise ReadError("the kernel's neighbour notifications overflowed (ENOBUFS) while %s dev index %d "
                                    "was deleted: what it deleted is unknown" % (address, ifindex))
                raise
            self.take(data)
        self.dels.discard(key)
        last = self.latest.pop(key, None)
        if last is None:
            return dict(before, ifindex=ifindex)
        return last

    def take(self, data):
        """Fold notification bytes into ``latest`` (the last valid entry per key) and ``dels`` (keys deleted)."""
        for kind, _flags, payload in parse_messages(data):
            entry = parse_neighbor(payload) if kind in (RTM_NEWNEIGH, RTM_DELNEIGH) else None
            if entry is None:
                continue
            key = (entry["address"], entry["ifindex"])
            if kind == RTM_DELNEIGH:
                self.dels.add(key)
            elif entry["mac"] or set(entry["state"]) & set(("NOARP", "PERMANENT")):
                self.latest[key] = entry

    @staticmethod
    def restore(entry, ifindex, interface):
        """Write ``entry`` back (RTM_NEWNEIGH create|replace) on ``ifindex``; ChangeError naming it on failure."""
        text = "%s dev %s%s nud %s" % (entry["address"], interface, " lladdr %s" % entry["mac"] if entry.get("mac") else "",
                                       " ".join(s.lower() for s in entry["state"]))
        try:
            with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as sock:
                sock.settimeout(DEFAULT_WAIT)
                sock.bind((0, 0))
                sock.send(new_neighbor_request(entry, ifindex))
                for kind, _flags, payload in parse_messages(sock.recv(1 << 16)):
                    if kind == NLMSG_ERROR:
                        code = -struct.unpack_from("=i", payload)[0]
                        if code == 0:
                            return text
                        if code == errno.EPERM:
                            raise PrivilegeError("putting back the neighbor entry %s was refused: CAP_NET_ADMIN is "
                                                 "needed (become: true)" % text)
                        raise ChangeError("putting back the neighbor entry %s failed: %s; restore it by hand: "
                                          "ip neigh replace %s" % (text, os.strerror(code), text))
        except socket.timeout:
            raise ChangeError("putting back the neighbor entry %s: the kernel did not answer within %gs; check it and "
                              "restore it by hand: ip neigh replace %s" % (text, DEFAULT_WAIT, text))
        except OSError as exc:
            raise ChangeError("putting back the neighbor entry %s failed: %s; restore it by hand: ip neigh replace %s"
                              % (text, os.strerror(exc.errno or errno.EIO), text))
        raise ChangeError("putting back the neighbor entry %s: no answer from the kernel; restore it by hand: "
                          "ip neigh replace %s" % (text, text))
