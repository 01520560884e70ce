# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounded packet captures with tcpdump, and a pure reader of the pcap it writes.

The capture filter is built here from structured, validated options (addresses, ports, a
protocol): no filter text from the user reaches tcpdump.  tcpdump captures on ``any`` so one
process sees every requested interface (libpcap >= 1.10 writes LINUX_SLL2, which carries the
interface index and the packet direction); it is bounded by ``timeout`` (duration) and ``-c``
(packet cap), and writes the pcap with ``-U`` so the file grows as soon as the capture is
listening (a caller that starts probes can wait for it).

Files: everything lives in one private directory, mode 0700 and an unpredictable name
(``tempfile.mkdtemp``), made by the module or handed in by the play (made the same way, e.g.
``ansible.builtin.tempfile``) and checked: a real directory, owned by us, no access for anyone
else.  The pcap inside is created exclusively, without following symlinks, mode 0600; the stop
trigger is a file named ``stop`` in that directory, refused if it exists before the capture.
A capture that tcpdump reports larger than the pcap holds (a full disk, a write error) is an
error, never an empty or partial "ok".

Packet model: {"ts", "ifindex", "interface", "direction" (in|out), "proto" (tcp|udp|icmp|arp|vrrp|ip|ipv6|other),
"src", "dst", "sport", "dport", "flags" (tcp), "icmp_type", "arp_op", "length"}, plus "sender_mac" (arp) and
"vrrp" ({version, vrid, priority, interval}).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import socket
import stat
import struct
import tempfile
import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.interfaces import names_by_index, read_sysfs_links
from ansible_collections.k8snet.triage.plugins.module_utils.core.macs import mac_text
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink

PROTOCOLS = ("any", "tcp", "udp", "icmp", "arp", "vrrp", "arp_vrrp")
# protocol -> its pcap filter primitive (VRRP is IP protocol 112; arp_vrrp is what an HA pair of load
# balancers says about itself: its VRRP advertisements and its gratuitous ARPs)
FILTER_PRIMITIVES = {"vrrp": "ip proto 112", "arp_vrrp": "(arp or ip proto 112)"}
LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2 = 1, 113, 276
CAP_NET_RAW = 13
MAX_DURATION = 300
MAX_PACKETS = 100000
SNAPLEN = 128
PCAP_NAME, STOP_NAME, READY_NAME = "capture.pcap", "stop", "listening"
PCAP_HEADER = 24  # tcpdump writes the pcap header once its filter is in place
WATCHER_JOIN = 5.0  # seconds the clean-up waits for the watcher's last round (a /proc scan, a sleep)
_STATS = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel)", re.M)
TCP_FLAGS = ((0x02, "S"), (0x01, "F"), (0x08, "P"), (0x04, "R"), (0x10, "."))  # tcpdump's order


# ------------------------------------------------------------------ the filter (pure)


def build_filter(hosts=None, ports=None, protocol="any"):
    """A pcap filter from validated parts; raises InputError naming the bad value."""
    if protocol not in PROTOCOLS:
        raise InputError("protocol %r is not one of %s" % (protocol, ", ".join(PROTOCOLS)))
    parts = []
    if protocol != "any":
        parts.append(FILTER_PRIMITIVES.get(protocol, protocol))
    terms = []
    for host in hosts or []:
        try:
            if "/" in str(host):
                net = ipaddress.ip_network(host, strict=False)
                terms.append("net %s" % net)
            else:
                terms.append("host %s" % ipaddress.ip_address(host))
        except ValueError:
            raise InputError("host %r is neither an IP address nor a CIDR; the capture filter only takes addresses" % (host,))
    if terms:
        parts.append("(%s)" % " or ".join(terms))
    port_terms = []
    for port in ports or []:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InputError("port %r is not an integer in 1..65535" % (port,))
        port_terms.append("port %d" % port)
    if port_terms:
        if protocol in ("arp", "icmp", "vrrp", "arp_vrrp"):
            raise InputError("ports were given with protocol=%s, which has no ports" % protocol)
        parts.append("(%s)" % " or ".join(port_terms))
    return " and ".join(parts)


def validate_bounds(duration, max_packets):
    """The capture's caps: nothing may run longer than MAX_DURATION or keep more than MAX_PACKETS."""
    params.number("duration", duration, 0, MAX_DURATION, low_open=True, unit="seconds")
    params.number("max_packets", max_packets, 1, MAX_PACKETS, integer=True, unit="packets")


