# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""ICMP echo, TCP connect and ARP probes from this host, in parallel, standard library only.

ICMP uses a raw socket (CAP_NET_RAW) or, without it, an unprivileged ICMP datagram socket when
``net.ipv4.ping_group_range`` allows; ARP uses an AF_PACKET socket on the interface the route to
the target uses (on-link targets only) and records every MAC that answers; TCP is a plain
connect.  With ``netns_pid`` the probes run inside that process's network namespace (a pod's,
for example), entered with setns(2) before any probe thread starts.

Probe models:
  icmp {"sent", "received", "rtt_ms", "error"}
  tcp  {"port", "status": open|refused|timeout|unreachable|error, "ms", "error"}
  arp  {"status": answered|no_answer|not_on_link|error, "interface", "macs", "error"}
"""

from __future__ import annotations

import ctypes
import errno
import os
import random
import select
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils.arp import probe as arp_probe
from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, PrivilegeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.interfaces import macs_by_name
from ansible_collections.k8snet.triage.plugins.module_utils.core.pacing import DEFAULT_RATE, Pacer
from ansible_collections.k8snet.triage.plugins.module_utils.probes.reachability_options import PROBES

CLONE_NEWNET = 0x40000000
MAX_WORKERS = 32


# ------------------------------------------------------------------ pure helpers


def checksum(data):
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_request(ident, seq, payload=b"k8snet-triage"):
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, seq) + payload


def parse_echo_reply(data, raw=True):
    """(ident, seq) of an ICMP echo reply; raw sockets include the IPv4 header."""
    if raw:
        data = data[(data[0] & 0x0F) * 4:]
    if len(data) < 8 or data[0] != 0:
        return None
    ident, seq = struct.unpack("!4xHH", data[:8])
    return ident, seq


def validate_targets(targets, default_port):
    """Targets as {address, name, port}; a port of 0 is refused, never replaced by ``default_port``."""
    if not targets:
        raise InputError("targets is empty, so nothing would be probed: give at least one target address")
    out = []
    for index, item in enumerate(targets):
        address = params.address(4)("targets[%d].address" % index, item.get("address"))
        port = params.port("targets[%d].port" % index if item.get("port") is not None else "tcp_port",
                           default_port if item.get("port") is None else item["port"])
        out.append({"address": address, "name": item.get("name") or address, "port": port})
    return out


# ------------------------------------------------------------------ probes


def enter_netns(pid, path=None):
    """Move the calling thread (before any other thread starts: the threads and commands it starts
    afterwards are there too) into the network namespace of ``pid``, or of the namespace file ``path``
    (a named namespace under /var/run/netns)."""
    what = "netns_pid %d" % pid if path is None else "network namespace %s" % path
    path = path or "/proc/%d/ns/net" % pid
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise InputError("%s: cannot open %s (%s); give the pid of a process in the pod, e.g. from crictl "
                         "inspect, or its pod_ip" % (what, path, exc.strerror))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            if err == errno.EPERM:
                raise PrivilegeError("entering the %s needs CAP_SYS_ADMIN; run the task with become: true" % what)
            raise InputError("setns into %s failed: %s" % (path, os.strerror(err)))
    finally:
        os.close(fd)


def enter_pod(params, runner):
    """Enter the namespace ``params`` names, ``netns_pid`` or ``pod_ip`` (found with pod_netns.find_by_ip),
    and return its description for a finding's subject ("netns of pid N", "pod IP (netns of pid N)"), or
    None when neither is given.  Only for a module process that runs nothing else."""
    netns_pid, pod_ip = params.get("netns_pid"), params.get("pod_ip")
    if netns_pid is not None and pod_ip:
        raise InputError("netns_pid and pod_ip both name a namespace to probe from: give one of them")
    if netns_pid is not None:
        enter_netns(netns_pid)
        return "netns of pid %d" % netns_pid
    if not pod_ip:
        return None
    from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import pod_netns  # pylint: disable=import-outside-toplevel
    found = pod_netns.find_by_ip(pod_ip, runner)
    if found["pids"]:
        enter_netns(found["pids"][0])
        return "pod %s (netns of pid %d)" % (found["ip"], found["pids"][0])
    enter_netns(0, pod_netns.named_path(found["netns_name"]))
    return "pod %s (netns %s)" % (found["ip"], found["netns_name"])


def _icmp_socket():
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), True
    except PermissionError:
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP), False
        except OSError:
            raise PrivilegeError("ICMP probes need CAP_NET_RAW (or net.ipv4.ping_group_range covering this user); "
                                 "run the task with become: true or leave icmp out of probes")


def _no_pace():
    """The pace of an unpaced probe: no wait."""


def probe_icmp(address, count, timeout, interval=0.2, pace=_no_pace, until_lost=False):
    """Up to ``count`` echoes, each waited for ``timeout``; ``until_lost``: stop at the first one lost."""
    sock, raw = _icmp_socket()
    ident = random.randint(1, 0xFFFF)
    result = {"sent": 0, "received": 0, "rtt_ms": None, "error": None}
    rtts = []
    try:
        if not raw:
            sock.connect((address, 0))
        for seq in range(1, count + 1):
            pace()
            sent_at = time.time()
            try:
                if raw:
                    sock.sendto(echo_request(ident, seq), (address, 0))
                else:
                    sock.send(echo_request(ident, seq))
            except OSError as exc:
                result["error"] = exc.strerror or str(exc)
                break
            result["sent"] += 1
            deadline = sent_at + timeout
            while True:
                left = deadline - time.time()
                if left <= 0 or not select.select([sock], [], [], left)[0]:
                    break
                data, peer = sock.recvfrom(2048)
                reply = parse_echo_reply(data, raw)
                # unprivileged sockets rewrite the id: match on the sequence and the peer
                if reply and peer[0] == address and reply[1] == seq and (not raw or reply[0] == ident):
                    rtts.append((time.time() - sent_at) * 1000)
                    result["received"] += 1
                    break
            if until_lost and result["received"] < result["sent"]:
                break
            if seq < count:
                time.sleep(max(0, interval - (time.time() - sent_at)) if rtts else 0)
    finally:
        sock.close()
    if rtts:
        result["rtt_ms"] = round(sum(rtts) / len(rtts), 3)
    return result


def probe_tcp(address, port, timeout, count=1, pace=_no_pace):
    """Up to ``count`` connects, stopping at the first that opens; the last status wins otherwise."""
    out = {"port": port, "status": "error", "attempts": 0, "ms": None, "error": None}
    for dummy in range(count):
        out["attempts"] += 1
        pace()
        started = time.time()
        try:
            sock = socket.create_connection((address, port), timeout=timeout)
            sock.close()
            out.update(status="open", error=None)
        except socket.timeout:
            out.update(status="timeout", error="no answer in %ss" % timeout)
        except OSError as exc:
            status = {errno.ECONNREFUSED: "refused", errno.EHOSTUNREACH: "unreachable",
                      errno.ENETUNREACH: "unreachable"}.get(exc.errno, "error")
            out.update(status=status, error=exc.strerror or str(exc))
        out["ms"] = round((time.time() - started) * 1000, 3)
        if out["status"] == "open":
            break
    return out


def probe_arp(address, route, links, addresses, count, timeout, pace=_no_pace):
    """ARP who-has on the route's interface; every MAC that answers is recorded."""
    dev = route.get("dev")
    out = {"status": "no_answer", "interface": dev, "macs": [], "error": None}
    if route.get("gateway") or not dev or route.get("type") not in ("unicast",):
        out.update(status="not_on_link", error="routed via %s" % (route.get("gateway") or route.get("type")))
        return out
    mac = macs_by_name(links).get(dev)
    src = route.get("prefsrc") or next((a["address"] for a in addresses if a["interface"] == dev and a["family"] == 4), None)
    if not mac or not src:
        out.update(status="error", error="interface %s has no MAC or IPv4 address" % dev)
        return out
    sock = arp_probe.open_socket(dev, "ARP probes need CAP_NET_RAW; run the task with become: true or leave arp out of probes")
    macs = []
    try:
        for dummy in range(count):
            pace()
            sock.send(arp_probe.build_request(mac, mac, address, sender_ip=src))
            deadline = time.time() + timeout
            while True:
                left = deadline - time.time()
                if left <= 0 or not select.select([sock], [], [], left)[0]:
                    break
                reply = arp_probe.parse_reply(sock.recv(2048))
                if reply and reply[0] == address and reply[1] not in macs:
                    macs.append(reply[1])
            if macs:
                break
    finally:
        sock.close()
    out.update(status="answered" if macs else "no_answer", macs=macs)
    return out


