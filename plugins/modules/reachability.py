#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: reachability
short_description: ICMP, TCP connect and ARP probes from this host to a list of targets, in parallel
version_added: 0.1.0
description:
  - Probes every target with ICMP echo, a TCP connect and an ARP request (on-link targets only), in
    parallel threads inside the module, and says for each what answered.
  - Findings; C(reach.unreachable) (layer 2 when ARP got no answer, else layer 3), C(reach.port_closed)
    (a RST; the host is up), C(reach.port_filtered) (the host answers but the port is silent),
    C(reach.arp_conflict) (several MACs answered one address), C(reach.loss), or C(reach.ok).
  - With O(netns_pid) the probes leave from the network namespace of that process (a pod), as
    C(nsenter -t PID -n) would. With O(pod_ip) they leave from the network namespace on this host that
    holds that address (a pod's, found by its IP without a PID or a container runtime).
  - Standard library only; ICMP and ARP need CAP_NET_RAW.
options:
  netns_pid:
    description:
      - Probe from the network namespace of this process (for example a pod's container process).
      - Mutually exclusive with O(pod_ip).
    type: int
  pod_ip:
    description:
      - Probe from the network namespace on this host that holds this address (an IPv4 or IPv6 address),
        found by scanning the per-process and named network namespaces (C(crictl) only as a fast path when
        installed). Run it on the pod's node, as root (entering a namespace needs CAP_SYS_ADMIN).
      - Fails naming the address when no namespace, or more than one, holds it.
      - Mutually exclusive with O(netns_pid).
    type: str
attributes:
  check_mode:
    details: Probes change nothing on the host; they run in check mode too.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.reachability
  - k8snet.triage.pacing
  - k8snet.triage.netlink
"""

EXAMPLES = r"""
- name: Can this node reach its peers?
  k8snet.triage.reachability:
    targets:
      - {address: 198.18.0.12, name: worker-1}
      - {address: 198.18.0.13, name: worker-2}
    probes: [icmp, tcp, arp]
    tcp_port: 10250

- name: TCP probe of a LoadBalancer VIP from a pod's network namespace
  k8snet.triage.reachability:
    targets: [{address: 198.18.0.202, port: 80}]
    probes: [tcp]
    netns_pid: 4242

- name: The same from a pod found by its IP on its node (no PID needed)
  k8snet.triage.reachability:
    targets: [{address: 198.18.0.100, port: 9}]
    probes: [tcp]
    pod_ip: 198.19.1.3
"""

RETURN = r"""
targets:
  description: One row per target with the probes sent and what answered.
  returned: always
  type: list
  elements: dict
  sample:
    - address: 198.18.0.12
      name: worker-1
      reachable: true
      icmp: {sent: 3, received: 3, rtt_ms: 0.071, error: null}
      tcp: {port: 10250, status: open, attempts: 1, ms: 0.2, error: null}
      arp: {status: answered, interface: eth0, macs: ["02:18:00:00:00:02"], error: null}
answered:
  description: Names of the targets that answered at least one probe.
  returned: always
  type: list
  elements: str
silent:
  description: Names of the targets that answered no probe.
  returned: always
  type: list
  elements: str
findings:
  description:
    - Findings (the collection's findings contract) with checks C(reach.unreachable), C(reach.port_closed),
      C(reach.port_filtered), C(reach.arp_conflict), C(reach.loss) and C(reach.ok).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability
from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability_options
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink_options import NETLINK_ARGUMENT_SPEC
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    argument_spec = dict(reachability_options.CHECK_SPEC, netns_pid=dict(type="int"), pod_ip=dict(type="str"),
                         **NETLINK_ARGUMENT_SPEC)
    module_main(AnsibleModule, reachability.node_check, reachability_options.RULES, argument_spec,
                mutually_exclusive=[("netns_pid", "pod_ip")])


if __name__ == "__main__":
    main()
