# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller-side: the nodes of an inventory group with their BGP addresses."""

from __future__ import annotations

DOCUMENTATION = """
name: calico_inventory_nodes
short_description: the nodes of an inventory group as name and BGP address
version_added: 0.1.0
description:
  - For each inventory host, C(name) and C(address) by the inventory-node contract (see the notes); for
    Calico, the address is the node's BGP address.
extends_documentation_fragment:
  - k8snet.triage.inventory
"""

EXAMPLES = """
- name: Nodes of the k8s_nodes group
  ansible.builtin.set_fact:
    nodes: "{{ groups['k8s_nodes'] | k8snet.triage.calico_inventory_nodes(hostvars) }}"
"""

RETURN = """
_value:
  description: One dict per host with C(host), C(name) and C(address).
  type: list
  elements: dict
"""

from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import NodeListError, inventory_nodes
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


class FilterModule(object):
    def filters(self):
        return guard_all({"calico_inventory_nodes": inventory_nodes}, domain_errors=(NodeListError,))
