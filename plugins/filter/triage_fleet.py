# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Mark findings as fleet conclusions (scope fleet, with the hosts they concern)."""

from __future__ import annotations

DOCUMENTATION = """
name: triage_fleet
short_description: mark findings as fleet conclusions, counted once in the report
version_added: 0.2.0
description:
  - Returns copies of the findings with C(scope=fleet) and C(hosts) set to the hosts they concern.
  - A fleet finding (an unowned VIP, a node no peer reaches, a finding about the Kubernetes API) may be
    published by several hosts; P(k8snet.triage.triage_report#filter) counts it once.
options:
  _input:
    description: A list of findings.
    type: list
    elements: dict
    required: true
  hosts:
    description: The hosts the findings concern.
    type: list
    elements: str
    required: true
"""

EXAMPLES = """
- name: Publish the API findings once for the fleet
  ansible.builtin.set_fact:
    cni_findings: "{{ __cni_api.findings | k8snet.triage.triage_fleet(ansible_play_hosts_all) }}"
"""

RETURN = """
_value:
  description: The findings, each with C(scope=fleet) and C(hosts) (sorted, unique).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import fleet
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def triage_fleet(findings, hosts):
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise AnsibleFilterError("triage_fleet expects a list of findings")
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_fleet expects the list of hosts (inventory host names) the findings concern")
    return [fleet(f, hosts) for f in findings]


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_fleet": triage_fleet})
