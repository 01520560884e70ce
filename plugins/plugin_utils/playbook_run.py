# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ansible-playbook run an action plugin belongs to, read from Linux's /proc.

An action runs in a worker process that ansible-playbook forked: the parent's ``/proc/<pid>/stat`` holds
when it started, in clock ticks since boot.  ``identity`` names the run (the same in every worker of one
run, never another run's); ``started`` says when it began, to about 10 ms.
"""

from __future__ import annotations

import os
import time


def _start_ticks(pid):
    """The process's start, in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[19])


def started(pid=None):
    """When the ansible-playbook process started (seconds since the epoch): now, less the time since its start
    (the boot clock of /proc/uptime, to the hundredth, less its start); None where /proc does not say.
    (/proc/stat's btime is whole seconds: a start read from it can be up to a second early.)"""
    try:
        ticks = _start_ticks(pid or os.getppid())
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return time.time() - (uptime - ticks / float(os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError, IndexError):
        return None


def identity(pid=None):
    """This run's name: the boot, the ansible-playbook process's PID and its start in ticks since boot (a PID is
    reused only by a process started later); None where /proc does not say.  Two records of the same
    identity are the same run's, whatever the clocks say."""
    pid = pid or os.getppid()
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
        return "%s-%d-%d" % (boot, pid, _start_ticks(pid))
    except (OSError, ValueError, IndexError):
        return None
