# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage: the Kubernetes names of the hosts whose name is usable."""

from __future__ import annotations

DOCUMENTATION = """
name: node_pass_names
short_description: the Kubernetes node names of hosts, without those whose k8s_node_name is unusable
version_added: 0.2.0
description:
  - For each of O(hosts), its C(k8s_node_name) (else its inventory name) from the inventory contract
    read once (the input), as the fleet-wide API reads of the triage take them.
  - A host whose C(k8s_node_name) cannot be used (a control character, more than 253 characters) is left
    out, so one host's bad variable does not fail a read done for the whole fleet; that host's own pass
    fails with C(triage.bad_host_variable) and says why.
options:
  _input:
    description: The inventory contract of every host (host to C(k8s_node_name), C(k8s_node_ip), C(ansible_host), C(k8s_pod_cidr)).
    type: dict
    required: true
  hosts:
    description: The hosts whose names to give, in order.
    type: list
    elements: str
    required: true
"""

EXAMPLES = """
- name: The play's nodes by their Kubernetes names
  ansible.builtin.set_fact:
    names: "{{ __node_pass_inventory | k8snet.triage.node_pass_names(ansible_play_hosts_all) }}"
"""

RETURN = """
_value:
  description: The node names, in the order of O(hosts).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import usable_hosts
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def node_pass_names(inventory, hosts):
    if not hasattr(inventory, "get"):
        raise AnsibleFilterError("node_pass_names: the input must be the inventory contract of every host (a dict)")
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("node_pass_names: hosts must be the list of the play's host names")
    usable, _left_out = usable_hosts(hosts, inventory, ("k8s_node_name",))
    return [str((inventory.get(host) or {}).get("k8s_node_name") or host) for host in usable]


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_names": node_pass_names})
