# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The terminal summary of a fleet report."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.summary import triage_summary_lines

DOCUMENTATION = """
name: triage_summary_lines
short_description: a concise terminal summary of a triage report
version_added: 0.1.0
description:
  - Turns the output of P(k8snet.triage.triage_report#filter) into lines for a terminal. When the report was
    compared with the previous run (the C(report_write) action does), it leads with what changed - the new
    problems (and those escalated) not silenced, then the resolved ones; silenced problems are listed apart,
    with who silenced them, why and until when, and left out of the groups below.
  - Then counts by severity,
    the coverage (hosts not checked, scenarios skipped or failed with the reason) and layer first, then the
    problems grouped by check (critical first) with up to five hosts each and the
    next step to run.
  - Control characters (ESC, CR, newlines, other C0 and C1 controls), bidirectional overrides and other
    invisible format characters in the report are shown as visible escapes such as C(\\x1b), so one line stays
    one line and nothing in a finding can drive the terminal.
options:
  _input:
    description: The report built by P(k8snet.triage.triage_report#filter).
    type: dict
    required: true
  limit:
    description: The most checks to list.
    type: int
    default: 40
"""

EXAMPLES = """
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ report | k8snet.triage.triage_summary_lines }}"
"""

RETURN = """
_value:
  description: The summary lines.
  type: list
  elements: str
"""


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_summary_lines": triage_summary_lines})
