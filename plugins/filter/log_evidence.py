# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Put the log lines that explain a finding under that finding (controller side)."""

from __future__ import annotations

DOCUMENTATION = """
name: log_evidence
short_description: attach matching log lines as evidence to the findings they explain
version_added: 0.3.0
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

import copy

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

LINES_SHOWN = 3
# subjects about the cluster, not one node (webhook.cni_deadlock is about a webhook): explained from any node
CLUSTER_PREFIXES = ("webhook:",)
MAX_ITEMS = 100000


def node_of(subject):
    """The node a subject names: ``node2`` of ``node2``, ``node2/calico-node-x`` and ``node2:/opt/cni/bin``."""
    return str(subject).split("/", 1)[0].split(":", 1)[0]


def _checked_list(value, what):
    if not isinstance(value, list):
        raise AnsibleFilterError("log_evidence expects %s as a list, got %s" % (what, type(value).__name__))
    if len(value) > MAX_ITEMS:
        raise AnsibleFilterError("log_evidence: %s holds %d items, more than %d" % (what, len(value), MAX_ITEMS))
    for item in value:
        if not isinstance(item, dict):
            raise AnsibleFilterError("log_evidence expects %s to hold dicts, got %s" % (what, type(item).__name__))
    return value


def _explains(match, found):
    if found.get("check") not in (match.get("explains") or []):
        return False
    subject = str(found.get("subject"))
    if subject == "cluster" or subject.startswith(CLUSTER_PREFIXES):
        return True
    return node_of(subject) == node_of(match.get("subject"))


def log_evidence(findings, matches):
    findings = _checked_list(findings, "the findings")
    matches = _checked_list(matches, "matches")
    used, out = set(), []
    for found in findings:
        if str(found.get("check", "")).startswith("log."):
            out.append(found)
            continue
        explaining = [m for m in matches if _explains(m, found)]
        if not explaining:
            out.append(found)
            continue
        found = copy.deepcopy(found)
        evidence = found.get("evidence") if isinstance(found.get("evidence"), dict) else {}
        evidence = dict(evidence, logs=[{
            "check": m.get("check"), "subject": m.get("subject"), "count": m.get("count"),
            "first": m.get("first"), "last": m.get("last"), "lines": list(m.get("lines") or [])[:LINES_SHOWN]}
            for m in explaining])
        found["evidence"] = evidence
        used.update((m.get("check"), m.get("subject")) for m in explaining)
        out.append(found)
    return [f for f in out if (f.get("check"), f.get("subject")) not in used]


class FilterModule(object):
    def filters(self):
        return guard_all({"log_evidence": log_evidence})
