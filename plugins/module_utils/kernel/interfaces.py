# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Interface listing: the link model, its readers, and the lookups every domain needs (stdlib only).

link  {"ifindex", "ifname", "mac", "operstate", "up", "kind", "mtu"}

Three readers fill the same model: ``parse_links`` (``ip -json -details link show``),
``from_pyroute2_link`` (a pyroute2 RTM_NEWLINK message), both used by netlink.Netlink, and
``read_sysfs_links`` (``/sys/class/net``, for code that needs no ``ip`` and no netlink socket,
such as the capture reader).  ``kind`` is not in sysfs: that reader leaves it None.
"""

from __future__ import annotations

import json
import os

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

SYSFS_NET = "/sys/class/net"
IFF_UP = 0x1


def parse_links(text):
    """``ip -json -details link show`` text -> links."""
    out = []
    for item in json.loads(text or "[]"):
        flags = item.get("flags", [])
        out.append({
            "ifindex": item.get("ifindex"),
            "ifname": item.get("ifname"),
            "mac": item.get("address"),
            "operstate": item.get("operstate", "UNKNOWN"),
            "up": "UP" in flags,
            "kind": (item.get("linkinfo") or {}).get("info_kind"),
            "mtu": item.get("mtu"),
        })
    return out


def from_pyroute2_link(msg):
    """A pyroute2 link message -> a link."""
    info = msg.get_attr("IFLA_LINKINFO")
    return {
        "ifindex": msg["index"],
        "ifname": msg.get_attr("IFLA_IFNAME"),
        "mac": msg.get_attr("IFLA_ADDRESS"),
        "operstate": msg.get_attr("IFLA_OPERSTATE") or "UNKNOWN",
        "up": bool(msg["flags"] & IFF_UP),
        "kind": info.get_attr("IFLA_INFO_KIND") if info else None,
        "mtu": msg.get_attr("IFLA_MTU"),
    }


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def read_sysfs_links(sysfs=SYSFS_NET):
    """The links under ``/sys/class/net`` sorted by name; a device that vanishes while read is left out."""
    out = []
    for name in sorted(os.listdir(sysfs)):
        base = os.path.join(sysfs, name)
        try:
            ifindex = int(_read(os.path.join(base, "ifindex")))
        except (TypeError, ValueError):
            continue
        flags = _read(os.path.join(base, "flags"))
        try:
            up = bool(int(flags, 16) & IFF_UP)
        except (TypeError, ValueError):
            up = False
        mtu = _read(os.path.join(base, "mtu"))
        out.append({"ifindex": ifindex, "ifname": name, "mac": _read(os.path.join(base, "address")),
                    "operstate": (_read(os.path.join(base, "operstate")) or "unknown").upper(), "up": up, "kind": None,
                    "mtu": int(mtu) if mtu and mtu.isdigit() else None})
    return out


def names_by_index(links):
    """{ifindex: ifname}."""
    return dict((link["ifindex"], link["ifname"]) for link in links)


def macs_by_name(links):
    """{ifname: mac}."""
    return dict((link["ifname"], link["mac"]) for link in links)


def require_interface(interface, links):
    """Raise InputError naming the host's interfaces when ``interface`` is not one of them."""
    names = sorted(link["ifname"] for link in links)
    if interface not in names:
        raise InputError("interface %r does not exist on this host; its interfaces are: %s" % (interface, ", ".join(names)))
