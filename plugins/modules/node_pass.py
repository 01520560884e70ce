#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_pass
short_description: one task per host for the triage - its checks built, run in one pass, and recorded
version_added: 0.2.0
description:
  - The node side of C(triage.yml) as one task per host. On the controller, builds this host's
    M(k8snet.triage.node_triage) parameters from the triage's and the scenario roles' variables
    (C(triage_*), C(cni_*), C(calico_*), C(cilium_maps_*), C(cilium_agent_*), C(pod_network_*), C(firewall_drops_*),
    C(connectivity_*), C(dns_*), C(stale_arp_*), with the roles' names and defaults) and from the
    inventory (the nodes' names and addresses, C(k8s_node_name), C(k8s_node_ip), C(k8s_pod_cidr)).
    Then runs node_triage on the host, in one SSH round trip, and records its result as the facts
    the report reads.
  - The expected BGP peers and pod-CIDR peers come from C(calico_expected_nodes) /
    C(pod_network_peers), else the Kubernetes Node list in O(kube), else the inventory; the peers to
    probe from C(connectivity_group); the DNS servers and the live Service frontends from O(kube)
    when that read returned its facts, else C(dns_servers) / C(cilium_maps_live_frontends); the
    VIP owners' MACs from O(owners).
  - Every wanted scenario (C(triage_scenarios)) that does not apply to the host is recorded as
    C(skipped) with the reason (not in C(triage_nodes_group), C(triage_cni) names another CNI, no
    DNS servers and why the API gave none, not in C(stale_arp_clients_group), no C(stale_arp_vips)).
  - A host that cannot be reached, has no usable Python, or where node_triage fails is recorded
    with that status and the reason (the task itself succeeds with a warning, so the run goes on
    and the report names the host); its scenarios are C(not run) (or C(failed)).
  - One host's bad inventory variable is that host's. A host whose C(k8s_node_name) (a control
    character, too long), C(k8s_node_ip) (not an address) or C(k8s_pod_cidr) (not CIDRs) cannot be used
    is recorded C(failed) with the critical finding C(triage.bad_host_variable) naming the variable, its
    value (escaped) and the fix, and none of its checks runs. The other hosts leave it out of the peer
    lists that need that variable (pod-CIDR peers, expected BGP peers, connectivity and path-MTU
    targets), record it in C(triage_host.peers_left_out) with the reason, and publish the warning
    C(triage.peers_left_out) (once for the fleet). A peer without a usable address (C(ansible_host) a
    name and no C(k8s_node_ip)) is left out likewise, without failing its own pass.
  - An action plugin, so that preparing the parameters and recording the result cost no task of
    their own. The checks themselves run in the node_triage module, one invocation per host.
  - Read-only.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - ansible.builtin.action_common_attributes.facts
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: The parameters and the record are computed on the controller; the checks run in node_triage on the node.
  async:
    support: none
  bypass_host_loop:
    support: none
  facts:
    support: full
    details: Sets C(triage_host), C(triage_results) and C(triage_node_timing) (under C(ansible_facts) whether or not facts are injected as variables).
options:
  owners:
    description:
      - The output of the P(k8snet.triage.vip_owners#filter) filter over the VIP owners' C(arp_check)
        results (its C(expected), VIP to the owner's MAC, is handed to the C(stale_arp) check).
      - Leave out without VIPs.
    type: dict
  kube:
    description:
      - The registered result of M(k8snet.triage.kube_network_info) read once on the controller
        (C(nodes), C(service_frontends), C(dns_servers)).
      - Left out, skipped, without credentials or failed, the API's inputs are not used and the
        variables are; the reason is given where a scenario is skipped for want of them.
    type: dict
  pod:
    description:
      - The registered result of M(k8snet.triage.kube_network_info) with O(k8snet.triage.kube_network_info#module:gather=[pod])
        for C(dns_pod), read once on the controller. The host whose node runs that pod (matched by
        C(k8s_node_name), else its inventory name) adds the pod's view to its dns check (C(pod_ip)), and
        C(dns_repeat) runs there only.
      - Left out, or without C(dns_pod), no pod view is checked.
    type: dict
  inventory:
    description:
      - The inventory-node contract of every host, read once for the fleet - host name to its
        C(k8s_node_name), C(k8s_node_ip), C(ansible_host) and C(k8s_pod_cidr) (the role C(k8snet.triage.node_pass)
        builds it in one C(run_once) step).
      - Left out, each host reads every other host's variables itself, which costs n x n templating on
        the controller for n hosts.
    type: dict
  read_role_facts:
    description:
      - Read O(owners), O(kube), O(pod) and O(inventory), each when it is not given, from the facts the role
        C(k8snet.triage.node_pass) sets before its pass (C(__node_pass_owners), C(__node_pass_kube),
        C(__node_pass_dns_pod), C(__node_pass_inventory)), as they are.
      - The role sets it. Given as templates, these fleet-sized values are templated again for every host, which
        grows with the fleet for each host (with ansible-core 2.19, a 300-entry dict given as an argument cost
        about 0.35 s of controller CPU per host); read as facts they are not.
      - Also reads C(node_pass_scenario), which a scenario role sets (C(tasks_from=scenario)) - when it names a
        scenario and O(scenarios) and O(nodes) are not given, the pass is narrowed to that scenario on the play's
        hosts (C(ansible_play_hosts_all)), as if they were given. Read here, not given as templates - a template in
        the task's arguments is compiled again by every host's worker process on the controller.
    type: bool
    default: false
  scenarios:
    description:
      - A scenario role's pass - the node scenarios to run, in place of C(triage_scenarios). Given with O(nodes).
      - The host's earlier C(triage_results) (another scenario role's) are kept beside this pass's.
    type: list
    elements: str
  nodes:
    description:
      - With O(scenarios), the hosts that count as the scenario's nodes (the role's play, C(ansible_play_hosts_all)),
        in place of the group C(triage_nodes_group).
    type: list
    elements: str
seealso:
  - module: k8snet.triage.node_triage
notes:
  - The playbook C(k8snet.triage.triage) uses it through the role C(k8snet.triage.node_pass),
    which reads the fleet's inputs once before and publishes the fleet's conclusions once after.
"""

EXAMPLES = r"""
- name: Every node-side check of this host, recorded for the report
  k8snet.triage.node_pass:
    owners: "{{ vip_owners_result | default(omit) }}"
    kube: "{{ kube_read | default(omit) }}"
"""

RETURN = r"""
host_status:
  description: This host's status (C(reached), C(unreachable), C(no usable Python), C(failed), C(not checked)) and the reason.
  returned: always
  type: dict
  sample: {"status": "reached", "reason": ""}
scenarios:
  description: The status of each wanted scenario on this host (C(ran), C(skipped), C(failed), C(not run)).
  returned: always
  type: dict
  sample: {"cni": "ran", "calico": "skipped"}
timing:
  description: node_triage's own wall time and CPU on the node (empty when it did not run).
  returned: always
  type: dict
ansible_facts:
  description: The facts the report reads.
  returned: always
  type: complex
  contains:
    triage_host:
      description: Same as RV(host_status).
      type: dict
    triage_results:
      description: Per scenario C(status), C(reason), C(findings), C(details) (the compact view the HTML report draws) and C(data).
      type: dict
    triage_node_timing:
      description: Same as RV(timing).
      type: dict
"""