def tcpdump_stats(stderr):
    """{"captured", "received by filter", "dropped by kernel"} from tcpdump's exit summary (absent: missing)."""
    return dict((kind, int(number)) for number, kind in _STATS.findall(stderr or ""))


def pcap_complete(data):
    """Whether ``data`` is a whole pcap: a header and only complete records (no cut-off tail)."""
    if len(data) < 24:
        return False
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    offset = 24
    while offset + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[offset + 8:offset + 12])[0]
        offset += 16 + incl
    return offset == len(data)


# ------------------------------------------------------------------ private files (node side)


def private_dir(work_dir=None):
    """(path, made_here): a directory only we can use.

    Without ``work_dir``, a new one from ``tempfile.mkdtemp`` (0700, unpredictable name).  A given
    ``work_dir`` must be a real directory (not a symlink), owned by this user, with no access for
    group or others, and must not hold a pcap, a stop or a listening file yet.
    """
    if not work_dir:
        return tempfile.mkdtemp(prefix="k8snet-capture-"), True
    try:
        st = os.lstat(work_dir)
    except OSError as exc:
        raise InputError("work_dir %s: %s; create it with ansible.builtin.tempfile (state: directory)"
                         % (work_dir, exc.strerror))
    problem = None
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symlink"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a directory"
    elif st.st_uid != os.geteuid():
        problem = "is owned by uid %d, not by uid %d running the capture" % (st.st_uid, os.geteuid())
    elif st.st_mode & 0o077:
        problem = "has mode %04o: group or others could read the pcap or plant files" % stat.S_IMODE(st.st_mode)
    if problem:
        raise InputError("work_dir %s %s; give a private directory (mode 0700, owned by the user running the capture), "
                         "e.g. made by ansible.builtin.tempfile with state: directory" % (work_dir, problem))
    for name in (PCAP_NAME, STOP_NAME, READY_NAME):
        if os.path.lexists(os.path.join(work_dir, name)):
            raise InputError("work_dir %s already holds %s (from an earlier run?); give a fresh directory, since "
                             "an old stop file would end the capture at once" % (work_dir, name))
    return work_dir, False


