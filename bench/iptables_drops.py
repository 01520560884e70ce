"""Benchmark: iptables_drops on a 100k-rule ruleset, beside the manual way.

Builds a namespace ``k8t<slot>-benchfw`` (removed at the end, also by ``lab down``) with
100,000 iptables-legacy rules (a third DROP, a tenth REJECT, in KUBE-/cali- chains) and
100,000 native nftables rules with counters, sends bounded UDP to the namespace's own
address (198.18.0.1, over lo) so a few DROP counters grow, and measures in the same run:

* ours: the module through ansible (interval 1 s) and the parsers alone;
* manual: ``iptables -L -v -n -x | grep DROP`` twice, 1 s apart, compared by a script.

Usage (root, from the checkout): K8SNET_LAB_SLOT=1 .venv/bin/python bench/iptables_drops.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from netns_bench import PYTHON, ROOT, ansible_module, children_cpu, namespace, node_side, sh, table

sys.path.insert(0, str(ROOT / "build"))
NS = namespace("benchfw")
RULES = 100000


def legacy_rules():
    chains = ["KUBE-SVC-%04d" % i for i in range(50)] + ["cali-pi-%04d" % i for i in range(50)]
    lines = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT ACCEPT [0:0]"]
    lines += [":%s - [0:0]" % c for c in chains]
    per = RULES // len(chains) - 1
    for c in chains:
        lines.append("-A INPUT -j %s" % c)
        for j in range(per):
            verdict = "DROP" if j % 3 == 0 else "REJECT" if j % 10 == 1 else "RETURN"
            lines.append("-A %s -s 198.18.%d.%d/32 -p tcp --dport %d -j %s" % (c, 64 + j // 256, j % 256, 1000 + j, verdict))
    # the ones the traffic hits (UDP to 198.18.0.1:5000-5002 over lo)
    for port in (5000, 5001, 5002):
        lines.append("-A %s -p udp --dport %d -j DROP" % (chains[port - 5000], port))
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def nft_rules():
    out = ["table inet benchnft {", "  chain input { type filter hook input priority 10; policy accept; }"]
    out += ["  chain c%d { }" % i for i in range(100)]
    out.append("}")
    for i in range(100):
        out.append("add rule inet benchnft input jump c%d" % i)
        for j in range(RULES // 100 - 1):
            out.append("add rule inet benchnft c%d ip saddr 198.19.%d.%d tcp dport %d counter %s"
                       % (i, j // 256, j % 256, 1000 + j, "drop" if j % 3 == 0 else "accept"))
    return "\n".join(out) + "\n"


def build():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)
    sh(["ip", "netns", "add", NS])
    sh(["ip", "-n", NS, "link", "set", "lo", "up"])
    sh(["ip", "-n", NS, "addr", "add", "198.18.0.1/32", "dev", "lo"])
    sh(["ip", "netns", "exec", NS, "iptables-legacy-restore"], input=legacy_rules())
    path = Path("/tmp/%s.nft" % NS)
    path.write_text(nft_rules())
    try:
        sh(["ip", "netns", "exec", NS, "nft", "-f", str(path)])
    finally:
        path.unlink()


UDP = "\n".join([
    "import socket,sys,time",
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)",
    "end=time.time()+float(sys.argv[1])",
    "while time.time()<end:",
    "    [s.sendto(b'x'*64,('198.18.0.1',p)) for p in (5000,5000,5000,5001,5002)]; time.sleep(0.02)",
    ""])

PARSE = r"""
import json, os, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import parsers as iptables_parsers
text = subprocess.run(["iptables-legacy-save", "-c"], capture_output=True, text=True).stdout
nft = subprocess.run(["nft", "-j", "list", "ruleset"], capture_output=True, text=True).stdout
out = {}
t = time.process_time(); rs = iptables_parsers.parse_save(text, "legacy", 4); out["parse_save"] = [time.process_time() - t, rs.rules]
t = time.process_time(); ns = iptables_parsers.parse_nft(nft); out["parse_nft"] = [time.process_time() - t, ns.rules]
print(json.dumps(out))
"""

MANUAL = r"""
import sys
def drops(path):
    chain, out = None, {}
    for line in open(path):
        if line.startswith("Chain "):
            chain, n = line.split()[1], 0
        elif "DROP" in line and line.split()[0].isdigit():
            n += 1
            out[(chain, n, " ".join(line.split()[2:]))] = int(line.split()[0])
    return out
