# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Path-MTU black holes: the largest packet that crosses to each peer, and whether the path says so.

For each peer, ICMP echo requests with DF set (``IP_MTU_DISCOVER = IP_PMTUDISC_PROBE``: DF on,
the path-MTU cache ignored, so every size is really sent) of a given total IP size; a binary
search between ``min_size`` (576, the size every IPv4 host must accept) and the MTU of the
interface the route to the peer uses finds the largest size that is answered.  The socket is
connected to the peer with ``IP_RECVERR`` on, so an ICMP "fragmentation needed" about these
probes lands on its error queue, with the next-hop MTU it announced.

* the largest size answered equals the interface MTU: the path carries full-size packets;
* smaller, and a "fragmentation needed" came back: path-MTU discovery works (TCP adapts), the
  interface MTU is only larger than the path's;
* smaller, and nothing came back: a black hole.  Small packets pass, large ones vanish, TCP
  connections hang after the handshake.

The MTU of every interface that matters (the route's device, the tunnels, the pod veths) is
read from netlink (``netlink.Netlink``, pyroute2 or ``ip -json``).  ``search`` and ``judge``
are pure; the probe is the only part that touches the network.
"""

from __future__ import annotations

import errno
import os
import random
import select
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.probes.pmtu_options import MAX_SIZE, MIN_SIZE, not_a_peer, refusal
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, PrivilegeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.core.pacing import DEFAULT_RATE, Pacer
from ansible_collections.k8snet.triage.plugins.module_utils.probes.reachability import echo_request, enter_netns, parse_echo_reply

# include/uapi/linux/in.h, errqueue.h
IP_MTU_DISCOVER = 10
IP_PMTUDISC_PROBE = 3
IP_RECVERR = 11
SO_EE_ORIGIN_ICMP = 2
ICMP_DEST_UNREACH = 3
ICMP_FRAG_NEEDED = 4
IP_HEADER = 20
ICMP_HEADER = 8
MAX_WORKERS = 16
# a full size unanswered while a smaller one was is asked again this many times before it is a black hole
CONFIRM_TRIES = 2
# a probe the local queue refused (ENOBUFS, EAGAIN) is sent again after these pauses (None: give up)
LOCAL_ERRNOS = (errno.ENOBUFS, errno.EAGAIN)
LOCAL_RETRY_DELAYS = (0.02, 0.1, 0.3, None)
TUNNEL_KINDS = ("vxlan", "ipip", "geneve", "wireguard", "gre", "gretap", "ip6tnl", "sit", "ip6gre")
POD_VETH_PREFIXES = ("lxc", "cali", "veth", "cni", "gke", "azv", "eni", "vxlan")

REMEDIATION = (
    "find the hop with the smaller MTU (the interfaces in evidence: uplink, tunnel, pod veths; switch ports and "
    "routers between the nodes) and make the MTUs agree: the overlay's MTU must be the underlay's minus its "
    "overhead (VXLAN 50 bytes, IPIP 20, WireGuard 80, Geneve 50+), set in the CNI's configuration (Calico "
    "veth_mtu / FELIX_*MTU, Cilium --mtu, flannel's network config) so new pod veths get it. Until then let "
    "ICMP type 3 code 4 (fragmentation needed) through every firewall on the path, so TCP can discover the "
    "path MTU; MSS clamping (--clamp-mss-to-pmtu) only helps TCP.")


# ------------------------------------------------------------------ pure


def search(probe, low, high):
    """The largest size in [low, high] for which ``probe(size)`` is true, assuming sizes below pass
    when a size passes (None when ``low`` itself fails).  Binary search, about log2(high-low) probes."""
    if not probe(low):
        return None
    if high <= low or probe(high):
        return max(low, high)
    good, bad = low, high
    while bad - good > 1:
        middle = (good + bad) // 2
        if probe(middle):
            good = middle
        else:
            bad = middle
    return good


def parse_extended_err(data):
    """A ``struct sock_extended_err`` (IP_RECVERR control message) -> {errno, origin, type, code, info} (pure)."""
    ee_errno, origin, icmp_type, code, _pad, info, _data = struct.unpack("=IBBBBII", data[:16])
    return {"errno": ee_errno, "origin": origin, "type": icmp_type, "code": code, "info": info}


def judge(row):
    """(check, severity, summary) of one peer's search (pure)."""
    name, high, largest = row["name"], row["probed_max"], row["largest"]
    if largest is None:
        return ("net.pmtu_unchecked", "info", "%s answered no %d-byte probe with DF set, so its path MTU was not "
                "measured (reachability is the connectivity check's)" % (name, row["probed_min"]))
    if largest >= high:
        return None
    frag = row.get("frag_needed")
    if frag:
        return ("net.pmtu_reduced", "info", "packets to %s above %d bytes do not pass (the interface %s allows %d), "
                "but the path answers with ICMP fragmentation needed (next-hop MTU %s from %s): path-MTU discovery "
                "works" % (name, largest, row["dev"], high, frag.get("mtu"), frag.get("from")))
    confirm = row.get("confirm") or {}
    if confirm and not confirm.get("largest_again"):
        return ("net.pmtu_unchecked", "info", "%s answered %d-byte probes, not %d-byte ones, then stopped answering "
                "the %d-byte probe asked again: the path was lost meanwhile, so whether large packets vanish was not "
                "confirmed (reachability is the connectivity check's)" % (name, largest, high, largest))
    return ("net.pmtu_blackhole", "critical", "packets to %s above %d bytes vanish although the interface %s allows "
            "%d, and no ICMP fragmentation needed came back: a path-MTU black hole (small packets pass, TCP "
            "transfers hang)%s" % (name, largest, row["dev"], high,
                                   "; confirmed: %d more %d-byte probes unanswered while a %d-byte one was"
                                   % (confirm["tries"], high, largest) if confirm else ""))


def path_interfaces(links, devices, tunnel_kinds=TUNNEL_KINDS, veth_prefixes=POD_VETH_PREFIXES):
    """The MTUs that matter on this node (pure): the route devices, the tunnels, the pod veths."""
    by_name = dict((link["ifname"], link) for link in links)

    def row(link):
        return {"ifname": link["ifname"], "kind": link.get("kind"), "mtu": link.get("mtu"), "up": link.get("up")}

    veths = [link for link in links if link.get("kind") in ("veth", None) and link["ifname"].startswith(veth_prefixes)
             and link["ifname"] not in devices]
    mtus = {}
    for link in veths:
        mtus[str(link.get("mtu"))] = mtus.get(str(link.get("mtu")), 0) + 1
    return {"route_devices": [row(by_name[d]) for d in sorted(devices) if d in by_name],
            "tunnels": [row(link) for link in links if link.get("kind") in tunnel_kinds],
            "pod_veths": {"count": len(veths), "mtus": mtus, "sample": sample(row(link) for link in veths)}}


def _local_failure_finding(failed, total, subject):
    """``net.pmtu_probe_failed_locally``: ``failed`` of ``total`` searches could not send their probes."""
    return finding(
        "net.pmtu_probe_failed_locally", "warning", "L3", subject,
        "%d of %d path-MTU searches could not send their probes from %s (%s): those peers were not measured, "
        "and nothing is concluded about them - the failure is this node's" % (
            len(failed), total, subject, "; ".join(sorted(set(r["local_error"] for r in failed)))),
        {"peers": sample(r["name"] for r in failed), "errors": sorted(set(r["local_error"] for r in failed))},
        "No buffer space available is this node's own queue full (many probes at once on a loaded node: fewer "
        "peers per run, pmtu_max_peers); Operation not permitted is a local firewall (OUTPUT) or missing "
        "CAP_NET_RAW; Network is unreachable is this node's route")


def _peer_finding(row, interfaces):
    """The finding ``judge`` gives one measured peer, with its search as evidence (None when it passed)."""
    verdict = judge(row)
    if not verdict:
        return None
    name, severity, summary = verdict
    keys = ("address", "dev", "probed_min", "probed_max", "largest", "frag_needed", "probes", "seconds")
    evidence = dict((k, row[k]) for k in keys)
    evidence["interfaces"] = interfaces
    return finding(name, severity, "L3", row["name"], summary, evidence,
                   "k8snet.triage.reachability to this peer first" if name == "net.pmtu_unchecked"
                   else REMEDIATION)


def _all_full_size(rows):
    """Whether there are rows and every one of them carried packets up to its probed maximum."""
    measured = [r for r in rows if r["largest"] is not None and r["largest"] >= r["probed_max"]]
    return bool(measured) and len(measured) == len(rows)


def check(rows, interfaces, subject):
    out = []
    failed = [r for r in rows if r.get("local_error")]
    if failed:
        out.append(_local_failure_finding(failed, len(rows), subject))
    rows = [r for r in rows if not r.get("local_error")]
    for row in rows:
        found = _peer_finding(row, interfaces)
        if found:
            out.append(found)
    if not failed and _all_full_size(rows):
        out.append(finding("net.pmtu", "ok", "L3", subject,
                           "full-size packets (%s bytes) with DF set reach all %d peers" % (
                               ", ".join(sorted(set(str(r["probed_max"]) for r in rows))), len(rows)),
                           {"peers": sample(r["name"] for r in rows), "interfaces": interfaces}))
    return out


# ------------------------------------------------------------------ probes


def _socket(address):
    try:
        sock, raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), True
    except PermissionError:
        try:
            sock, raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP), False
        except OSError:
            raise PrivilegeError("path-MTU probes need CAP_NET_RAW (or net.ipv4.ping_group_range covering this user); "
                                 "run the task with become: true")
    sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE)
    sock.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    sock.connect((address, 0))
    return sock, raw


