# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Running the external tools a node has (ip, iptables-save, nft, tcpdump ...).

One place declares how a tool is run: looked up once with ``get_bin_path``,
called with an argument list (never a shell string), in the C locale, and with
``expand_user_and_vars=False`` so interface names, addresses and keys are passed
as they are.  A non-zero exit becomes a ReadError naming the command.

Every command has a time limit.  A module run's ``Budget`` (``set_budget(runner, budget)``; node_triage makes
one per pass) gives each command min(what is left of the run's deadline, the cap per command); without one a
command gets ``DEFAULT_COMMAND_TIMEOUT``.  A command that runs out is killed with its whole process group and
becomes ``CommandTimeout`` (a ReadError naming the command and the seconds); once the run's deadline is spent
no command is started.  A command blocked in the kernel (an ``ip`` waiting for the rtnl lock) may not die of
SIGKILL at once: it is waited for ``KILL_GRACE`` seconds more and then left behind, so the run still ends.
"""

from __future__ import annotations

import os
import subprocess
import threading

from ansible_collections.k8snet.triage.plugins.module_utils.core.deadline import KILL_GRACE, CommandTimeout, budget_of, kill_group
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

C_LOCALE = {"LANGUAGE": "C", "LC_ALL": "C", "LANG": "C"}


class Tool(object):
    """One external binary on the managed host."""

    def __init__(self, module, name, required=True, opt_dirs=("/usr/sbin", "/sbin")):
        self.module = module
        self.name = name
        self.path = module.get_bin_path(name, required=False, opt_dirs=list(opt_dirs))
        if required and not self.path:
            raise ReadError(
                "%s is not installed on this host (searched PATH and %s); install it or use a host that has it"
                % (name, ", ".join(opt_dirs)),
                tool=name,
            )

    @property
    def available(self):
        return bool(self.path)

    def run(self, args, check=True, data=None, timeout=None):
        """Run the tool; return (rc, stdout, stderr).  ``check`` raises on rc != 0.  ``timeout``: this command's
        cap instead of the budget's (a capture that runs for its duration), still within the run's deadline.

        With an AnsibleModule the command runs through ``communicate()``, which reads both pipes to their end, not
        through ``AnsibleModule.run_command``: its loop stops reading when a 1 s ``select()`` found nothing and the
        command has exited by the next ``poll()``, so a command starved for a second that then writes and exits in
        between loses its output (ansible/ansible#51393; the loop is the same in ansible-core 2.19).  On a loaded
        node ``ip -json address show`` came back empty that way and a node named its own address as a missing BGP
        peer.  Any other runner (a test's stand-in) answers through its own ``run_command``."""
        argv = [self.path] + [str(a) for a in args]
        from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel

        if isinstance(self.module, AnsibleModule):
            rc, out, err = self._communicate(argv, data, timeout)
        else:
            budget_of(self.module).for_command(self._label(argv), timeout)  # none started once the deadline is spent
            rc, out, err = self.module.run_command(
                argv, check_rc=False, environ_update=C_LOCALE, expand_user_and_vars=False, data=data,
                binary_data=data is not None)
        return self._checked(argv, rc, out, err, check)

    def run_large(self, args, check=True, timeout=None):
        """Like ``run``, for outputs of many megabytes (100k routes, a 100k-rule ruleset), whatever the runner.

        ``AnsibleModule.run_command`` appends every 32 KiB it reads to one bytes string, which
        is quadratic: 25 MB of output took 10 s there and 0.1 s with ``communicate()``.  The
        same guarantees hold: an argument list, no shell, the C locale, errors as ReadError.
        """
        argv = [self.path] + [str(a) for a in args]
        rc, out, err = self._communicate(argv, timeout=timeout)
        return self._checked(argv, rc, out, err, check)

    def _label(self, argv):
        """The command as the messages name it: the tool's name and its arguments."""
        return " ".join([self.name] + argv[1:])

    def _checked(self, argv, rc, out, err, check):
        """(rc, out, err); with ``check`` a non-zero exit is ReadError naming the command."""
        if check and rc != 0:
            raise ReadError(
                "`%s` failed with exit code %d: %s" % (self._label(argv), rc, (err or out).strip()),
                rc=rc, stderr=err,
            )
        return rc, out, err

    def _communicate(self, argv, data=None, timeout=None):
        """(rc, stdout, stderr) of ``argv``: no shell, the C locale, ``data`` (text or bytes) on its stdin, both
        pipes read to their end, within the time the module run's budget gives it (CommandTimeout after)."""
        label = self._label(argv)
        budget = budget_of(self.module)
        seconds, why = budget.for_command(label, timeout)
        env = dict(os.environ)
        env.update(C_LOCALE)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        try:
            # its own process group (session), so that a time-out kills what it started too
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        except OSError as exc:
            raise ReadError("`%s` could not be started: %s" % (label, exc))
        me = threading.get_ident()
        budget.running[me], budget.groups[me] = label, proc.pid
        if budget.aborted:  # stopped between the check above and now
            kill_group(proc.pid)
        try:
            out, err = proc.communicate(data, timeout=max(seconds, 0.001))
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise CommandTimeout("`%s` did not finish within %g s (%s) and was killed"
                                 % (label, round(seconds, 1), why), command=label, seconds=round(seconds, 1))
        finally:
            budget.running.pop(me, None)
            budget.groups.pop(me, None)
        if budget.aborted:
            raise CommandTimeout("`%s` was killed: %s" % (label, budget.aborted), command=label)
        return proc.returncode, out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape")


def _kill(proc):
    """Kill ``proc`` and its process group; wait KILL_GRACE seconds for it, then leave it (stuck in the kernel)."""
    kill_group(proc.pid)
    try:
        proc.communicate(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
