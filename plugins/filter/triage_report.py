# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Gather every host's coverage and findings into one fleet report (the structure the report role renders)."""

from __future__ import annotations

DOCUMENTATION = """
name: triage_report
short_description: gather the coverage and the findings of every host into one fleet-wide report
version_added: 0.1.0
description:
  - Reads, for each host, the two facts C(k8snet.triage.triage) records and nothing else
    (no scanning of fact names).
  - C(triage_host) is a dict with C(status) and C(reason); C(status) is C(reached), C(unreachable),
    C(no usable Python), C(failed) or C(controller). A host without it was not checked (C(not checked)).
  - C(triage_results) maps each scenario to a dict with C(status), C(reason), C(findings) and C(details);
    C(status) is C(ran), C(skipped), C(failed) or C(not finished). Not finished means the host stopped
    answering before the scenario recorded its outcome; it is reported as C(failed), and the host as
    C(failed) unless it was already known unreachable.
  - Every host and every scenario is in the report with its status and reason. A host that was not
    reached gets a critical finding (C(triage.host_unreachable), C(triage.no_python) or
    C(triage.host_failed)), so a gap in coverage is never shown as ok.
  - A finding with C(scope=fleet) (a conclusion about several hosts, listing them in C(hosts)) is
    counted once, however many hosts published it.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts to include (every inventory host, and the controller).
    type: list
    elements: str
    required: true
  scenario:
    description:
      - For the report of one scenario playbook (no C(triage_host) / C(triage_results)), the scenario whose
        role's facts to read, by name, on each host without C(triage_results) - C(<scenario>_findings) and
        C(<scenario>_fleet_findings). A host where the role recorded nothing is C(not checked).
    type: str
"""

EXAMPLES = """
- name: Build the report
  ansible.builtin.set_fact:
    report: "{{ hostvars | k8snet.triage.triage_report(groups['all'] + ['localhost']) }}"
"""

RETURN = """
_value:
  description:
    - C(findings) (flat, most severe first, each with C(host), C(scenario) and C(scope)).
    - C(counts) (C(severity), C(layer), C(check) over the findings, each counted once).
    - C(hosts) (per host C(status), C(reason), C(verdict) (the worst severity, or C(not checked)),
      C(counts) and C(scenarios), per scenario C(status), C(reason), C(findings) (how many) and C(worst)).
    - C(coverage) (how many hosts per status, how many host x scenario pairs per status, and C(gaps), the
      scenarios that did not run on reached hosts grouped by scenario, status and reason, with their hosts).
    - C(details) (per host and scenario, the compact details the scenario published), C(worst).
  type: dict
"""

from collections import Counter

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.findings import SEVERITIES, finding, sort_findings, worst
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

REACHED = ("reached", "controller")
HOST_FINDINGS = {
    "unreachable": ("triage.host_unreachable", "%s could not be reached over SSH: none of its checks ran (%s)",
                    "Check the node is up and sshd answers (ssh %s); a node that is down is itself a cause."),
    "no usable Python": ("triage.no_python", "%s answers over SSH but has no usable Python: none of its checks ran (%s)",
                         "Install Python 3.9+ on %s or set ansible_python_interpreter to one that exists."),
    "failed": ("triage.host_failed", "%s failed during the triage: the checks listed as failed did not run (%s)",
               "Run the failed scenarios' playbooks alone with -v on %s to see why."),
}


def _get(facts, name):
    try:
        return facts.get(name) if hasattr(facts, "get") else None
    except Exception:  # pylint: disable=broad-except
        return None


def _scenario_results(facts, scenario):
    """{scenario: result} from the facts one scenario role leaves (named, not scanned); {} when it left none."""
    found = _get(facts, scenario + "_findings")
    if not isinstance(found, list):
        return {}
    fleet = _get(facts, scenario + "_fleet_findings")
    details = _get(facts, scenario + "_details")
    return {scenario: {"status": "ran", "reason": "", "findings": list(found) + (list(fleet) if isinstance(fleet, list) else []),
                       "details": details if isinstance(details, dict) else {}}}