a, b = drops(sys.argv[1]), drops(sys.argv[2])
grown = sorted(((b[k] - a.get(k, 0), k) for k in b if b[k] > a.get(k, 0)), reverse=True)
print(len(grown), grown[:3])
"""


def main():
    python = PYTHON
    traffic = None
    try:
        t0 = time.monotonic()
        build()
        print("built %s: %d iptables-legacy rules + %d nft rules in %.1f s" % (NS, RULES, RULES, time.monotonic() - t0))
        traffic = subprocess.Popen(["ip", "netns", "exec", NS, python, "-c", UDP, "900"])  # stopped in finally
        rows = []
        seconds, cpu, proc = ansible_module(NS, "iptables_drops", {"interval": 1, "limit": 5})
        result = json.loads(proc.stdout.split("=>", 1)[1]) if "=>" in proc.stdout else {}
        grown = [(d["chain"], d["pps"]) for d in result.get("drops", [])]
        rows.append(("ours: ansible -m iptables_drops, interval 1 (minus the 1 s)", seconds - 1, cpu,
                     "%s growing: %s" % (result.get("drops_count"), grown[:3]) if result else proc.stdout[-300:] + proc.stderr[-300:]))
        seconds, cpu, result = node_side(NS, "iptables_drops", {"interval": 1, "limit": 5})
        rows.append(("ours: iptables_drops module on the node, interval 1 (minus 1 s)", seconds - 1, cpu,
                     "%s growing" % result.get("drops_count", result)))
        c0, t0 = children_cpu(), time.monotonic()
        proc = subprocess.run(["ip", "netns", "exec", NS, python, "-c", PARSE, str(ROOT / "build")], capture_output=True, text=True, check=False)
        data = json.loads(proc.stdout)
        rows.append(("ours: parse_save on iptables-legacy-save -c (CPU)", data["parse_save"][0], data["parse_save"][0], "%d rules" % data["parse_save"][1]))
        rows.append(("ours: parse_nft on nft -j list ruleset (CPU)", data["parse_nft"][0], data["parse_nft"][0], "%d rules" % data["parse_nft"][1]))
        for tool in (["iptables-legacy-save", "-c"], ["nft", "-j", "list", "ruleset"]):
            c0, t0 = children_cpu(), time.monotonic()
            proc = subprocess.run(["ip", "netns", "exec", NS] + tool, capture_output=True, text=True, check=False)
            rows.append(("  (reading: %s)" % " ".join(tool), time.monotonic() - t0, children_cpu() - c0, "%d bytes" % len(proc.stdout)))
        # manual: iptables -L -v -n -x | grep DROP, twice, compared
        files = ["/tmp/%s.L%d" % (NS, i) for i in (1, 2)]
        c0, t0 = children_cpu(), time.monotonic()
        for i, path in enumerate(files):
            with open(path, "w") as handle:
                subprocess.run(["ip", "netns", "exec", NS, "sh", "-c", "iptables-legacy -L -v -n -x | grep -e DROP -e ^Chain"],
                               stdout=handle, check=True)
            if i == 0:
                time.sleep(1)
        cmp = subprocess.run([python, "-c", MANUAL] + files, capture_output=True, text=True, check=False)
        for path in files:
            os.unlink(path)
        rows.append(("manual: iptables -L -v -n -x | grep DROP x2 + compare (minus 1 s)", time.monotonic() - t0 - 1,
                     children_cpu() - c0, "legacy only; %s" % cmp.stdout.strip()[:80]))
        # manual for native nftables: nft list ruleset twice (then compare by eye or diff)
        c0, t0 = children_cpu(), time.monotonic()
        sizes = []
        for i in range(2):
            proc = subprocess.run(["ip", "netns", "exec", NS, "nft", "list", "ruleset"], capture_output=True, text=True, check=False)
            sizes.append(len(proc.stdout))
            if i == 0:
                time.sleep(1)
        rows.append(("manual: nft list ruleset x2 (minus 1 s), no comparison", time.monotonic() - t0 - 1,
                     children_cpu() - c0, "%d bytes each, diff by eye" % sizes[0]))
        table(rows)
    finally:
        if traffic is not None:
            traffic.terminate()
            traffic.wait()
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)


if __name__ == "__main__":
    main()
