# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Put the log lines that explain a finding under that finding (controller side)."""

from __future__ import annotations

DOCUMENTATION = """
name: log_evidence
short_description: attach matching log lines as evidence to the findings they explain
version_added: 0.2.0
description:
  - Joins findings with the log signature matches of C(k8snet.triage.kube_logs) and C(k8snet.triage.node_logs)
    (their C(matches) result, or the C(logs_matches) fact of role C(k8snet.triage.logs)).
  - A match explains a finding when the finding's C(check) is in the match's C(explains) and both are about
    the same node (the part of the subject before C(/) or C(:)). The finding gets C(evidence.logs), a list of the matches that explain it (check,
    subject, count, first and last timestamps, at most three lines). A finding about C(cluster) or a webhook
    (C(webhook:<configuration>/<webhook>)) is explained by a match on any node.
  - The C(log.*) finding of a match that explained another finding is dropped (its lines are now under that
    finding); a match that explains nothing stays a finding of its own, with the runbook's next step.
  - Pure; the findings given are not changed in place.
options:
  _input:
    description: A list of findings (the collection's findings contract).
    type: list
    elements: dict
    required: true
  matches:
    description: The matches (C(check), C(subject), C(count), C(first), C(last), C(lines), C(explains)).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = """
- name: The CNI findings of this node, with the log lines that explain them
  ansible.builtin.debug:
    msg: "{{ (cni_findings + logs_findings) | k8snet.triage.log_evidence(logs_matches) | k8snet.triage.findings_lines }}"
"""

RETURN = """
_value:
  description: The findings, explained ones with C(evidence.logs), the C(log.*) findings that explained one left out.
  type: list
  elements: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.log_evidence import log_evidence


class FilterModule(object):
    def filters(self):
        return guard_all({"log_evidence": log_evidence})
