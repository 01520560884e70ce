# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The names of the triage's node scenarios, from their registry."""

from __future__ import annotations

DOCUMENTATION = """
name: node_scenarios
short_description: the names of the triage's node-side scenarios
version_added: 0.2.0
description:
  - Returns the names of the scenarios that M(k8snet.triage.node_triage) runs, in the order of the triage's
    report, from the one registry the module, its argument spec and the node_pass action are built from;
    the playbooks take their default O(k8snet.triage.node_triage#module:scenarios) and their checks of
    C(triage_scenarios) from it rather than from a list of their own.
  - Takes no terms.
options: {}
"""

EXAMPLES = """
- name: Refuse a scenario the triage does not have
  ansible.builtin.assert:
    that: triage_scenarios | difference(query('k8snet.triage.node_scenarios')) | length == 0
"""

RETURN = """
_list:
  description: The scenario names, in report order.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import SCENARIOS


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("node_scenarios takes no terms (it gives every node scenario's name), not %r"
                                     % (list(terms)[:3],))
        self.set_options(var_options=variables, direct=kwargs)
        return list(SCENARIOS)
