# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounded packet captures with tcpdump, and a pure reader of the pcap it writes.

The capture filter is built here from structured, validated options (addresses, ports, a
protocol): no filter text from the user reaches tcpdump.  tcpdump captures on ``any`` so one
process sees every requested interface (libpcap >= 1.10 writes LINUX_SLL2, which carries the
interface index and the packet direction); it is bounded by ``timeout`` (duration) and ``-c``
(packet cap), and writes the pcap with ``-U`` so the file exists as soon as the capture is
listening (a caller that starts probes can wait for the file).

Packet model: {"ts", "ifindex", "interface", "direction" (in|out), "proto" (tcp|udp|icmp|arp|ip|ipv6|other),
"src", "dst", "sport", "dport", "flags" (tcp), "icmp_type", "arp_op", "length"}.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.interfaces import names_by_index, read_sysfs_links
from ansible_collections.k8snet.triage.plugins.module_utils.macs import mac_text
from ansible_collections.k8snet.triage.plugins.module_utils.netlink import Netlink

PROTOCOLS = ("any", "tcp", "udp", "icmp", "arp")
LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2 = 1, 113, 276
CAP_NET_RAW = 13
MAX_DURATION = 300
MAX_PACKETS = 100000
SNAPLEN = 128
TCP_FLAGS = ((0x02, "S"), (0x01, "F"), (0x08, "P"), (0x04, "R"), (0x10, "."))  # tcpdump's order


# ------------------------------------------------------------------ the filter (pure)


def build_filter(hosts=None, ports=None, protocol="any"):
    """A pcap filter from validated parts; raises InputError naming the bad value."""
    if protocol not in PROTOCOLS:
        raise InputError("protocol %r is not one of %s" % (protocol, ", ".join(PROTOCOLS)))
    parts = []
    if protocol != "any":
        parts.append(protocol)
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
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise InputError("port %r is not an integer in 1..65535" % (port,))
        port_terms.append("port %d" % port)
    if port_terms:
        if protocol in ("arp", "icmp"):
            raise InputError("ports were given with protocol=%s, which has no ports" % protocol)
        parts.append("(%s)" % " or ".join(port_terms))
    return " and ".join(parts)


def validate_bounds(duration, max_packets):
    if not 0 < duration <= MAX_DURATION:
        raise InputError("duration %s is out of range: give 0 < duration <= %d seconds" % (duration, MAX_DURATION))
    if not 0 < max_packets <= MAX_PACKETS:
        raise InputError("max_packets %s is out of range: give 1..%d" % (max_packets, MAX_PACKETS))


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
    return {"total": len(keep), "interfaces": per_if, "flows": ordered[:max_flows],
            "flows_dropped": max(0, len(ordered) - max_flows), "first": [describe(p) for p in keep[:first]]}


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
    """Ends this module's own tcpdump (SIGINT, so it flushes the pcap) once ``stop_file`` exists."""

    def __init__(self, stop_file, interval=0.1):
        super(StopWatcher, self).__init__()
        self.daemon = True
        self.stop_file, self.interval = stop_file, interval
        self.done = threading.Event()
        self.stopped_early = False

    def run(self):
        while not self.done.is_set():
            if os.path.exists(self.stop_file):
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

    def run(self, interfaces, hosts, ports, protocol, duration, max_packets, pcap_path=None, first=10, route_to=None,
            stop_file=None, remove_files=False):
        validate_bounds(duration, max_packets)
        bpf = build_filter(hosts, ports, protocol)
        routed = self.resolve_routes(route_to)
        interfaces = list(interfaces) + [dev for dev in routed.values() if dev and dev not in interfaces]
        if not interfaces:
            raise InputError("no interface to capture on: give interfaces and/or route_to")
        links = read_sysfs_links()
        indexes = names_by_index(links)
        unknown = [i for i in interfaces if i != "any" and i not in indexes.values()]
        if unknown:
            raise InputError("no interface %s on this host; it has %s" % (", ".join(unknown), ", ".join(
                sorted(indexes.values())[:20])))
        if not has_cap_net_raw():
            raise PrivilegeError("capturing packets needs CAP_NET_RAW, which this process (uid %d) does not have; "
                                 "run the task with become: true" % os.geteuid())
        tcpdump = Tool(self.module, "tcpdump", opt_dirs=("/usr/sbin", "/sbin", "/usr/bin"))
        timeout = Tool(self.module, "timeout", opt_dirs=("/usr/bin", "/bin"))
        workdir = None
        if pcap_path:
            parent = os.path.dirname(pcap_path) or "."
            if not os.path.isdir(parent):
                raise InputError("pcap_path %s: the directory %s does not exist" % (pcap_path, parent))
            target = pcap_path
        else:
            workdir = tempfile.mkdtemp(prefix="k8snet-capture-")
            target = os.path.join(workdir, "capture.pcap")
        argv = ["-s", "INT", "-k", "2", "%g" % duration, tcpdump.path, "-i", "any", "-nn", "-U", "--immediate-mode",
                "-s", str(SNAPLEN), "-c", str(max_packets), "-w", target]
        if os.geteuid() == 0:
            argv += ["-Z", "root"]  # keep root so tcpdump can write into a root-only directory
        if bpf:
            argv.append(bpf)
        watcher = StopWatcher(stop_file) if stop_file else None
        try:
            if watcher:
                watcher.start()
            started = time.time()
            rc, out, err = timeout.run(argv, check=False)
            elapsed = time.time() - started
            if watcher:
                watcher.done.set()
            if rc not in (0, 124):
                if "permission" in err.lower() or "not permitted" in err.lower():
                    raise PrivilegeError("tcpdump was refused (%s): capturing needs CAP_NET_RAW; run the task with "
                                         "become: true" % err.strip().splitlines()[-1])
                raise ReadError("tcpdump failed (exit %d) with filter %r: %s" % (rc, bpf, err.strip()[-400:]))
            with open(target, "rb") as handle:
                data = handle.read()
        finally:
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            if remove_files:
                for path in (pcap_path, stop_file):
                    if path and os.path.isfile(path):
                        os.unlink(path)
        macs = set(link["mac"] for link in links if link["mac"])
        linktype, packets = parse_pcap(data, indexes, macs)
        result = summarize(packets, interfaces, first)
        result.update(filter=bpf, linktype=linktype, routed=routed, seconds=round(elapsed, 3),
                      stopped_by_file=bool(watcher and watcher.stopped_early),
                      files_removed=bool(remove_files), capped=len(packets) >= max_packets, pcap_path=pcap_path)
        return result