def _host_entry(host, facts, scenario=None):
    """(status, reason, {scenario: result}) of one host, with unfinished scenarios resolved."""
    state = _get(facts, "triage_host")
    results = _get(facts, "triage_results")
    results = dict(results) if isinstance(results, dict) else {}
    if not results and scenario:
        results = _scenario_results(facts, scenario)
        if not results:
            return "not checked", "the %s playbook recorded nothing here (not in its play, or it stopped before)" % scenario, {}
    if not isinstance(state, dict):
        if not results:
            return "not checked", "the triage did not target this host (it is in none of its groups)", {}
        state = {"status": "reached", "reason": ""}
    status, reason = str(state.get("status", "failed")), str(state.get("reason", "") or "")
    scenarios, unfinished = {}, []
    for name in sorted(results):
        result = results[name] if isinstance(results[name], dict) else {}
        s_status = str(result.get("status", "not finished"))
        s_reason = str(result.get("reason", "") or "")
        findings = [f for f in (result.get("findings") or []) if isinstance(f, dict)]
        if s_status not in ("ran", "skipped", "failed"):
            if status in REACHED:
                unfinished.append(name)
                s_status, s_reason = "failed", "did not finish: the host stopped answering or failed before this check recorded its outcome"
            else:
                s_status, s_reason = "not run", "host %s" % status
        scenarios[name] = {"status": s_status, "reason": s_reason, "findings": findings,
                           "details": result.get("details") if isinstance(result.get("details"), dict) else {}}
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


def triage_report(hostvars, hosts, scenario=None):
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_report needs the list of hosts to include (inventory host names)")
    if not hasattr(hostvars, "get"):
        raise AnsibleFilterError("triage_report needs hostvars (a mapping of host name to variables), got %s"
                                 % type(hostvars).__name__)
    if scenario is not None and (not isinstance(scenario, str) or not scenario.isidentifier()):
        raise AnsibleFilterError("triage_report: scenario must be a scenario name such as stale_arp, not %r" % (scenario,))
    flat, per_host, details, fleet_seen = [], {}, {}, set()
    for host in hosts:
        try:
            facts = hostvars[host]
        except Exception:  # pylint: disable=broad-except
            facts = {}
        status, reason, scenarios = _host_entry(host, facts, scenario)
        mine = []
        if status in HOST_FINDINGS:
            check, summary, remediation = HOST_FINDINGS[status]
            mine.append(dict(finding(check, "critical", "L3", host, summary % (host, reason or status), {"reason": reason},
                                     remediation % host), scenario="triage", scope="host"))
        summary_scenarios = {}
        for name, result in scenarios.items():
            kept = []
            for item in result["findings"]:
                item = dict(item, scenario=name)
                item.setdefault("scope", "host")
                if item["scope"] == "fleet":
                    key = _fleet_key(item)
                    if key in fleet_seen:
                        continue
                    fleet_seen.add(key)
                kept.append(item)
            mine.extend(kept)
            summary_scenarios[name] = {"status": result["status"], "reason": result["reason"], "findings": len(kept),
                                       "worst": worst(kept) if result["status"] in ("ran", "failed") else None}
            if result["details"]:
                details.setdefault(host, {})[name] = result["details"]
        for item in mine:
            item["host"] = host
        flat.extend(mine)
        ran = [s for s in summary_scenarios.values() if s["status"] == "ran"]
        verdict = worst(mine) if (ran or mine) else "not checked"
        per_host[host] = {"status": status, "reason": reason, "verdict": verdict,
                          "worst": verdict, "counts": dict(Counter(f["severity"] for f in mine)),
                          "scenarios": summary_scenarios}
    flat = sort_findings(flat)
    problems = [f for f in flat if f["severity"] != "ok"]
    return {
        "findings": flat,
        "counts": {
            "severity": dict((name, sum(1 for f in flat if f["severity"] == name)) for name in SEVERITIES),
            "layer": dict(Counter(f["layer"] for f in problems)),
            "check": dict(Counter(f["check"] for f in problems)),
        },
        "hosts": per_host,
        "coverage": {
            "hosts": dict(Counter(h["status"] for h in per_host.values())),
            "scenarios": dict(Counter(s["status"] for h in per_host.values() for s in h["scenarios"].values())),
            "gaps": _gaps(per_host),
        },
        "details": details,
        "worst": worst(flat),
    }


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_report": triage_report})
