"""Benchmark: the stale-ARP runbook by hand vs the stale_arp playbook, in the same lab run.

Manual: `ssh owner ip a`, `ssh client 'ip n | grep VIP'` for each client (comparing by eye is
not timed), then `ssh client ip n flush all` on every client found stale.
Ours:   ansible-playbook k8snet.triage.stale_arp read-only, then with stale_arp_flush=true.
Also counted: healthy neighbor entries each repair destroys (read with `ip -j neigh`).

usage: python bench/stale_arp.py [--nodes N] [--slot S] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.faults import arp  # noqa: E402

WRONG = "02:de:ad:00:be:ef"


def timed(func):
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def prepare(lab, vip, clients):
    """Every client caches the peers and the controller; the listed ones hold a wrong MAC for the VIP."""
    for client in lab.group("admin_control_plane"):
        for peer in lab.nodes:
            if peer is not client:
                lab.ping(client, peer.ip)
        lab.ns_run(client, ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)
    for client in clients:
        arp.stale_neighbor(lab, client, vip, WRONG)


def healthy(lab, node, vip):
    return {e["dst"] for e in lab.neighbors(node) if e["dst"] != vip and e.get("lladdr")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--slot", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    lab = Lab(slot=opts.slot, nodes=opts.nodes).up()
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]))
    try:
        vip = lab.vip(0)
        arp.bind_vip(lab, "node1", vip)
        clients = [n.name for n in lab.group("admin_control_plane")]
        owner = lab.group("control_plane")[0].name

        def playbook(*extra):
            args = {"stale_arp_vips": [vip]}
            for item in extra:
                args.update(item)
            subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(lab.inventory_path),
                            "k8snet.triage.stale_arp", "-e", json.dumps(args)],
                           cwd=ROOT, env=env, check=True, capture_output=True)

        def manual_check():
            lab.ssh(owner, "ip a")
            for client in clients:
                lab.ssh(client, "ip n | grep -F %s || true" % vip)

        def manual_flush():
            for client in clients:
                lab.ssh(client, "ip n flush all")

        rows = {"check": ([], []), "repair": ([], [])}
        lost = {"manual": 0, "ours": 0}
        for dummy in range(opts.rounds):
            prepare(lab, vip, clients)
            rows["check"][0].append(timed(manual_check))
            rows["check"][1].append(timed(playbook))
            before = {c: healthy(lab, c, vip) for c in clients}
            rows["repair"][0].append(timed(manual_flush))
            lost["manual"] += sum(len(before[c] - healthy(lab, c, vip)) for c in clients)
            prepare(lab, vip, clients)
            before = {c: healthy(lab, c, vip) for c in clients}
            rows["repair"][1].append(timed(lambda: playbook({"stale_arp_flush": True})))
            lost["ours"] += sum(len(before[c] - healthy(lab, c, vip)) for c in clients)
        print("stale ARP, %d nodes (%d clients), median of %d rounds, same lab run" % (
            opts.nodes, len(clients), opts.rounds))
        print("%-10s %-52s %8s   %-44s %8s" % ("step", "manual runbook", "seconds", "k8snet.triage", "seconds"))
        print("%-10s %-52s %8.2f   %-44s %8.2f" % (
            "check", "ssh owner ip a; ssh each client 'ip n | grep VIP'", statistics.median(rows["check"][0]),
            "stale_arp playbook (owners, probe, findings)", statistics.median(rows["check"][1])))
        print("%-10s %-52s %8.2f   %-44s %8.2f" % (
            "repair", "ssh each client 'ip n flush all'", statistics.median(rows["repair"][0]),
            "stale_arp_flush=true (ramp, re-check)", statistics.median(rows["repair"][1])))
        print("%-10s %-52s %8d   %-44s %8d" % (
            "collateral", "healthy entries destroyed (all rounds)", lost["manual"],
            "healthy entries destroyed (all rounds)", lost["ours"]))
        print("note: the manual check also needs a human to compare MACs by eye; the playbook decides.")
    finally:
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
