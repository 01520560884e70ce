# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role connectivity: which peers one node probes."""

from __future__ import annotations

DOCUMENTATION = """
name: connectivity_peers
short_description: the sample of peers one node probes, as k8snet.triage.reachability targets
version_added: 0.1.0
description:
  - Orders the nodes in a ring (sorted by name) and picks, after O(node), every stride-th other node,
    at most O(limit) of them, so that a fleet of n nodes costs n x limit probes instead of n squared
    while every node is still probed by about O(limit) others.
  - Returns reachability targets, C(name) the peer's inventory name and C(address) its address by the
    inventory-node contract (C(k8s_node_ip), else C(ansible_host), else the inventory name; it must be an
    IP address), read from O(hostvars).
options:
  _input:
    description: The inventory names of the nodes.
    type: list
    elements: str
    required: true
  node:
    description: The node that probes.
    type: str
    required: true
  limit:
    description: Most peers to probe.
    type: int
    required: true
  hostvars:
    description: The play's C(hostvars), to read each peer's address.
    type: dict
    required: true
"""

EXAMPLES = """
- name: Probe a sample of peers
  k8snet.triage.reachability:
    targets: "{{ groups['k8s_nodes'] | k8snet.triage.connectivity_peers(inventory_hostname, 8, hostvars) }}"
"""

RETURN = """
_value:
  description: Targets C({address, name}).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils import params
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.inventory import NodeListError, inventory_nodes
from ansible_collections.k8snet.triage.plugins.module_utils.reachability import sample_peers
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def connectivity_peers(nodes, node, limit, hostvars):
    try:
        limit = params.number("limit", int(limit) if isinstance(limit, str) and limit.isdigit() else limit,
                              0, params.MAX_LIST * 64, integer=True)
        peers = sample_peers(list(nodes), node, limit)
    except InputError as exc:
        raise AnsibleFilterError(exc.message)
    try:
        # each peer's address by the inventory-node contract; the name stays the inventory name
        return [{"address": peer["address"], "name": peer["host"]} for peer in inventory_nodes(peers, hostvars)]
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return guard_all({"connectivity_peers": connectivity_peers})
