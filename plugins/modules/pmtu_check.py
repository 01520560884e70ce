#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""module: pmtu_check
short_description: find path-MTU black holes between this node and its peers with DF-set probes
version_added: 0.2.0
description:
  - For each target, sends ICMP echo requests with the Don't Fragment bit set (C(IP_PMTUDISC_PROBE), so the
    path-MTU cache does not stop a size from being sent) and finds by binary search, between O(min_size) and
    the MTU of the interface the route to the target uses, the largest total IP size that is answered.
  - Watches the socket's error queue (C(IP_RECVERR)) for ICMP "fragmentation needed" about these probes, with
    the next-hop MTU and the router that sent it.
  - Findings; C(net.pmtu_blackhole) (critical; the largest size that passes is smaller than the interface
    MTU and no "fragmentation needed" came back), C(net.pmtu_reduced) (info; smaller, but the path says so
    and path-MTU discovery works), C(net.pmtu_unchecked) (info; not even O(min_size) bytes were answered),
    or C(net.pmtu) (ok; full-size packets reach every target).
  - The evidence holds the MTU of every interface that matters on this node; the route's device (uplink or
    tunnel), every tunnel (vxlan, ipip, geneve, wireguard ...) and the pod veths (C(lxc*), C(cali*) ...).
  - A target that is not a peer is refused with an error naming it, before anything is sent; the unspecified
    address C(0.0.0.0) and 0.0.0.0/8, loopback, multicast, the broadcast address, 240.0.0.0/4, and this node's
    own addresses (the kernel's route to them is local, through C(lo)). Probes to them would measure C(lo).
  - Targets are probed in parallel; one target costs about log2(MTU - O(min_size)) sizes of two probes, a lost
    size costs O(timeout). Read-only; standard library and C(ip) (pyroute2 where C(ip) is missing).
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.pmtu
  - k8snet.triage.pacing
options:
  node_name:
    description: The node named in the findings; defaults to "this node".
    type: str
  netns_pid:
    description:
      - Probe from the network namespace of this process (a pod's container process), as C(nsenter -t PID -n)
        would; the path then starts at the pod's C(eth0), and the interfaces in evidence are the pod's.
    type: int
notes:
  - Needs CAP_NET_RAW (C(become=true)), or C(net.ipv4.ping_group_range) covering the user.
  - A lost size is a lost request or a lost reply; the echo reply has the request's size, so a black hole in
    either direction shows.
author:
  - k8snet.triage contributors (@k8snet)
"""

EXAMPLES = r"""
- name: Do full-size packets reach the other nodes?
  k8snet.triage.pmtu_check:
    targets:
      - {address: 198.18.64.12, name: worker-1}
      - {address: 198.18.64.13, name: worker-2}
  become: true

- name: Through the overlay, to a pod on another node
  k8snet.triage.pmtu_check:
    targets: [{address: 198.19.65.7, name: web-0}]
    timeout: 1
  become: true

- name: From a pod (its container's pid on this node) to a pod on another node
  k8snet.triage.pmtu_check:
    targets: [{address: 198.19.64.9, name: api-0}]
    netns_pid: 4242
  become: true
"""

RETURN = r"""
peers:
  description: One row per target; the interface, the sizes probed, the largest answered and the ICMP seen.
  returned: always
  type: list
  elements: dict
  sample:
    - {address: 198.18.64.12, name: worker-1, dev: eth0, probed_min: 576, probed_max: 1500, largest: 1400,
       frag_needed: null, probes: 22, seconds: 3.1}
interfaces:
  description: The MTUs of the route devices, the tunnels and the pod veths of this node.
  returned: always
  type: dict
  sample:
    route_devices: [{ifname: eth0, kind: veth, mtu: 1500, up: true}]
    tunnels: [{ifname: vxlan.calico, kind: vxlan, mtu: 1450, up: true}]
    pod_veths: {count: 12, mtus: {"1450": 12}, sample: [{ifname: cali12ab34cd56e, kind: veth, mtu: 1450, up: true}]}
skipped:
  description:
    - Targets that are not peers, with the reason. Always empty for this module, which refuses them; node_triage's
      pmtu skips them there (and in the finding C(net.pmtu_target_skipped), info) and measures the others.
  returned: always
  type: list
  elements: dict
  sample: []
findings:
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu
from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, pmtu.module_check, pmtu_options.RULES, dict(pmtu_options.CHECK_SPEC, node_name=dict(type="str"), netns_pid=dict(type="int")))


if __name__ == "__main__":
    main()
