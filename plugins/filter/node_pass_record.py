# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage: one host's per-scenario result."""

from __future__ import annotations

DOCUMENTATION = """
name: node_pass_record
short_description: one host's per-scenario triage result from its node_triage task
version_added: 0.2.0
description:
  - Returns a dict of scenario name to C(status), C(reason), C(findings) and C(data) for the scenarios that were asked of
    the host. When the C(k8snet.triage.node_triage) task itself did not run (the host is
    unreachable, Python is missing), every asked scenario is C(failed) with that reason and no
    findings (the triage reports the unreachable host once, not once per scenario).
options:
  _input:
    description: The registered result of the node_triage task.
    type: dict
    required: true
  asked:
    description: The scenarios that were asked (the C(scenarios) parameter given to the task).
    type: list
    elements: str
    required: true
"""

EXAMPLES = """
- name: Record the result
  ansible.builtin.set_fact:
    triage_results: "{{ __pass | k8snet.triage.node_pass_record(__params.scenarios) }}"
"""

RETURN = """
_value:
  description: a dict of scenario name to C(status), C(reason), C(findings) and C(data).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def node_pass_record(result, asked):
    if not isinstance(result, dict):
        raise AnsibleFilterError("node_pass_record expects the registered result of a node_triage task")
    if not isinstance(asked, list) or not all(isinstance(name, str) for name in asked):
        raise AnsibleFilterError("node_pass_record expects the list of scenario names asked for, not %r" % (asked,))
    scenarios = result.get("scenarios")
    if isinstance(scenarios, dict) and not result.get("failed") and not result.get("unreachable"):
        return dict((name, {"status": entry["status"], "reason": entry["reason"], "findings": entry["findings"],
                            "data": entry["data"]})
                    for name, entry in scenarios.items() if name in asked)
    reason = result.get("msg") or ("unreachable" if result.get("unreachable") else "the node pass did not run")
    return dict((name, {"status": "failed", "reason": str(reason), "findings": [], "data": {}}) for name in asked)


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_record": node_pass_record})
