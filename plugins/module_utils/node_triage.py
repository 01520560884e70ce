# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One pass over a node: every applicable node-side check in one process.

Each scenario's node-side check is one function of one shape in its domain file,
``node_check(params, runner) -> {"data": ..., "findings": [...]}``.  This orchestrator runs
the applicable ones concurrently, one thread each: the checks that wait (the firewall
counters' two snapshots ``interval`` seconds apart, the ICMP/TCP/ARP probes, the DNS
queries, the ARP probes for VIPs) overlap, so the longest window is paid once, and the
quick readers (routes, BIRD, bpf maps, CNI files) run meanwhile.

Each scenario is declared once, in ``scenarios/<name>.py``, and registered in ``REGISTRY`` below; the
module imports those declarations (and through them the checks' options) only.  The sampled checks
(SAMPLED: the firewall and conntrack counters, the Cilium agent's metrics) are loaded and started first;
the other checks' code is imported while their windows run (``load``), then those checks start.  On a
fleet whose nodes share little CPU this takes the bulk of the imports out of the time before the
windows open.

What needs the fleet (expected BGP peers, pod-CIDR peers, probe targets, DNS servers, the
VIP owners' MACs, live frontends) is not computed here: the controller computes it once
and hands it in with each scenario's parameters.

The result, per scenario: ``{"status": "ran"|"skipped"|"failed", "reason", "findings",
"data", "seconds", "cpu_seconds"}``; a check whose data says ``applicable: false`` (with ``skip_reason``) found
on the node that it does not apply, and is skipped; a scenario's own ``skip_reason`` (no agent socket,
nothing of Cilium on the node, no peers given) is decided before its code is loaded.  A scenario that fails (its reader raised) does not stop the others: it
becomes a ``triage.check_failed`` finding, the same one the triage records when a scenario
role fails on a host.
"""

from __future__ import annotations

import os
import resource
import select
import threading
import time

# The scenarios' declarations only (module_utils/scenarios/<name>.py, which import their options): node_triage
# validates its parameters and starts the checks that sample over a window before it imports the rest of the
# checks' code (``load``): about half of the module's import CPU then runs inside the window instead of before it,
# which is what a fleet of nodes sharing little CPU waits on.
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.deadline import KILL_GRACE, Budget, set_budget
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import check_failed, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.scenarios import calico, cilium_agent, cilium_maps, cni
from ansible_collections.k8snet.triage.plugins.module_utils.scenarios import connectivity, conntrack, dns, firewall_drops
from ansible_collections.k8snet.triage.plugins.module_utils.scenarios import logs, pmtu, pod_network, stale_arp, sysctl

# The node scenarios, in the order of the triage's results and report.  Adding a scenario is its module under
# scenarios/ and its name here; every table below is derived.
REGISTRY = (cni, calico, cilium_maps, cilium_agent, pod_network, firewall_drops, connectivity, dns, logs, conntrack,
            pmtu, sysctl, stale_arp)
BY_NAME = dict((declared.NAME, declared) for declared in REGISTRY)
SCENARIOS = tuple(declared.NAME for declared in REGISTRY)
# the ones whose check waits a window (counters read twice ``interval`` apart): loaded and started first
SAMPLED = tuple(declared.NAME for declared in REGISTRY if getattr(declared, "SAMPLED", False))
# the scenarios whose check names the node in its findings
NODE_NAMED = tuple(declared.NAME for declared in REGISTRY if getattr(declared, "NODE_NAMED", False))
# the scenarios whose data the fleet's conclusions read (the triage's record keeps the data of these only)
FLEET_DATA = tuple(declared.NAME for declared in REGISTRY if getattr(declared, "FLEET_DATA", False))
# the reads of the fleet the controller makes once before the pass (roles/node_pass: the API reads, the VIP owners'
# pre-read), each with the scenarios that need it (their API_READS): the role makes a read when a wanted scenario
# needs it (lookup k8snet.triage.node_scenarios, reads=...)
READS = dict((read, tuple(declared.NAME for declared in REGISTRY if read in getattr(declared, "API_READS", ())))
             for read in sorted(set(read for declared in REGISTRY for read in getattr(declared, "API_READS", ()))))


def load(name):
    """The node check of scenario ``name``, its domain's code imported now.

    Called by the main thread only, one scenario after the other, between the threads' starts: the
    AnsiballZ importer can hand a half-initialised module to a thread that imports it while another
    thread does (ImportError: cannot import name 'Netlink', seen on a loaded 2-core host), so no check
    thread imports the collection's code: what the checks import inside their functions is imported by
    ``_prepare``, before the first thread starts.
    """
    return BY_NAME[name].load()


def _prepare():
    """Import what the checks import inside their functions (see ``load``), before any thread starts."""
    # pylint: disable=import-outside-toplevel,unused-import
    from ansible_collections.k8snet.triage.plugins.module_utils.arp import probe as arp_probe  # noqa: F401
    from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files  # noqa: F401
    from ansible_collections.k8snet.triage.plugins.module_utils.kernel import netlink  # noqa: F401
    from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import pod_netns  # noqa: F401
    from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability  # noqa: F401


# the pass's total deadline and each command's time limit (seconds): defaults and bounds
DEADLINE, DEADLINE_MIN, DEADLINE_MAX = 300.0, 5.0, 3600.0
COMMAND_TIMEOUT, COMMAND_TIMEOUT_MAX = 60.0, 3600.0
# seconds a sampled check needs besides its window (its two reads), within the deadline
WINDOW_MARGIN = 10.0
# seconds between two looks at whether the controller still reads the result
WATCH_EVERY = 0.5
CONTROLLER_GONE = "the controller's connection closed while the node pass ran (nobody reads its result)"

# The argument spec of the node_triage module: one dict option per scenario, whose suboptions are
# that scenario's CHECK_SPEC (shared with its module, documented by the domain's doc fragment, variant
# NODE_TRIAGE) with the triage's defaults (the scenario roles' defaults), not the scenario modules' own:
# this is the triage's entry point.
ARGUMENT_SPEC = dict(
    node_name=dict(type="str"),
    deadline=dict(type="float", default=DEADLINE),
    command_timeout=dict(type="float", default=COMMAND_TIMEOUT),
    scenarios=dict(type="list", elements="str", choices=list(SCENARIOS), default=list(SCENARIOS)),
    **dict((declared.NAME, declared.OPTIONS) for declared in REGISTRY)
)

# The option rules of node_triage: each scenario's own.
RULES = dict(
    node_name=rules.node_name,
    deadline=lambda option, value: rules.number(option, value, DEADLINE_MIN, DEADLINE_MAX, unit="seconds",
                                                fix="the whole pass on the node ends by then"),
    command_timeout=rules.seconds(0, COMMAND_TIMEOUT_MAX),
    scenarios=rules.each(rules.choice(*SCENARIOS), max_items=len(SCENARIOS), non_empty=True,
                         what="give at least one of %s" % ", ".join(SCENARIOS)),
    **dict((declared.NAME, declared.RULES) for declared in REGISTRY)
)


def skip_reason(name, sub, params=None):
    """Why scenario ``name``, asked for, does not apply on this node with its parameters ``sub`` (None: it
    applies); decided before its check's code is loaded."""
    decide = getattr(BY_NAME.get(name), "skip_reason", None)
    return decide(sub, params or {}) if decide else None


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _failed(name, node, error):
    return {"status": "failed", "reason": error, "findings": [check_failed(name, node, error)], "data": {}}


def _error(exc):
    # a TriageError's own message; any other exception (one check's bug) named with its type
    return exc.message if isinstance(exc, TriageError) else "%s: %s" % (type(exc).__name__, exc)


def _run_one(name, check, params, runner, node, clock):
    started = clock()
    cpu_started = time.thread_time()
    try:
        out = check(params, runner)
        data = out["data"]
        if data.get("applicable") is False:
            # the check itself found that it does not apply here (calico: no BIRD and no Calico CNI)
            entry = {"status": "skipped", "reason": data.get("skip_reason") or "does not apply to this node",
                     "findings": [], "data": data}
        else:
            entry = {"status": "ran", "reason": "", "findings": out["findings"], "data": data}
    except Exception as exc:  # pylint: disable=broad-except
        # one check's bug must not cost the other checks their results: it is reported as that check's failure
        entry = _failed(name, node, _error(exc))
    entry["seconds"] = round(clock() - started, 3)
    entry["cpu_seconds"] = round(time.thread_time() - cpu_started, 3)  # this check's thread
    return entry


def plan(params, node, names=SCENARIOS):
    """(results of the scenarios skipped, [(name, its parameters)] of the ones to run)."""
    wanted = params.get("scenarios")
    wanted = list(SCENARIOS) if wanted is None else wanted
    results, jobs = {}, []
    for name in names:
        sub = dict(params.get(name) or {})
        if name in NODE_NAMED:
            sub["node_name"] = node
        reason = "not asked for" if name not in wanted else skip_reason(name, sub, params)
        if reason:
            results[name] = {"status": "skipped", "reason": reason, "findings": [], "data": {}, "seconds": 0.0,
                             "cpu_seconds": 0.0}
        else:
            jobs.append((name, sub))
    return results, jobs


def _windows(jobs):
    """[(option, seconds)] of the sampling windows of the checks to run (``interval`` of the SAMPLED ones)."""
    return [("%s.interval" % name, float(sub.get("interval") or 0)) for name, sub in jobs
            if name in SAMPLED and isinstance(sub.get("interval"), (int, float))]


def _check_deadline(params, jobs):
    """InputError when a sampling window asked for does not fit in the pass's deadline."""
    deadline = float(params.get("deadline") or DEADLINE)
    for option, window in _windows(jobs):
        if window + WINDOW_MARGIN > deadline:
            raise InputError("deadline=%g s is too short for %s=%g s: the pass needs its window plus %g s for its "
                             "reads; give a deadline of at least %g s or a shorter window"
                             % (deadline, option, window, WINDOW_MARGIN, window + WINDOW_MARGIN))


class _Check(threading.Thread):
    """One check in a daemon thread (one stuck in the kernel does not keep the module from exiting)."""

    def __init__(self, name, check, params, runner, node, clock):
        super(_Check, self).__init__(name="check-%s" % name, daemon=True)
        self.args = (name, check, params, runner, node, clock)
        self.entry = None

    def run(self):
        self.entry = _run_one(*self.args)


def _cut_off(name, node, budget, thread, seconds):
    """The entry of a check still running when the pass's deadline (and the kill grace) had passed."""
    command = budget.running.get(thread.ident)
    where = ("still in `%s`, which was killed and did not exit (stuck in the kernel)" % command if command
             else "not in a command")
    return dict(_failed(name, node, "did not finish within the node pass's deadline of %g s (option deadline), %s; "
                                    "the pass returned without it" % (round(budget.deadline.seconds, 1), where)),
                seconds=round(seconds, 3), cpu_seconds=0.0)


def _not_started(name, node, budget):
    return dict(_failed(name, node, "was not started: the node pass's deadline of %g s (option deadline) was spent"
                                    % round(budget.deadline.seconds, 1)), seconds=0.0, cpu_seconds=0.0)


def controller_gone(fd=1):
    """Whether the reader of this process's stdout has gone: sshd's session (the SSH connection closed: the
    controller was killed, or its host went away) or, over a local connection, ansible's worker.  A pipe whose
    reader closed polls POLLERR, a socket POLLHUP; a file or a terminal never does."""
    try:
        poller = select.poll()
        poller.register(fd, 0)
        return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def run(params, runner, checks=None, clock=time.monotonic, gone=controller_gone):
    """Run every asked-for, applicable check of this node at once; return the module's result.

    The sampled checks are loaded and started first; the other checks' code is imported while their
    windows run, then those checks start.  ``checks``: (name, check) pairs that replace the collection's
    own (tests).  The pass returns by its deadline (see the file's docstring), and stops at once when ``gone()``
    says nobody reads its result any more."""
    started, (cpu0, children0) = clock(), _cpu()
    node = params.get("node_name") or os.uname()[1]
    names = [name for name, _check in checks] if checks is not None else SCENARIOS
    get, prepare = (dict(checks).__getitem__, None) if checks is not None else (load, _prepare)
    results, jobs = plan(params, node, names)
    _check_deadline(params, jobs)
    budget = set_budget(runner, Budget(params.get("deadline") or DEADLINE, params.get("command_timeout") or
                                       COMMAND_TIMEOUT, clock))
    sampled, rest = [job for job in jobs if job[0] in SAMPLED], [job for job in jobs if job[0] not in SAMPLED]
    threads = []
    for stage in (sampled, rest):
        if stage is rest and rest and prepare and not budget.spent():
            prepare()
        loaded = []
        for name, sub in stage:  # every import of the stage first, in this thread (see load)
            if budget.spent():
                results[name] = _not_started(name, node, budget)
                continue
            try:
                loaded.append((name, sub, get(name)))
            except Exception as exc:  # pylint: disable=broad-except
                results[name] = dict(_failed(name, node, _error(exc)), seconds=0.0, cpu_seconds=0.0)
        for name, sub, check in loaded:
            thread = _Check(name, check, sub, runner, node, clock)
            thread.start()
            threads.append((name, thread))
    for name, thread in threads:
        # a command is killed when the deadline passes: its check then returns within the kill grace
        while thread.is_alive() and budget.left() + KILL_GRACE + 1.0 > 0:
            thread.join(min(budget.left() + KILL_GRACE + 1.0, WATCH_EVERY))
            if not budget.aborted and gone():
                budget.abort(CONTROLLER_GONE)
        entry = thread.entry
        results[name] = entry if entry is not None else _cut_off(name, node, budget, thread, clock() - started)
    cpu1, children1 = _cpu()
    everything = []
    for name in names:
        everything.extend(results[name]["findings"])
    return {
        "changed": False,
        "node": node,
        "scenarios": dict((name, results[name]) for name in names),
        "findings": sort_findings(everything),
        "timing": {
            "seconds": round(clock() - started, 3),
            # this process's CPU in the pass (all threads), its commands' CPU, and the whole
            # process's CPU since it started (interpreter and imports included)
            "cpu_seconds": round(cpu1 - cpu0, 3),
            "children_cpu_seconds": round(children1 - children0, 3),
            "process_cpu_seconds": round(cpu1, 3),
        },
    }
