"""Benchmark: route_check on a 100k-route table, beside the manual way.

Builds a namespace ``k8t<slot>-benchrt`` (removed at the end, also by ``lab down``) holding
100,000 routes: 250 peers' pod CIDRs (/26, via their node IPs, one missing, one with a
blackhole over part of it) and ~99,750 host routes.  Then measures, in the same run:

* ours: the module through ansible (``ansible localhost -m k8snet.triage.route_check`` run
  inside the namespace), and the module_utils alone (read + index + checks) per reader;
* manual: ``ip -j route`` plus a comparison script (exact match per peer CIDR), and
  ``ip route show <cidr>`` once per peer, as an operator would.

Usage (root, from the checkout): K8SNET_LAB_SLOT=1 .venv/bin/python bench/route_check.py
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import time
from pathlib import Path

from netns_bench import PYTHON, ROOT, ansible_module, children_cpu, namespace, node_side, sh, table, timed

sys.path.insert(0, str(ROOT / "build"))
NS = namespace("benchrt")
TOTAL = 100000
PEERS = 250


def build():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)
    sh(["ip", "netns", "add", NS])
    sh(["ip", "-n", NS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1"])
    lines = ["link set lo up", "link set eth0 up", "link set eth1 up", "addr add 198.18.0.1/20 dev eth0"]
    peers = []
    for i in range(PEERS):
        node_ip = str(ipaddress.ip_address("198.18.1.0") + i)
        cidr = str(ipaddress.ip_network("198.19.%d.%d/26" % (i // 4, (i % 4) * 64)))
        peers.append({"node": "node%d" % i, "node_ip": node_ip, "pod_cidrs": [cidr]})
        if i != 7:  # one peer's route is missing
            lines.append("route add %s via %s dev eth0 proto static" % (cidr, node_ip))
    lines.append("route add blackhole 198.19.5.0/28")  # part of node20's CIDR
    count = len(lines) - 4
    host = int(ipaddress.ip_address("198.18.16.0"))
    while count < TOTAL:
        address = ipaddress.ip_address(host)
        host += 1
        if address in ipaddress.ip_network("198.19.0.0/18"):
            continue
        lines.append("route add %s/32 via 198.18.0.2 dev eth0 proto static" % address)
        count += 1
    batch = Path("/tmp/%s.batch" % NS)
    batch.write_text("\n".join(lines) + "\n")
    sh(["ip", "-n", NS, "-batch", str(batch)])
    batch.unlink()
    return peers


INLINE = r"""
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.k8snet.triage.plugins.module_utils.kernel import netlink
from ansible_collections.k8snet.triage.plugins.module_utils.routes import checks as routes_checks, index as routes_index

class Module(object):
    def get_bin_path(self, name, required=False, opt_dirs=()):
        return "/usr/sbin/" + name if name == "ip" else None
    def run_command(self, argv, **kw):
        proc = subprocess.run(argv, capture_output=True, text=True)
        return proc.returncode, proc.stdout, proc.stderr

import os
peers = json.loads(sys.argv[3])
def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
c0 = cpu()
t0 = time.monotonic()
nl = netlink.Netlink(Module(), sys.argv[2])
table = nl.routes(table="main")
t1 = time.monotonic()
c1 = cpu()
local, remote = routes_index.normalize_peers(peers, "none", [])
index = routes_index.RouteIndex(table)
found, results = routes_checks.check_peer_routes(index, remote, "bench", "direct", None, [])
found += routes_checks.check_overlaps(local, remote, "bench")
pods, _ = routes_checks.check_pod_routes(table, [{"ifname": "eth0", "up": True, "operstate": "UP"}], "bench", local)
t2 = time.monotonic()
c2 = cpu()
nl.close()
print(json.dumps({"reader": nl.name, "routes": len(table), "read": t1 - t0, "check": t2 - t1,
                  "read_cpu": c1 - c0, "check_cpu": c2 - c1,
                  "findings": sorted(set(f["check"] for f in found + pods))}))
"""

MANUAL = r"""
import json, sys
routes = dict((r["dst"], r) for r in json.load(sys.stdin))
bad = 0
for peer in json.loads(sys.argv[1]):
    for cidr in peer["pod_cidrs"]:
        r = routes.get(cidr)
        if not r or r.get("gateway") != peer["node_ip"]:
            bad += 1
print(bad)
"""


def main():
    python = PYTHON
    try:
        t0 = time.monotonic()
        peers = build()
        print("built %s: %d routes in %.1f s" % (NS, TOTAL, time.monotonic() - t0))
        rows = []
        # ours, through ansible (AnsiballZ, the real module) inside the namespace
        seconds, cpu, proc = ansible_module(NS, "route_check", {"peers": peers, "node_name": "bench", "local_pod_routes": True})
        ok = proc.returncode == 0 and '"route.missing"' in proc.stdout and '"route.unreachable"' in proc.stdout
        rows.append(("ours: ansible -m route_check (controller + module)", seconds, cpu,
                     "ok" if ok else proc.stdout[-300:] + proc.stderr[-300:]))
        seconds, cpu, result = node_side(NS, "route_check", {"peers": peers, "node_name": "bench"})
        rows.append(("ours: route_check module on the node (no ansible)", seconds, cpu,
                     "%s routes read, %s" % (result.get("routes_read"), sorted(set(f["check"] for f in result.get("findings", [])))
                                             if "findings" in result else result)))
        for reader in ("iproute2", "pyroute2"):
            _s, _c, proc = timed(["ip", "netns", "exec", NS, python, "-c", INLINE, str(ROOT / "build"), reader, json.dumps(peers)])
            data = json.loads(proc.stdout)
            rows.append(("ours: read routes (%s)" % reader, data["read"], data["read_cpu"], "%d routes" % data["routes"]))
            rows.append(("ours: index + every check (%s)" % reader, data["check"], data["check_cpu"], ", ".join(data["findings"])))
        # manual
        seconds, cpu, proc = timed(["ip", "netns", "exec", NS, "ip", "-j", "route", "show", "table", "main"])
        rows.append(("manual: ip -j route show table main", seconds, cpu, "%d bytes" % len(proc.stdout)))
        c0, t0 = children_cpu(), time.monotonic()
        cmp = subprocess.run([python, "-c", MANUAL, json.dumps(peers)], input=proc.stdout, capture_output=True, text=True, check=False)
        rows.append(("manual: comparison script (exact match only)", time.monotonic() - t0, children_cpu() - c0,
                     "%s bad (misses the blackhole)" % cmp.stdout.strip()))
        c0, t0 = children_cpu(), time.monotonic()
        for peer in peers:
            subprocess.run(["ip", "netns", "exec", NS, "ip", "route", "show", peer["pod_cidrs"][0]], capture_output=True, check=False)
        rows.append(("manual: ip route show <cidr> x %d peers" % len(peers), time.monotonic() - t0, children_cpu() - c0, "read by eye"))
        table(rows)
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)


if __name__ == "__main__":
    main()
