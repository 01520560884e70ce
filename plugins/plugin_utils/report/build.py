# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report on the controller: every host's coverage and findings gathered into one
structure (filter triage_report, action report_write) and the AWX artifacts. Its JSON for the HTML
page (filter triage_html_json) and the report files written atomically are in report_files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timezone

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import SEVERITIES, finding, placed, sort_findings, worst
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils import record
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import fold as report_fold
from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import first_names

# the version of triage-report.json's shape (docs/triage-report.schema.json): it changes when a key is removed or
# changes meaning; keys may be added within a version
SCHEMA_VERSION = 1

REACHED = ("reached", "controller")
HOST_FINDINGS = {
    "unreachable": ("triage.host_unreachable", "%s could not be reached over SSH%s: none of its checks ran (%s)",
                    "Check the node is up and sshd answers (ssh %s); a node that is down is itself a cause."),
    "no usable Python": ("triage.no_python", "%s answers over SSH but has no usable Python: none of its checks ran (%s)",
                         "Install Python 3.9+ on %s or set ansible_python_interpreter to one that exists."),
    "failed": ("triage.host_failed", "%s failed during the triage: the checks listed as failed did not run (%s)",
               "Run the failed scenarios' playbooks alone with -v on %s to see why."),
}


NOTHING_CHECKED = "triage.nothing_checked"
SCENARIO_NOT_RUN = "triage.scenario_not_run"
NO_NODE_CHECKED = "triage.no_node_checked"
KUBE_CREDENTIALS_UNUSABLE = "triage.kube_credentials_unusable"
# the coverage findings that fail a run whatever report_fail_on / report_fail_on_critical say: it did not check what
# it was asked to (the report role's last tasks fail on them, after the report and the artifacts are written)
NOT_GREEN = (NOTHING_CHECKED, SCENARIO_NOT_RUN, NO_NODE_CHECKED, KUBE_CREDENTIALS_UNUSABLE)
PEERS_LEFT_OUT = "triage.peers_left_out"


def _get(facts, name):
    try:
        return facts.get(name) if hasattr(facts, "get") else None
    except Exception:  # pylint: disable=broad-except
        return None


# the facts node_pass returns (a module's facts: under ansible_facts always, and as variables of their own only while
# ansible-core injects facts as variables, its INJECT_FACTS_AS_VARS, which a fleet's controller may turn off)
RECORD_FACTS = ("triage_host", "triage_results", "triage_node_timing")


def record_fact(variables, name):
    """The record fact ``name`` from a host's variables: as a variable (set_fact, or injected), else under
    ansible_facts; None when neither holds it."""
    value = _get(variables, name)
    if value is None:
        value = _get(_get(variables, "ansible_facts") or {}, name)
    return value


def host_facts(hostvars, host):
    """One host's variables as stored. From Ansible's hostvars, read raw (``raw_get``): the records
    are data the triage stored, and templating them again would walk every string of every
    finding (seconds for a fleet); from a plain mapping (tests), as they are. {} for an unknown host.
    The record facts are found whether or not ansible-core injects facts as variables."""
    try:
        raw_get = getattr(hostvars, "raw_get", None)
        facts = raw_get(host) if callable(raw_get) else hostvars[host]
    except Exception:  # pylint: disable=broad-except
        return {}
    if not isinstance(facts, Mapping):
        return {}
    found = dict((name, record_fact(facts, name)) for name in RECORD_FACTS)
    missing = dict((name, value) for name, value in found.items() if value is not None and _get(facts, name) is None)
    return dict(facts, **missing) if missing else facts


def _scenario_results(facts, scenario):
    """{scenario: result} from the facts one scenario role leaves (named, not scanned); {} when it left none."""
    found = _get(facts, scenario + "_findings")
    if not isinstance(found, list):
        return {}
    fleet = _get(facts, scenario + "_fleet_findings")
    details = _get(facts, scenario + "_details")
    return {scenario: record.result("ran", "", list(found) + (list(fleet) if isinstance(fleet, list) else []),
                                    details if isinstance(details, dict) else {})}


