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
  - For each inventory host, C(name) is C(k8s_node_name) (default the inventory name) and
    C(address) is C(k8s_node_ip) (default C(ansible_host)), as in the inventory contract.
  - Fails naming the host when its address is not an IP address.
options:
  _input:
    description: Inventory host names, e.g. C(groups['k8s_nodes']).
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) of the play.
    type: dict
    required: true
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

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.inventory import NodeListError, inventory_nodes
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def calico_inventory_nodes(hosts, hostvars):
    try:
        return inventory_nodes(hosts, hostvars)
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return guard_all({"calico_inventory_nodes": calico_inventory_nodes})
