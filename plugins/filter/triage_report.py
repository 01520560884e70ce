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
  - A run that checked nothing is never green - when no scenario ran on any host, the critical fleet
    finding C(triage.nothing_checked) says so with each host's status and each scenario's reasons; a
    scenario of O(requested) (or O(scenario)) that ran on no host gives C(triage.scenario_not_run) with its
    reasons (every host skipped it, it applied nowhere, no host had it).
  - A host's C(triage_host) may carry C(findings) of its own (C(triage.bad_host_variable), C(triage.peers_left_out))
    and C(peers_left_out), the peers its checks left out and why; they are in its entry of the report.
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
  requested:
    description: The scenarios asked for by name, each of which must run on some host.
    type: list
    elements: str
  limit:
    description: The run's C(--limit) (C(ansible_limit)), named in the reason of a host the triage did not target.
    type: str
  nodes:
    description:
      - The triage's nodes group, C(group) (its name) and C(hosts) (its inventory hosts, null when the inventory has
        no such group). The coverage's C(nodes) says how many were checked and why none was; a run in which other
        scenarios ran but none of these hosts was checked gets the critical fleet finding C(triage.no_node_checked).
    type: dict
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
      C(counts) and C(scenarios), per scenario C(status), C(reason), C(findings) (how many) and C(worst);
      C(peers_left_out) when its checks left peers out).
    - C(coverage) (how many hosts per status, how many host x scenario pairs per status, and C(gaps), the
      scenarios that did not run on reached hosts grouped by scenario, status and reason, with their hosts; with
      O(nodes), C(nodes) - C(group), C(hosts), C(checked) and C(reason), why none was checked).
    - C(details) (per host and scenario, the compact details the scenario published), C(worst).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.build import triage_report


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_report": triage_report})
