"""Route faults on the direct-routing pod mesh (see ``pods.pod_mesh``).

Each injector changes one node's main table (or one pod device) and returns what it did,
including ``undo``: the ``ip`` batch lines that put the mesh back (``restore(lab, info)``).
"""

from __future__ import annotations

import ipaddress

from . import fault
from .pods import pod


def _mesh_route(peer):
    return f"route replace {peer.pod_cidr} via {peer.ip} dev eth0 proto static"


def _batch(lab, node, lines):
    lab.run(["ip", "-n", lab.node(node).ns, "-batch", "-"], input="\n".join(lines) + "\n")


def restore(lab, info):
    """Undo one injector's change (its ``undo`` batch on its node)."""
    if info.get("undo"):
        _batch(lab, info["node"], info["undo"])
    for name in info.get("undo_pods", []):
        pods = lab.extra.get("pods", {})
        gone = pods.pop(name, None)
        if gone:
            lab.run(["ip", "netns", "del", gone["ns"]], check=False)
            lab.remember("pods", pods)


@fault
def route_missing(lab, node, peer):
    """Delete ``node``'s route to ``peer``'s pod CIDR."""
    node, peer = lab.node(node), lab.node(peer)
    _batch(lab, node, [f"route del {peer.pod_cidr}"])
    return {"node": node.name, "peer": peer.name, "cidr": peer.pod_cidr, "undo": [_mesh_route(peer)]}


@fault
def route_wrong_gateway(lab, node, peer, via):
    """Route ``peer``'s pod CIDR on ``node`` via another node (``via``) instead of the peer."""
    node, peer, via = lab.node(node), lab.node(peer), lab.node(via)
    _batch(lab, node, [f"route replace {peer.pod_cidr} via {via.ip} dev eth0 proto static"])
    return {"node": node.name, "peer": peer.name, "cidr": peer.pod_cidr, "gateway": via.ip,
            "undo": [_mesh_route(peer)]}


@fault
def route_blackhole(lab, node, peer, prefixlen=26, kind="blackhole"):
    """Add a ``kind`` (blackhole/unreachable/prohibit) route over the first /``prefixlen`` of ``peer``'s CIDR (a
    quarter of it when the CIDR is a /``prefixlen`` or smaller already: a lab of 64 nodes or more)."""
    node, peer = lab.node(node), lab.node(peer)
    cidr = ipaddress.ip_network(peer.pod_cidr)
    part = next(cidr.subnets(new_prefix=max(int(prefixlen), cidr.prefixlen + 2)))
    _batch(lab, node, [f"route add {kind} {part}"])
    return {"node": node.name, "peer": peer.name, "cidr": peer.pod_cidr, "part": str(part), "kind": kind,
            "undo": [f"route del {kind} {part}"]}


@fault
def next_hop_failed(lab, node, peer):
    """Make ``node``'s neighbor entry for ``peer``'s node IP FAILED: ``node`` stops sending ARP requests for
    it (an nft ``arp`` table on ``node`` only, so SSH to both nodes keeps working) and one ping probes."""
    node, peer = lab.node(node), lab.node(peer)
    lab.ns_run(node, ["nft", "-f", "-"], input="\n".join([
        "table arp k8tlab_arp {",
        "  chain output { type filter hook output priority 0; policy accept; }",
        "}",
        f"add rule arp k8tlab_arp output arp daddr ip {peer.ip} drop",
        ""]))
    lab.ns_run(node, ["ip", "neigh", "flush", "to", peer.ip, "dev", "eth0"], check=False)
    lab.ping(node, peer.ip, count=1, timeout=1)
    # the kernel keeps INCOMPLETE while it probes (3 x 1 s by default), then FAILED
    state = lab.neighbors(node, peer.ip)
    return {"node": node.name, "peer": peer.name, "gateway": peer.ip, "state": state[0]["state"] if state else [],
            "undo_next_hop": True}


def restore_next_hop(lab, info):
    lab.ns_run(info["node"], ["nft", "delete", "table", "arp", "k8tlab_arp"], check=False)
    lab.ns_run(info["node"], ["ip", "neigh", "flush", "to", info["gateway"], "dev", "eth0"], check=False)


@fault
def local_cidr_routed_away(lab, node, via, prefixlen=28):
    """Route the last /``prefixlen`` of ``node``'s own pod CIDR via another node (a duplicate announcement)."""
    node, via = lab.node(node), lab.node(via)
    part = list(ipaddress.ip_network(node.pod_cidr).subnets(new_prefix=int(prefixlen)))[-1]
    _batch(lab, node, [f"route add {part} via {via.ip} dev eth0 proto static"])
    return {"node": node.name, "via": via.name, "part": str(part), "undo": [f"route del {part}"]}


@fault
def pod_device_down(lab, node, name="down", cni="calico"):
    """Start a pod on ``node`` and take its eth0 down: the host-side device loses carrier
    (LOWERLAYERDOWN) and its /32 route stays, flagged linkdown.  (Setting the host side itself
    down would make the kernel drop the IPv4 route with it.)"""
    info = pod(lab, node, name, cni=cni)
    lab.run(["ip", "-n", info["ns"], "link", "set", "eth0", "down"])
    return {"node": info["node"], "pod": name, "device": info["device"], "ip": info["ip"], "ns": info["ns"],
            "undo_pods": [name]}


@fault
def pod_route_missing_device(lab, node, name="gone", cni="cilium"):
    """Start a pod on ``node``, delete its veth (the pod's device is gone) and leave the /32 route the CNI
    forgot behind, now on the uplink.

    The kernel removes a route with its device, so a route that names a vanished device only exists
    for a moment; what stays on real nodes after a leaked delete is the pod IP routed to a device that
    is no pod device.  That is what this leaves.
    """
    info = pod(lab, node, name, cni=cni)
    node = lab.node(node)
    lab.ns_run(node, ["ip", "link", "del", info["device"]])
    _batch(lab, node, [f"route add {info['ip']}/32 dev eth0 proto static"])
    return {"node": node.name, "pod": name, "device": info["device"], "ip": info["ip"],
            "undo": [f"route del {info['ip']}/32"], "undo_pods": [name]}
