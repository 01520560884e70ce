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

What needs the fleet (expected BGP peers, pod-CIDR peers, probe targets, DNS servers, the
VIP owners' MACs, live frontends) is not computed here: the controller computes it once
and hands it in with each scenario's parameters.

The result, per scenario: ``{"status": "ran"|"skipped"|"failed", "reason", "findings",
"data", "seconds"}``; a check whose data says ``applicable: false`` (with ``skip_reason``) found
on the node that it does not apply, and is skipped.  A scenario that fails (its reader raised) does not stop the others: it
becomes a ``triage.check_failed`` finding, the same one the triage records when a scenario
role fails on a host.
"""

from __future__ import annotations

import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils import bird, cilium_lb, cni_files, dns, iptables
from ansible_collections.k8snet.triage.plugins.module_utils import neighbors, reachability, routes
from ansible_collections.k8snet.triage.plugins.module_utils import conntrack, logs, pmtu
from ansible_collections.k8snet.triage.plugins.module_utils import cilium_agent
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks
from ansible_collections.k8snet.triage.plugins.module_utils import scenario
# The checks import these inside their functions. Imported here, before any thread starts: two
# threads importing one module at once can see it half-initialised (ImportError: cannot import
# name 'Netlink'), which happened in the AnsiballZ payload on a loaded 2-core host.
from ansible_collections.k8snet.triage.plugins.module_utils import arp_probe, netlink  # noqa: F401 pylint: disable=unused-import
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sort_findings

# name -> the node check; the ones with a sampling window first, so their windows start first
CHECKS = (
    ("firewall_drops", iptables.node_check),
    ("cilium_agent", cilium_agent.node_check),
    ("connectivity", reachability.node_check),
    ("dns", dns.node_check),
    ("stale_arp", neighbors.node_check),
    ("cni", cni_files.node_check),
    ("calico", bird.node_check),
    ("cilium_maps", cilium_lb.node_check),
    ("pod_network", routes.node_check),
    ("logs", logs.node_check),
    ("conntrack", conntrack.node_check),
    ("pmtu", pmtu.node_check),
)
SCENARIOS = tuple(name for name, _check in CHECKS)
# the scenarios whose check names the node in its findings
NODE_NAMED = ("cni", "firewall_drops", "pod_network", "logs", "conntrack", "pmtu", "cilium_agent")

# The argument spec of the node_triage module: one dict option per scenario, whose suboptions are
# that scenario's CHECK_SPEC (shared with its module, documented by the domain's doc fragment, variant
# NODE_TRIAGE).  The defaults that differ are the triage's (the scenario roles' defaults), not the
# scenario modules' own: this is the triage's entry point.
ARGUMENT_SPEC = dict(
    node_name=dict(type="str"),
    scenarios=dict(type="list", elements="str", choices=list(SCENARIOS), default=list(SCENARIOS)),
    cni=scenario.options(cni_files.CHECK_SPEC),
    calico=scenario.options(bird.CHECK_SPEC, when_not_calico="skip"),
    cilium_maps=scenario.options(cilium_lb.CHECK_SPEC, extra=dict(
        when_not_cilium=dict(type="str", choices=["check", "skip"], default="skip"),
    )),
    pod_network=scenario.options(routes.CHECK_SPEC),
    firewall_drops=scenario.options(iptables.CHECK_SPEC),
    connectivity=scenario.options(reachability.CHECK_SPEC, targets=[], probes=["icmp", "tcp", "arp"], tcp_port=10250, count=2),
    dns=scenario.options(dns.CHECK_SPEC, names=["kubernetes.default.svc.cluster.local"], host_resolvers=True),
    stale_arp=scenario.options(neighbors.CHECK_SPEC, addresses=[], probe=True),
    logs=scenario.options(logs.CHECK_SPEC),
    conntrack=scenario.options(conntrack.CHECK_SPEC),
    pmtu=scenario.options(pmtu.CHECK_SPEC, targets=[]),
    cilium_agent=scenario.options(cilium_agent.CHECK_SPEC),
)

# The option rules of node_triage: each scenario's own rules, from its domain file.  An empty list of
# peers to probe is not an error here: the scenario is skipped and says why (skip_reason).
_CONNECTIVITY_RULES = dict(reachability.RULES)
_CONNECTIVITY_RULES["targets"] = checks.each(reachability.TARGET_RULE, max_items=reachability.MAX_TARGETS)
RULES = dict(
    node_name=checks.node_name,
    scenarios=checks.each(checks.choice(*SCENARIOS), max_items=len(SCENARIOS), non_empty=True,
                          what="give at least one of %s" % ", ".join(SCENARIOS)),
    cni=checks.fields(**cni_files.RULES),
    calico=checks.fields(**bird.RULES),
    cilium_maps=checks.fields(**cilium_lb.RULES),
    pod_network=checks.fields(**routes.RULES),
    firewall_drops=checks.fields(**iptables.RULES),
    connectivity=checks.fields(**_CONNECTIVITY_RULES),
    dns=checks.fields(**dns.RULES),
    stale_arp=checks.fields(**neighbors.RULES),
    logs=checks.fields(**logs.RULES),
    conntrack=checks.fields(**conntrack.RULES),
    pmtu=checks.fields(**pmtu.PASS_RULES),
    cilium_agent=checks.fields(**cilium_agent.RULES),
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
    try:
        configs = cni_files.read_dir(cni_params.get("conf_dir") or "/etc/cni/net.d",
                                     cni_params.get("bin_dir") or "/opt/cni/bin")["configs"]
    except TriageError:
        configs = []
    return None if cni_files.detect(configs)["cilium"] else NOT_CILIUM


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


def _run_one(name, check, params, runner, node, clock):
    started = clock()
    try:
        out = check(params, runner)
        data = out["data"]
        if data.get("applicable") is False:
            # the check itself found that it does not apply here (calico: no BIRD and no Calico CNI)
            entry = {"status": "skipped", "reason": data.get("skip_reason") or "does not apply to this node",
                     "findings": [], "data": data}
        else:
            entry = {"status": "ran", "reason": "", "findings": out["findings"], "data": data}
    except TriageError as exc:
        entry = {"status": "failed", "reason": exc.message, "findings": [failed_finding(name, node, exc.message)],
                 "data": {}}
    except Exception as exc:  # pylint: disable=broad-except
        # one check's bug must not cost the other checks their results: it is reported as that check's failure
        error = "%s: %s" % (type(exc).__name__, exc)
        entry = {"status": "failed", "reason": error, "findings": [failed_finding(name, node, error)], "data": {}}
    entry["seconds"] = round(clock() - started, 3)
    return entry


def run(params, runner, checks=CHECKS, clock=time.monotonic):
    """Run every asked-for, applicable check of this node at once; return the module's result."""
    started, (cpu0, children0) = clock(), _cpu()
    node = params.get("node_name") or os.uname()[1]
    wanted = params.get("scenarios")
    wanted = list(SCENARIOS) if wanted is None else wanted
    results, jobs = {}, []
    for name, check in checks:
        sub = dict(params.get(name) or {})
        if name in NODE_NAMED:
            sub["node_name"] = node
        reason = "not asked for" if name not in wanted else skip_reason(name, sub)
        if not reason and name == "cilium_maps" and sub.get("when_not_cilium") == "skip":
            reason = not_cilium_reason(params.get("cni") or {})
        if reason:
            results[name] = {"status": "skipped", "reason": reason, "findings": [], "data": {}, "seconds": 0.0}
        else:
            jobs.append((name, check, sub))
    if jobs:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = [(name, pool.submit(_run_one, name, check, sub, runner, node, clock)) for name, check, sub in jobs]
            for name, future in futures:
                results[name] = future.result()
    cpu1, children1 = _cpu()
    everything = []
    for name, _check in checks:
        everything.extend(results[name]["findings"])
    return {
        "changed": False,
        "node": node,
        "scenarios": results,
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
