# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role pod_network: route_check's peers from the inventory."""

from __future__ import annotations

DOCUMENTATION = """
name: pod_network_peers
short_description: the nodes of an inventory group with a pod CIDR, as k8snet.triage.route_check peers
version_added: 0.2.0
description:
  - For each inventory host that has C(k8s_pod_cidr) (one CIDR or a list), one peer of
    M(k8snet.triage.route_check)'s O(k8snet.triage.route_check#module:peers), by the inventory-node
    contract (see the notes), namely C(node) the node's name, C(node_ip) its address and C(pod_cidrs)
    its C(k8s_pod_cidr) as a list. Hosts without C(k8s_pod_cidr) are left out.
extends_documentation_fragment:
  - k8snet.triage.inventory
"""

EXAMPLES = """
- name: Check the pod-CIDR routes against every node of the inventory
  k8snet.triage.route_check:
    peers: "{{ groups['k8s_nodes'] | k8snet.triage.pod_network_peers(hostvars) }}"
"""

RETURN = """
_value:
  description: One dict per host with a pod CIDR, with C(node), C(node_ip) and C(pod_cidrs).
  type: list
  elements: dict
"""

from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import NodeListError, pod_cidr_peers
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


class FilterModule(object):
    def filters(self):
        return guard_all({"pod_network_peers": pod_cidr_peers}, domain_errors=(NodeListError,))