class Prober(object):
    """Echo requests of one total IP size at a time to one peer, DF set, ``copies`` per size; each packet waits
    for its slot of ``pacer`` (pacing.Pacer, shared by the searches of every peer) when there is one."""

    pacer = None

    def __init__(self, address, timeout, copies=2, pacer=None):
        self.address, self.timeout, self.copies, self.pacer = address, timeout, copies, pacer
        self.sock, self.raw = _socket(address)
        self.ident = random.randint(1, 0xFFFF)
        self.seq = 0
        self.sent = 0
        self.frag_needed = None
        self.frag_now = None

    def close(self):
        self.sock.close()

    def drain_errors(self):
        """Read the socket's error queue: a "fragmentation needed" about our probes, with its next-hop MTU."""
        while True:
            try:
                _data, ancdata, _flags, addr = self.sock.recvmsg(2048, 512, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            for level, kind, data in ancdata:
                if level != socket.IPPROTO_IP or kind != IP_RECVERR or len(data) < 16:
                    continue
                err = parse_extended_err(data)
                if err["origin"] == SO_EE_ORIGIN_ICMP and err["type"] == ICMP_DEST_UNREACH and err["code"] == ICMP_FRAG_NEEDED:
                    offender = socket.inet_ntoa(data[20:24]) if len(data) >= 24 else (addr[0] if addr else None)
                    self.frag_needed = {"mtu": err["info"], "from": offender}
                    self.frag_now = err["info"]

    def _send(self, packet):
        """Send one probe; a full local queue (ENOBUFS, EAGAIN: this node's own buffers, at fleet size many probes
        at once) is waited out a few times, with a short back-off, before it is given up as a local failure."""
        if self.pacer is not None:
            self.pacer.wait()
        for delay in LOCAL_RETRY_DELAYS:
            try:
                self.sock.send(packet)
                return
            except OSError as exc:
                if exc.errno not in LOCAL_ERRNOS or delay is None:
                    raise
                time.sleep(delay)

    def __call__(self, size):
        payload = b"k8snet-pmtu" * ((size - IP_HEADER - ICMP_HEADER - 8) // 11 + 1)
        payload = payload[:size - IP_HEADER - ICMP_HEADER - 8]
        seqs = []
        for dummy in range(self.copies):
            self.seq = (self.seq + 1) & 0xFFFF
            try:
                self._send(echo_request(self.ident, self.seq, struct.pack("!d", time.time()) + payload))
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:
                    self.drain_errors()
                    return False
                raise
            self.sent += 1
            seqs.append(self.seq)
        deadline = time.time() + self.timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                return False
            ready = select.select([self.sock], [], [], left)[0]
            if not ready:
                return False
            try:
                data = self.sock.recv(MAX_SIZE)
            except OSError:  # the pending error of an ICMP about our probe: read it
                self.frag_now = None
                self.drain_errors()
                if self.frag_now is not None and self.frag_now < size:
                    return False  # a router said this size does not fit: no need to wait for the timeout
                continue
            reply = parse_echo_reply(data, self.raw)
            if reply and reply[1] in seqs and (not self.raw or reply[0] == self.ident):
                return True


def confirm_short_path(prober, largest, high, tries=CONFIRM_TRIES):
    """A path that answered ``largest`` but not ``high`` with no "fragmentation needed" back is asked again before
    it is called a black hole: on a loaded node or peer a lost or late answer looks the same.  The full size is
    probed ``tries`` more times (it passing ends it: ``high``), then ``largest`` once, which must still pass for
    the verdict to stand.  Returns ``(largest, {tries, full_size, largest_again})``."""
    confirm = {"tries": 0, "full_size": False, "largest_again": None}
    for dummy in range(tries):
        confirm["tries"] += 1
        if prober(high):
            confirm["full_size"] = True
            return high, confirm
    confirm["largest_again"] = bool(prober(largest))
    prober.drain_errors()
    return largest, confirm


def probe_peer(target, high, low, timeout, prober_class=None, pacer=None):
    """One peer's search; a probe this node could not send (its own buffers, permissions, no route: an OSError
    on send) ends it with ``local_error`` - the prober's problem, never the peer's."""
    started = time.time()
    cls = prober_class or Prober
    prober = cls(target["address"], timeout, pacer=pacer) if pacer is not None else cls(target["address"], timeout)
    local_error = None
    confirm = None
    try:
        largest = search(prober, low, high)
        prober.drain_errors()
        if largest is not None and largest < high and not prober.frag_needed:
            largest, confirm = confirm_short_path(prober, largest, high)
    except OSError as exc:
        largest, local_error = None, "%s (errno %s)" % (os.strerror(exc.errno) if exc.errno else exc, exc.errno)
    finally:
        prober.close()
    row = {"address": target["address"], "name": target["name"], "dev": target["dev"], "probed_min": low,
           "probed_max": high, "largest": largest, "frag_needed": prober.frag_needed, "probes": prober.sent,
           "seconds": round(time.time() - started, 3)}
    if confirm:
        row["confirm"] = confirm
    if local_error:
        row["local_error"] = local_error
    return row


# ----------------------------------------------------------------- the node check (one shape)


def validate_targets(targets):
    if not targets:
        raise InputError("targets is empty, so no path would be measured: give at least one peer address")
    out = []
    for index, item in enumerate(targets):
        address = params.address(4)("targets[%d].address" % index, item.get("address"))
        out.append({"address": address, "name": item.get("name") or address, "option": "targets[%d].address" % index})
    return out


def unusable(target, route):
    """Why ``target`` is not a peer (None when it is): an address no peer has, or one this host answers itself
    (the kernel's route to it is of type local, through lo: this node's own address)."""
    why = not_a_peer(target["address"])
    if why is None and (route.get("type") == "local" or route.get("dev") == "lo"):
        why = "this node's own address (the kernel's route to it is local, through %s)" % (route.get("dev") or "lo")
    return why


def _check_sizes(low, ceiling):
    """Refuse a ``max_size`` below ``min_size``."""
    if ceiling is not None and ceiling < low:
        raise InputError("max_size %d is below min_size %d; give max_size of at least min_size or leave it out "
                         "(the route's interface MTU)" % (ceiling, low))


def _refuse_non_peers(targets):
    """With ``strict``: refuse the first target whose address no peer has (before anything is read)."""
    for target in targets:
        why = not_a_peer(target["address"])
        if why:
            raise refusal(target["option"], target["address"], why)


def _read_paths(netlink, targets, ceiling, strict):
    """(links, usable targets, skipped) from netlink: each usable target gets its route's ``dev`` and the size
    ``high`` to search up to (the device's MTU, 1500 when unknown, capped by ``ceiling``); a target that is not
    a peer is refused with ``strict``, else skipped with its reason.  ``netlink`` is closed in any case."""
    skipped = []
    try:
        links = netlink.links()
        mtus = dict((link["ifname"], link.get("mtu")) for link in links)
        usable = []
        for target, route in zip(targets, netlink.routes_get([t["address"] for t in targets])):
            why = unusable(target, route)
            if why and strict:
                raise refusal(target["option"], target["address"], why)
            if why:
                skipped.append({"address": target["address"], "name": target["name"], "reason": why})
                continue
            target["dev"] = route.get("dev")
            mtu = mtus.get(route.get("dev")) or 1500
            target["high"] = min(mtu, ceiling) if ceiling else mtu
            usable.append(target)
    finally:
        netlink.close()
    return links, usable, skipped


def _probe_all(targets, low, timeout, pacer=None):
    """The searches of every target with a route device, in parallel (their packets paced by ``pacer``), then a
    row for each one without."""
    jobs = [t for t in targets if t["dev"]]
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, max(1, len(jobs)))) as pool:
        futures = [pool.submit(probe_peer, t, max(low, t["high"]), low, timeout, pacer=pacer) for t in jobs]
        rows = [f.result() for f in futures]
    for target in targets:
        if not target["dev"]:
            rows.append({"address": target["address"], "name": target["name"], "dev": None, "probed_min": low,
                         "probed_max": None, "largest": None, "frag_needed": None, "probes": 0, "seconds": 0.0})
    return rows