def _host_findings(state):
    """The findings a host's record carries itself (a bad host variable, the peers it left out)."""
    found = state.get("findings") if isinstance(state, dict) else None
    return [dict(f) for f in found if isinstance(f, dict)] if isinstance(found, list) else []


UNFINISHED = "did not finish: the host stopped answering or failed before this check recorded its outcome"


def _not_targeted(limit):
    """Why a host without any record was not checked (the --limit the run was given, if any)."""
    if limit:
        return "the triage did not target this host (it is in none of its groups, or --limit %s left it out)" % limit
    return "the triage did not target this host (it is in none of its groups)"


def _scenario_entry(result, status):
    """(entry, unfinished) of one scenario's result on a host of ``status``: an outcome that is not ran, skipped
    or failed is a failure when the host was reached (``unfinished``), else not run."""
    result = result if isinstance(result, dict) else {}
    s_status = str(result.get("status", "not finished"))
    s_reason = str(result.get("reason", "") or "")
    findings = [f for f in (result.get("findings") or []) if isinstance(f, dict)]
    unfinished = False
    if s_status not in ("ran", "skipped", "failed"):
        if status in REACHED:
            unfinished = True
            s_status, s_reason = "failed", UNFINISHED
        else:
            s_status, s_reason = "not run", "host %s" % status
    return {"status": s_status, "reason": s_reason, "findings": findings,
            "details": result.get("details") if isinstance(result.get("details"), dict) else {}}, unfinished


def _earlier(state, since, run=None):
    """Why ``state`` (a host's triage_host) is an earlier run's, kept by a fact cache; None when it is this run's or
    cannot tell.  ``run`` (this run's identity) decides when the record names its run; else its time, against
    ``since`` (the run's start): no time recorded or no start known cannot tell."""
    state = state if isinstance(state, dict) else {}
    recorded = state.get("recorded")
    if isinstance(recorded, bool) or not isinstance(recorded, (int, float)) or not 0 < recorded < 1e11:
        recorded = None  # not a time (NaN fails the comparison too): a cache's value is not trusted to be one
    mine = state.get("run")
    if run and isinstance(mine, str) and mine:
        if mine == run:
            return None
    elif since is None or recorded is None or recorded >= since - 1:
        return None
    when = (datetime.fromtimestamp(recorded, timezone.utc).isoformat(timespec="seconds")
            if recorded is not None else "no time recorded")
    return ("this run did not check it: its record is from an earlier run (%s), kept by the fact cache "
            "(--limit, or a play that did not reach it)" % when)


def _host_entry(host, facts, scenario=None, limit=None, since=None, run=None):
    """(status, reason, {scenario: result}) of one host, with unfinished scenarios resolved."""
    state = _get(facts, "triage_host")
    earlier = _earlier(state, since, run)
    if earlier:
        return "not checked", earlier, {}
    results = _get(facts, "triage_results")
    fleet = _get(facts, "node_pass_fleet_results")
    if state is None and results is None and isinstance(fleet, dict) and fleet:
        # a scenario role's pass published the fleet's conclusions here and nothing else recorded this host:
        # they are the controller's record, as the triage's API play makes them
        state, results = {"status": "controller", "reason": ""}, fleet
    results = dict(results) if isinstance(results, dict) else {}
    if not results and scenario:
        results = _scenario_results(facts, scenario)
        if not results:
            return "not checked", ("the %s playbook recorded nothing here (not in its play, or it stopped before)"
                                   % scenario), {}
    if not isinstance(state, dict):
        if not results:
            return "not checked", _not_targeted(limit), {}
        state = {"status": "reached", "reason": ""}
    status, reason = str(state.get("status", "failed")), str(state.get("reason", "") or "")
    scenarios, unfinished = {}, []
    for name in sorted(results):
        scenarios[name], stopped = _scenario_entry(results[name], status)
        if stopped:
            unfinished.append(name)
    if unfinished and status in REACHED and status != "controller":
        status, reason = "failed", "stopped during %s" % ", ".join(unfinished)
    return status, reason, scenarios


