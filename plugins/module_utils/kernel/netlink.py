# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading (and the one targeted change to) the kernel's network tables.

Two readers fill the same models: pyroute2 (netlink, when importable on the node)
and ``ip -json`` (iproute2, always on a Kubernetes node).  The models follow the
field names of ``ip -json`` because that is what operators already read:

link      {"ifindex", "ifname", "mac", "operstate", "up", "kind"} (interfaces.py: the link model and its readers)
address   {"address", "prefixlen", "family", "interface", "scope"}
neighbor  {"address", "family", "interface", "mac", "state": [NUD names], "flags": [..]}
route     {"dst" (always a CIDR), "family", "type", "gateway", "dev", "protocol",
           "scope", "prefsrc", "table", "metric", "flags": [..], "nexthops": [{"gateway", "dev"}]}

``reader=auto`` reads with ``ip -json`` whenever ``ip`` is installed, and with pyroute2 when it
is not (a node image without iproute2).  Measured on this project's build machine:

- importing pyroute2 0.9 loads the whole library (its ``__init__`` imports NDB, sqlite3, asyncio
  and every socket family): about 0.25 s of CPU per process, in the node pass where every node
  pays it at once, against about 3 ms of CPU for each ``ip -json`` read of a small table;
- on a node with a 100k-route table (bench/route_check.py) ``ip -json route`` plus
  ``parse_routes`` took about 1.5 s, while pyroute2's pure-Python netlink parsing took about
  15 s for the dump and 6 s more for the conversion.

``reader=pyroute2`` still forces pyroute2 (the tests compare both readers on the same tables).

The ``parse_*`` functions are pure (``ip -json`` text in, models out) and the
``_from_pyroute2_*`` functions are pure too (netlink messages in, models out).
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading

from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.interfaces import from_pyroute2_link, names_by_index, parse_links

_PYROUTE2 = {}
_PYROUTE2_LOCK = threading.Lock()


class _NoNetlinkError(Exception):
    """Stands for pyroute2's NetlinkError where pyroute2 is not importable (never raised)."""


def pyroute2():
    """pyroute2's names, imported on first use: ``{"IPRoute", "Conntrack", "NetlinkError"}`` (``IPRoute``
    None when the node's Python has no pyroute2: the readers use ip -json then).

    Imported lazily: importing pyroute2 costs about 0.1 s of CPU, which a process that never reads
    netlink (the controller loading the collection's filters) should not pay. One lock for every
    caller: the node pass's checks run in threads, and two threads importing one package at once can
    see its modules half-initialised."""
    with _PYROUTE2_LOCK:
        if not _PYROUTE2:
            # pylint: disable=import-outside-toplevel
            try:
                from pyroute2 import Conntrack, IPRoute
                from pyroute2.netlink.exceptions import NetlinkError
            except ImportError:  # the node's Python has no pyroute2: use ip -json
                _PYROUTE2.update(IPRoute=None, Conntrack=None, NetlinkError=_NoNetlinkError)
            else:
                _PYROUTE2.update(IPRoute=IPRoute, Conntrack=Conntrack, NetlinkError=NetlinkError)
        return _PYROUTE2


_V4_CANONICAL = re.compile(r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)/(?:3[0-2]|[12]?\d)$")

