"""Kernel parameters of a lab node set wrong: forwarding off, reverse-path filtering on a Cilium-named
interface, a Linux bridge without bridge-nf-call-iptables.  Each is the node's own (per network
namespace) and each injector returns the undo, so ``restore`` puts the node back as it was."""

from __future__ import annotations

from . import fault

# a Cilium endpoint's veth is lxc<hash>: a veth of that name stands in for one (its peer is named otherwise)
CILIUM_IFACE = "lxck8tsysctl"
CILIUM_PEER = "k8tsysctlpeer"
BRIDGE = "k8tbr0"


def restore(lab, info):
    for argv in reversed(info.get("undo", [])):
        lab.ns_run(info["node"], argv, check=False)


def read(lab, node, key):
    """One sysctl of ``node`` read with sysctl -n (None when absent), the reader the tests trust."""
    proc = lab.ns_run(lab.node(node), ["sysctl", "-n", key], check=False)
    return int(proc.stdout.split()[0]) if proc.returncode == 0 and proc.stdout.strip() else None


@fault
def ip_forward_off(lab, node):
    """Turn IPv4 forwarding off on ``node``: its pods' traffic to other nodes is dropped."""
    node = lab.node(node)
    old = lab.ns_run(node, ["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip()
    lab.ns_run(node, ["sysctl", "-qw", "net.ipv4.ip_forward=0"])
    return {"node": node.name, "undo": [["sysctl", "-qw", "net.ipv4.ip_forward=%s" % old]]}


@fault
def cilium_rp_filter(lab, node, value=2):
    """A Cilium-named interface on ``node`` with rp_filter ``value`` (as systemd 245's defaults set it)."""
    node = lab.node(node)
    lab.ns_run(node, ["ip", "link", "add", CILIUM_IFACE, "type", "veth", "peer", "name", CILIUM_PEER])
    lab.ns_run(node, ["sysctl", "-qw", "net.ipv4.conf.%s.rp_filter=%d" % (CILIUM_IFACE, int(value))])
    return {"node": node.name, "iface": CILIUM_IFACE, "undo": [["ip", "link", "del", CILIUM_IFACE]]}


@fault
def bridge_without_nf(lab, node):
    """A Linux bridge on ``node``; the lab's kernel has no br_netfilter in the node's namespace unless loaded,
    and where it is, bridge-nf-call-iptables is set to 0 here."""
    node = lab.node(node)
    lab.ns_run(node, ["ip", "link", "add", BRIDGE, "type", "bridge"])
    undo = [["ip", "link", "del", BRIDGE]]
    old = read(lab, node.name, "net.bridge.bridge-nf-call-iptables")
    if old is not None:
        lab.ns_run(node, ["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0"])
        undo.insert(0, ["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=%d" % old])
    return {"node": node.name, "bridge": BRIDGE, "undo": undo}