def _skipped_finding(skipped, subject):
    """``net.pmtu_target_skipped`` (info): the targets that are not peers, each with its reason."""
    return finding(
        "net.pmtu_target_skipped", "info", "L3", subject,
        "%d target%s not measured, not a peer: %s" % (len(skipped), "" if len(skipped) == 1 else "s", "; ".join(
            "%s is %s" % (s["name"] if s["name"] == s["address"] else "%s (%s)" % (s["name"], s["address"]),
                          s["reason"]) for s in skipped)),
        {"skipped": skipped},
        "give that peer's unicast address (its node InternalIP or k8s_node_ip host variable), or leave it out "
        "of the targets")


def node_check(params, runner, strict=False):
    """The path-MTU search from this node to each target, in parallel: ``params`` (pmtu_check's options)
    in, ``{"data": {peers, interfaces, skipped}, "findings": [...]}`` out.  ``runner`` runs ``ip`` (the
    netlink reader).  A target that is not a peer (``unusable``) is refused with ``strict`` (module
    pmtu_check), else (node_triage's pass over the fleet) skipped with a note and the finding
    ``net.pmtu_target_skipped`` (info)."""
    from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink

    targets = validate_targets(params.get("targets") or [])
    low, ceiling = params.get("min_size", MIN_SIZE), params.get("max_size")
    timeout = params.get("timeout", 0.5)
    _check_sizes(low, ceiling)
    if strict:
        _refuse_non_peers(targets)
    netns_pid = params.get("netns_pid")
    if netns_pid is not None:
        # a pod's view: only for a process that runs nothing else (module pmtu_check); the one pass never passes it
        enter_netns(netns_pid)
    netlink = Netlink(runner, params.get("reader") or "auto")
    links, targets, skipped = _read_paths(netlink, targets, ceiling, strict)
    rows = _probe_all(targets, low, timeout, Pacer(params.get("rate", DEFAULT_RATE)))
    interfaces = path_interfaces(links, set(r["dev"] for r in rows if r["dev"]))
    subject = params.get("node_name") or "this node"
    if netns_pid is not None:
        subject = "%s (netns of pid %d)" % (subject, netns_pid)
    found = check(rows, interfaces, subject)
    if skipped:
        found.append(_skipped_finding(skipped, subject))
    return {"data": {"peers": rows, "interfaces": interfaces, "skipped": skipped}, "findings": found}


def module_check(params, runner):
    """Module pmtu_check's check: ``node_check`` refusing a target that is not a peer."""
    return node_check(params, runner, strict=True)
