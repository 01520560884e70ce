# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""report_select: the findings of a triage report that a JMESPath expression selects."""

from __future__ import annotations

DOCUMENTATION = """
name: report_select
short_description: select findings of a triage report with a JMESPath expression
version_added: 0.1.0
description:
  - Applies a JMESPath expression to the C(findings) of a report built by
    P(k8snet.triage.triage_report#filter) and returns the findings it selects, for example
    V([?severity=='critical' && layer=='L2']).
  - While the expression runs, each finding also has C(groups), the inventory groups of its host (from
    O(groups)), so that V([?contains(groups, 'control_plane')]) selects the findings of control-plane
    nodes. C(groups) is not part of the returned findings.
  - The expression must give a list of findings (an empty list for none). Null (a field the findings do
    not have, e.g. a typo) is refused, so a typo cannot hide findings. Anything else, an invalid
    expression, or a missing jmespath library fails with a message that says what to fix.
options:
  _input:
    description: A report from P(k8snet.triage.triage_report#filter) (a dict with C(findings)).
    type: dict
    required: true
  expression:
    description: The JMESPath expression, applied to the list of findings. Empty selects every finding.
    type: str
    required: true
extends_documentation_fragment:
  - k8snet.triage.report_query
"""

EXAMPLES = """
- name: List only the critical L2 findings of control-plane nodes
  ansible.builtin.debug:
    msg: >-
      {{ report_data | k8snet.triage.report_select(
           "[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]", groups) }}
"""

RETURN = """
_value:
  description: The selected findings, in the report's order (most severe first).
  type: list
  elements: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.report.query import report_select
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


class FilterModule(object):
    def filters(self):
        return guard_all({"report_select": report_select})