def _fleet_key(item):
    return (item.get("check"), str(item.get("subject")), str(item.get("summary")))


def _gaps(per_host):
    """What did not run on reached hosts, grouped: [{scenario, status, reason, hosts}] (compact for big fleets)."""
    groups = {}
    for host in sorted(per_host):
        if per_host[host]["status"] not in REACHED:
            continue
        for name, entry in sorted(per_host[host]["scenarios"].items()):
            if entry["status"] != "ran":
                groups.setdefault((name, entry["status"], entry["reason"]), []).append(host)
    return [{"scenario": name, "status": status, "reason": reason, "hosts": hosts}
            for (name, status, reason), hosts in sorted(groups.items())]


def _why_not(per_host, name):
    """Why scenario ``name`` ran on no host: its reasons grouped, with the hosts, most hosts first."""
    groups = {}
    for host in sorted(per_host):
        info = per_host[host]
        entry = info["scenarios"].get(name)
        if entry is None:
            continue
        reason = entry["reason"] or entry["status"]
        if entry["status"] == "not run" or (info["status"] not in REACHED + ("not checked",) and entry["status"] != "skipped"):
            reason = "host %s%s" % (info["status"], (": " + info["reason"][:200]) if info["reason"] else "")
        groups.setdefault("%s (%s)" % (entry["status"], reason), []).append(host)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _requested(requested, scenario):
    """The scenarios asked for by name, with a scenario playbook's own scenario last when not among them."""
    return list(requested or []) + ([scenario] if scenario and scenario not in (requested or []) else [])


def _ran(per_host):
    """The names of the scenarios that ran on at least one reached host."""
    return set(name for info in per_host.values() if info["status"] in REACHED
               for name, entry in info["scenarios"].items() if entry["status"] == "ran")


def _nothing_checked(per_host, requested, scenario):
    """``triage.nothing_checked``: no scenario ran on any host, with the hosts' statuses and why each did not run."""
    statuses = Counter(info["status"] for info in per_host.values())
    hosts_line = ", ".join("%d %s" % (n, s) for s, n in sorted(statuses.items())) or "no host at all"
    names = sorted(set(requested) | set(n for info in per_host.values() for n in info["scenarios"]))
    nowhere = ["no host of the run has it (the hosts' group is empty or left out by --limit)"]
    why = dict((name, ["%s on %s" % (reason, first_names(hosts)) for reason, hosts in _why_not(per_host, name)]
                or nowhere) for name in names)
    reasons = "; ".join("%s: %s" % (name, " / ".join(why[name][:3])) for name in names[:6])
    subject = ("scenario %s" % scenario) if scenario else "the triage"
    return finding(NOTHING_CHECKED, "critical", "control-plane", subject,
                   "nothing was checked: no scenario ran on any host (hosts: %s)%s" % (
                       hosts_line, (" - " + reasons) if reasons else ""),
                   {"hosts": dict(statuses), "scenarios": why, "requested": requested},
                   "Check the hosts are in the group the run targets (triage_nodes_group, default k8s_nodes) and "
                   "reachable, and that triage_scenarios / triage_cni name scenarios that apply to them; "
                   "then run again")


def _scenario_not_run(per_host, name):
    """``triage.scenario_not_run`` for scenario ``name``, asked for but run on no host, with why."""
    groups = _why_not(per_host, name)
    if groups:
        why = "; ".join("%s on %s" % (reason, first_names(hosts)) for reason, hosts in groups[:4])
    else:
        why = ("no host of the run has it (not a scenario of the triage's node pass or its API steps, or no host was "
               "targeted)")
    return finding(SCENARIO_NOT_RUN, "critical", "control-plane", "scenario %s" % name,
                   "scenario %s was asked for but ran on no host: %s" % (name, why),
                   {"scenario": name, "why": dict((reason, hosts) for reason, hosts in groups)},
                   "Give %s what it needs on the hosts named (the reasons say what is missing), or leave it "
                   "out of triage_scenarios" % name)


