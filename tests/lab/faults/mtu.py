"""Path-MTU faults: an overlay between two nodes, an MTU lowered on one side of a link only, and
ICMP "fragmentation needed" dropped by nft.

``vxlan_overlay`` builds a point-to-point VXLAN (``vxlan.k8t``, VNI 42, UDP 8472 as flannel uses) between two
nodes over their ``eth0``, gives each end the first address of its node's pod CIDR and routes the peer's
pod CIDR through it, as an overlay CNI does.  ``lower_mtu`` lowers the MTU of one device of one node (the
other end of the link keeps its own).  ``drop_frag_needed`` drops ICMP type 3 code 4 leaving a node (its
OUTPUT and FORWARD hooks) with a counter, as a firewall that "drops all ICMP" does.  Every injector
returns ``undo`` (argv lists run in the node's namespace by ``restore``).
"""

from __future__ import annotations

import ipaddress
import json

from . import fault

VXLAN = "vxlan.k8t"
NFT_TABLE = "k8tmtu"


def restore(lab, info):
    """Undo one injector (ignore what is already gone)."""
    for argv in reversed(info.get("undo", [])):
        lab.ns_run(info["node"], argv, check=False)


def overlay_address(node):
    return str(next(ipaddress.ip_network(node.pod_cidr).hosts()))


def link_mtu(lab, node, device):
    """The MTU of ``device`` on ``node`` read with ``ip -d -j link`` (independent of the collection)."""
    return lab.node_json(node, ["ip", "-d", "-j", "link", "show", "dev", device])[0]["mtu"]


@fault
def vxlan_overlay(lab, a, b, mtu=1450):
    """A VXLAN overlay between nodes ``a`` and ``b`` carrying each one's pod CIDR; returns one undo per node."""
    a, b = lab.node(a), lab.node(b)
    infos = []
    for me, peer in ((a, b), (b, a)):
        lab.run(["ip", "-n", me.ns, "-batch", "-"], input="\n".join([
            f"link add {VXLAN} type vxlan id 42 remote {peer.ip} local {me.ip} dstport 8472 dev eth0",
            f"link set {VXLAN} mtu {mtu} up",
            f"addr add {overlay_address(me)}/32 dev {VXLAN}",
            f"route replace {peer.pod_cidr} via {overlay_address(peer)} dev {VXLAN} onlink src {overlay_address(me)}",
            ""]))
        infos.append({"node": me.name, "device": VXLAN, "address": overlay_address(me), "mtu": mtu,
                      "undo": [["ip", "link", "del", VXLAN]]})
    lab.remember("overlay", {"nodes": [a.name, b.name], "mtu": mtu})
    return {"nodes": infos, "addresses": {a.name: overlay_address(a), b.name: overlay_address(b)}}


@fault
def lower_mtu(lab, node, device, mtu):
    """Set the MTU of ``device`` on ``node`` only (the other end of the link keeps its own)."""
    node = lab.node(node)
    old = link_mtu(lab, node, device)
    lab.ns_run(node, ["ip", "link", "set", "dev", device, "mtu", str(mtu)])
    return {"node": node.name, "device": device, "old_mtu": old, "mtu": int(mtu),
            "undo": [["ip", "link", "set", "dev", device, "mtu", str(old)]]}


def nft_table(lab, node, rules):
    """The lab's nft table on ``node``: one base chain per hook of ``rules`` ({hook: rule}), each holding its rule.
    Returns the injection's record (its undo deletes the table)."""
    node = lab.node(node)
    chains = [f"  chain {hook} {{ type filter hook {hook} priority 0; policy accept; {rule}; }}"
              for hook, rule in rules.items()]
    lab.ns_run(node, ["nft", "-f", "-"], input="\n".join([f"table inet {NFT_TABLE} {{"] + chains + ["}", ""]))
    return {"node": node.name, "table": NFT_TABLE, "undo": [["nft", "delete", "table", "inet", NFT_TABLE]]}


@fault
def drop_frag_needed(lab, node):
    """Drop ICMP fragmentation-needed leaving ``node`` (locally generated or forwarded), with a counter."""
    rule = "icmp type destination-unreachable icmp code frag-needed counter drop"
    return nft_table(lab, node, {"output": rule, "forward": rule})


@fault
def lose_full_size_once(lab, node, peer, size=1500):
    """``peer`` drops the first two ``size``-byte packets that come from ``node`` (one probe's two copies), then
    lets them in: a full-size answer lost once on the way, as under load (nft quota on the peer's input hook,
    with a counter; a drop on the sender's output would be the sender's EPERM, a local failure)."""
    rule = f"ip saddr {lab.node(node).ip} ip length {size} quota until {2 * size} bytes counter drop"
    return nft_table(lab, peer, {"input": rule})


def dropped_by_table(lab, node):
    """Packets the rules of the lab's nft table on ``node`` dropped (drop_frag_needed, lose_full_size_once), from
    nft's own counters."""
    ruleset = lab.node_json(node, ["nft", "-j", "list", "table", "inet", NFT_TABLE])
    total = 0
    for item in ruleset.get("nftables", []):
        for expr in (item.get("rule") or {}).get("expr", []):
            if "counter" in expr:
                total += expr["counter"]["packets"]
    return total


def cached_pmtu(lab, node, address):
    """The path MTU the kernel learnt for ``address`` on ``node`` (``ip route get``'s cache), or None."""
    words = lab.ns_run(node, ["ip", "route", "get", address]).stdout.split()
    return int(words[words.index("mtu") + 1]) if "mtu" in words else None


def tx_dropped(lab, namespace, device):
    """TX drops of ``device`` in ``namespace`` (``ip -s -j link``): frames too big for the peer veth."""
    out = lab.run(["ip", "-n", namespace, "-s", "-j", "link", "show", "dev", device]).stdout
    return json.loads(out)[0]["stats64"]["tx"]["dropped"]


def pod_process(lab, pod):
    """The pid of a process living in ``pod``'s network namespace (started once, a sleep that the lab's
    teardown kills with the namespace), as a container's process is on a real node."""
    import subprocess

    procs = lab.extra.setdefault("pod_processes", {})
    if pod["name"] not in procs:
        proc = subprocess.Popen(["ip", "netns", "exec", pod["ns"], "sleep", "3600"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs[pod["name"]] = proc.pid
        lab.remember("pod_processes", procs)
    return procs[pod["name"]]
