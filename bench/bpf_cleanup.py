"""Benchmark: cleaning orphan backends out of cilium_lb4_backends_v3, ours against the runbook pipeline.

Both run over SSH against the same lab node, on identical maps built the same way:
64 services x 4 backends (256 live backends) plus orphans, N backend entries in all.

  ours      ansible NODE -m k8snet.triage.bpf_map_usage -a cleanup=orphans   (the whole ansible run)
  runbook   ssh NODE 'bpftool map dump pinned P | awk ... | head -n -1 | xargs -L 1 bpftool map delete pinned P key hex'

The end states are read back with bpftool and compared: ours must keep every referenced
backend; the pipeline deletes every entry, live services included.

  .venv/bin/python bench/bpf_cleanup.py --slot 2 [--sizes 8192 65536] [--node node1]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.core import LabError  # noqa: E402
from tests.lab.faults import bpf as lb  # noqa: E402

SERVICES, PER_SERVICE = 64, 4
PIPELINE = ("bpftool map dump pinned {p} | awk '{{print $2, $3, $4, $5}}' | head -n -1 "
            "| xargs -L 1 bpftool map delete pinned {p} key hex")


def ansible_env():
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env["PATH"] = "%s:%s" % (ROOT / ".venv" / "bin", env.get("PATH", ""))
    return env


def timed(argv, env=None, timeout=1800):
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT, check=False)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s\n%s" % (proc.returncode, " ".join(argv)[:200], proc.stdout[-2000:], proc.stderr[-2000:]))
    return elapsed, proc.stdout


def ours(lab, node, size):
    args = json.dumps({"maps": ["tc/globals/cilium_lb4_*"], "cleanup": "orphans", "max_delete": size})
    argv = ["ansible", node, "-i", str(lab.inventory_path), "-m", "k8snet.triage.bpf_map_usage", "-a", args,
            "-o"]
    return timed(argv, env=ansible_env())[0]


def ansible_baseline(lab, node):
    argv = ["ansible", node, "-i", str(lab.inventory_path), "-m", "ansible.builtin.ping", "-o"]
    return timed(argv, env=ansible_env())[0]


def runbook(lab, node, pin):
    node = lab.node(node)
    argv = ["ssh", "-i", str(lab.ssh_key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "root@%s" % node.ip, PIPELINE.format(p=shlex.quote(pin))]
    return timed(argv)[0]


def live_ids(made):
    return set(range(1, made["live_backends"] + 1))


def remaining_ids(lab, node, pin):
    return set(struct.unpack("<I", k)[0] for k in lb.bpftool_entries(lab, node, pin))


def build(lab, node, size):
    lb.remove_bpf_maps(lab, node)
    return lb.cilium_lb_maps(lab, node, services=SERVICES, backends_per_service=PER_SERVICE,
                             orphans=size - SERVICES * PER_SERVICE)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8192, 65536])
    parser.add_argument("--node", default="node1")
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours per size (the fastest is kept)")
    parser.add_argument("--slot", type=int, default=os.environ.get("K8SNET_LAB_SLOT"),
                        help="lab slot (required: default $K8SNET_LAB_SLOT); the bench rewrites that lab's bpffs")
    opts = parser.parse_args(argv)
    if opts.slot is None:
        parser.error("name the lab slot with --slot or K8SNET_LAB_SLOT: the bench deletes maps on that lab's node")
    try:
        lab, own = Lab.load(slot=opts.slot), False
    except LabError:
        lab, own = Lab(slot=opts.slot).up(), True
    rows = []
    try:
        ansible_baseline(lab, opts.node)  # warm the SSH control socket
        baseline = min(ansible_baseline(lab, opts.node) for _attempt in range(3))
        for size in opts.sizes:
            runs = []
            for _attempt in range(opts.repeat):  # the machine is shared: keep the fastest of a few runs
                made = build(lab, opts.node, size)
                pin = made["backends"]
                assert lb.bpftool_count(lab, opts.node, pin) == size
                baseline = min(baseline, ansible_baseline(lab, opts.node))
                runs.append(ours(lab, opts.node, size))
                ours_left = remaining_ids(lab, opts.node, pin)
                assert ours_left == live_ids(made), "ours deleted a referenced backend"
            t_ours = min(runs)

            made = build(lab, opts.node, size)
            assert lb.bpftool_count(lab, opts.node, pin) == size
            t_runbook = runbook(lab, opts.node, pin)
            runbook_left = remaining_ids(lab, opts.node, pin)

            live = live_ids(made)
            rows.append({
                "entries": size, "orphans": size - len(live), "live": len(live),
                "ours_s": round(t_ours, 2), "ours_runs_s": [round(r, 2) for r in runs], "ours_minus_ansible_s": round(max(t_ours - baseline, 0.001), 2),
                "runbook_s": round(t_runbook, 2), "speedup": round(t_runbook / t_ours, 1),
                "speedup_module_only": round(t_runbook / max(t_ours - baseline, 0.001), 1),
                "ours_kept_live": ours_left == live, "ours_left": len(ours_left),
                "runbook_left": len(runbook_left), "runbook_live_destroyed": len(live - runbook_left),
            })
        lb.remove_bpf_maps(lab, opts.node)
    finally:
        if own:
            lab.down(quiet=True)
    print("ansible ad-hoc baseline (ansible.builtin.ping over the same SSH, fastest): %.2f s; load average %s"
          % (baseline, " ".join(open("/proc/loadavg").read().split()[:3])))
    header = ("entries", "orphans", "ours s", "runbook s", "speedup", "ours-ansible s", "speedup(module)",
              "ours left", "runbook left", "live kept (ours)", "live destroyed (runbook)")
    print(" | ".join(header))
    for r in rows:
        print(" | ".join(str(x) for x in (
            r["entries"], r["orphans"], r["ours_s"], r["runbook_s"], "%.1fx" % r["speedup"], r["ours_minus_ansible_s"],
            "%.1fx" % r["speedup_module_only"], r["ours_left"], r["runbook_left"],
            "%d/%d" % (r["ours_left"] if r["ours_kept_live"] else 0, r["live"]), r["runbook_live_destroyed"])))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
