# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""report_fail_on: whether a JMESPath condition over a triage report holds (the run then fails)."""

from __future__ import annotations

DOCUMENTATION = """
name: report_fail_on
short_description: tell with a JMESPath expression whether a triage report should fail the run
version_added: 0.1.0
description:
  - Evaluates a JMESPath expression over a report built by P(k8snet.triage.triage_report#filter)
    (C(findings), C(counts), C(hosts), C(worst)) and returns true when the result is true in
    JMESPath's sense (not false, an empty list, an empty object or an empty string).
  - A result of null is refused with an error, since it means the expression names a field the report
    does not have (a typo would otherwise never fail the run). Compare instead, for example
    V(hosts.w1.worst == 'critical').
  - The report role fails the run when it is true (O(k8snet.triage.report#role:main:report_fail_on)).
  - While the expression runs, each finding also has C(groups), the inventory groups of its host (from
    O(groups)), so that a condition can name node roles, for example
    V(findings[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]).
  - An invalid expression or a missing jmespath library fails with a message that says what to fix.
options:
  _input:
    description: A report from P(k8snet.triage.triage_report#filter).
    type: dict
    required: true
  expression:
    description: The JMESPath expression over the report.
    type: str
    required: true
extends_documentation_fragment:
  - k8snet.triage.report_query
"""

EXAMPLES = """
- name: Fail only on critical L2 findings of control-plane nodes
  ansible.builtin.fail:
    msg: critical L2 findings on the control plane
  when: >-
    report_data | k8snet.triage.report_fail_on(
      "findings[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]", groups)

# Other conditions:
#   "counts.severity.critical > `0`"                       any critical finding (report_fail_on_critical)
#   "length(findings[?severity!='ok' && layer=='DNS']) >= `3`"   three or more DNS problems
#   "findings[?check=='bgp.not_established']"              any BGP session down
"""

RETURN = """
_value:
  description: Whether the condition holds.
  type: bool
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.report.query import report_fail_on
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


class FilterModule(object):
    def filters(self):
        return guard_all({"report_fail_on": report_fail_on})
