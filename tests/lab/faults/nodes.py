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
