"""Benchmark: the triage across a lab fleet (default 50 nodes), beside the manual loop it
replaces (`ssh node ip n; ip r; iptables-save -c` node after node), in the same run on the same
lab:
- before: the node side as one scenario role per scenario and host
  (tests/integration/playbooks/roles_triage.yml, the triage as it ran before the one pass);
- after: triage.yml itself (role k8snet.triage.node_pass: one k8snet.triage.node_triage invocation per
  node), optionally also with Mitogen's strategy (--mitogen DIR, a `pip install --target DIR
  mitogen`).

Prints wall time and per-host cost for each path, the Ansible tasks each node costs (median of
the play recap), the findings, and for triage.yml the module's own time and CPU on the node
(returned by node_triage through the node_pass action, read from the run's records) and where
the wall time went (up to the node pass, the pass, after it), and the controller's CPU (the
ansible-playbook process tree: the process, its workers, the ssh clients) in all and per node. Each row also says how busy the
machine's CPUs were during it, and how much of them the hypervisor took (steal, from
/proc/stat): the lab's nodes share the controller's CPUs, so a slow or shared machine shows
there. The first run after the lab is up opens every SSH connection (and pays its key
exchange); the runs after it reuse them (ControlPersist), unless --cold gives each run connections of its
own (each row says cold or warm). --kex NAME sets the SSH key exchange of the loop and of every run
(e.g. curve25519-sha256): OpenSSH 9.0 to 9.8 default to sntrup761x25519, whose key generation costs
the client and the node each tens of milliseconds of CPU per new connection.

With --fleet healthy the lab is a healthy fleet (tests/lab/faults/healthy.py: pod mesh, Calico's files, BIRD in
a full mesh, kubelet ports and logs): the report should hold no warning. With --fleet faults the same fleet gets
six faults of six kinds (healthy.six_faults): the report should hold six findings, one per fault. --nodes takes
several sizes (24,100,190), one lab after the other.

The nodes run the distribution's /usr/bin/python3 (--node-pythons system, the default), as a fleet of one OS
does. --node-pythons mixed gives them the test suite's mix in turn: the controller's pyenv-built Python with
pyroute2, the system's, and a pyenv-built Python 3.9; pyenv builds without PGO/LTO, and on this machine the
node pass cost 0.46 s of CPU a node with the mix against 0.35 s with the system's Python (200 nodes), which
the lab's nodes take from the controller's CPUs.

usage: python bench/fleet_triage.py [--nodes 50[,100,...]] [--slot 7] [--before f25] [--after f25]
                                    [--fleet bare|healthy|faults] [--keep DIR] [--mitogen DIR] [--scenarios cni,calico,...]
                                    [--kex curve25519-sha256] [--node-pythons system|mixed] [--cold]
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.core import NODE_PYTHONS  # noqa: E402
from tests.lab.faults import arp, firewall, healthy  # noqa: E402

SETTINGS = {
    # name: (forks, strategy, pipelining, inject_facts_as_vars)
    "ansible-defaults": (5, "linear", "False", "True"),
    "f25": (25, "linear", "True", "True"),
    "f50": (50, "linear", "True", "True"),
    "f50-free": (50, "free", "True", "True"),
    # every node's sampling window open in the first round of forks (the lab's nodes share the controller's CPUs)
    "f100": (100, "linear", "True", "True"),
    "f200": (200, "linear", "True", "True"),
    # facts not injected as variables (ANSIBLE_INJECT_FACT_VARS=False): every get_vars of a host skips ansible-core's
    # clean_facts (a deep copy of its facts and a scan of the connection plugins)
    "f50-facts": (50, "linear", "True", "False"),
}
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)
ROLES_TRIAGE = ROOT / "tests" / "integration" / "playbooks" / "roles_triage.yml"
CALLBACKS = ROOT / "tests" / "integration" / "callback_plugins"
PASS_ACTIONS = ("node_pass", "node_triage")  # the records of the node pass (node_triage's timing)


def _env(forks, strategy, pipelining, mitogen=None, record=None, inject="True", kex=None, control_dir=None):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_STRATEGY=strategy, ANSIBLE_PIPELINING=pipelining, ANSIBLE_INJECT_FACT_VARS=inject,
               PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]))
    if kex:  # ansible.cfg's ssh_args and the key exchange
        config = configparser.ConfigParser(interpolation=None)
        config.read(ROOT / "ansible.cfg")
        env["ANSIBLE_SSH_ARGS"] = "%s -o KexAlgorithms=%s" % (config.get("ssh_connection", "ssh_args"), kex)
    if control_dir:  # connections of this run's own (cold: every SSH connection new, its key exchange paid)
        env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = control_dir
    if record:  # the tests' callback: one JSON line per task result (node_triage's timing)
        env.update(ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS), ANSIBLE_CALLBACKS_ENABLED="record", K8SNET_RECORD=record)
    if mitogen:
        env["ANSIBLE_STRATEGY_PLUGINS"] = str(Path(mitogen) / "ansible_mitogen" / "plugins" / "strategy")
        env["PYTHONPATH"] = "%s:%s" % (mitogen, os.environ.get("PYTHONPATH", ""))
    return env


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _play(lab, playbook, extra, env):
    """(wall, process, controller CPU): the CPU is the ansible-playbook process tree's (the process, its forked
    workers and the ssh clients they waited for), read from RUSAGE_CHILDREN around the run; the lab's sshd and
    the modules on the nodes are not in it."""
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(lab.inventory_path),
                           str(playbook), "-e", json.dumps(extra)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc, _children_cpu() - cpu


def tasks_per_node(proc, lab):
    """Task results per node, from the play recap (ok + failed + skipped + unreachable)."""
    nodes = set(n.name for n in lab.nodes)
    counts = [int(ok) + int(unr) + int(failed) + int(skipped)
              for host, ok, unr, failed, skipped in RECAP.findall(proc.stdout) if host in nodes]
    return statistics.median(counts) if counts else 0


def run(lab, playbook, forks, strategy, pipelining, outdir, extra, mitogen=None, inject="True", kex=None, cold=False):
    """One triage run: (wall, process, report, node_triage timings, phases, controller CPU seconds); ``cold``: in
    a ControlPath directory of its own, so that no connection of an earlier run is reused."""
    extra = dict(extra, report_output_dir=outdir, report_fail_on_critical=False)
    record = str(Path(outdir) / "record.jsonl")
    Path(record).write_text("")
    started = time.time()
    env = _env(forks, strategy, pipelining, mitogen, record, inject, kex, str(Path(outdir) / "cp") if cold else None)
    wall, proc, controller_cpu = _play(lab, playbook, extra, env)
    report = json.loads((Path(outdir) / "triage-report.json").read_text()) if proc.returncode == 0 else None
    timings, records = [], [json.loads(line) for line in Path(record).read_text().splitlines() if line.strip()]
    for rec in records:
        if rec.get("action", "").endswith(PASS_ACTIONS) and rec.get("result", {}).get("timing"):
            timings.append(rec["result"]["timing"])
    return wall, proc, report, timings, phases(records, started, wall), controller_cpu


def phases(records, started, wall):
    """Where the run's wall time went, from when the controller got each result: up to the node
    pass (start, credentials, owners' read), the node pass (until its last result), after it (the
    fleet results and the report). '' when the run recorded no node pass."""
    times = [rec.get("time", 0) - started for rec in records]
    passes = [t for rec, t in zip(records, times) if rec.get("action", "").endswith(PASS_ACTIONS)]
    if not passes:
        return ""
    before = max([t for t in times if t < min(passes)] or [0.0])
    return "phases: %.1f s to the pass, %.1f s pass, %.1f s after" % (before, max(passes) - before, wall - max(passes))


def default_kex():
    """The key exchange ssh offers first (what a new connection uses when the node's sshd has it too)."""
    out = subprocess.run(["ssh", "-G", "198.18.0.1"], capture_output=True, text=True, check=False).stdout
    offered = [line.split()[1] for line in out.splitlines() if line.startswith("kexalgorithms ")]
    return offered[0].split(",")[0] if offered else "unknown"


def manual_loop(lab, kex=None):
    start = time.perf_counter()
    options = ("-o", "KexAlgorithms=" + kex) if kex else ()
    for node in lab.nodes:
        # a node that is down costs the operator the connect timeout too (5 s here)
        lab.ssh(node, "ip n; ip r; iptables-save -c 2>/dev/null | grep -c DROP || true", check=False, options=options)
    return time.perf_counter() - start


def cpu_times():
    """The machine's CPU counters (user ... steal), in clock ticks, from /proc/stat."""
    with open("/proc/stat") as stat:
        return [int(v) for v in stat.readline().split()[1:9]]


def machine(before, after):
    """How busy all CPUs were between two cpu_times() readings, and how much the hypervisor took."""
    delta = [b - a for a, b in zip(before, after)]
    return "machine: CPUs %d %% busy, %d %% stolen" % (busy_percent(before, after), round(100.0 * delta[7] / (sum(delta) or 1)))


def busy_percent(before, after):
    """How busy all CPUs were between two cpu_times() readings, in percent (idle and iowait are not busy)."""
    delta = [b - a for a, b in zip(before, after)]
    return round(100.0 * (sum(delta) - delta[3] - delta[4]) / (sum(delta) or 1))


def settle(limit=180.0, busy=20, window=5.0):
    """Wait until the machine's CPUs are less than ``busy`` % busy over ``window`` seconds (the lab's BGP mesh
    converging keeps them busy for a minute or two after it is Established), ``limit`` seconds at most; says
    how long it waited and how busy the CPUs were last."""
    started, percent = time.perf_counter(), 100
    while time.perf_counter() - started < limit:
        before = cpu_times()
        time.sleep(window)
        percent = busy_percent(before, cpu_times())
        if percent < busy:
            break
    return "waited %.0f s for the machine to settle (CPUs %d %% busy over %.0f s)" % (
        time.perf_counter() - started, percent, window)


def _row(label, wall, nodes, manual, tasks, rest):
    print("%-56s %7.1f %9.3f %6.1fx %6s  %s" % (label, wall, wall / nodes, wall / manual, tasks, rest))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="50", help="fleet sizes, comma-separated: one lab after the other (e.g. 24,100,190)")
    parser.add_argument("--fleet", default="bare", choices=("bare", "healthy", "faults"),
                        help="bare: nodes with sshd only (no mesh, CNI, BGP: the checks find what is missing); healthy: "
                             "tests/lab/faults/healthy.py (the report should hold no warning); faults: healthy plus "
                             "six faults of six kinds (the report should hold six findings)")
    parser.add_argument("--slot", type=int, default=7)
    parser.add_argument("--before", default="f25", help="settings of the scenario-roles path, e.g. f25,f50 ('' = none)")
    parser.add_argument("--after", default="f25", help="settings of triage.yml (the one pass) ('' = none)")
    parser.add_argument("--keep", help="a directory to keep each run's reports in (<setting>-<nodes>-<fleet>)")
    parser.add_argument("--mitogen", help="a directory holding the mitogen package: also run triage.yml with it")
    parser.add_argument("--kex", help="the SSH key exchange of the loop and every run (default: ssh's own)")
    parser.add_argument("--cold", action="store_true",
                        help="every run opens its own SSH connections (default: the runs after the first reuse them)")
    parser.add_argument("--node-pythons", default="system", choices=NODE_PYTHONS,
                        help="the nodes' interpreter: system (/usr/bin/python3 everywhere) or mixed (the tests' three)")
    parser.add_argument("--scenarios", default="",
                        help="triage_scenarios for every path, comma-separated (default: each path's own default; "
                             "the roles path has no logs, conntrack or pmtu)")
    opts = parser.parse_args()
    for nodes in [int(n) for n in opts.nodes.split(",") if n]:
        bench_size(opts, nodes)


