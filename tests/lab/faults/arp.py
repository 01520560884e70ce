"""Stale-ARP scenario: VIP ownership, stale neighbor entries, IP conflicts."""

from __future__ import annotations

import shlex
import shutil

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


@fault
def extra_link(lab, node, name="arpt0"):
    """A second ARP-capable device on ``node`` (a veth pair ``name``/peer inside the node)."""
    peer = name[:-1] + "p" if len(name) > 1 else name + "p"
    lab.ns_run(node, ["ip", "link", "add", name, "type", "veth", "peer", "name", peer])
    lab.ns_run(node, ["ip", "link", "set", name, "up"])
    lab.ns_run(node, ["ip", "link", "set", peer, "up"])
    return {"node": lab.node(node).name, "link": name, "peer": peer}


REAL_IP = "/bin/ip"


@fault
def ip_hook(lab, node, when, then):
    """Run commands on ``node`` at an exact moment: right before the node runs ``ip <when>``.

    ``when`` is the argument string of the ``ip`` call to wait for (``neigh del 198.18.0.201 dev
    eth0``); ``then`` a list of ``ip`` argument strings run first.  A wrapper is bound over the
    node's ``ip`` inside its own mount namespace (the one its SSH sessions see, never the
    machine's); it hands every call to the real ``ip``.  This is how a test puts a race (an entry
    turning PERMANENT, a device vanishing) between a module's re-read and its delete.
    ``ip_unhook`` removes it.
    """
    node = lab.node(node)
    ndir = lab.node_dir(node)
    real = ndir / "ip.real"
    shutil.copy2(REAL_IP, real)
    steps = "\n".join("  %s %s" % (real, " ".join(shlex.quote(a) for a in shlex.split(step))) for step in then)
    hook = ndir / "ip.hook"
    hook.write_text("#!/bin/sh\n# k8snet lab: ip_hook\nif [ \"$*\" = %s ]; then\n%s\nfi\nexec %s \"$@\"\n"
                    % (shlex.quote(when), steps, real))
    hook.chmod(0o755)
    lab.node_run(node, ["mount", "--bind", hook, REAL_IP])
    return {"node": node.name, "when": when, "then": list(then)}


@fault
def ip_unhook(lab, node):
    """Remove the wrapper ``ip_hook`` bound over the node's ``ip``."""
    lab.node_run(node, ["umount", REAL_IP], check=False)
    return {"node": lab.node(node).name}
