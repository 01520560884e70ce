# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Service frontends as ``ip:port/proto`` text, and the rule that says whether one is live.

One helper for both sides: the controller formats what the Kubernetes API says
(``kube_facts``), the node parses it and matches the frontends it finds in the
eBPF load-balancer maps against it (``cilium_lb``).  Pure, standard library only.

The matching rule (``LiveFrontends``), which errs toward keeping: a frontend
``A:P/X`` found in a map is live when

1. the live set has ``A:P/X``, where port 0 (all ports) and protocol ``ANY`` (0)
   on either side match every port or protocol;
2. ``A`` is the unspecified address (``0.0.0.0``, ``::``: Cilium's surrogate
   NodePort / HostPort frontend) and the live set has any frontend on port ``P``
   with a matching protocol, whatever its address (a NodePort given for one node
   address covers the surrogate);
3. the live set has the surrogate ``0.0.0.0:P/X`` (or ``[::]:P/X``): port ``P`` is a
   NodePort or HostPort, which Cilium programs on every address of the node's
   devices, so ``P`` with a matching protocol is live on any address, including
   node addresses the API does not list.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

PROTOCOLS = {0: "ANY", 6: "TCP", 17: "UDP", 132: "SCTP"}
PROTOCOL_NUMBERS = dict((v, k) for k, v in PROTOCOLS.items())
UNSPECIFIED = ("0.0.0.0", "::")


def proto_name(number):
    return PROTOCOLS.get(number, str(number))


def text(address, port, proto="TCP"):
    """``10.96.0.10:53/UDP``, ``[fd00::a]:53/UDP``; ``proto`` is a name or an IP protocol number."""
    ip = ipaddress.ip_address(address)
    host = "[%s]" % ip if ip.version == 6 else str(ip)
    name = proto_name(proto) if isinstance(proto, int) else (proto or "TCP").upper()
    return "%s:%d/%s" % (host, int(port), name)


def parse(value, option="live_frontends"):
    """``ip:port/proto`` (proto TCP, UDP, SCTP or ANY, TCP when absent) -> (address, port, proto number)."""
    raw = str(value).strip()
    hostport, _sep, proto = raw.partition("/")
    proto = (proto or "TCP").upper()
    host, sep, port = hostport.rpartition(":")
    try:
        if not sep or proto not in PROTOCOL_NUMBERS:
            raise ValueError
        address = ipaddress.ip_address(host.strip("[]"))
        port = int(port)
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        raise InputError("%s item %r is not ip:port/proto (e.g. 10.96.0.10:53/UDP; proto TCP, UDP, "
                         "SCTP or ANY)" % (option, value), value=value)
    return (str(address), port, PROTOCOL_NUMBERS[proto])


def sort_key(value):
    """Sort ``ip:port/proto`` texts by address family, address, port, protocol."""
    address, port, proto = parse(value)
    ip = ipaddress.ip_address(address)
    return (ip.version, int(ip), port, proto_name(proto))


def _proto_match(a, b):
    return not a or not b or a == b


class LiveFrontends(object):
    """A set of parsed live frontends, with the matching rule of this file's docstring."""

    def __init__(self, parsed):
        self.items = set(parsed)
        self.by_address = {}
        self.ports = {}       # port -> protocols, over every live frontend
        self.node_ports = {}  # port -> protocols, of the surrogate (unspecified-address) live frontends
        for address, port, proto in self.items:
            self.by_address.setdefault(address, []).append((port, proto))
            self.ports.setdefault(port, set()).add(proto)
            if address in UNSPECIFIED:
                self.node_ports.setdefault(port, set()).add(proto)

    def __len__(self):
        return len(self.items)

    @staticmethod
    def _port_hit(index, port, proto):
        if port:
            protos = index.get(port, set()) | index.get(0, set())
        else:
            protos = set().union(*index.values()) if index else set()
        return any(_proto_match(proto, p) for p in protos)

    def why(self, fe):
        """Why frontend (address, port, proto) is live: ``exact``, ``surrogate``, ``node_port``; None if not."""
        address, port, proto = fe
        for l_port, l_proto in self.by_address.get(address, ()):
            if (not port or not l_port or port == l_port) and _proto_match(proto, l_proto):
                return "exact"
        if address in UNSPECIFIED and self._port_hit(self.ports, port, proto):
            return "surrogate"
        if self._port_hit(self.node_ports, port, proto):
            return "node_port"
        return None

    def __contains__(self, fe):
        return self.why(fe) is not None