def bench_size(opts, nodes):
    """The lab of ``nodes`` nodes, the manual loop, then each triage path on it."""
    started = time.perf_counter()
    lab = Lab(slot=opts.slot, nodes=nodes, node_pythons=opts.node_pythons).up()
    up = time.perf_counter() - started
    traffic = None
    try:
        fleet = ""
        if opts.fleet in ("healthy", "faults"):
            started = time.perf_counter()
            info = healthy.healthy_fleet(lab)
            fleet = "; healthy fleet in %.1f s (%d routes, %d BGP sessions Established)" % (
                time.perf_counter() - started, info["routes"], info["bgp_sessions"])
        arp.bind_vip(lab, "node1", lab.vip(0))
        if opts.fleet == "faults":
            traffic = healthy.six_faults(lab).pop("traffic")
            fleet += "; six faults injected (stale ARP node4, blackhole node5, DROP node7, full map node9, sshd node10, node11 down)"
        extra = {"stale_arp_vips": [lab.vip(0)]}
        if opts.scenarios:
            extra["triage_scenarios"] = opts.scenarios.split(",")
        print("\nlab: %d nodes up in %.1f s (namespaces, sshd each, SSH reachable)%s; load average %s; %d CPUs; "
              "SSH key exchange %s; nodes' Python: %s" % (
                  nodes, up, fleet, " ".join("%.2f" % x for x in os.getloadavg()), os.cpu_count(),
                  opts.kex or "ssh's default, " + default_kex(), ", ".join(sorted(set(n.python for n in lab.nodes)))))
        print(settle())
        ticks = cpu_times()
        manual = manual_loop(lab, opts.kex)
        print("%-56s %7s %9s %7s %6s  %s" % ("path", "wall s", "per host", "/manual", "tasks", "findings / on the node"))
        _row("manual ssh loop (ip n; ip r; iptables)", manual, nodes, manual, "-",
             "(read by eye); " + machine(ticks, cpu_times()))
        variants = [("scenario roles (before) %s" % s, ROLES_TRIAGE, s, None) for s in opts.before.split(",") if s]
        variants += [("triage.yml, one pass %s" % s, "k8snet.triage.triage", s, None) for s in opts.after.split(",") if s]
        if opts.mitogen:
            variants += [("triage.yml, one pass %s" % s, "k8snet.triage.triage", s, opts.mitogen)
                         for s in opts.after.split(",") if s]
        for index, (name, playbook, setting, mitogen) in enumerate(variants):
            cold = opts.cold or index == 0  # the manual loop opens no ControlMaster: the first run is cold
            forks, strategy, pipelining, inject = SETTINGS[setting]
            strategy = "mitogen_" + strategy if mitogen else strategy
            with tempfile.TemporaryDirectory() as out:
                settle()
                ticks = cpu_times()
                wall, proc, report, timings, spent, controller_cpu = run(lab, playbook, forks, strategy, pipelining, out,
                                                                         extra, mitogen, inject, opts.kex, cold)
                if opts.keep:  # the reports, to read as the operator would
                    kept = Path(opts.keep) / ("%s-%d-%s" % (setting, len(lab.nodes), opts.fleet))
                    shutil.copytree(out, kept, dirs_exist_ok=True)
                load = machine(ticks, cpu_times())
                sizes = dict((name, (Path(out) / name).stat().st_size if (Path(out) / name).exists() else 0)
                             for name in ("triage-report.json", "triage-report.html"))
            label = "%s (forks %d, %s, %s)" % (name, forks, strategy, "cold" if cold else "warm")
            if report is None:
                print("%-56s failed rc=%d: %s" % (label, proc.returncode, (proc.stdout + proc.stderr)[-600:]))
                continue
            severity = report["counts"]["severity"]
            rest = "%d findings (%d critical, %d warning), %d hosts reached of %d; report %d KB JSON, %d KB HTML" % (
                len(report["findings"]), severity.get("critical", 0), severity.get("warning", 0),
                report["coverage"]["hosts"].get("reached", 0), len(report["hosts"]) - 1,
                sizes["triage-report.json"] // 1024, sizes["triage-report.html"] // 1024)
            if timings:
                seconds = [t["seconds"] for t in timings]
                cpu = [t["process_cpu_seconds"] + t["children_cpu_seconds"] for t in timings]
                rest += "; on the node: pass %.2f s median / %.2f max, CPU %.2f s median / %.2f max" % (
                    statistics.median(seconds), max(seconds), statistics.median(cpu), max(cpu))
            rest += "; controller CPU %.1f s (%.3f s per node, the ansible-playbook process tree)" % (
                controller_cpu, controller_cpu / max(1, nodes))
            rest += "; " + (spent + "; " if spent else "") + load
            _row(label, wall, nodes, manual, tasks_per_node(proc, lab), rest)
            by_check = sorted(report["counts"]["check"].items(), key=lambda kv: -kv[1])[:8]
            print("%-56s   most frequent problems: %s" % ("", ", ".join("%s %d" % kv for kv in by_check)))
            act_on = [f for f in report["findings"] if f["severity"] in ("warning", "critical")]
            if 0 < len(act_on) <= 12:
                shown = ["%s %s (%s)" % (f["check"], f["subject"], f.get("host")) for f in act_on]
                print("%-56s   to act on: %s" % ("", "; ".join(shown)))
            gaps = report["coverage"]["gaps"]
            for gap in [g for g in gaps if g["status"] == "failed"][:5]:
                print("%-56s   failed %s on %d hosts: %s" % ("", gap["scenario"], len(gap["hosts"]), gap["reason"][:160]))
        print("load average at the end: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    finally:
        if traffic is not None:
            firewall.traffic_stop(traffic, now=True)
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