def create_private_file(path):
    """Create ``path`` exclusively (never through a symlink, never reusing a file), mode 0600."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        os.close(os.open(path, flags, 0o600))
    except OSError as exc:
        raise InputError("cannot create %s exclusively: %s; give a fresh private work_dir" % (path, exc.strerror))


# ------------------------------------------------------------------ pcap reader (pure)


def _l3(ethertype, data, pkt):
    if ethertype == 0x0800 and len(data) >= 20:
        ihl = (data[0] & 0x0F) * 4
        proto = data[9]
        pkt.update(src=socket.inet_ntop(socket.AF_INET, data[12:16]), dst=socket.inet_ntop(socket.AF_INET, data[16:20]))
        _l4(proto, data[ihl:], pkt)
    elif ethertype == 0x86DD and len(data) >= 40:
        pkt.update(src=socket.inet_ntop(socket.AF_INET6, data[8:24]), dst=socket.inet_ntop(socket.AF_INET6, data[24:40]))
        _l4(data[6], data[40:], pkt, icmp=58)
        if pkt["proto"] == "ip":
            pkt["proto"] = "ipv6"
    elif ethertype == 0x0806 and len(data) >= 28:
        op = struct.unpack("!H", data[6:8])[0]
        pkt.update(proto="arp", arp_op={1: "request", 2: "reply"}.get(op, str(op)),
                   src=socket.inet_ntop(socket.AF_INET, data[14:18]), dst=socket.inet_ntop(socket.AF_INET, data[24:28]),
                   sender_mac=mac_text(data[8:14]))
    return pkt


def _l4(proto, data, pkt, icmp=1):
    if proto == 6 and len(data) >= 14:
        sport, dport = struct.unpack("!HH", data[:4])
        flags = data[13]
        pkt.update(proto="tcp", sport=sport, dport=dport, flags="".join(c for bit, c in TCP_FLAGS if flags & bit))
    elif proto == 17 and len(data) >= 4:
        sport, dport = struct.unpack("!HH", data[:4])
        pkt.update(proto="udp", sport=sport, dport=dport)
    elif proto == icmp and len(data) >= 1:
        pkt.update(proto="icmp", icmp_type=data[0])
    elif proto == 112 and len(data) >= 8:
        # VRRP (RFC 5798 v3: the interval in centiseconds, 12 bits; RFC 3768 v2: in seconds, one byte)
        version = data[0] >> 4
        interval = (((data[4] & 0x0F) << 8) | data[5]) / 100.0 if version == 3 else float(data[5])
        pkt.update(proto="vrrp", vrrp={"version": version, "vrid": data[1], "priority": data[2], "interval": interval})
    else:
        pkt["proto"] = "ip"


def parse_pcap(data, names=None, local_macs=None):
    """Bytes of a pcap file -> (linktype, packets).  ``names``: {ifindex: name};
    ``local_macs``: {mac} of this host, for the direction on an Ethernet capture."""
    names = names or {}
    local_macs = set(m.lower() for m in (local_macs or []))
    if len(data) < 24:
        return None, []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ReadError("not a pcap file (magic %s); pcapng is not read here" % magic.hex())
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0x0FFFFFFF
    offset, packets = 24, []
    while offset + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(endian + "IIII", data[offset:offset + 16])
        frame = data[offset + 16:offset + 16 + incl]
        offset += 16 + incl
        pkt = {"ts": sec + frac / (1e9 if nano else 1e6), "ifindex": None, "interface": None, "direction": None,
               "proto": "other", "src": None, "dst": None, "sport": None, "dport": None, "flags": None,
               "icmp_type": None, "arp_op": None, "length": orig}
        if linktype == LINKTYPE_LINUX_SLL2 and len(frame) >= 20:
            ethertype, ifindex, ptype = struct.unpack("!H2xI2xB", frame[:11])
            pkt.update(ifindex=ifindex, interface=names.get(ifindex, "if%d" % ifindex),
                       direction="out" if ptype == 4 else "in")
            _l3(ethertype, frame[20:], pkt)
        elif linktype == LINKTYPE_LINUX_SLL and len(frame) >= 16:
            ptype = struct.unpack("!H", frame[:2])[0]
            ethertype = struct.unpack("!H", frame[14:16])[0]
            pkt.update(interface="any", direction="out" if ptype == 4 else "in")
            _l3(ethertype, frame[16:], pkt)
        elif linktype == LINKTYPE_ETHERNET and len(frame) >= 14:
            ethertype = struct.unpack("!H", frame[12:14])[0]
            pkt["direction"] = "out" if mac_text(frame[6:12]) in local_macs else "in"
            _l3(ethertype, frame[14:], pkt)
        packets.append(pkt)
    return linktype, packets


def describe(pkt):
    """One line per packet, close to what tcpdump prints."""
    head = "%s %s" % (pkt["direction"] or "?", pkt["interface"] or "?")
    if pkt["proto"] == "arp":
        if pkt["arp_op"] == "request":
            return "%s arp who-has %s tell %s" % (head, pkt["dst"], pkt["src"])
        return "%s arp %s is-at %s" % (head, pkt["src"], pkt.get("sender_mac"))
    if pkt["proto"] in ("tcp", "udp"):
        text = "%s %s.%s > %s.%s %s" % (head, pkt["src"], pkt["sport"], pkt["dst"], pkt["dport"], pkt["proto"])
        return text + (" [%s]" % pkt["flags"] if pkt["flags"] is not None else "")
    if pkt["proto"] == "icmp":
        return "%s %s > %s icmp type %s" % (head, pkt["src"], pkt["dst"], pkt["icmp_type"])
    return "%s %s > %s %s" % (head, pkt["src"], pkt["dst"], pkt["proto"])


def summarize(packets, interfaces, first=10, max_flows=50):
    """Counts per requested interface and direction; flows (packets grouped by interface,
    direction, protocol, addresses and ports, most packets first, capped); the first packets."""
    wanted = set(interfaces)
    keep = [p for p in packets if "any" in wanted or p["interface"] in wanted or p["interface"] == "any"]
    per_if = dict((name, {"in": 0, "out": 0}) for name in interfaces if name != "any")
    flows = {}
    for p in keep:
        per_if.setdefault(p["interface"], {"in": 0, "out": 0})[p["direction"]] += 1
        key = (p["interface"], p["direction"], p["proto"], p["src"], p["dst"], p["sport"], p["dport"], p["arp_op"])
        flow = flows.get(key)
        if flow is None:
            flow = flows[key] = {"interface": p["interface"], "direction": p["direction"], "proto": p["proto"],
                                 "src": p["src"], "dst": p["dst"], "sport": p["sport"], "dport": p["dport"],
                                 "arp_op": p["arp_op"], "flags": "", "packets": 0}
        flow["packets"] += 1
        for flag in p["flags"] or "":
            if flag not in flow["flags"]:
                flow["flags"] += flag
    ordered = sorted(flows.values(), key=lambda f: -f["packets"])
    out = {"total": len(keep), "interfaces": per_if, "flows": ordered[:max_flows],
           "flows_dropped": max(0, len(ordered) - max_flows), "first": [describe(p) for p in keep[:first]]}
    announcements = _announcements(keep)
    if announcements:
        out["announcements"] = announcements
    return out


def _timing(times):
    times = sorted(times)
    gaps = [b - a for a, b in zip(times, times[1:])]
    return {"packets": len(times), "first": round(times[0], 3), "last": round(times[-1], 3),
            "max_gap": round(max(gaps), 3) if gaps else None,
            "mean_gap": round(sum(gaps) / len(gaps), 3) if gaps else None}


def _announcements(packets):
    """What an HA pair of load balancers says about itself, with timing: its VRRP advertisements (per sender, VRID,
    direction) and its gratuitous ARPs (an ARP whose sender address is also its target, or a reply to the broadcast
    address as Seesaw sends them; per address, MAC, direction).  Empty when there are none."""
    vrrp, garp = {}, {}
    for p in packets:
        if p["proto"] == "vrrp":
            v = p["vrrp"]
            key = (p["src"], v["vrid"], p["direction"], p["interface"])
            entry = vrrp.setdefault(key, {"src": p["src"], "vrid": v["vrid"], "direction": p["direction"],
                                          "interface": p["interface"], "version": v["version"],
                                          "priority": v["priority"], "interval": v["interval"], "times": []})
            entry["times"].append(p["ts"])
        elif p["proto"] == "arp" and (p["src"] == p["dst"] or (p["arp_op"] == "reply" and p["dst"] == "255.255.255.255")):
            key = (p["src"], p.get("sender_mac"), p["direction"], p["interface"])
            entry = garp.setdefault(key, {"address": p["src"], "mac": p.get("sender_mac"), "direction": p["direction"],
                                          "interface": p["interface"], "op": p["arp_op"], "times": []})
            entry["times"].append(p["ts"])
    if not vrrp and not garp:
        return {}
    for entry in list(vrrp.values()) + list(garp.values()):
        entry.update(_timing(entry.pop("times")))
    return {"vrrp": sorted(vrrp.values(), key=lambda e: (e["vrid"], e["src"] or "", e["direction"] or "")),
            "gratuitous_arp": sorted(garp.values(), key=lambda e: (e["address"] or "", e["direction"] or ""))}


# ------------------------------------------------------------------ reader (node side)


def has_cap_net_raw(status_path="/proc/self/status"):
    try:
        with open(status_path) as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << CAP_NET_RAW))
    except (IOError, OSError):
        return True  # cannot tell: let tcpdump decide
    return True


def descendants(root, proc="/proc"):
    """{pid: comm} of every process below ``root`` (read from /proc/<pid>/stat)."""
    parents, comms = {}, {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat")) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
        comms[int(entry)] = comm
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = comms[pid]
                frontier.append(pid)
    return found


class StopWatcher(threading.Thread):
    """Says when this module's own tcpdump listens, and ends it (SIGINT, so it flushes the pcap) once
    ``stop_file`` exists.

    tcpdump writes the pcap's header only after its socket is open and its filter attached; the
    watcher then creates ``ready_file``, the sign a play waits for before it sends probes (the pcap
    itself exists from the start, so waiting for it loses the first packets).  Only a regular stop
    file counts (read with lstat, never followed); the caller has made sure neither file existed
    before the capture started.
    """

    def __init__(self, stop_file, pcap=None, ready_file=None, interval=0.05):
        super(StopWatcher, self).__init__()
        self.daemon = True
        self.stop_file, self.pcap, self.ready_file, self.interval = stop_file, pcap, ready_file, interval
        self.done = threading.Event()
        self.stopped_early = False
        self.listening = False

    def _mark_listening(self):
        try:
            if os.lstat(self.pcap).st_size >= PCAP_HEADER:
                create_private_file(self.ready_file)
                self.listening = True
        except (OSError, InputError):
            pass

    def run(self):
        while not self.done.is_set():
            if self.ready_file and not self.listening:
                self._mark_listening()
            if _is_regular(self.stop_file):
                for pid, comm in descendants(os.getpid()).items():
                    if comm == "tcpdump":
                        try:
                            os.kill(pid, signal.SIGINT)
                            self.stopped_early = True
                        except OSError:
                            pass
                if self.stopped_early:
                    return
            time.sleep(self.interval)


def _is_regular(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class Capture(object):
    def __init__(self, module):
        self.module = module

    def resolve_routes(self, addresses):
        """{address: device or None} for the routes the kernel picks (the pod's host-side veth for a pod IP)."""
        out = {}
        if not addresses:
            return out
        with Netlink(self.module) as link:
            for address in addresses:
                try:
                    ipaddress.ip_address(address)
                except ValueError:
                    raise InputError("route_to %r is not an IP address" % (address,))
                route = link.route_get(address)
                # no route is evidence (the pod's /32 route is missing), not an input error: capture the rest
                ok = route.get("dev") and route.get("type") in ("unicast", "local")
                out[address] = route["dev"] if ok else None
        return out

    def _enter_pod(self, pod_ip):
        """Move into the network namespace of the pod with ``pod_ip`` (None: stay); ``self.where`` says where."""
        self.where = None
        if pod_ip:
            # inside a pod's network namespace (found by its IP): tcpdump and the route lookups run there; the
            # links are read through netlink, since /sys/class/net still shows the node's namespace
            from ansible_collections.k8snet.triage.plugins.module_utils.probes.reachability import enter_pod  # pylint: disable=import-outside-toplevel
            self.where = enter_pod({"pod_ip": pod_ip}, self.module)

    def _links(self, pod_ip):
        """This namespace's links: through netlink inside a pod, else from /sys/class/net."""
        if pod_ip:
            with Netlink(self.module) as link:
                return link.links()
        return read_sysfs_links()

    def _tcpdump(self, timeout, argv, watcher, target, bpf):
        """Run tcpdump (under ``timeout``) while ``watcher`` watches: (stderr, seconds, the pcap's bytes)."""
        create_private_file(target)
        watcher.start()
        started = time.time()
        rc, out, err = timeout.run(argv, check=False, timeout=MAX_DURATION + 30)  # `timeout` ends it after its duration
        del out
        elapsed = time.time() - started
        watcher.done.set()
        _tcpdump_failed(rc, err, bpf)
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        return err, elapsed, data

    def run(self, interfaces, hosts, ports, protocol, duration, max_packets, work_dir=None, first=10, route_to=None,
            remove_files=False, pod_ip=None):
        validate_bounds(duration, max_packets)
        bpf = build_filter(hosts, ports, protocol)
        self._enter_pod(pod_ip)
        routed = self.resolve_routes(route_to)
        interfaces = _capture_interfaces(interfaces, routed)
        links = self._links(pod_ip)
        indexes = names_by_index(links)
        _check_interfaces(interfaces, indexes)
        _check_privilege()
        tcpdump = Tool(self.module, "tcpdump", opt_dirs=("/usr/sbin", "/sbin", "/usr/bin"))
        timeout = Tool(self.module, "timeout", opt_dirs=("/usr/bin", "/bin"))
        directory, made_here = private_dir(work_dir)
        target, stop_file = os.path.join(directory, PCAP_NAME), os.path.join(directory, STOP_NAME)
        argv = _timeout_argv(tcpdump.path, duration, max_packets, target, bpf)
        ready_file = os.path.join(directory, READY_NAME)
        watcher = StopWatcher(stop_file, target, ready_file)
        try:
            err, elapsed, data = self._tcpdump(timeout, argv, watcher, target, bpf)
        finally:
            _stop_watcher(watcher)
            _clean_up(directory, made_here, remove_files, (target, stop_file, ready_file))
        stats = tcpdump_stats(err)
        _check_complete(data, stats, err, work_dir)
        macs = set(link["mac"] for link in links if link["mac"])
        linktype, packets = parse_pcap(data, indexes, macs)
        result = summarize(packets, interfaces, first)
        kept = not made_here and not remove_files
        result.update(filter=bpf, linktype=linktype, routed=routed, seconds=round(elapsed, 3),
                      stopped_by_file=watcher.stopped_early, files_removed=not kept,
                      capped=len(packets) >= max_packets, pcap_path=target if kept else None,
                      dropped_by_kernel=stats.get("dropped by kernel", 0), netns=self.where)
        return result


def _stop_watcher(watcher, timeout=WATCHER_JOIN):
    """End the watcher and wait for it (at most ``timeout`` seconds): a round still running could otherwise create
    the listening file after the clean-up had removed the files (``remove_files``), and leave it behind."""
    watcher.done.set()
    if watcher.is_alive():
        watcher.join(timeout)


def _capture_interfaces(interfaces, routed):
    """The interfaces asked for, then the route devices not among them; none at all is refused."""
    interfaces = list(interfaces) + [dev for dev in routed.values() if dev and dev not in interfaces]
    if not interfaces:
        raise InputError("no interface to capture on: give interfaces and/or route_to")
    return interfaces


def _check_interfaces(interfaces, indexes):
    """Refuse interfaces this host (namespace) does not have (``any`` is always there)."""
    unknown = [i for i in interfaces if i != "any" and i not in indexes.values()]
    if unknown:
        raise InputError("no interface %s on this host; it has %s" % (", ".join(unknown), ", ".join(
            sorted(indexes.values())[:20])))


def _check_privilege():
    """Refuse to start tcpdump without CAP_NET_RAW."""
    if not has_cap_net_raw():
        raise PrivilegeError("capturing packets needs CAP_NET_RAW, which this process (uid %d) does not have; "
                             "run the task with become: true" % os.geteuid())


def _timeout_argv(tcpdump_path, duration, max_packets, target, bpf):
    """The arguments of ``timeout`` running tcpdump: SIGINT after ``duration`` (SIGKILL 2 s later), on ``any``,
    at most ``max_packets``, written to ``target`` as they come, with the filter ``bpf`` (if any)."""
    argv = ["-s", "INT", "-k", "2", "%g" % duration, tcpdump_path, "-i", "any", "-nn", "-U", "--immediate-mode",
            "-s", str(SNAPLEN), "-c", str(max_packets), "-w", target]
    if os.geteuid() == 0:
        argv += ["-Z", "root"]  # keep root so tcpdump can write into a root-only directory
    if bpf:
        argv.append(bpf)
    return argv


def _tcpdump_failed(rc, err, bpf):
    """Raise when tcpdump failed (any exit but 0 and timeout's 124): a PrivilegeError when it was refused."""
    if rc in (0, 124):
        return
    if "permission" in err.lower() or "not permitted" in err.lower():
        raise PrivilegeError("tcpdump was refused (%s): capturing needs CAP_NET_RAW; run the task with "
                             "become: true" % err.strip().splitlines()[-1])
    raise ReadError("tcpdump failed (exit %d) with filter %r: %s" % (rc, bpf, err.strip()[-400:]))


def _clean_up(directory, made_here, remove_files, paths):
    """Remove the directory made here, or else (``remove_files``) the regular files among ``paths``."""
    if made_here:
        shutil.rmtree(directory, ignore_errors=True)
    elif remove_files:
        for path in paths:
            if _is_regular(path):
                os.unlink(path)


def _check_complete(data, stats, err, work_dir):
    """Raise when the pcap holds fewer packets than tcpdump reports captured, or ends in a cut-off record."""
    packets = parse_pcap(data, {}, ())[1] if data else []
    captured = stats.get("captured")
    if not pcap_complete(data) or captured is None or captured > len(packets):
        raise ReadError(
            "the capture was cut short: tcpdump reported %s packets captured, the pcap holds %d%s (%s). "
            "Is the file system of %s full or failing? Free space there or give another work_dir; "
            "no conclusion can be drawn from this capture"
            % ("no count of" if captured is None else captured, len(packets),
               "" if pcap_complete(data) else " and ends in a cut-off record", (err or "").strip()[-300:],
               work_dir or tempfile.gettempdir()),
            stats=stats, packets_in_file=len(packets))
