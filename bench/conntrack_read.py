"""Benchmark: the conntrack read at 100k entries, beside the manual commands.

Builds two namespaces of the caller's lab slot, ``k8t<slot>-benchct`` (the "node") and
``k8t<slot>-benchct2`` (its peer, 198.18.0.2), joined by a veth; an nft rule matching on ``ct state``
makes conntrack track the node's flows; 100,000 short-lived UDP flows (one datagram each to a port of
the peer) fill its table (``nf_conntrack_udp_timeout`` raised to 300 s in that namespace so it does not
drain while measured).  Then, in the same run:

* ours: conntrack_check run on the node (no controller) with ``top_pairs: always``, and its readers
  alone (``/proc/net/nf_conntrack`` + the top pairs, and the ``conntrack`` tool when installed);
* manual: ``conntrack -C``, ``conntrack -S`` and ``conntrack -L | <top src/dst pairs>`` (the runbook
  commands), or the same from /proc with sort | uniq -c when the tool is missing.

pyroute2's netlink dump is measured only with K8SNET_BENCH_PYROUTE2=1 (it parses in pure Python:
270 s for 262k entries on this machine).

Usage (root, from the checkout): K8SNET_LAB_SLOT=2 .venv/bin/python bench/conntrack_read.py [entries]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from netns_bench import PYTHON, ROOT, children_cpu, namespace, node_side, sh, table

NS, PEER = namespace("benchct"), namespace("benchct2")
ENTRIES = int(sys.argv[1]) if len(sys.argv) > 1 else 100000

FILL = """
import socket, sys
n = int(sys.argv[1])
sent = 0
while sent < n:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for port in range(1, min(60000, n - sent) + 1):
        s.sendto(b"x", ("198.18.0.2", port))
    sent += min(60000, n - sent)
    s.close()
"""

READ = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import check as ct

class Runner(object):
    def get_bin_path(self, name, required=False, opt_dirs=()):
        import shutil
        return shutil.which(name, path=os.environ["PATH"] + ":/usr/sbin:/sbin")

out = {}
for reader in sys.argv[2:]:
    w, c = time.monotonic(), time.process_time()
    used, entries = ct.read_entries(Runner(), reader)
    top = ct.top_pairs(entries, 10)
    out[reader] = [time.monotonic() - w, time.process_time() - c, len(entries), top["pairs"][0]]
print(json.dumps(out))
"""

TOP = ("sed -E 's/^[^=]* src=([^ ]+) dst=([^ ]+).*/\\1 \\2/' | sort | uniq -c | sort -rn | head -10")


def build():
    for ns in (NS, PEER):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
    sh(["ip", "-n", NS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", PEER])
    for ns, ip in ((NS, "198.18.0.1/24"), (PEER, "198.18.0.2/24")):
        sh(["ip", "-n", ns, "addr", "add", ip, "dev", "eth0"])
        sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
    sh(["ip", "netns", "exec", NS, "nft", "-f", "-"],
       input="table inet bench {\n chain output { type filter hook output priority 0; policy accept; ct state new counter; }\n}\n")
    sh(["ip", "netns", "exec", NS, "sysctl", "-qw", "net.netfilter.nf_conntrack_udp_timeout=300"])
    sh(["ip", "netns", "exec", NS, PYTHON, "-c", FILL, str(ENTRIES)])
    return int(sh(["ip", "netns", "exec", NS, "cat", "/proc/sys/net/netfilter/nf_conntrack_count"]).stdout)


def manual(label, command):
    c0, t0 = children_cpu(), time.monotonic()
    proc = subprocess.run(["ip", "netns", "exec", NS, "sh", "-c", command], capture_output=True, text=True, check=False)
    first = (proc.stdout.strip().splitlines() or [proc.stderr.strip()])[0][:60]
    return (label, time.monotonic() - t0, children_cpu() - c0, first)


def main():
    try:
        t0 = time.monotonic()
        count = build()
        print("built %s: %d conntrack entries (asked %d) in %.1f s" % (NS, count, ENTRIES, time.monotonic() - t0))
        rows = []
        seconds, cpu, result = node_side(NS, "conntrack_check", {"interval": 0, "top_pairs": "always", "top": 10})
        pairs = (result.get("top_pairs") or {}).get("pairs") or [{}]
        rows.append(("ours: conntrack_check on the node, top_pairs always", seconds, cpu,
                     "%s entries, top %s x%s" % ((result.get("usage") or {}).get("count"), pairs[0].get("dst"),
                                                 pairs[0].get("count"))))
        seconds, cpu, result = node_side(NS, "conntrack_check", {"interval": 0})
        rows.append(("ours: conntrack_check on the node, below the ratio (no entry read)", seconds, cpu,
                     [f["check"] + "/" + f["severity"] for f in result.get("findings", [])]))
        readers = ["proc"] + (["conntrack"] if shutil.which("conntrack") else [])
        readers += ["pyroute2"] if os.environ.get("K8SNET_BENCH_PYROUTE2") == "1" else []
        c0 = children_cpu()
        proc = subprocess.run(["ip", "netns", "exec", NS, PYTHON, "-c", READ, str(ROOT / "build")] + readers,
                              capture_output=True, text=True, check=False)
        data = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
        for reader in readers:
            if reader in data:
                wall, cpu, n, top = data[reader]
                rows.append(("ours: read_entries(%s) + top_pairs" % reader, wall, cpu, "%d entries" % n))
            else:
                rows.append(("ours: read_entries(%s)" % reader, 0, 0, proc.stderr[-120:]))
        if shutil.which("conntrack"):
            rows.append(manual("manual: conntrack -C", "conntrack -C"))
            rows.append(manual("manual: conntrack -S (per-CPU rows, summed by eye)", "conntrack -S | head -1"))
            rows.append(manual("manual: conntrack -L | top src/dst pairs", "conntrack -L 2>/dev/null | " + TOP))
        rows.append(manual("manual: cat nf_conntrack_count nf_conntrack_max",
                           "cat /proc/sys/net/netfilter/nf_conntrack_count /proc/sys/net/netfilter/nf_conntrack_max"))
        rows.append(manual("manual: /proc/net/nf_conntrack | top src/dst pairs", "cat /proc/net/nf_conntrack | " + TOP))
        table(rows)
    finally:
        for ns in (NS, PEER):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


if __name__ == "__main__":
    main()
