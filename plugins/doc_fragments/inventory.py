# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The input of the filters that read nodes from the inventory (module_utils/core/inventory.py)."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
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
notes:
  - The inventory-node contract, shared by every role, namely a node's name is C(k8s_node_name) (default
    the inventory name); its address is C(k8s_node_ip) (default C(ansible_host), else the inventory name),
    an IP address (a prefix length is dropped); its pod CIDRs are C(k8s_pod_cidr), one CIDR or a list.
  - A host whose address is not an IP address fails the filter with a message naming the host.
"""
