"""What a real kubelet and containerd (tests/lab/node_agent.py) leave that outlives the lab's namespaces: the
containers' processes (in pod network namespaces the lab did not name), containerd's shims, the cgroups under
``/k8t<slot>-<node>`` of each v1 hierarchy. Standard library only: ``Lab.down`` uses it, also after a crash and
without state."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from .core import LabError

# the v1 hierarchies the machine mounts (a node sees the same ones; hugetlb and net_cls are not among them here)
CGROUP_V1 = tuple(s for s in ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "hugetlb",
                              "net_cls", "net_prio", "perf_event") if os.path.ismount(f"/sys/fs/cgroup/{s}"))


def _cgroup_dirs(cgroup):
    for sub in (*CGROUP_V1, "systemd"):
        top = Path("/sys/fs/cgroup", sub, cgroup.lstrip("/"))
        if top.is_dir():
            yield from sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            yield top


def _thaw(d):
    """A frozen cgroup's processes do not die of SIGKILL until it is thawed (runc freezes a container's cgroup while it
    updates or kills it): thaw it (cgroup v1 freezer)."""
    state = d / "freezer.state"
    try:
        if state.read_text().strip() != "THAWED":
            state.write_text("THAWED")
    except OSError:
        pass


def kill_cgroup(cgroup, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = set()
        for d in _cgroup_dirs(cgroup):
            _thaw(d)
            try:
                pids |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    raise LabError(f"processes of cgroup {cgroup} still alive after {timeout} s")


def kill_shims(node_dir):
    """containerd's shims outlive it (as on a node, so that a restart keeps the containers): end the ones whose
    command line names this node's containerd."""
    marker = str(node_dir / "containerd").encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"containerd-shim" in cmdline and marker in cmdline:
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def remove_cgroup(cgroup, timeout=60):
    deadline = time.monotonic() + timeout
    left = []
    while time.monotonic() < deadline:
        left = []
        for d in _cgroup_dirs(cgroup):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(d)
        if not left:
            return
        time.sleep(0.2)
    raise LabError(f"cgroups not removed: {', '.join(map(str, left[:5]))}")


def cleanup(prefix, workdir):
    """Everything the node agents of the lab slot ``prefix`` (``k8t<slot>``) made that outlives its namespaces:
    the containers' processes (in pod network namespaces the lab did not name), the shims, the cgroups. Needs no
    state (``Lab.down`` calls it, also after a crash) and does nothing when no agent ran."""
    names = {p.name for sub in (*CGROUP_V1, "systemd") for p in Path("/sys/fs/cgroup", sub).glob(prefix + "-*")}
    for name in sorted(names):
        kill_cgroup("/" + name)
    for node_dir in Path(workdir, "kube", "nodes").glob("*"):
        kill_shims(node_dir)
    for name in sorted(names):
        remove_cgroup("/" + name)