RETRY_PAUSE = 0.3  # seconds between the first round and the retry of the targets that answered nothing
RETRY_WORKERS = 4
# a target that lost some of its echoes is asked again with more (an operator's "repeat with a larger count"), until
# one is lost again: one lost answer of a loaded prober or peer is not a lossy path; a lossy one loses again (at
# 30 % loss, 10 echoes all pass 3 % of the time)
LOSS_RECHECK_COUNT = 10
LOSS_RECHECK_INTERVAL = 0.05


class Prober(object):
    def __init__(self, netlink, probes, count, timeout, pacer=None):
        self.netlink, self.probes, self.count, self.timeout = netlink, probes, count, timeout
        # every packet of every probe thread waits for its slot (pacing.Pacer): the node's probe budget
        self.pace = pacer.wait if pacer is not None else _no_pace
        self._links = self._addresses = None

    def _one(self, target, kind):
        if kind == "icmp":
            return probe_icmp(target["address"], self.count, self.timeout, pace=self.pace)
        if kind == "tcp":
            return probe_tcp(target["address"], target["port"], self.timeout, self.count, pace=self.pace)
        return probe_arp(target["address"], target["route"], self._links, self._addresses, self.count, self.timeout,
                         pace=self.pace)

    def _round(self, targets, workers):
        jobs = [(t, kind) for t in targets for kind in PROBES if kind in self.probes]
        rows = dict((t["address"] + "/" + t["name"], {"address": t["address"], "name": t["name"]}) for t in targets)
        with ThreadPoolExecutor(max_workers=min(workers, max(1, len(jobs)))) as pool:
            futures = [(t, kind, pool.submit(self._one, t, kind)) for t, kind in jobs]
            for target, kind, future in futures:
                rows[target["address"] + "/" + target["name"]][kind] = future.result()
        out = [rows[t["address"] + "/" + t["name"]] for t in targets]
        for row in out:
            row["reachable"] = judge(row)
        return out

    def run(self, targets):
        """Every (target, probe) pair in its own thread; rows in the order of ``targets``.  A target that answered
        nothing is probed once more, a few at a time, before it is called unreachable: at fleet size a loaded
        prober loses answers of its own burst (the row says ``retried``)."""
        if "arp" in self.probes:
            self._links, self._addresses = self.netlink.links(), self.netlink.addresses()
            for target, route in zip(targets, self.netlink.routes_get([t["address"] for t in targets])):
                target["route"] = route
        out = self._round(targets, MAX_WORKERS)
        silent = [(index, target) for index, (target, row) in enumerate(zip(targets, out)) if not row["reachable"]]
        if silent:
            time.sleep(RETRY_PAUSE)
            again = self._round([target for _index, target in silent], RETRY_WORKERS)
            for (index, _target), row in zip(silent, again):
                row["retried"] = True
                out[index] = row
        # some echoes lost, not all (all lost while TCP answers is ICMP filtered, not a lost answer)
        lossy = [row for row in out if row["reachable"] and _lost(row.get("icmp")) and row["icmp"]["received"]]
        if lossy:
            with ThreadPoolExecutor(max_workers=min(RETRY_WORKERS, len(lossy))) as pool:
                again = list(pool.map(self._echo_again, [row["address"] for row in lossy]))
            for row, icmp in zip(lossy, again):
                row["icmp_again"] = icmp
        return out

    def _echo_again(self, address):
        """Up to LOSS_RECHECK_COUNT echoes to a target that lost some, until one is lost again (a lossy path is
        then known: at most one timeout is waited)."""
        return probe_icmp(address, LOSS_RECHECK_COUNT, self.timeout, LOSS_RECHECK_INTERVAL, self.pace, until_lost=True)


