"""Benchmark: the node-side triage across a lab fleet (default 50 nodes), with several
forks / strategy / pipelining settings, beside the manual loop it replaces
(`ssh node ip n; ip r; iptables-save -c` node after node), and the one-pass path
(playbooks/tasks/node_pass.yml: one k8snet.triage.node_triage invocation per node), in the
same run on the same lab.

Prints wall time and per-host cost for each path, the Ansible tasks each node costs, and for
the one-pass path the module's own time and CPU on the node (returned by the module).
With --mitogen DIR (a `pip install --target DIR mitogen`), the one-pass path also runs with
Mitogen's strategy.

usage: python bench/fleet_triage.py [--nodes 50] [--slot 7] [--settings default,f25,f50,f50-free]
                                    [--onepass f25] [--mitogen DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
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
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)
ONEPASS_PLAY = """
- name: One pass per node (bench)
  hosts: k8s_nodes:admin_control_plane
  gather_facts: false
  tasks:
    - name: Node pass
      ansible.builtin.include_tasks: {tasks}

- name: Write what the nodes returned
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write the timing and the findings count of every node
      ansible.builtin.copy:
        dest: {out}/onepass.json
        mode: "0644"
        content: >-
          {{%- set out = {{}} -%}}
          {{%- for h in groups['k8s_nodes'] | union(groups['admin_control_plane']) -%}}
          {{%-   set r = hostvars[h].triage_results | default({{}}) -%}}
          {{%-   set _ = out.update({{h: {{'timing': hostvars[h].triage_node_timing | default({{}}),
                  'findings': r.values() | map(attribute='findings') | map('length') | sum,
                  'failed': r | dict2items | selectattr('value.status', 'eq', 'failed')
                            | map(attribute='key') | zip(r.values() | selectattr('status', 'eq', 'failed')
                            | map(attribute='reason')) | list}}}}) -%}}
          {{%- endfor -%}}
          {{{{ {{'nodes': out, 'fleet': hostvars.localhost.triage_fleet_results | default({{}})}} | to_json }}}}
