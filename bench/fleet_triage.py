"""Benchmark: the node-side triage across a lab fleet (default 50 nodes), with several
forks / strategy / pipelining settings, beside the manual loop it replaces
(`ssh node ip n; ip r; iptables-save -c` node after node).

Prints wall time and per-host cost for each setting, so the defaults in ansible.cfg are
chosen from measurement.

usage: python bench/fleet_triage.py [--nodes 50] [--slot 7] [--settings default,f25,f50,f50-free]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402

SETTINGS = {
    # name: (forks, strategy, pipelining)
    "ansible-defaults": (5, "linear", "False"),
    "f25": (25, "linear", "True"),
    "f50": (50, "linear", "True"),
    "f50-free": (50, "free", "True"),
}


def run_triage(lab, forks, strategy, pipelining, outdir):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_STRATEGY=strategy, ANSIBLE_PIPELINING=pipelining,
               PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]))
    extra = {"report_output_dir": outdir, "report_fail_on_critical": False,
             "stale_arp_vips": [lab.vip(0)]}
    start = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(lab.inventory_path),
                           "k8snet.triage.triage", "-e", json.dumps(extra)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    report = json.loads((Path(outdir) / "triage-report.json").read_text()) if proc.returncode == 0 else None
    return wall, proc, report


def manual_loop(lab):
    start = time.perf_counter()
    for node in lab.nodes:
        lab.ssh(node, "ip n; ip r; iptables-save -c 2>/dev/null | grep -c DROP || true")
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--slot", type=int, default=7)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    opts = parser.parse_args()
    started = time.perf_counter()
    lab = Lab(slot=opts.slot, nodes=opts.nodes).up()
    up = time.perf_counter() - started
    try:
        from tests.lab.faults import arp

        arp.bind_vip(lab, "node1", lab.vip(0))
        print("lab: %d nodes up in %.1f s (namespaces, sshd each, SSH reachable)" % (opts.nodes, up))
        manual = manual_loop(lab)
        print("%-34s %9s %12s  %s" % ("setting", "wall s", "per host s", "findings"))
        print("%-34s %9.1f %12.3f  %s" % (
            "manual ssh loop (ip n; ip r; iptables)", manual, manual / opts.nodes, "(read by eye)"))
        for name in opts.settings.split(","):
            forks, strategy, pipelining = SETTINGS[name]
            with tempfile.TemporaryDirectory() as out:
                wall, proc, report = run_triage(lab, forks, strategy, pipelining, out)
            label = "%s (forks %d, %s, pipelining %s)" % (name, forks, strategy, pipelining)
            if report is None:
                print("%-34s failed rc=%d: %s" % (label, proc.returncode, proc.stdout[-400:]))
                continue
            print("%-34s %9.1f %12.3f  %d findings on %d hosts" % (
                label, wall, wall / opts.nodes, len(report["findings"]), len(report["hosts"])))
    finally:
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
