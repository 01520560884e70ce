# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pod-CIDR route mesh, the model: the options' input (peers, addresses), RouteIndex (one routing table indexed
once: exact prefixes in a dict, prefixes sorted by start address) and the helpers the checks share (describe,
is_pod_device).
"""

from __future__ import annotations

import bisect
import ipaddress
import socket

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

POD_DEVICE_PREFIXES = ("cali", "lxc")


# ----------------------------------------------------------------- input


def _network(value, what):
    try:
        return ipaddress.ip_network(str(value), strict=True)
    except ValueError as exc:
        raise InputError("%s %r is not a valid CIDR (%s); give the network address, e.g. 198.19.1.0/24"
                         % (what, value, exc), value=value)


def _address(value, what):
    try:
        return ipaddress.ip_address(str(value))
    except ValueError:
        raise InputError("%s %r is not a valid IP address" % (what, value), value=value)


def normalize_peers(peers, node_name=None, local_addresses=()):
    """Validate ``peers`` and split off this host's own entry.

    Returns ``(local, remote)``: ``local`` is the entry whose ``node`` is ``node_name`` or
    whose ``node_ip`` is an address of this host (or None), ``remote`` the others.  Each
    entry is ``{"node", "node_ips": [ip_address], "pod_cidrs": [ip_network]}``.
    """
    local_addresses = set(str(a) for a in local_addresses)
    local, remote, seen = None, [], set()
    for i, peer in enumerate(peers or []):
        name = peer.get("node") or "peers[%d]" % i
        if not peer.get("node_ip"):
            raise InputError("peer %s has no node_ip; every peer needs node, node_ip and pod_cidrs" % name)
        ips = [_address(peer["node_ip"], "node_ip of peer %s:" % name)]
        ips += [_address(a, "node_ips of peer %s:" % name) for a in peer.get("node_ips") or []]
        cidrs = [_network(c, "pod CIDR of peer %s:" % name) for c in peer.get("pod_cidrs") or []]
        if name in seen:
            raise InputError("peer %s is listed twice in peers" % name)
        seen.add(name)
        entry = {"node": name, "node_ips": ips, "pod_cidrs": cidrs}
        if (node_name and name == node_name) or any(str(ip) in local_addresses for ip in ips):
            if local is not None:
                raise InputError("peers %s and %s both look like this host (same name or a local node_ip)"
                                 % (local["node"], name))
            local = entry
        else:
            remote.append(entry)
    return local, remote


# ----------------------------------------------------------------- index


def _start(network_text, family):
    address = network_text.split("/", 1)[0]
    return int.from_bytes(socket.inet_pton(socket.AF_INET if family == 4 else socket.AF_INET6, address), "big")


class RouteIndex(object):
    """One routing table (a list of route models), indexed for prefix lookups."""

    def __init__(self, routes):
        self.routes = routes
        self.exact = {}
        ranges = {4: [], 6: []}
        for route in routes:
            dst = route["dst"]
            best = self.exact.get(dst)
            if best is not None:
                if (route.get("metric") or 0) < (best.get("metric") or 0):
                    self.exact[dst] = route
                continue
            self.exact[dst] = route
            family = route["family"]
            plen = int(dst.rsplit("/", 1)[1])
            ranges[family].append((_start(dst, family), plen, dst))
        self._starts = {}
        self._ranges = {}
        for family, items in ranges.items():
            items.sort()
            self._ranges[family] = items
            self._starts[family] = [item[0] for item in items]

    def covering(self, network):
        """The most specific route whose prefix contains all of ``network`` (LPM), or None."""
        for plen in range(network.prefixlen, -1, -1):
            route = self.exact.get(str(network.supernet(new_prefix=plen)) if plen < network.prefixlen else str(network))
            if route is not None:
                return route
        return None

    def inside(self, network):
        """Routes strictly more specific than ``network`` that lie inside it."""
        family = network.version
        lo = int(network.network_address)
        hi = int(network.broadcast_address)
        starts = self._starts[family]
        out = []
        for i in range(bisect.bisect_left(starts, lo), bisect.bisect_right(starts, hi)):
            _start_int, plen, dst = self._ranges[family][i]
            if plen > network.prefixlen:
                out.append(self.exact[dst])
        return out

    def lookup(self, address):
        """The route the table picks for one address (longest prefix match)."""
        return self.covering(ipaddress.ip_network(address))


# ----------------------------------------------------------------- helpers


def describe(route):
    """A route as ``ip route`` prints it, for evidence."""
    if route is None:
        return None
    parts = [] if route.get("type", "unicast") == "unicast" else [route["type"]]
    parts.append(route["dst"])
    if route.get("gateway"):
        parts += ["via", route["gateway"]]
    if route.get("dev"):
        parts += ["dev", route["dev"]]
    for hop in route.get("nexthops") or []:
        parts += ["nexthop"] + (["via", hop["gateway"]] if hop.get("gateway") else []) + (["dev", hop["dev"]] if hop.get("dev") else [])
    if route.get("protocol") not in (None, "boot"):
        parts += ["proto", route["protocol"]]
    return " ".join(parts)


def _hops(route):
    if route.get("nexthops"):
        return [(h.get("gateway"), h.get("dev")) for h in route["nexthops"]]
    return [(route.get("gateway"), route.get("dev"))]


def _node_ip(peer, family):
    for ip in peer["node_ips"]:
        if ip.version == family:
            return str(ip)
    return None


def is_pod_device(name):
    return bool(name) and name.startswith(POD_DEVICE_PREFIXES)
