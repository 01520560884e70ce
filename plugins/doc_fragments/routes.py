# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the pod-CIDR route check (route_check, node_triage pod_network)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.route_check); paired one-to-one with routes_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  peers:
    description:
      - Every node of the cluster with its node address and pod CIDRs; the role fills it from
        the inventory (C(k8s_node_ip), C(k8s_pod_cidr)).
      - The host's own entry (its O(node_name), or a O(peers[].node_ip) that is an address of the
        host) is recognised and used as the local pod CIDR.
    type: list
    elements: dict
    default: []
    suboptions:
      node:
        description: Node name.
        type: str
        required: true
      node_ip:
        description: The node's address (the gateway of its pod CIDR in direct mode).
        type: str
        required: true
      node_ips:
        description: More addresses of the node (e.g. its IPv6 address, the gateway of its IPv6 pod CIDR).
        type: list
        elements: str
        default: []
      pod_cidrs:
        description: The node's pod CIDRs (IPv4 and/or IPv6), network addresses.
        type: list
        elements: str
        required: true
  mode:
    description:
      - V(direct) expects C(<podCIDR> via <peer node_ip> dev <uplink>), the uplink being the
        device through which the node reaches the peer.
      - V(overlay) expects C(<podCIDR> ... dev <tunnel_device>) and does not check the gateway.
    type: str
    choices: [direct, overlay]
    default: direct
  tunnel_device:
    description: The overlay device (C(vxlan.calico), C(tunl0), C(cilium_vxlan)); must exist on the host.
    type: str
  local_pod_routes:
    description: Check the /32 and /128 routes to local C(cali*) / C(lxc*) pod devices.
    type: bool
    default: true
  destinations:
    description: Addresses to resolve like C(ip route get); the chosen routes are returned.
    type: list
    elements: str
    default: []
  reader:
    description:
      - V(auto) reads with C(ip -json) when C(ip) is installed, and with pyroute2 when it is not.
      - V(pyroute2) forces pyroute2 for everything; V(iproute2) forces C(ip -json) for everything.
    type: str
    choices: [auto, pyroute2, iproute2]
    default: auto
"""


# The same options as node_triage's pod_network option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("pod_network", ModuleDocFragment.DOCUMENTATION)