def _lost(icmp):
    """Whether an ICMP probe's result lost echoes."""
    return bool(icmp and icmp["sent"] and icmp["received"] < icmp["sent"])


# ------------------------------------------------------------------ checks (pure)


def judge(row):
    """A target is reachable when ICMP or TCP got an answer (a RST is an answer).  ARP alone only
    decides when it was the only probe: an ARP answer proves layer 2, not that packets get through."""
    icmp = row.get("icmp") or {}
    tcp = row.get("tcp") or {}
    if icmp or tcp:
        return bool(icmp.get("received") or tcp.get("status") in ("open", "refused"))
    return (row.get("arp") or {}).get("status") == "answered"


def _unreachable(row):
    """(check, severity, layer, summary, remediation) for a target that answered neither ICMP nor TCP."""
    icmp, tcp, arp = row.get("icmp"), row.get("tcp"), row.get("arp")
    name = row["name"]
    if arp and arp["status"] == "answered" and (icmp or tcp):
        return ("reach.unreachable", "critical", "L3", "%s answers ARP on %s (layer 2 works) but neither ICMP nor "
                "TCP: a firewall drops its traffic" % (name, arp["interface"]), "k8snet.triage.iptables_drops on "
                "both ends (INPUT/OUTPUT/FORWARD) and any security group between them")
    if arp and arp["status"] == "no_answer":
        return ("reach.unreachable", "critical", "L2", "%s does not answer ARP on %s: host down, wrong VLAN, or a "
                "stale/unannounced address" % (name, arp["interface"]), "k8snet.triage.arp_check on this node; "
                "is the target up and on this segment?")
    if tcp and tcp["status"] == "unreachable":
        return ("reach.unreachable", "critical", "L3", "%s is unreachable (%s)" % (name, tcp["error"]),
                "k8snet.triage.route_check: the route to it, and ARP for the next hop")
    return ("reach.unreachable", "critical", "L3", "%s answers no probe (%s)" % (name, ", ".join(
        p for p in ("icmp", "tcp", "arp") if row.get(p))), "packets are dropped on the way: "
        "k8snet.triage.iptables_drops on both ends, route_check, then role k8snet.triage.ingress_path")


