"""Helpers shared by bench/route_check.py and bench/iptables_drops.py: a namespace of the
caller's lab slot, timing of commands (wall and CPU) and running a module file on the
"node" (the namespace) without ansible."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def namespace(suffix):
    """``k8t<slot>-<suffix>``: removed by the bench, and by ``lab down`` of that slot."""
    if not os.environ.get("K8SNET_LAB_SLOT"):
        sys.exit("set K8SNET_LAB_SLOT to your lab slot: the bench namespace is named after it")
    if os.geteuid() != 0:
        sys.exit("run as root (it makes a network namespace)")
    return "k8t%d-%s" % (int(os.environ["K8SNET_LAB_SLOT"]), suffix)


def sh(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=True, **kw)


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv, **kw):
    """(wall seconds, CPU seconds of the command and its children, CompletedProcess)."""
    c0 = children_cpu()
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    return time.monotonic() - t0, children_cpu() - c0, proc


def node_side(ns, module, args):
    """Run the module file as the node runs it (no controller, no SSH) inside ``ns``.
    Returns (wall, cpu, result)."""
    path = Path("/tmp/%s-%s.args" % (ns, module))
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "build"))
    try:
        seconds, cpu, proc = timed(["ip", "netns", "exec", ns, PYTHON, str(ROOT / "plugins" / "modules" / (module + ".py")),
                                    str(path)], env=env)
    finally:
        path.unlink()
    text = proc.stdout.strip()
    return seconds, cpu, json.loads(text) if text.startswith("{") else {"error": text[-300:] + proc.stderr[-300:]}


def ansible_module(ns, module, args):
    """Run the module through ansible (controller + AnsiballZ) inside ``ns``: (wall, cpu, CompletedProcess)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=str(ROOT / ".venv" / "bin") + ":" + os.environ["PATH"])
    return timed(["ip", "netns", "exec", ns, str(ROOT / ".venv" / "bin" / "ansible"), "localhost", "-c", "local",
                  "-i", "localhost,", "-e", "ansible_python_interpreter=" + PYTHON,
                  "-m", "k8snet.triage." + module, "-a", json.dumps(args), "-o"], env=env, cwd=str(ROOT))


def table(rows):
    print("load average: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    print("%-66s %8s %8s  %s" % ("what", "wall s", "cpu s", "notes"))
    for name, seconds, cpu, note in rows:
        print("%-66s %8.2f %8.2f  %s" % (name, seconds, cpu, note))
