"""Conntrack pressure with real flows.

The entry count is kept per network namespace while ``nf_conntrack_max`` is the kernel's (it cannot be
lowered inside a child namespace), so the table of a lab node is driven past a ratio by filling it:
``conntrack_track`` makes conntrack active in the node's namespace (an nft rule that matches on ``ct state``, as
kube-proxy's rules do), ``conntrack_fill`` sends short-lived UDP flows (one datagram each, to many ports of a peer
node) until the count reaches its target.  Unreplied UDP entries live ``nf_conntrack_udp_timeout`` seconds:
``conntrack_fill`` raises it in that namespace (its own sysctl) so a test can read the table before it drains, and
returns the undo.
"""

from __future__ import annotations

import sys

from ..core import LAB_SUPERNET
from . import fault

NFT_TABLE = "k8tct"
UDP_TIMEOUT = "net.netfilter.nf_conntrack_udp_timeout"
# one netlink message empties the namespace's table (pyroute2 is in the lab's Python)
FLUSH = [sys.executable, "-c", "from pyroute2 import Conntrack; Conntrack().flush()"]

# one socket per 60000 destination ports, one datagram per flow, until the count reaches the target
_FILL = """
import socket, sys
target, dst = int(sys.argv[1]), sys.argv[2]
path = "/proc/sys/net/netfilter/nf_conntrack_count"
sent = 0
while sent < target * 2:
    with open(path) as f:
        if int(f.read()) >= target:
            break
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for port in range(1, 60001):
        try:
            s.sendto(b"k8t", (dst, port))
        except PermissionError:
            pass  # EPERM: conntrack dropped it, the table is full and had no unreplied flow to evict
        sent += 1
        if port % 5000 == 0:
            with open(path) as f:
                if int(f.read()) >= target:
                    break
    s.close()
print(sent)
"""


def restore(lab, info):
    for argv in reversed(info.get("undo", [])):
        lab.ns_run(info["node"], argv, check=False)


def read(lab, node):
    """count, max and the summed /proc/net/stat/nf_conntrack counters of ``node``, read with cat."""
    text = lab.ns_run(node, ["cat", "/proc/sys/net/netfilter/nf_conntrack_count",
                             "/proc/sys/net/netfilter/nf_conntrack_max", "/proc/net/stat/nf_conntrack"]).stdout
    lines = text.splitlines()
    header, stats = lines[2].split(), {}
    for row in lines[3:]:
        for name, value in zip(header, row.split()):
            stats[name] = int(value, 16) if name == "entries" else stats.get(name, 0) + int(value, 16)
    return {"count": int(lines[0]), "max": int(lines[1]), "stats": stats}


@fault
def conntrack_track(lab, node):
    """Make conntrack track the flows of ``node`` (an nft rule matching ct state, with a counter)."""
    node = lab.node(node)
    script = "\n".join([f"table inet {NFT_TABLE} {{",
                        "  chain output { type filter hook output priority 0; policy accept; ct state new counter; }",
                        "}", ""])
    lab.ns_run(node, ["nft", "-f", "-"], input=script)
    return {"node": node.name, "undo": [["nft", "delete", "table", "inet", NFT_TABLE]]}


@fault
def conntrack_fill(lab, node, dst, entries, udp_timeout=300):
    """Send short-lived UDP flows from ``node`` to ``dst`` until its table holds ``entries`` entries."""
    node = lab.node(node)
    if not _inside(dst):
        raise ValueError(f"{dst} is outside {LAB_SUPERNET}: the lab sends traffic nowhere else")
    old = lab.ns_run(node, ["sysctl", "-n", UDP_TIMEOUT]).stdout.strip()
    lab.ns_run(node, ["sysctl", "-qw", f"{UDP_TIMEOUT}={int(udp_timeout)}"])
    proc = lab.ns_run(node, [sys.executable, "-c", _FILL, str(int(entries)), dst], timeout=120)
    return {"node": node.name, "dst": dst, "sent": int(proc.stdout.strip() or 0), "target": int(entries),
            "undo": [["sysctl", "-qw", f"{UDP_TIMEOUT}={old}"], FLUSH]}


def _inside(address):
    import ipaddress

    return ipaddress.ip_address(address) in LAB_SUPERNET


# one datagram to each of ``ports`` ports, again and again for ``seconds``: new flows without end
_STREAM = """
import socket, sys, time
dst, end = sys.argv[1], time.time() + float(sys.argv[2])
while time.time() < end:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for port in range(1, 20001):
        try:
            s.sendto(b"k8t", (dst, port))
        except PermissionError:
            pass  # a full table drops the new flow (EPERM): go on, the drops are what is measured
    s.close()
"""


def fill_start(lab, node, dst, seconds=5):
    """Keep opening new UDP flows from ``node`` to ``dst`` for ``seconds`` in the background (bounded);
    returns the Popen."""
    import subprocess

    node = lab.node(node)
    if not _inside(dst):
        raise ValueError(f"{dst} is outside {LAB_SUPERNET}: the lab sends traffic nowhere else")
    return subprocess.Popen(["ip", "netns", "exec", node.ns, sys.executable, "-c", _STREAM, dst, str(float(seconds))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
