"""A node lost to the fleet: its sshd dead (the host up), or its link down (the host gone for everyone)."""

from __future__ import annotations

import os
import signal

from . import fault


def descendants(pid):
    """Every process below ``pid`` (read from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    stat = handle.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@fault
def sshd_dead(lab, node):
    """Take ``node`` off SSH: its sshd and every session below it (so no ControlMaster survives); the node
    still answers on the network."""
    node = lab.node(node)
    killed = 0
    for pid in [node.sshd_pid] + descendants(node.sshd_pid):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return {"node": node.name, "killed": killed}


@fault
def node_unplugged(lab, node):
    """Set ``node``'s eth0 down: it answers nothing, SSH to it times out (a node powered off or cut off)."""
    node = lab.node(node)
    lab.ns_run(node, ["ip", "link", "set", "eth0", "down"])
    return {"node": node.name, "undo": ["link set eth0 up"]}


HANG_MARK = "k8snet-hang"
HANG_SLEEP = "3599.123"  # the blocked child's sleep, an argument nothing else uses


@fault
def command_hangs(lab, node, tool="ip", match=""):
    """``tool`` on ``node`` blocks (as an ``ip`` waiting on a stalled rtnl lock) when its arguments contain ``match``
    ('' : always), and runs as usual otherwise. Inside the node's mount namespace only: the binary that PATH finds
    first is bind-mounted over by a script that, when it blocks, starts a child and waits for it, as a real command's
    helper would (both carry HANG_MARK in their command line, so a test can find any that outlived the run)."""
    node = lab.node(node)
    real = lab.node_run(node, ["sh", "-c", "readlink -f \"$(command -v %s)\"" % tool]).stdout.strip()
    if not real:
        raise ValueError("%s is not installed on %s" % (tool, node.name))
    where = lab.workdir / "hang" / node.name
    where.mkdir(parents=True, exist_ok=True)
    copy = where / ("real-" + tool)
    lab.run(["cp", real, str(copy)])
    script = where / tool
    script.write_text(
        "#!/bin/sh\n"
        "case \" $* \" in *\"%s\"*) sh -c 'sleep %s; : %s' & wait; exit 1;; esac\n"
        "exec %s \"$@\"\n" % (match, HANG_SLEEP, HANG_MARK, copy))
    script.chmod(0o755)
    lab.node_run(node, ["mount", "--bind", str(script), real])
    return {"node": node.name, "tool": tool, "path": real, "match": match}


def command_hangs_undo(lab, info):
    """Undo command_hangs: the real binary back, and any blocked copy ended."""
    lab.node_run(info["node"], ["umount", info["path"]], check=False)
    for pid in hung_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def hung_processes():
    """The pids of the processes a command_hangs script started that still run."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    cmdline = handle.read()
            except OSError:
                continue
            if HANG_MARK.encode() in cmdline or b"sleep\0" + HANG_SLEEP.encode() in cmdline:
                found.append(int(entry))
    return found