def node_coverage(per_host, nodes):
    """The triage's nodes in the coverage: ``{group, hosts, checked, reason}`` from ``nodes`` (``{"group": name,
    "hosts": its inventory hosts, or None when the inventory has no such group}``); ``checked`` counts the group's
    hosts that the run reached (their pass ran) or found that none of the scenarios asked for applies to (a
    scenario that applies nowhere is that scenario's gap, ``triage.scenario_not_run``, not the nodes'), ``reason``
    says why none was ('' when some was).  None without ``nodes`` (a scenario playbook's report, or a triage
    that asked for no node scenario)."""
    if not isinstance(nodes, Mapping) or not nodes.get("group"):
        return None
    group, members = str(nodes["group"]), nodes.get("hosts")
    members = None if members is None else [str(h) for h in members]
    checked = [h for h in members or [] if h in per_host and (per_host[h]["status"] == "reached" or (
        per_host[h]["status"], per_host[h]["reason"]) == record.NO_SCENARIO_APPLIES)]
    if checked:
        reason = ""
    elif members is None:
        reason = "the inventory has no group %s" % group
    elif not members:
        reason = "group %s has no host" % group
    else:
        statuses = Counter((per_host[h]["status"] if h in per_host else "not in the report") for h in members)
        reason = "none of the %d host%s of group %s was reached (%s)" % (
            len(members), "" if len(members) == 1 else "s", group,
            ", ".join("%d %s" % (n, s) for s, n in sorted(statuses.items())))
    return {"group": group, "hosts": len(members or []), "checked": len(checked), "reason": reason}


def _no_node_checked(per_host, nodes):
    """``triage.no_node_checked``: the triage checked the Kubernetes API's side but no node, and why."""
    ran = sorted(set(name for info in per_host.values() if info["status"] == "controller"
                     for name, entry in info["scenarios"].items() if entry["status"] == "ran"))
    # hosts outside the group that were checked (the VIPs' clients of stale_arp)
    others = sorted(host for host, info in per_host.items() if info["status"] == "reached")
    what = "the Kubernetes API's side (%s)" % (", ".join(ran) or "none")
    return finding(NO_NODE_CHECKED, "critical", "control-plane", "group %s" % nodes["group"],
                   "no node was checked: %s; only %s ran, so nothing on the nodes (routes, firewall, BGP, DNS from "
                   "the nodes, ARP, CNI files) is known" % (
                       nodes["reason"], what + (" and the checks of %s" % first_names(others) if others else "")),
                   {"group": nodes["group"], "hosts": nodes["hosts"], "reason": nodes["reason"], "api_ran": ran,
                    "other_hosts_checked": others},
                   "Put the cluster's nodes in group %s (or set triage_nodes_group to the group that holds them), "
                   "make them reachable over SSH (in AWX, a Machine credential) and run again; until then this run "
                   "covers the API's side only" % nodes["group"])


def coverage_findings(per_host, requested=None, scenario=None, nodes=None):
    """The run's own word when it checked nothing: ``triage.nothing_checked`` when no scenario ran on any
    host, else ``triage.scenario_not_run`` for each requested scenario that ran on none, with why (each
    host's status and each skip's reason), and ``triage.no_node_checked`` when the triage's nodes (``nodes``,
    ``node_coverage``'s) had none checked.  ``requested``: the scenarios the user asked for by name
    (None: only the first check; a scenario playbook's report asks for its scenario)."""
    requested = _requested(requested, scenario)
    ran = _ran(per_host)
    if not ran:
        return [_nothing_checked(per_host, requested, scenario)]
    found = [_scenario_not_run(per_host, name) for name in sorted(set(requested) - ran)]
    if nodes and not nodes["checked"]:
        found.append(_no_node_checked(per_host, nodes))
    return found


