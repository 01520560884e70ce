# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage: one host's per-scenario result."""

from __future__ import annotations

DOCUMENTATION = """
name: node_pass_record
short_description: one host's triage status and per-scenario results from its node_triage task
version_added: 0.2.0
description:
  - Returns C(host), the host's status (C(reached), C(unreachable), C(no usable Python), C(failed),
    or C(not checked) when no scenario applied to it) with the reason, and C(results), a dict of
    scenario name to C(status), C(reason), C(findings), C(details) and C(data), the structure the
    C(k8snet.triage.triage_report) filter reads (C(triage_host) and C(triage_results)).
  - Every asked scenario is in C(results) with the pass's outcome, and every scenario of O(skipped)
    as C(skipped) with its reason.
  - When the C(k8snet.triage.node_triage) task itself did not run on a reached host's behalf (the
    host is unreachable, Python is missing), the asked scenarios are C(not run) and carry no finding, and
    the report reports the host once, not once per scenario. When the module failed on the host,
    they are C(failed) with its message.
  - C(details) is the compact view the HTML report draws (BGP sessions, the fullest eBPF maps, the
    fastest-growing drop counters); C(data) is the scenario module's whole result.
options:
  _input:
    description: The registered result of the node_triage task (skipped when no scenario applied).
    type: dict
    required: true
  asked:
    description: The scenarios that were asked (the C(scenarios) parameter given to the task).
    type: list
    elements: str
    required: true
  skipped:
    description: The wanted scenarios that do not apply to the host, with the reason (C(skipped) of C(node_pass_params)).
    type: dict
    default: {}
"""

EXAMPLES = """
- name: Record the result
  ansible.builtin.set_fact:
    triage_host: "{{ (__pass | k8snet.triage.node_pass_record(__params.scenarios, __params.skipped)).host }}"
    triage_results: "{{ (__pass | k8snet.triage.node_pass_record(__params.scenarios, __params.skipped)).results }}"
"""

RETURN = """
_value:
  description:
    - C(host), a dict with C(status) and C(reason).
    - C(results), a dict of scenario name to C(status), C(reason), C(findings), C(details) and C(data).
  type: dict
"""

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

TOP = 8
NO_PYTHON = re.compile(r"interpreter|python", re.IGNORECASE)


def _top(rows, key, fields):
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get(key), (int, float))]
    return [dict((name, r.get(name)) for name in fields) for r in sorted(rows, key=lambda r: -r[key])[:TOP]]


def details(scenario, data):
    """The compact view of one scenario's data that the HTML report draws ({} for the others)."""
    data = data if isinstance(data, dict) else {}
    if scenario == "calico" and isinstance(data.get("peers"), list):
        return {"bgp_sessions": data["peers"]}
    if scenario == "cilium_maps" and isinstance(data.get("maps"), list):
        return {"map_fill": _top(data["maps"], "ratio", ("name", "type", "entries", "max_entries", "ratio"))}
    if scenario == "firewall_drops" and isinstance(data.get("drops"), list):
        return {"drop_rates": _top(data["drops"], "pps", ("backend", "chain", "rule", "owner", "pps"))}
    return {}


def _host(result, asked):
    """The host's status from the registered result (failed_when: false leaves failed false: the
    result of a pass that ran has its scenarios, any other is a failure, whatever its flag says)."""
    if result.get("unreachable"):
        return "unreachable", str(result.get("msg") or "no answer over SSH")
    if result.get("skipped") or not asked:
        return "not checked", "no scenario applies to this host"
    if isinstance(result.get("scenarios"), dict) and not result.get("failed"):
        return "reached", ""
    msg = str(result.get("msg") or "the node pass did not run")
    if result.get("rc") in (126, 127) or NO_PYTHON.search(msg):
        return "no usable Python", msg
    return "failed", msg


def node_pass_record(result, asked, skipped=None):
    if not isinstance(result, dict):
        raise AnsibleFilterError("node_pass_record expects the registered result of a node_triage task")
    if not isinstance(asked, list) or not all(isinstance(name, str) for name in asked):
        raise AnsibleFilterError("node_pass_record expects the list of scenario names asked for, not %r" % (asked,))
    if skipped is not None and not isinstance(skipped, dict):
        raise AnsibleFilterError("node_pass_record: skipped must be the dict of scenario to reason from node_pass_params")
    status, reason = _host(result, asked)
    results = dict((str(name), {"status": "skipped", "reason": str(why), "findings": [], "details": {}, "data": {}})
                   for name, why in (skipped or {}).items())
    scenarios = result.get("scenarios") if status == "reached" else None
    for name in asked:
        entry = scenarios.get(name) if isinstance(scenarios, dict) else None
        if isinstance(entry, dict):
            results[name] = {"status": entry.get("status", "failed"), "reason": entry.get("reason", ""),
                             "findings": entry.get("findings") or [], "details": details(name, entry.get("data")),
                             "data": entry.get("data") or {}}
        elif status in ("unreachable", "no usable Python"):
            results[name] = {"status": "not run", "reason": "host %s" % status, "findings": [], "details": {}, "data": {}}
        else:
            results[name] = {"status": "failed", "reason": reason or "the node pass did not return this scenario",
                             "findings": [], "details": {}, "data": {}}
    return {"host": {"status": status, "reason": reason}, "results": results}


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_record": node_pass_record})
