#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: route_check
short_description: check the pod-CIDR route mesh, next hops and local pod routes of a node
version_added: 0.1.0
description:
  - Reads the node's main routing table (IPv4 and IPv6), links and neighbor entries, and checks
    that every peer node's pod CIDR is routed via that peer (C(direct) routing) or the overlay's
    tunnel device (C(overlay)), with longest-prefix match, so a blackhole or a more specific
    route over part of a CIDR is found too.
  - Checks that the next hop of every peer route resolves (its neighbor entry is not FAILED or
    INCOMPLETE), that the local pod CIDR is not routed away, that peers' CIDRs do not overlap,
    and that every /32 or /128 route to a C(cali*) / C(lxc*) device has that device present and up.
  - Resolves O(destinations) like C(ip route get) and returns the route the kernel picks.
  - With O(reader=auto) the tables are read with C(ip -json) when C(ip) is installed (pyroute2
    otherwise), because pyroute2's pure-Python parsing took about 20 s on a 100k-route table
    where C(ip -json) plus parsing took about 1.5 s. Both readers give the same result (tested).
  - Read-only; never changes the node.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.routes
options:
  node_name:
    description: This host's node name, to recognise its own entry in O(peers).
    type: str
notes:
  - Needs C(ip) (iproute2) or the pyroute2 Python library on the node; no privileges beyond reading.
  - Only the main routing table is checked.
seealso:
  - module: k8snet.triage.arp_check
"""

EXAMPLES = r"""
- name: Check the direct-routing mesh of every node
  k8snet.triage.route_check:
    node_name: "{{ k8s_node_name | default(inventory_hostname) }}"
    peers:
      - node: node1
        node_ip: 198.18.32.11
        pod_cidrs: [198.19.0.0/24]
      - node: node2
        node_ip: 198.18.32.12
        pod_cidrs: [198.19.1.0/24]
    destinations: [198.19.1.10]

- name: Calico VXLAN overlay
  k8snet.triage.route_check:
    mode: overlay
    tunnel_device: vxlan.calico
    peers: "{{ cluster_peers }}"
"""

RETURN = r"""
findings:
  description: The findings (see the collection's findings contract), most severe first.
  returned: always
  type: list
  elements: dict
  sample:
    - check: route.missing
      severity: critical
      layer: L3
      subject: node2 198.19.1.0/24
      summary: no route for 198.19.1.0/24 (pods of node2); it falls to the less specific 0.0.0.0/0
      evidence: {cidr: 198.19.1.0/24, peer: node2, expected: 198.19.1.0/24 via 198.18.32.12 dev eth0,
                 found: 0.0.0.0/0 via 198.18.32.1 dev eth0}
      remediation: Add `ip route add 198.19.1.0/24 via 198.18.32.12 dev eth0` ...
peer_routes:
  description: One row per peer pod CIDR, with the route expected, the route found and the status.
  returned: always
  type: list
  elements: dict
  sample:
    - {node: node2, cidr: 198.19.1.0/24, expected: 198.19.1.0/24 via 198.18.32.12 dev eth0,
       found: 198.19.1.0/24 via 198.18.32.12 dev eth0 proto static, status: [ok]}
destinations:
  description: The route the kernel chose for each of O(destinations) (the netlink route model).
  returned: always
  type: list
  elements: dict
local_node:
  description: The peer entry recognised as this host, or null.
  returned: always
  type: str
routes_read:
  description: How many routes of the main table were read.
  returned: always
  type: int
reader:
  description: The reader used for the route dump (V(iproute2) or V(pyroute2)).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.routes import mesh as routes
from ansible_collections.k8snet.triage.plugins.module_utils.routes import options as routes_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, routes.node_check, routes_options.RULES, dict(routes_options.CHECK_SPEC, node_name=dict(type="str")),
                required_if=[("mode", "overlay", ["tunnel_device"])])


if __name__ == "__main__":
    main()