def _check_arguments(hostvars, hosts, scenario, requested, nodes=None):
    """Refuse arguments of triage_report that are not of the shape it reads (AnsibleFilterError names which)."""
    if nodes is not None and not (isinstance(nodes, Mapping) and isinstance(nodes.get("group"), str)
                                  and (nodes.get("hosts") is None or isinstance(nodes.get("hosts"), list))):
        raise AnsibleFilterError("triage_report: nodes must be {group: the nodes group's name, hosts: its hosts, or "
                                 "null when the inventory has no such group}, not %r" % (nodes,))
    if requested is not None and (not isinstance(requested, list) or not all(isinstance(n, str) for n in requested)):
        raise AnsibleFilterError("triage_report: requested must be the list of scenario names asked for, not %r"
                                 % (requested,))
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_report needs the list of hosts to include (inventory host names)")
    if not hasattr(hostvars, "get"):
        raise AnsibleFilterError("triage_report needs hostvars (a mapping of host name to variables), got %s"
                                 % kind(hostvars))
    if scenario is not None and (not isinstance(scenario, str) or not scenario.isidentifier()):
        raise AnsibleFilterError("triage_report: scenario must be a scenario name such as stale_arp, not %r"
                                 % (scenario,))


def _once(items, fleet_seen):
    """``items`` without the fleet findings already seen on another host (a fleet finding is counted once)."""
    kept = []
    for item in items:
        if item["scope"] == "fleet":
            key = _fleet_key(item)
            if key in fleet_seen:
                continue
            fleet_seen.add(key)
        kept.append(item)
    return kept


def _ssh_attempts(state):
    """How many SSH connections the host's pass took (1 when its record does not say)."""
    attempts = state.get("ssh_attempts") if isinstance(state, dict) else None
    return attempts if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 1 else 1


def _status_finding(host, status, reason, attempts=1):
    """The generic critical finding of a host that could not be checked (HOST_FINDINGS, by its status)."""
    check, summary, remediation = HOST_FINDINGS[status]
    evidence = {"reason": reason}
    if status == "unreachable":
        kind, words = report_fold.ssh_failure(reason)
        said = [words] if words else []
        if attempts > 1:
            said.append("%d connections tried" % attempts)
            evidence["ssh_attempts"] = attempts
        summary = summary % (host, " (%s)" % "; ".join(said) if said else "", reason or status)
        if kind:
            evidence["ssh_failure"] = kind
    else:
        summary = summary % (host, reason or status)
    return placed(finding(check, "critical", "L3", host, summary, evidence, remediation % host), "triage", "host")


def _host_summary(status, reason, scenarios, state):
    """A host's entry in the report's hosts: status, reason, its scenarios' status and reason (and the peers left
    out, the SSH retries); the counts and verdicts are set once the findings are folded (``_recount``)."""
    entry = {"status": status, "reason": reason, "verdict": "not checked", "worst": "not checked", "counts": {},
             "scenarios": dict((name, {"status": result["status"], "reason": result["reason"], "findings": 0,
                                       "worst": None}) for name, result in scenarios.items())}
    if _ssh_attempts(state) > 1:
        entry["ssh_retries"] = _ssh_attempts(state) - 1
    left_out = state.get("peers_left_out") if isinstance(state, dict) else None
    if isinstance(left_out, dict) and left_out:
        entry["peers_left_out"] = dict((str(k), str(v)) for k, v in left_out.items())
    return entry