"""


def _env(forks, strategy, pipelining, mitogen=None):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_STRATEGY=strategy, ANSIBLE_PIPELINING=pipelining,
               PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]))
    if mitogen:
        env["ANSIBLE_STRATEGY_PLUGINS"] = str(Path(mitogen) / "ansible_mitogen" / "plugins" / "strategy")
        env["PYTHONPATH"] = "%s:%s" % (mitogen, os.environ.get("PYTHONPATH", ""))
    return env


def _play(lab, playbook, extra, env):
    start = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(lab.inventory_path),
                           str(playbook), "-e", json.dumps(extra)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc


def tasks_per_node(proc, lab):
    """Task results per node, from the play recap (ok + failed + skipped + unreachable)."""
    nodes = set(n.name for n in lab.nodes)
    counts = [int(ok) + int(unr) + int(failed) + int(skipped)
              for host, ok, unr, failed, skipped in RECAP.findall(proc.stdout) if host in nodes]
    return statistics.median(counts) if counts else 0


def run_triage(lab, forks, strategy, pipelining, outdir, extra):
    extra = dict(extra, report_output_dir=outdir, report_fail_on_critical=False)
    wall, proc = _play(lab, "k8snet.triage.triage", extra, _env(forks, strategy, pipelining))
    report = json.loads((Path(outdir) / "triage-report.json").read_text()) if proc.returncode == 0 else None
    return wall, proc, report


def run_onepass(lab, forks, strategy, outdir, extra, mitogen=None):
    playbook = Path(outdir) / "onepass.yml"
    playbook.write_text(ONEPASS_PLAY.format(tasks=ROOT / "playbooks" / "tasks" / "node_pass.yml", out=outdir))
    wall, proc = _play(lab, playbook, extra, _env(forks, strategy, "True", mitogen))
    result = json.loads((Path(outdir) / "onepass.json").read_text()) if proc.returncode == 0 else None
    return wall, proc, result


def manual_loop(lab):
    start = time.perf_counter()
    for node in lab.nodes:
        lab.ssh(node, "ip n; ip r; iptables-save -c 2>/dev/null | grep -c DROP || true")
    return time.perf_counter() - start


def _row(label, wall, nodes, manual, tasks, rest):
    print("%-44s %7.1f %9.3f %6.1fx %6s  %s" % (label, wall, wall / nodes, wall / manual, tasks, rest))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--slot", type=int, default=7)
    parser.add_argument("--settings", default=",".join(SETTINGS), help="settings of the current triage.yml ('' = none)")
    parser.add_argument("--onepass", default="f25", help="settings of the one-pass path ('' = none)")
    parser.add_argument("--mitogen", help="a directory holding the mitogen package: also run the one pass with it")
    opts = parser.parse_args()
    started = time.perf_counter()
    lab = Lab(slot=opts.slot, nodes=opts.nodes).up()
    up = time.perf_counter() - started
    try:
        from tests.lab.faults import arp

        arp.bind_vip(lab, "node1", lab.vip(0))
        extra = {"stale_arp_vips": [lab.vip(0)]}
        print("lab: %d nodes up in %.1f s (namespaces, sshd each, SSH reachable); load average %s; %d CPUs" % (
            opts.nodes, up, " ".join("%.2f" % x for x in os.getloadavg()), os.cpu_count()))
        manual = manual_loop(lab)
        print("%-44s %7s %9s %7s %6s  %s" % ("path", "wall s", "per host", "/manual", "tasks", "findings / node side"))
        _row("manual ssh loop (ip n; ip r; iptables)", manual, opts.nodes, manual, "-", "(read by eye)")
        for name in [s for s in opts.settings.split(",") if s]:
            forks, strategy, pipelining = SETTINGS[name]
            with tempfile.TemporaryDirectory() as out:
                wall, proc, report = run_triage(lab, forks, strategy, pipelining, out, extra)
            label = "triage.yml %s (forks %d, %s, pipel. %s)" % (name, forks, strategy, pipelining)
            if report is None:
                print("%-44s failed rc=%d: %s" % (label, proc.returncode, proc.stdout[-400:]))
                continue
            _row(label, wall, opts.nodes, manual, tasks_per_node(proc, lab),
                 "%d findings on %d hosts" % (len(report["findings"]), len(report["hosts"])))
        variants = [(s, None) for s in opts.onepass.split(",") if s]
        if opts.mitogen:
            variants += [(s, opts.mitogen) for s in opts.onepass.split(",") if s]
        for name, mitogen in variants:
            forks, strategy, _pipelining = SETTINGS[name]
            strategy = "mitogen_" + strategy if mitogen else strategy
            with tempfile.TemporaryDirectory() as out:
                wall, proc, result = run_onepass(lab, forks, strategy, out, extra, mitogen)
            label = "node_pass.yml %s (forks %d, %s)" % (name, forks, strategy)
            if result is None:
                print("%-44s failed rc=%d: %s" % (label, proc.returncode, (proc.stdout + proc.stderr)[-600:]))
                continue
            nodes = [v for k, v in result["nodes"].items() if v["timing"]]
            seconds = [v["timing"]["seconds"] for v in nodes]
            cpu = [v["timing"]["process_cpu_seconds"] + v["timing"]["children_cpu_seconds"] for v in nodes]
            _row(label, wall, opts.nodes, manual, tasks_per_node(proc, lab),
                 "%d findings (+%d fleet), %d failed scenarios; on the node: pass %.2f s median / %.2f max, "
                 "CPU %.2f s median / %.2f max" % (
                     sum(v["findings"] for v in result["nodes"].values()),
                     sum(len(v["findings"]) for v in result["fleet"].values()),
                     sum(len(v["failed"]) for v in result["nodes"].values()),
                     statistics.median(seconds), max(seconds), statistics.median(cpu), max(cpu)))
            failed = sorted(set("%s: %s" % (name, reason[:160]) for v in result["nodes"].values() for name, reason in v["failed"]))
            for line in failed[:5]:
                print("%-44s   failed scenario %s" % ("", line))
        print("load average at the end: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    finally:
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
