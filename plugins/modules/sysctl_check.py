#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: sysctl_check
short_description: the kernel parameters a node's pod network depends on
version_added: 0.2.0
description:
  - Reads, from C(/proc/sys) of the network namespace it runs in, the kernel parameters whose wrong value breaks
    the pod network while every daemon looks healthy, and says which one and how to set it.
  - C(sysctl.ip_forward_off) (critical) when C(net.ipv4.ip_forward) is 0; the node then drops every packet between
    its pods and the rest of the cluster.
  - C(sysctl.bridge_nf_off) (warning) when the node has a Linux bridge and C(br_netfilter) is not loaded or
    C(net.bridge.bridge-nf-call-iptables) is 0; bridged pod traffic then bypasses kube-proxy's iptables rules.
  - C(sysctl.rp_filter_on_cilium) (warning) when reverse-path filtering applies to an interface of
    O(rp_filter_interfaces) (the larger of C(conf.all) and the interface's value is not 0); systemd 245 and later
    set it, and the kernel then drops the asymmetric packets Cilium routes.
  - C(sysctl.neigh_table_full) (warning past O(neigh_warn_ratio), critical at the limit) when the IPv4 neighbour
    table nears C(net.ipv4.neigh.default.gc_thresh3); past it the kernel logs "neighbor table overflow" and
    refuses new neighbours.
  - C(sysctl.ok) otherwise, naming what was checked and what could not be read.
  - Read-only; reads files only (standard library).
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.sysctl
options:
  node_name:
    description: The node named in the findings; defaults to the host name.
    type: str
notes:
  - C(net.ipv4.neigh.default) exists in the host's initial network namespace only; in another namespace the
    neighbour table's limit is not readable, C(neigh.gc_thresh3) is null and C(sysctl.ok) says it was not checked.
  - Runs without root (the files read are world-readable).
author:
  - k8snet.triage contributors (@k8snet)
seealso:
  - module: k8snet.triage.route_check
  - module: k8snet.triage.conntrack_check
"""

EXAMPLES = r"""
- name: Are the kernel parameters of the pod network right?
  k8snet.triage.sysctl_check:
    node_name: worker-1

- name: Check rp_filter on Calico's interfaces too
  k8snet.triage.sysctl_check:
    rp_filter_interfaces: ["lxc*", "cilium_*", "vxlan.calico"]
"""

RETURN = r"""
ip_forward:
  description: C(net.ipv4.ip_forward) (null when not readable).
  returned: always
  type: int
  sample: 1
bridges:
  description: The node's Linux bridges.
  returned: always
  type: list
  elements: str
  sample: [cni0]
bridge_nf_call_iptables:
  description: C(net.bridge.bridge-nf-call-iptables); null when C(br_netfilter) is not loaded.
  returned: always
  type: int
  sample: 1
rp_filter_all:
  description: C(net.ipv4.conf.all.rp_filter).
  returned: always
  type: int
  sample: 0
rp_filter:
  description: The C(rp_filter) value of each interface matching O(rp_filter_interfaces).
  returned: always
  type: dict
  sample: {lxc12ab34cd: 0, cilium_host: 0}
neigh:
  description: The IPv4 neighbour entries of this namespace and C(gc_thresh3) (null where not readable).
  returned: always
  type: dict
  sample: {entries: 212, gc_thresh3: 1024}
findings:
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.sysctl import check as sysctl
from ansible_collections.k8snet.triage.plugins.module_utils.sysctl import options as sysctl_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, sysctl.node_check, sysctl_options.RULES,
                dict(sysctl_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
