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

The module imports the checks' options only (``<domain>_options``).  The sampled checks (SAMPLED:
the firewall and conntrack counters, the Cilium agent's metrics) are loaded and started first; the
other checks' code is imported while their windows run (``load``), then those checks start.  On a
fleet whose nodes share little CPU this takes the bulk of the imports out of the time before the
windows open.

What needs the fleet (expected BGP peers, pod-CIDR peers, probe targets, DNS servers, the
VIP owners' MACs, live frontends) is not computed here: the controller computes it once
and hands it in with each scenario's parameters.

The result, per scenario: ``{"status": "ran"|"skipped"|"failed", "reason", "findings",
"data", "seconds", "cpu_seconds"}``; a check whose data says ``applicable: false`` (with ``skip_reason``) found
on the node that it does not apply, and is skipped; the Cilium agent check's decision (no agent socket,
nothing of Cilium on the node) is made before its code is loaded.  A scenario that fails (its reader raised) does not stop the others: it
becomes a ``triage.check_failed`` finding, the same one the triage records when a scenario
role fails on a host.
"""

from __future__ import annotations

import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor

# The checks' options only: node_triage validates its parameters and starts the checks that sample over a
# window before it imports the rest of the checks' code (``load``): about half of the module's import CPU
# then runs inside the window instead of before it, which is what a fleet of nodes sharing little CPU waits on.
from ansible_collections.k8snet.triage.plugins.module_utils import bird_options, cilium_agent_options, cilium_lb_options
from ansible_collections.k8snet.triage.plugins.module_utils import cni_files_options, conntrack_options, dns_options
from ansible_collections.k8snet.triage.plugins.module_utils import iptables_options, logs_options, neighbors_options
from ansible_collections.k8snet.triage.plugins.module_utils import pmtu_options, reachability_options, routes_options
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks
from ansible_collections.k8snet.triage.plugins.module_utils import scenario
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sort_findings

# The scenarios in the order of their results; SAMPLED: the ones whose check waits a window (counters read
# twice ``interval`` apart), loaded and started first.
SCENARIOS = ("firewall_drops", "cilium_agent", "connectivity", "dns", "stale_arp", "cni", "calico", "cilium_maps",
             "pod_network", "logs", "conntrack", "pmtu")
SAMPLED = ("firewall_drops", "conntrack", "cilium_agent")
# the scenarios whose check names the node in its findings
NODE_NAMED = ("cni", "firewall_drops", "pod_network", "logs", "conntrack", "pmtu", "cilium_agent")


def load(name):
    """The node check of scenario ``name``, its domain's code imported now.

    Called by the main thread only, one scenario after the other, between the threads' starts: the
    AnsiballZ importer can hand a half-initialised module to a thread that imports it while another
    thread does (ImportError: cannot import name 'Netlink', seen on a loaded 2-core host), so no check
    thread imports the collection's code: what the checks import inside their functions is imported by
    ``_prepare``, before the first thread starts.
    """
    # pylint: disable=import-outside-toplevel
    if name == "firewall_drops":
        from ansible_collections.k8snet.triage.plugins.module_utils import iptables as domain
    elif name == "conntrack":
        from ansible_collections.k8snet.triage.plugins.module_utils import conntrack as domain
    elif name == "cilium_agent":
        from ansible_collections.k8snet.triage.plugins.module_utils import cilium_agent as domain
    elif name == "connectivity":
        from ansible_collections.k8snet.triage.plugins.module_utils import reachability as domain
    elif name == "dns":
        from ansible_collections.k8snet.triage.plugins.module_utils import dns as domain
    elif name == "stale_arp":
        from ansible_collections.k8snet.triage.plugins.module_utils import neighbors as domain
    elif name == "cni":
        from ansible_collections.k8snet.triage.plugins.module_utils import cni_files as domain
    elif name == "calico":
        from ansible_collections.k8snet.triage.plugins.module_utils import bird as domain
    elif name == "cilium_maps":
        from ansible_collections.k8snet.triage.plugins.module_utils import cilium_lb as domain
    elif name == "pod_network":
        from ansible_collections.k8snet.triage.plugins.module_utils import routes as domain
    elif name == "logs":
        from ansible_collections.k8snet.triage.plugins.module_utils import logs as domain
    elif name == "pmtu":
        from ansible_collections.k8snet.triage.plugins.module_utils import pmtu as domain
    else:
        raise KeyError(name)
    return domain.node_check


def _prepare():
    """Import what the checks import inside their functions (see ``load``), before any thread starts."""
    # pylint: disable=import-outside-toplevel,unused-import
    from ansible_collections.k8snet.triage.plugins.module_utils import arp_probe, netlink, pod_netns  # noqa: F401


# The argument spec of the node_triage module: one dict option per scenario, whose suboptions are
# that scenario's CHECK_SPEC (shared with its module, documented by the domain's doc fragment, variant
# NODE_TRIAGE).  The defaults that differ are the triage's (the scenario roles' defaults), not the
# scenario modules' own: this is the triage's entry point.
ARGUMENT_SPEC = dict(
    node_name=dict(type="str"),
    scenarios=dict(type="list", elements="str", choices=list(SCENARIOS), default=list(SCENARIOS)),
    cni=scenario.options(cni_files_options.CHECK_SPEC),
    calico=scenario.options(bird_options.CHECK_SPEC, when_not_calico="skip"),
    cilium_maps=scenario.options(cilium_lb_options.CHECK_SPEC, extra=dict(
        when_not_cilium=dict(type="str", choices=["check", "skip"], default="skip"),
    )),
    pod_network=scenario.options(routes_options.CHECK_SPEC),
    firewall_drops=scenario.options(iptables_options.CHECK_SPEC),
    connectivity=scenario.options(reachability_options.CHECK_SPEC, targets=[], probes=["icmp", "tcp", "arp"], tcp_port=10250, count=2),
    dns=scenario.options(dns_options.CHECK_SPEC, names=["kubernetes.default.svc.cluster.local"], host_resolvers=True),
    stale_arp=scenario.options(neighbors_options.CHECK_SPEC, addresses=[], probe=True),
    logs=scenario.options(logs_options.CHECK_SPEC),
    conntrack=scenario.options(conntrack_options.CHECK_SPEC),
    pmtu=scenario.options(pmtu_options.CHECK_SPEC, targets=[]),
    cilium_agent=scenario.options(cilium_agent_options.CHECK_SPEC),
)

# The option rules of node_triage: each scenario's own rules, from its domain file.  An empty list of
# peers to probe is not an error here: the scenario is skipped and says why (skip_reason).
_CONNECTIVITY_RULES = dict(reachability_options.RULES)
_CONNECTIVITY_RULES["targets"] = checks.each(reachability_options.TARGET_RULE, max_items=reachability_options.MAX_TARGETS)
RULES = dict(
    node_name=checks.node_name,
    scenarios=checks.each(checks.choice(*SCENARIOS), max_items=len(SCENARIOS), non_empty=True,
                          what="give at least one of %s" % ", ".join(SCENARIOS)),
    cni=checks.fields(**cni_files_options.RULES),
    calico=checks.fields(**bird_options.RULES),
    cilium_maps=checks.fields(**cilium_lb_options.RULES),
    pod_network=checks.fields(**routes_options.RULES),
    firewall_drops=checks.fields(**iptables_options.RULES),
    connectivity=checks.fields(**_CONNECTIVITY_RULES),
    dns=checks.fields(**dns_options.RULES),
    stale_arp=checks.fields(**neighbors_options.RULES),
    logs=checks.fields(**logs_options.RULES),
    conntrack=checks.fields(**conntrack_options.RULES),
    pmtu=checks.fields(**pmtu_options.PASS_RULES),
    cilium_agent=checks.fields(**cilium_agent_options.RULES),
)


def skip_reason(name, params):
    """Why a scenario that was asked for does not apply with these parameters (None: it applies)."""
    if name == "connectivity" and not params.get("targets"):
        return "no peers to probe (connectivity.targets is empty)"
    if name == "dns" and not params.get("servers") and not params.get("host_resolvers"):
        return "no DNS server to ask (dns.servers is empty and host_resolvers is false)"
    if name == "stale_arp" and not params.get("addresses"):
        return "no VIP to check (stale_arp.addresses is empty)"
    if name == "pmtu" and not params.get("targets"):
        return "no peers to measure (pmtu.targets is empty)"
    return None


NOT_CILIUM = "not a Cilium node: no pinned cilium_* maps under /sys/fs/bpf/tc/globals and no Cilium agent socket"


def not_cilium_reason(cni_params):
    """The skip reason of the Cilium checks on a node that shows nothing of Cilium (None when it does):
    the same per-node decision as the triage's roles (cni_files.detect: pinned maps, agent socket,
    a cilium-cni configuration)."""
    from ansible_collections.k8snet.triage.plugins.module_utils import cni_files  # pylint: disable=import-outside-toplevel

    try:
        configs = cni_files.read_dir(cni_params.get("conf_dir") or "/etc/cni/net.d",
                                     cni_params.get("bin_dir") or "/opt/cni/bin")["configs"]
    except TriageError:
        configs = []
    return None if cni_files.detect(configs)["cilium"] else NOT_CILIUM


def _cilium_on_node(conf_dir):
    from ansible_collections.k8snet.triage.plugins.module_utils import cni_files  # pylint: disable=import-outside-toplevel

    return cni_files.cilium_on_node(conf_dir or "/etc/cni/net.d")[0]


def _calico_config(conf_dir):
    from ansible_collections.k8snet.triage.plugins.module_utils import cni_files  # pylint: disable=import-outside-toplevel

    return cni_files.has_calico_config(conf_dir or "/etc/cni/net.d")


def failed_finding(name, node, error):
    """The finding of a scenario that could not run (as the triage records a failed scenario role)."""
    return finding(
        "triage.check_failed", "warning", "control-plane", node,
        "the %s check could not run on %s: %s" % (name, node, error),
        {"scenario": name, "error": error},
        "Run playbook k8snet.triage.%s alone with -v on this host to see why." % name)


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _failed(name, node, error):
    return {"status": "failed", "reason": error, "findings": [failed_finding(name, node, error)], "data": {}}


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
        reason = "not asked for" if name not in wanted else skip_reason(name, sub)
        if not reason and name == "cilium_maps" and sub.get("when_not_cilium") == "skip":
            reason = not_cilium_reason(params.get("cni") or {})
        if not reason and name == "cilium_agent":
            # the check's own decision, made before its code (and its HTTP client) is loaded
            reason = cilium_agent_options.skip_reason(sub, lambda: _cilium_on_node(sub.get("cni_conf_dir")))
        if not reason and name == "calico":
            # the same: no BIRD socket and no Calico configuration, decided before bird.py is loaded
            reason = bird_options.skip_reason(sub, lambda: _calico_config(sub.get("cni_conf_dir")))
        if reason:
            results[name] = {"status": "skipped", "reason": reason, "findings": [], "data": {}, "seconds": 0.0,
                             "cpu_seconds": 0.0}
        else:
            jobs.append((name, sub))
    return results, jobs


def run(params, runner, checks=None, clock=time.monotonic):
    """Run every asked-for, applicable check of this node at once; return the module's result.

    The sampled checks are loaded and started first; the other checks' code is imported while their
    windows run, then those checks start.  ``checks``: (name, check) pairs that replace the collection's
    own (tests)."""
    started, (cpu0, children0) = clock(), _cpu()
    node = params.get("node_name") or os.uname()[1]
    names = [name for name, _check in checks] if checks is not None else SCENARIOS
    get, prepare = (dict(checks).__getitem__, None) if checks is not None else (load, _prepare)
    results, jobs = plan(params, node, names)
    sampled, rest = [job for job in jobs if job[0] in SAMPLED], [job for job in jobs if job[0] not in SAMPLED]
    if jobs:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = []
            for stage in (sampled, rest):
                if stage is rest and rest and prepare:
                    prepare()
                loaded = []
                for name, sub in stage:  # every import of the stage first, in this thread (see load)
                    try:
                        loaded.append((name, sub, get(name)))
                    except Exception as exc:  # pylint: disable=broad-except
                        results[name] = dict(_failed(name, node, _error(exc)), seconds=0.0, cpu_seconds=0.0)
                for name, sub, check in loaded:
                    futures.append((name, pool.submit(_run_one, name, check, sub, runner, node, clock)))
            for name, future in futures:
                results[name] = future.result()
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
