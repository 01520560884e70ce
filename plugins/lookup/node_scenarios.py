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
  - With O(reads), only the scenarios that need one of those reads of the fleet, which the role
    C(k8snet.triage.node_pass) makes once on the controller before the pass; the role makes a read when a wanted
    scenario needs it.
  - Takes no terms.
options:
  reads:
    description:
      - Names of the fleet's reads - C(kube_network_info) (the Node list, Service frontends and DNS servers),
        C(node_network_status) (node conditions, taints, CNI pods), C(webhook_deadlock) (admission webhooks that
        would deadlock with the CNI), C(kube_logs) (the network agents' logs and events), C(dns_pod) (the pod
        whose view of DNS the dns check adds), C(vip_owners) (the VIP owners' pre-read) - as a list or one name.
      - Each scenario declares the reads it needs (C(API_READS) in C(plugins/module_utils/scenarios/<name>.py)).
        A name that no scenario declares is refused with the names there are.
    type: list
    elements: str
"""

EXAMPLES = """
- name: Refuse a scenario the triage does not have
  ansible.builtin.assert:
    that: triage_scenarios | difference(query('k8snet.triage.node_scenarios')) | length == 0

- name: Read the node conditions when a wanted scenario needs them
  k8snet.triage.node_network_status:
  when: wanted | intersect(query('k8snet.triage.node_scenarios', reads='node_network_status')) | length > 0
"""

RETURN = """
_list:
  description: The scenario names, in report order (with O(reads), those that need one of them).
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import READS, SCENARIOS


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("node_scenarios takes no terms (it gives every node scenario's name), not %r"
                                     % (list(terms)[:3],))
        self.set_options(var_options=variables, direct=kwargs)
        reads = self.get_option("reads")
        if reads is None:
            return list(SCENARIOS)
        unknown = [name for name in reads if name not in READS]
        if unknown:
            raise AnsibleLookupError("node_scenarios: no scenario needs the read %s; the reads are %s (each scenario's "
                                     "API_READS)" % (", ".join(repr(name)[:60] for name in unknown[:3]),
                                                     ", ".join(sorted(READS))))
        return [name for name in SCENARIOS if any(name in READS[read] for read in reads)]
