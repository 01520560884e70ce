# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""IP address text, normalised once (standard library only; node and controller side).

Option values are checked by the rules of ``params`` (``params.address``, ``params.network``);
this is for addresses read from elsewhere (inventory variables, Node annotations, BIRD), and for what
kind of address one is (``special``: the rules that need one host's unicast address ask it).
"""

from __future__ import annotations

import functools
import ipaddress


def host_address(value):
    """'10.0.0.5', ' 10.0.0.5/24 ' (an interface address, as in Calico's projectcalico.org/IPv4Address
    annotation) -> '10.0.0.5'; IPv6 likewise, compressed.  ValueError when it is not an IP address."""
    return _host_address(str(value).strip())


# the controller reads every peer's address for every host's lists: the same few hundred texts, parsed once
@functools.lru_cache(maxsize=4096)
def _host_address(text):
    return str(ipaddress.ip_interface(text).ip if "/" in text else ipaddress.ip_address(text))


# what no one host's unicast address can be, in the order they are told apart, with what each is
SPECIAL = (
    ("unspecified", "the unspecified address"),
    ("this network", "an address of 'this network' (0.0.0.0/8), which no host has"),
    ("loopback", "a loopback address (it never leaves the host)"),
    ("multicast", "a multicast address, not one host's"),
    ("broadcast", "the limited broadcast address, not one host's"),
    ("reserved", "a reserved address (240.0.0.0/4), which no host has"),
    ("link-local", "a link-local address (169.254.0.0/16, fe80::/10), valid on one link only"),
)
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_BROADCAST = ipaddress.ip_address("255.255.255.255")


def special(address):
    """The kind (a key of ``SPECIAL``) of an address that is not one host's routable unicast address, else
    None; ValueError when it is not an IP address.  An IPv4-mapped IPv6 address is its IPv4 address."""
    ip = ipaddress.ip_address(str(address).strip())
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    v4 = ip.version == 4
    checks = (("unspecified", ip.is_unspecified), ("this network", v4 and ip in _THIS_NETWORK),
              ("loopback", ip.is_loopback), ("multicast", ip.is_multicast), ("broadcast", ip == _BROADCAST),
              ("reserved", v4 and ip.is_reserved), ("link-local", ip.is_link_local))
    return next((kind for kind, hit in checks if hit), None)
