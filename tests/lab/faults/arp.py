"""Stale-ARP scenario: VIP ownership, stale neighbor entries, IP conflicts."""

from __future__ import annotations

from . import fault


@fault
def bind_vip(lab, node, address=None):
    """Give ``node`` a VIP on eth0, as keepalived or kube-vip would."""
    address = address or lab.vip(0)
    lab.ns_run(node, ["ip", "addr", "replace", f"{address}/32", "dev", "eth0"])
    return {"node": lab.node(node).name, "address": address}


@fault
def learn_neighbor(lab, node, address):
    """Make ``node`` resolve ``address`` for real (one ping), so its cache holds the true MAC."""
    lab.ping(node, address)
    return {"node": lab.node(node).name, "address": address}


@fault
def stale_neighbor(lab, node, address=None, mac="02:de:ad:00:be:ef", state="stale"):
    """Put a wrong MAC for ``address`` in ``node``'s neighbor cache (nud ``state``)."""
    address = address or lab.vip(0)
    lab.ns_run(node, ["ip", "neigh", "replace", address, "lladdr", mac, "dev", "eth0", "nud", state])
    return {"node": lab.node(node).name, "address": address, "mac": mac, "state": state}


@fault
def ip_conflict(lab, nodes, address=None):
    """Bind one address on several nodes, so that more than one MAC answers ARP for it."""
    address = address or lab.vip(1)
    names = nodes.split(",") if isinstance(nodes, str) else list(nodes)
    for name in names:
        lab.ns_run(name, ["ip", "addr", "replace", f"{address}/32", "dev", "eth0"])
    return {"nodes": names, "address": address, "macs": [lab.node(n).mac for n in names]}
