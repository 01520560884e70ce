# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller-side helpers for the findings contract (docs/developing.md, "Findings in roles")."""

from __future__ import annotations

DOCUMENTATION = """
name: findings_lines
short_description: render findings as one line each, most severe first
version_added: 0.1.0
description:
  - Turns a list of findings (the C(findings) every k8snet.triage module returns) into
    short lines, C(SEVERITY check subject) then the summary, sorted critical first, for a terminal.
  - Control characters (ESC, CR, newlines, other C0 and C1 controls), bidirectional overrides and other
    invisible format characters in a finding are shown as visible escapes such as C(\\x1b), so that text
    read from logs or the cluster cannot move the cursor, recolour or forge lines on the terminal.
options:
  _input:
    description: A list of findings.
    type: list
    elements: dict
    required: true
  ok:
    description: Include findings of severity C(ok).
    type: bool
    default: false
"""

EXAMPLES = """
- name: Print the findings of one check
  ansible.builtin.debug:
    msg: "{{ result.findings | k8snet.triage.findings_lines }}"
"""

RETURN = """
_value:
  description: One line per finding.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.terminal import terminal_text


def findings_lines(findings, ok=False):
    if not isinstance(findings, list):
        raise AnsibleFilterError("findings_lines expects a list of findings, got %s" % kind(findings))
    lines = []
    for item in sort_findings([f for f in findings if ok or f.get("severity") != "ok"]):
        lines.append("%-8s %-28s %s: %s" % tuple(terminal_text(v) for v in (
            str(item["severity"]).upper(), item["check"], item["subject"], item["summary"])))
    return lines


class FilterModule(object):
    def filters(self):
        return guard_all({"findings_lines": findings_lines})