def _host_report(host, facts, scenario, limit, fleet_seen, details, since=None, run=None):
    """(the findings of one host, its entry in the report's hosts); its scenarios' details go into ``details``."""
    status, reason, scenarios = _host_entry(host, facts, scenario, limit, since, run)
    state = _get(facts, "triage_host")
    if _earlier(state, since):
        state = None  # an earlier run's findings and peers left out are not this run's
    mine = _once([placed(item, item.get("scenario") or "triage") for item in _host_findings(state)], fleet_seen)
    if status in HOST_FINDINGS and not any(f["severity"] == "critical" for f in mine):
        # the generic word on a host that failed, unless its record already says why, critically
        mine.append(_status_finding(host, status, reason, _ssh_attempts(state)))
    for name, result in scenarios.items():
        mine.extend(_once([placed(item, name) for item in result["findings"]], fleet_seen))
        if result["details"]:
            details.setdefault(host, {})[name] = result["details"]
    for item in mine:
        item["host"] = host
    return mine, _host_summary(status, reason, scenarios, state)


def concerned(item):
    """The hosts whose card shows ``item``: the host that holds it, and each observer of a folded finding (a node
    that misses a peer's route is shown the one finding its pair was folded into)."""
    evidence = item.get("evidence") if isinstance(item.get("evidence"), dict) else {}
    hosts = [item.get("host")]
    if "folded" in evidence and isinstance(item.get("hosts"), list):
        hosts.extend(item["hosts"])
    return set(str(h) for h in hosts if h is not None)


def _recount(per_host, flat):
    """Each host's counts, verdict and scenario counts from the findings after the fold, so that a card counts what
    it shows: the pairs folded away from an observer are its share of the folded finding, the symptoms of a node
    that is down are no longer its observers' problems, and the host that holds a folded finding counts it."""
    shown = dict((host, []) for host in per_host)
    for item in flat:
        for host in concerned(item):
            if host in shown:
                shown[host].append(item)
    for host, entry in per_host.items():
        mine = shown[host]
        ran = any(s["status"] == "ran" for s in entry["scenarios"].values())
        entry["counts"] = dict(Counter(f["severity"] for f in mine))
        entry["verdict"] = entry["worst"] = worst(mine) if (ran or mine) else "not checked"
        for name, summary in entry["scenarios"].items():
            kept = [f for f in mine if f.get("scenario") == name]
            summary["findings"] = len(kept)
            summary["worst"] = worst(kept) if summary["status"] in ("ran", "failed") else None


def _count_on(entry, item):
    """Count ``item`` on the host entry that holds it (the controller's): its counts, verdict and worst."""
    entry["counts"][item["severity"]] = entry["counts"].get(item["severity"], 0) + 1
    before = [{"severity": entry["verdict"]}] if entry["verdict"] in SEVERITIES else []
    entry["verdict"] = entry["worst"] = worst([item] + before)


def _placed_coverage(per_host, requested, scenario, nodes=None):
    """The coverage findings as fleet findings of the controller (counted on it when it is in the report)."""
    out = []
    for item in coverage_findings(per_host, requested, scenario, nodes):
        where = "localhost" if "localhost" in per_host else None
        name = item["evidence"].get("scenario")
        concerned = sorted(h for h in per_host if name is None or name in per_host[h]["scenarios"])
        item = placed(item, "triage", "fleet", concerned, where)
        out.append(item)
        if where:
            _count_on(per_host[where], item)
    return out


def _counts(flat):
    """The report's counts of findings: by severity (all), by layer and by check (those not ok)."""
    problems = [f for f in flat if f["severity"] != "ok"]
    return {
        "severity": dict((name, sum(1 for f in flat if f["severity"] == name)) for name in SEVERITIES),
        "layer": dict(Counter(f["layer"] for f in problems)),
        "check": dict(Counter(f["check"] for f in problems)),
    }


