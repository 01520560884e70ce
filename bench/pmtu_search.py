"""Benchmark: the path-MTU search between two nodes, beside the manual commands.

Builds three namespaces of the caller's lab slot: a "node" ``k8t<slot>-benchmtu`` (198.18.0.1), a
router ``k8t<slot>-benchmtur`` and a peer ``k8t<slot>-benchmtu2`` (198.18.1.2) behind it; the link from
the router to the peer has MTU 1400 (both ends), the node's own link 1500.  Measured in the same run,
for two cases (the router answers ICMP fragmentation-needed; nft on the router drops it, a black hole):

* ours: pmtu_check run on the node (no controller);
* manual: the runbook's binary search with ``ping -M do -s SIZE -c 1 -W 1`` in a shell loop (the same
  ten or so sizes, one ping each), and ``tracepath -n -m 4`` when installed (it learns the path MTU only
  from the ICMP, so it cannot see a black hole).

Usage (root, from the checkout): K8SNET_LAB_SLOT=2 .venv/bin/python bench/pmtu_search.py
"""

from __future__ import annotations

import shutil
import subprocess
import time

from netns_bench import children_cpu, namespace, node_side, sh, table

NODE, ROUTER, PEER = namespace("benchmtu"), namespace("benchmtur"), namespace("benchmtu2")

# the manual binary search: lo passes, hi is the interface MTU; total size = payload + 28
PING_SEARCH = r"""
lo=576; hi=1500
if ping -n -M do -s $((hi-28)) -c 1 -W 1 198.18.1.2 >/dev/null 2>&1; then echo $hi; exit; fi
while [ $((hi-lo)) -gt 1 ]; do
  mid=$(((lo+hi)/2))
  if ping -n -M do -s $((mid-28)) -c 1 -W 1 198.18.1.2 >/dev/null 2>&1; then lo=$mid; else hi=$mid; fi
done
echo $lo
"""


def build():
    for ns in (NODE, ROUTER, PEER):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
    sh(["ip", "-n", NODE, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", ROUTER])
    sh(["ip", "-n", ROUTER, "link", "add", "eth1", "mtu", "1400", "type", "veth", "peer", "name", "eth0", "mtu", "1400",
        "netns", PEER])
    for ns, dev, ip in ((NODE, "eth0", "198.18.0.1/24"), (ROUTER, "eth0", "198.18.0.254/24"),
                        (ROUTER, "eth1", "198.18.1.254/24"), (PEER, "eth0", "198.18.1.2/24")):
        sh(["ip", "-n", ns, "addr", "add", ip, "dev", dev])
        sh(["ip", "-n", ns, "link", "set", dev, "up"])
    sh(["ip", "-n", NODE, "route", "add", "198.18.1.0/24", "via", "198.18.0.254"])
    sh(["ip", "-n", PEER, "route", "add", "198.18.0.0/24", "via", "198.18.1.254"])
    sh(["ip", "netns", "exec", ROUTER, "sysctl", "-qw", "net.ipv4.ip_forward=1"])


def flush_learnt():
    sh(["ip", "-n", NODE, "route", "flush", "cache"])


def case(rows, label):
    flush_learnt()
    seconds, cpu, result = node_side(NODE, "pmtu_check", {"targets": [{"address": "198.18.1.2", "name": "peer"}]})
    peer = (result.get("peers") or [{}])[0]
    rows.append(("ours (%s): pmtu_check on the node" % label, seconds, cpu, "largest %s, %s, frag_needed %s" % (
        peer.get("largest"), [f["check"] for f in result.get("findings", [])], peer.get("frag_needed"))))
    flush_learnt()
    c0, t0 = children_cpu(), time.monotonic()
    proc = subprocess.run(["ip", "netns", "exec", NODE, "sh", "-c", PING_SEARCH], capture_output=True, text=True,
                          check=False)
    rows.append(("manual (%s): ping -M do -s N binary search" % label, time.monotonic() - t0, children_cpu() - c0,
                 "largest %s, black hole or not: unknown" % proc.stdout.strip()))
    if shutil.which("tracepath"):
        flush_learnt()
        c0, t0 = children_cpu(), time.monotonic()
        proc = subprocess.run(["ip", "netns", "exec", NODE, "tracepath", "-n", "-m", "4", "198.18.1.2"], capture_output=True,
                              text=True, check=False)
        rows.append(("manual (%s): tracepath -n" % label, time.monotonic() - t0, children_cpu() - c0,
                     (proc.stdout.strip().splitlines() or [""])[-1][:60]))


def main():
    try:
        build()
        rows = []
        case(rows, "ICMP comes back")
        sh(["ip", "netns", "exec", ROUTER, "nft", "-f", "-"], input=(
            "table inet bench {\n chain forward { type filter hook forward priority 0; policy accept; }\n"
            " chain output { type filter hook output priority 0; policy accept;\n"
            "  icmp type destination-unreachable icmp code frag-needed counter drop; }\n}\n"))
        case(rows, "ICMP dropped")
        table(rows)
    finally:
        for ns in (NODE, ROUTER, PEER):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


if __name__ == "__main__":
    main()
