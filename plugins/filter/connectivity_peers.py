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

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import connectivity_peers


class FilterModule(object):
    def filters(self):
        return guard_all({"connectivity_peers": _connectivity_peers})


def _connectivity_peers(nodes, node, limit, hostvars):
    return connectivity_peers(nodes, node, limit, hostvars)
