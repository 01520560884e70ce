# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One scenario's record built in a playbook through the same constructor the plugins use."""

from __future__ import annotations

DOCUMENTATION = """
name: scenario_result
short_description: build one scenario's record, the structure the triage's report reads
version_added: 0.2.0
description:
  - Builds C({status, reason, findings, details}), one entry of a host's C(triage_results), with the
    constructor the node_pass action and the node_pass_fleet filter use, so that the record a playbook writes
    (an API scenario that ran, was skipped or failed) has the same shape and the same statuses.
  - Refuses, naming the problem, a status outside C(ran), C(skipped), C(failed), C(not run) and C(not finished).
options:
  _input:
    description: The status, one of C(ran), C(skipped), C(failed), C(not run), C(not finished).
    type: str
    required: true
  reason:
    description: Why it was skipped, failed or not run (empty when it ran).
    type: str
    default: ""
  findings:
    description: Its findings (the findings contract).
    type: list
    elements: dict
    default: []
  details:
    description: The compact view of its data the HTML report draws.
    type: dict
    default: {}
"""

EXAMPLES = """
- name: Record a scenario that did not apply here
  ansible.builtin.set_fact:
    triage_results: "{{ triage_results | default({}) | combine({'f5': 'skipped' | k8snet.triage.scenario_result('no credentials')}) }}"
"""

RETURN = """
_value:
  description: C({status, reason, findings, details}).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.plugin_utils import record
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def scenario_result(status, reason="", findings=None, details=None):
    if not isinstance(status, str) or not isinstance(reason, str):
        raise AnsibleFilterError("scenario_result: the status and the reason are text (status one of %s)"
                                 % ", ".join(record.STATUSES))
    if not isinstance(findings, (list, type(None))) or not all(isinstance(f, dict) and "check" in f for f in findings or []):
        raise AnsibleFilterError("scenario_result: findings must be a list of findings (dicts with check, severity, ...)")
    if not isinstance(details, (dict, type(None))):
        raise AnsibleFilterError("scenario_result: details must be a dict (the compact view the HTML report draws)")
    try:
        return record.result(status, reason, findings, details)
    except ValueError as exc:
        raise AnsibleFilterError("scenario_result: %s" % exc)


class FilterModule(object):
    def filters(self):
        return guard_all({"scenario_result": scenario_result})