def triage_report(hostvars, hosts, scenario=None, requested=None, limit=None, since=None, run=None, nodes=None):
    """The report (see the triage_report filter); ``nodes``: the triage's nodes group, ``{"group": name, "hosts":
    its inventory hosts or None}``, said in the coverage (``coverage.nodes``) and ``triage.no_node_checked``."""
    _check_arguments(hostvars, hosts, scenario, requested, nodes)
    flat, per_host, details, fleet_seen = [], {}, {}, set()
    addresses = {}
    for host in hosts:
        facts = host_facts(hostvars, host)
        mine, per_host[host] = _host_report(host, facts, scenario, limit, fleet_seen, details, since, run)
        flat.extend(mine)
        for key in ("k8s_node_ip", "ansible_host"):
            if isinstance(facts.get(key), str) and facts[key]:
                addresses.setdefault(facts[key], host)
    flat = report_fold.fold(flat, set(per_host), addresses)
    _recount(per_host, flat)
    node_cover = node_coverage(per_host, nodes)
    flat.extend(_placed_coverage(per_host, requested, scenario, node_cover))
    flat = sort_findings(flat)
    coverage = {
        "hosts": dict(Counter(h["status"] for h in per_host.values())),
        "scenarios": dict(Counter(s["status"] for h in per_host.values() for s in h["scenarios"].values())),
        "gaps": _gaps(per_host),
        # the hosts whose pass needed more than one SSH connection: {host: retries}
        "ssh_retries": dict((h, e["ssh_retries"]) for h, e in sorted(per_host.items()) if e.get("ssh_retries")),
    }
    if node_cover is not None:
        coverage["nodes"] = node_cover
    return {
        "findings": flat,
        "counts": _counts(flat),
        "hosts": per_host,
        "coverage": coverage,
        "details": details,
        "worst": worst(flat),
    }


def recount(data):
    """The counts and the worst severity again, after findings were added or silenced: ``counts.active``
    is ``counts.severity`` without the silenced findings, ``counts.silenced`` how many are."""
    data["findings"] = sort_findings(data["findings"])
    flat = data["findings"]
    counts = data["counts"]
    counts.update(_counts(flat))
    counts["active"] = dict((name, sum(1 for f in flat if f["severity"] == name and not f.get("silenced")))
                            for name in SEVERITIES)
    counts["silenced"] = sum(1 for f in flat if f.get("silenced"))
    data["worst"] = worst(flat)
    return data


def add_run_findings(data, items):
    """Add the run's own findings (about the silences file, the history) as fleet findings of the
    controller, as the coverage findings are; the caller recounts."""
    where = "localhost" if "localhost" in data["hosts"] else None
    for item in items:
        data["findings"].append(placed(item, "triage", "fleet", [where] if where else [], where))
        if where:
            _count_on(data["hosts"][where], item)
    return data


def artifacts(report, listed, limit, html=None):
    """The AWX / Automation Controller job artifacts (set_stats key k8snet_triage): worst, counts,
    coverage, per host its status, reason, verdict and counts, the first ``limit`` listed findings
    that are not ok, and where the HTML report is."""
    hosts = dict((name, {"status": info["status"], "reason": _truncate(info["reason"], 200), "verdict": info["verdict"],
                         "counts": info["counts"]}) for name, info in report["hosts"].items())
    findings = [item for item in listed if isinstance(item, dict) and item.get("severity") != "ok"][:max(0, limit)]
    out = {"worst": report["worst"], "counts": report["counts"], "coverage": report["coverage"], "hosts": hosts,
           "findings": findings, "report": html}
    since = report.get("since")
    if isinstance(since, dict):
        # the comparison with the previous run, as counts (the JSON report lists what was resolved)
        out["since"] = {"previous": since.get("previous"), "new": since.get("new", 0), "ongoing": since.get("ongoing", 0),
                        "resolved": since.get("resolved_total", len(since.get("resolved") or [])),
                        "unverified": since.get("unverified_total", len(since.get("unverified") or []))}
    return out


def _truncate(text, length):
    text = str(text or "")
    return text if len(text) <= length else text[:length - 3] + "..."
