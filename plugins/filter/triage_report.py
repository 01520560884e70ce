# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Gather every host's findings into one fleet report (the structure the report role renders)."""

from __future__ import annotations

DOCUMENTATION = """
name: triage_report
short_description: gather the findings of every host into one fleet-wide report
version_added: 0.1.0
description:
  - Collects, for each host, every fact whose name ends in C(_findings) (each scenario role sets
    C(<role>_findings)) and every fact whose name ends in C(_details) (compact per-node details for the
    HTML views), tags each finding with its host and scenario, and counts them by severity, layer and check.
  - Hosts listed in O(unreachable), or whose fact C(triage_reachable) is false (set by C(triage.yml)),
    get a C(triage.host_unreachable) finding.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts to include.
    type: list
    elements: str
    required: true
  unreachable:
    description: Hosts that could not be reached (each gets a critical finding).
    type: list
    elements: str
    default: []
"""

EXAMPLES = """
- name: Build the report
  ansible.builtin.set_fact:
    report: "{{ hostvars | k8snet.triage.triage_report(groups['all']) }}"
"""

RETURN = """
_value:
  description: C(findings) (flat, most severe first, each with C(host) and C(scenario)), C(counts)
    (C(severity), C(layer), C(check)), C(hosts) (per host, worst severity and counts), C(details)
    (per host and scenario, the C(*_details) facts), C(worst).
  type: dict
"""

from collections import Counter

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.findings import SEVERITIES, finding, sort_findings, worst
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def triage_report(hostvars, hosts, unreachable=None):
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_report needs the list of hosts to include (inventory host names)")
    if not hasattr(hostvars, "get"):
        raise AnsibleFilterError("triage_report needs hostvars (a mapping of host name to variables), got %s"
                                 % type(hostvars).__name__)
    unreachable = set(unreachable or [])
    flat, per_host, details = [], {}, {}
    for host in hosts:
        facts = hostvars.get(host, {}) if hasattr(hostvars, "get") else {}
        mine = []
        if host in unreachable or facts.get("triage_reachable") is False:
            mine.append(dict(finding(
                "triage.host_unreachable", "critical", "L3", host,
                "%s could not be reached over SSH: none of its checks ran" % host,
                {}, "Check the node is up and sshd answers (ssh %s); a node that is down is itself a cause." % host),
                scenario="triage"))
        for key in sorted(facts.keys()):
            value = facts[key]
            if key.endswith("_findings") and isinstance(value, list):
                scenario = key[: -len("_findings")]
                mine.extend(dict(item, scenario=scenario) for item in value if isinstance(item, dict))
            elif key.endswith("_details") and isinstance(value, dict) and not key.startswith("__"):
                details.setdefault(host, {})[key[: -len("_details")]] = value
        for item in mine:
            item["host"] = host
        flat.extend(mine)
        if mine or host in details:
            per_host[host] = {"worst": worst(mine), "counts": dict(Counter(f["severity"] for f in mine))}
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
        "details": details,
        "worst": worst(flat),
    }


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_report": triage_report})