# include/uapi/linux/neighbour.h
NUD_STATES = (
    (0x01, "INCOMPLETE"), (0x02, "REACHABLE"), (0x04, "STALE"), (0x08, "DELAY"),
    (0x10, "PROBE"), (0x20, "FAILED"), (0x40, "NOARP"), (0x80, "PERMANENT"),
)
NTF_FLAGS = ((0x08, "proxy"), (0x10, "extern_learn"), (0x20, "offload"), (0x80, "router"))
NTF_EXT_FLAGS = ((0x01, "managed"), (0x02, "locked"))
# Flags ip -json prints as keys with a null value.
NEIGH_FLAG_KEYS = ("router", "proxy", "extern_learn", "offload", "managed", "locked")
# include/uapi/linux/rtnetlink.h
RTN_TYPES = {1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast",
             6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw", 10: "nat"}
RT_TABLES = {253: "default", 254: "main", 255: "local"}
RT_PROTOS = {0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 8: "gated", 9: "ra",
             11: "zebra", 12: "bird", 16: "dhcp", 42: "babel", 186: "bgp", 187: "isis", 188: "ospf", 189: "rip"}
RT_SCOPES = {0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere"}
# include/uapi/linux/rtnetlink.h RTNH_F_*: the names ip -json prints in "flags"
RTNH_FLAGS = ((0x01, "dead"), (0x02, "pervasive"), (0x04, "onlink"), (0x08, "offload"), (0x10, "linkdown"))
_RTNH_NAMES = frozenset(name for _bit, name in RTNH_FLAGS)


def family_of(address):
    return ipaddress.ip_address(address).version


def _cidr(dst, family):
    """ip -json prints host routes without a prefix and the default route as 'default'."""
    if dst in (None, "default"):
        return "0.0.0.0/0" if family == 4 else "::/0"
    if "/" not in dst:
        dst += "/32" if family == 4 else "/128"
    if family == 4 and _V4_CANONICAL.match(dst):
        # Fast path for big tables: the kernel refuses a dst with host bits set and both
        # readers print IPv4 dotted-quad, so a well-formed IPv4 CIDR is already canonical.
        return dst
    return str(ipaddress.ip_network(dst, strict=False))


def _decode_bits(value, table):
    return [name for bit, name in table if value & bit]


# ----------------------------------------------------------------- ip -json


def parse_addresses(text):
    out = []
    for item in json.loads(text or "[]"):
        for addr in item.get("addr_info", []):
            family = 6 if addr.get("family") == "inet6" else 4
            out.append({
                "address": addr.get("local"),
                "prefixlen": addr.get("prefixlen"),
                "family": family,
                "interface": item.get("ifname"),
                "scope": addr.get("scope", "global"),
            })
    return out


def _no_route(address, err):
    """The route of an address the kernel has none for: its words without iproute2's prefix, as pyroute2 gives them."""
    family = family_of(address)
    error = err.strip()
    if error.startswith("RTNETLINK answers: "):
        error = error[len("RTNETLINK answers: "):]
    return {"dst": _cidr(address, family), "family": family, "type": "unreachable", "error": error}


_BATCH_FAILED = re.compile(r"^Command failed -:(\d+)$")


def parse_batch_route_get(addresses, out, err):
    """``ip -json -force -batch -`` fed one ``route get ADDRESS`` per line -> the route of each address
    (as ``Netlink.route_get``), or None when the answer cannot be paired with the addresses.

    iproute2 prints one JSON line per command that worked, and for a failed one its error on stderr
    followed by ``Command failed -:LINE``."""
    failed, said = {}, []
    for line in err.splitlines():
        match = _BATCH_FAILED.match(line.strip())
        if match:
            failed[int(match.group(1))] = "\n".join(said)
            said = []
        elif line.strip():
            said.append(line.strip())
    answers = [line for line in out.splitlines() if line.strip()]
    worked = [number for number in range(1, len(addresses) + 1) if number not in failed]
    if len(answers) != len(worked) or any(number > len(addresses) for number in failed):
        return None
    routes, answers = [], iter(answers)
    for number, address in enumerate(addresses, 1):
        if number in failed:
            routes.append(_no_route(address, failed[number]))
            continue
        try:
            parsed = parse_routes(next(answers), family_of(address))
        except ValueError:
            return None
        if len(parsed) != 1:
            return None
        routes.append(parsed[0])
    return routes


def parse_neighbors(text):
    out = []
    for item in json.loads(text or "[]"):
        address = item.get("dst")
        if not address:
            continue
        out.append({
            "address": address,
            "family": family_of(address),
            "interface": item.get("dev"),
            "mac": item.get("lladdr"),
            "state": list(item.get("state", [])),
            "flags": [key for key in NEIGH_FLAG_KEYS if key in item],
        })
    return out


def parse_routes(text, family=None):
    out = []
    for item in json.loads(text or "[]"):
        dst = item.get("dst")
        fam = family or (6 if dst and ":" in dst else 4)
        if "gateway" in item and ":" in item["gateway"]:
            fam = 6
        out.append({
            "dst": _cidr(dst, fam),
            "family": fam,
            "type": item.get("type", "unicast"),
            "gateway": item.get("gateway"),
            "dev": item.get("dev"),
            "protocol": item.get("protocol", "boot"),
            "scope": item.get("scope", "global"),
            "prefsrc": item.get("prefsrc"),
            "table": item.get("table", "main"),
            "metric": item.get("metric", 0),
            "flags": [flag for flag in item.get("flags", ()) if flag in _RTNH_NAMES],
            "nexthops": [{"gateway": nh.get("gateway"), "dev": nh.get("dev"),
                          "flags": [flag for flag in nh.get("flags", ()) if flag in _RTNH_NAMES]}
                         for nh in item.get("nexthops", [])],
        })
    return out


# ----------------------------------------------------------------- pyroute2


def _from_pyroute2_address(msg, names):
    family = 6 if msg["family"] == 10 else 4
    return {
        "address": msg.get_attr("IFA_LOCAL") or msg.get_attr("IFA_ADDRESS"),
        "prefixlen": msg["prefixlen"],
        "family": family,
        "interface": names.get(msg["index"]),
        "scope": RT_SCOPES.get(msg["scope"], str(msg["scope"])),
    }


def _from_pyroute2_neighbor(msg, names):
    flags = _decode_bits(msg["flags"], NTF_FLAGS) + _decode_bits(msg.get_attr("NDA_FLAGS_EXT") or 0, NTF_EXT_FLAGS)
    address = msg.get_attr("NDA_DST")
    state = _decode_bits(msg["state"], NUD_STATES) or ["NONE"]
    return {
        "address": address,
        "family": family_of(address),
        "interface": names.get(msg["ifindex"]),
        "mac": msg.get_attr("NDA_LLADDR"),
        "state": state,
        "flags": [key for key in NEIGH_FLAG_KEYS if key in flags],
    }


def _from_pyroute2_route(msg, names):
    family = 6 if msg["family"] == 10 else 4
    dst = msg.get_attr("RTA_DST")
    dst = "%s/%d" % (dst, msg["dst_len"]) if dst else None
    table = msg.get_attr("RTA_TABLE") or msg["table"]
    nexthops = []
    for nh in msg.get_attr("RTA_MULTIPATH") or []:
        nexthops.append({"gateway": nh.get_attr("RTA_GATEWAY"), "dev": _ifname(names, nh["oif"]),
                         "flags": _decode_bits(nh["flags"], RTNH_FLAGS)})
    oif = msg.get_attr("RTA_OIF")
    return {
        "dst": _cidr(dst, family),
        "family": family,
        "type": RTN_TYPES.get(msg["type"], str(msg["type"])),
        "gateway": msg.get_attr("RTA_GATEWAY"),
        "dev": _ifname(names, oif) if oif else None,
        # ip -json prints neither unspec (route get answers) nor boot: both readers say boot
        "protocol": RT_PROTOS.get(msg["proto"] or 3, str(msg["proto"])),
        "scope": RT_SCOPES.get(msg["scope"], str(msg["scope"])),
        "prefsrc": msg.get_attr("RTA_PREFSRC"),
        "table": RT_TABLES.get(table, str(table)),
        "metric": msg.get_attr("RTA_PRIORITY") or 0,
        "flags": _decode_bits(msg["flags"], RTNH_FLAGS),
        "nexthops": nexthops,
    }


def _ifname(names, index):
    """The device name, or ``if<index>`` as iproute2 prints an index it cannot name."""
    return names.get(index) or "if%d" % index


# ----------------------------------------------------------------- readers


class Netlink(object):
    """Read links, addresses, neighbors and routes with pyroute2 or ip -json.

    ``reader`` is ``auto`` (``ip -json`` when ``ip`` is installed, else pyroute2 when importable),
    ``pyroute2`` or ``iproute2``.  pyroute2 is imported only when it is the reader.
    A context manager: ``with Netlink(module) as netlink:`` closes the netlink socket it opened.
    """

    def __init__(self, module, reader="auto"):
        self.module = module
        self._ip = None
        if reader == "auto":
            ip = Tool(module, "ip", required=False)
            if ip.available or pyroute2()["IPRoute"] is None:
                self._ip = ip if ip.available else None  # neither: Tool(ip) names what to install on first read
                reader = "iproute2"
        if reader == "pyroute2" and pyroute2()["IPRoute"] is None:
            raise ReadError("reader=pyroute2 was asked for but pyroute2 is not importable by %s on this host; "
                            "install python3-pyroute2 or use reader=auto" % _python())
        self.name = "pyroute2" if reader in ("auto", "pyroute2") else "iproute2"
        self._ipr = None
        self._names = None

    # lazily opened so a module that only needs one table pays for one
    @property
    def ip(self):
        if self._ip is None:
            self._ip = Tool(self.module, "ip")
        return self._ip

    @property
    def ipr(self):
        if self._ipr is None:
            self._ipr = pyroute2()["IPRoute"]()
        return self._ipr

    def close(self):
        if self._ipr is not None:
            self._ipr.close()
            self._ipr = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False

    def _ip_json(self, args):
        return self.ip.run(["-json"] + list(args))[1]

    def _ifnames(self):
        if self._names is None:
            self._names = names_by_index(self.links())
        return self._names

    def links(self):
        if self.name == "pyroute2":
            return [from_pyroute2_link(m) for m in self.ipr.get_links()]
        return parse_links(self._ip_json(["-details", "link", "show"]))

    def addresses(self):
        if self.name == "pyroute2":
            names = self._ifnames()
            return [_from_pyroute2_address(m, names) for m in self.ipr.get_addr()]
        return parse_addresses(self._ip_json(["address", "show"]))

    def neighbors(self):
        """Every neighbor entry of every family, NOARP and PERMANENT included."""
        if self.name == "pyroute2":
            names = self._ifnames()
            return [_from_pyroute2_neighbor(m, names) for m in self.ipr.neigh("dump") if m.get_attr("NDA_DST")]
        out = []
        for family in ("-4", "-6"):
            out.extend(parse_neighbors(self._ip_json([family, "neigh", "show", "nud", "all"])))
        return out

    def neighbor(self, address, interface):
        """The neighbor entry of ``address`` on ``interface`` read now (None when there is none,
        or the device is gone): the re-read right before a delete."""
        if self.name == "pyroute2":
            self._names = None  # a device may have come or gone since the last read
            found = [n for n in self.neighbors() if n["address"] == address and n["interface"] == interface]
            return found[0] if found else None
        flag = "-%d" % family_of(address)
        rc, out, err = self.ip.run(["-json", flag, "neigh", "show", "to", address, "dev", interface, "nud", "all"],
                                   check=False)
        if rc != 0:
            if "Cannot find device" in err:
                return None
            raise ReadError("`ip neigh show to %s dev %s` failed with exit code %d: %s"
                            % (address, interface, rc, (err or out).strip()))
        found = [n for n in parse_neighbors(out) if n["address"] == address]
        if found:
            found[0]["interface"] = found[0]["interface"] or interface  # ip omits dev when filtering by it
        return found[0] if found else None

    def routes(self, table="all", families=(4, 6)):
        """Routes of ``table`` ('all', 'main', or a number) of the given families."""
        if self.name == "pyroute2":
            names = self._ifnames()
            out = []
            for family in [{4: 2, 6: 10}[f] for f in families]:
                for msg in self.ipr.route("dump", family=family):
                    route = _from_pyroute2_route(msg, names)
                    if table in ("all", route["table"]) or str(table) == route["table"]:
                        out.append(route)
            return out
        out = []
        for family in families:
            text = self.ip.run_large(["-json", "-%d" % family, "route", "show", "table", str(table)])[1]
            out.extend(parse_routes(text, family))
        return out

    def route_get(self, address):
        """The route the kernel picks for ``address`` (like ``ip route get``)."""
        family = family_of(address)
        if self.name == "pyroute2":
            try:
                msgs = self.ipr.route("get", dst=address)
            except pyroute2()["NetlinkError"] as exc:
                return {"dst": _cidr(address, family), "family": family, "type": "unreachable", "error": exc.args[-1]}
            return _from_pyroute2_route(msgs[0], self._ifnames())
        rc, out, err = self.ip.run(["-json", "route", "get", address], check=False)
        if rc != 0:
            return _no_route(address, err)
        return parse_routes(out, family)[0]

    def routes_get(self, addresses):
        """``route_get`` of each of ``addresses`` (IP addresses), in their order.  With ``ip``, one
        ``ip -batch`` process answers them all: a process per address cost about 3 ms of CPU each, two
        per peer in a node pass (the probes and the path-MTU search)."""
        addresses = [str(ipaddress.ip_address(address)) for address in addresses]  # one command per line, nothing else
        if self.name == "pyroute2" or len(addresses) < 2:
            return [self.route_get(address) for address in addresses]
        script = "".join("route get %s\n" % address for address in addresses)
        rc, out, err = self.ip.run(["-json", "-force", "-batch", "-"], check=False, data=script)
        routes = parse_batch_route_get(addresses, out, err) if rc in (0, 1) else None
        # an answer this parser cannot pair with the addresses: one process per address, as before
        return routes if routes is not None else [self.route_get(address) for address in addresses]

    # ----------------------------------------------------------- the change

    def delete_neighbor(self, address, interface):
        """Delete exactly one neighbor entry (address + device)."""
        if self.name == "pyroute2":
            self._names = None  # the index of a device that is gone must not be reused
            index = dict((v, k) for k, v in self._ifnames().items()).get(interface)
            if index is None:
                raise ChangeError("deleting the neighbor entry %s dev %s failed: the device %s does not exist (any more)"
                                  % (address, interface, interface))
            try:
                self.ipr.neigh("del", dst=address, ifindex=index, family=10 if family_of(address) == 6 else 2)
            except pyroute2()["NetlinkError"] as exc:
                _raise_change(address, interface, exc.code, exc.args[-1])
            return
        rc, out, err = self.ip.run(["neigh", "del", address, "dev", interface], check=False)
        if rc != 0:
            _raise_change(address, interface, 1 if "not permitted" in err else 0, err.strip())


def _raise_change(address, interface, code, text):
    if code == 1:  # EPERM
        raise PrivilegeError("deleting the neighbor entry %s dev %s was refused (%s): CAP_NET_ADMIN is needed, "
                             "run the task with become: true" % (address, interface, text))
    raise ChangeError("deleting the neighbor entry %s dev %s failed: %s" % (address, interface, text))


def _python():
    import sys

    return sys.executable