def _degraded(row):
    """(check, severity, layer, summary, remediation) for a reachable target whose port or echoes fail, or None."""
    icmp, tcp = row.get("icmp"), row.get("tcp")
    name = row["name"]
    if tcp and tcp["status"] == "refused":
        return ("reach.port_closed", "warning", "L4", "%s is up but port %d refuses connections" % (name, tcp["port"]),
                "is the service listening on that port? a REJECT rule answers the same way (k8snet.triage.iptables_drops)")
    if tcp and tcp["status"] in ("timeout", "unreachable", "error"):
        return ("reach.port_filtered", "warning", "L4", "%s answers %s but TCP port %d gets no answer (%s)" % (
            name, "ICMP" if icmp and icmp["received"] else "ARP", tcp["port"], tcp["status"]),
            "a firewall drops the port: k8snet.triage.iptables_drops on the target")
    if _lost(icmp):
        again = row.get("icmp_again")
        if again is not None and again["sent"] and not _lost(again):
            return None  # a lost answer, not a lossy path: all of the echoes asked again came back
        return ("reach.loss", "warning", "L3", "%s lost %d of %d ICMP echoes%s" % (
            name, icmp["sent"] - icmp["received"], icmp["sent"],
            ", then %d of %d asked again" % (again["sent"] - again["received"], again["sent"]) if again else ""),
            "check interface errors and drops on both ends (`ip -s link`), the switch ports between them and the "
            "peer's load")
    return None


def diagnose(row):
    """(check, severity, layer, summary, remediation) for one target row."""
    arp = row.get("arp")
    name = row["name"]
    if arp and len(arp.get("macs") or []) > 1:
        return ("reach.arp_conflict", "critical", "L2", "%s is answered by %d MACs (%s): an IP conflict" % (
            name, len(arp["macs"]), ", ".join(arp["macs"])), "find the hosts owning these MACs; k8snet.triage.arp_check")
    if not row["reachable"]:
        return _unreachable(row)
    return _degraded(row)


def check(rows, subject):
    out = []
    for row in rows:
        verdict = diagnose(row)
        if verdict:
            check_name, severity, layer, summary, remediation = verdict
            evidence = dict((k, row[k]) for k in ("icmp", "tcp", "arp", "retried") if k in row)
            out.append(finding(check_name, severity, layer, row["name"], summary, evidence, remediation))
    if not out:
        out.append(finding("reach.ok", "ok", "L3", subject, "all %d targets answered every probe" % len(rows),
                           {"targets": sample(r["name"] for r in rows)}))
    return out


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The whole reachability run: ``params`` (reachability's options, a plain dict) in,
    ``{"data": {targets, answered, silent}, "findings": [...]}`` out.  Every (target, probe)
    pair is probed in its own thread.  ``runner`` runs ``ip`` (the netlink reader).
    ``netns_pid`` or ``pod_ip`` moves the process into a pod's namespace first: only for a process that
    runs nothing else (the reachability module); the one-pass node check never passes them."""

    count, timeout = params.get("count", 3), params.get("timeout", 1.0)
    if count < 1 or timeout <= 0:
        raise InputError("count must be >= 1 and timeout > 0 (got %s, %s)" % (count, timeout))
    targets = validate_targets(params.get("targets") or [], params.get("tcp_port", 22))
    where = enter_pod(params, runner)
    with Netlink(runner, params.get("reader") or "auto") as netlink:
        rows = Prober(netlink, params.get("probes") or ["icmp", "tcp"], count, timeout,
                      Pacer(params.get("rate", DEFAULT_RATE))).run(targets)
    subject = where or "this host"
    # not "results"/"unreachable": Ansible reads those keys as loop results and host unreachability
    data = {"targets": rows, "answered": [r["name"] for r in rows if r["reachable"]],
            "silent": [r["name"] for r in rows if not r["reachable"]]}
    return {"data": data, "findings": check(rows, subject)}
