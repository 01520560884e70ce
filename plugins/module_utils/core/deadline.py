# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A monotonic end time: the one deadline object of the API reads (kube_transport) and of a module run's
commands (``Budget``, which commands.Tool honours).  Pure apart from the clock; light to import (node_triage
imports it before its sampled checks start)."""

from __future__ import annotations

import os
import signal
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError


class Deadline(object):
    """A monotonic end time (``clock`` for tests)."""

    def __init__(self, seconds, clock=time.monotonic, end=None):
        self.clock = clock
        self.start = clock()
        self.end = self.start + float(seconds) if end is None else end
        # its whole length (shorter than asked when an outer deadline ends first)
        self.seconds = self.end - self.start

    def left(self):
        return self.end - self.clock()

    def expired(self):
        return self.left() <= 0

    def within(self, seconds):
        """A deadline ``seconds`` from now, not later than this one (of the same class)."""
        return type(self)(seconds, self.clock, min(self.end, self.clock() + seconds))


# seconds one command may run when its module run gives no budget (and the default cap of a budget)
DEFAULT_COMMAND_TIMEOUT = 60.0
# seconds a killed command is waited for before it is left behind (stuck in the kernel)
KILL_GRACE = 2.0


def kill_group(group):
    """SIGKILL to the process group ``group`` (a command started by commands.Tool leads its own)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass  # it has just exited, or left its group


class CommandTimeout(ReadError):
    """A command that ran out of its time and was killed, or that was not started because the run's deadline was
    spent."""


class Budget(object):
    """The time the commands of one module run may take: ``seconds`` in all from now (None: no total deadline)
    and ``command_timeout`` seconds at most for each one."""

    def __init__(self, seconds=None, command_timeout=DEFAULT_COMMAND_TIMEOUT, clock=time.monotonic):
        self.deadline = None if seconds is None else Deadline(seconds, clock)
        self.clock = clock
        self.command_timeout = float(command_timeout)
        self.running = {}  # thread ident -> the command it runs now (what a check cut off at the deadline was in)
        self.groups = {}  # thread ident -> the process group of that command (killed by ``abort``)
        self.aborted = None  # why the run stopped early (the controller went away)

    def left(self):
        """Seconds left of the run's deadline (None: no deadline)."""
        return None if self.deadline is None else self.deadline.left()

    def spent(self):
        return self.deadline is not None and self.deadline.expired()

    def abort(self, why):
        """Stop the run now: no command starts any more, and each running command's process group is killed (the
        command then fails with ``why``)."""
        self.aborted = why
        if self.deadline is None:
            self.deadline = Deadline(0, self.clock)
        self.deadline.end = self.deadline.clock()
        for group in list(self.groups.values()):
            kill_group(group)

    def for_command(self, label, cap=None):
        """(seconds command ``label`` may run, why that long): min(what is left of the deadline, ``cap``, by default
        the cap per command); CommandTimeout when the run's deadline is spent."""
        left = self.left()
        if self.aborted:
            raise CommandTimeout("`%s` was not started: %s" % (label, self.aborted), command=label)
        if left is not None and left <= 0:
            raise CommandTimeout("`%s` was not started: the module run's deadline of %g s was spent"
                                 % (label, round(self.deadline.seconds, 1)), command=label)
        cap = self.command_timeout if cap is None else float(cap)
        if left is not None and left < cap:
            return left, "what was left of the module run's deadline of %g s" % round(self.deadline.seconds, 1)
        return cap, "the time limit of one command"


def set_budget(runner, budget):
    """Give the commands run through ``runner`` (an AnsibleModule) ``budget``; returns it.  A runner that takes no
    attribute (a test's None) runs its commands without it."""
    try:
        runner.command_budget = budget
    except AttributeError:
        pass
    return budget


def budget_of(runner):
    """The budget of the commands run through ``runner`` (a default one when none was set)."""
    budget = getattr(runner, "command_budget", None)
    return budget if isinstance(budget, Budget) else Budget()
