#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_triage
short_description: run every node-side triage check of a node in one pass
version_added: 0.2.0
description:
  - Runs, in one module invocation on the node, the node-side checks of the triage scenarios
    C(cni) (as M(k8snet.triage.cni_config_check)), C(calico) (M(k8snet.triage.calico_bgp_status)),
    C(cilium_maps) (M(k8snet.triage.bpf_map_usage), read-only), C(pod_network)
    (M(k8snet.triage.route_check)), C(firewall_drops) (M(k8snet.triage.iptables_drops)),
    C(connectivity) (M(k8snet.triage.reachability)), C(dns) (M(k8snet.triage.dns_check)),
    C(stale_arp) (M(k8snet.triage.arp_check), read-only), C(logs) (M(k8snet.triage.node_logs)),
    C(conntrack) (M(k8snet.triage.conntrack_check)), C(pmtu) (M(k8snet.triage.pmtu_check)), C(cilium_agent)
    (M(k8snet.triage.cilium_agent_status)) and C(sysctl) (M(k8snet.triage.sysctl_check)). Each check is the same function the
    scenario module runs, so the findings are the same as the scenario module's on the same
    host in the same state.
  - The checks run concurrently, one thread each. The waits (the firewall counters' two snapshots
    O(firewall_drops.interval) seconds apart, the reachability probes, the DNS queries, the ARP
    probes) overlap, so a pass takes about the longest window, not their sum.
  - It is a module, not an action plugin, on purpose. One module invocation is one SSH round
    trip and one Python start on the node, with every module_utils it needs bundled once into
    the AnsiballZ payload. An action plugin runs on the controller and would still have to
    execute one module per check on the node, paying those costs once per check.
  - What needs the whole fleet is not computed on the node. The controller computes it once
    before the pass (see the role C(k8snet.triage.node_pass) of this collection) and passes it
    in as the scenarios' parameters, e.g. O(calico.expected_peers), O(pod_network.peers),
    O(connectivity.targets), O(dns.servers), O(stale_arp.expected), O(cilium_maps.live_frontends).
  - A scenario not listed in O(scenarios), or without the input it needs (no probe targets, no
    DNS server, no VIP), is returned as C(skipped) with the reason. A scenario whose check fails
    (e.g. no BPF filesystem, no C(iptables-save)) is returned as C(failed) with the reason and a
    C(triage.check_failed) warning finding; the other scenarios still run.
  - The defaults of the scenario options are those of the triage's scenario roles (for example
    O(connectivity.tcp_port=10250) and O(dns.host_resolvers=true)), which are not always the
    scenario modules' own defaults.
  - Read-only; never changes the node. No repair option (ARP flush, bpf map cleanup) exists here.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.cni_files.node_triage
  - k8snet.triage.bird.node_triage
  - k8snet.triage.cilium_lb.node_triage
  - k8snet.triage.routes.node_triage
  - k8snet.triage.iptables.node_triage
  - k8snet.triage.reachability.node_triage
  - k8snet.triage.dns.node_triage
  - k8snet.triage.neighbors.node_triage
  - k8snet.triage.logs.node_triage
  - k8snet.triage.conntrack.node_triage
  - k8snet.triage.pmtu.node_triage
  - k8snet.triage.cilium_agent.node_triage
  - k8snet.triage.sysctl.node_triage
options:
  node_name:
    description:
      - This node's Kubernetes name (C(k8s_node_name), else the inventory name); names the node in
        the findings of C(cni), C(firewall_drops), C(pod_network), C(logs), C(conntrack), C(pmtu), C(cilium_agent) and C(sysctl), and recognises
        its own entry in O(pod_network.peers). Defaults to the host name.
    type: str
  deadline:
    description:
      - Seconds the whole pass may take on the node, from 5 to 3600. Each command gets what is left of it (at most
        O(command_timeout)); once it is spent no command and no check is started, and the module returns by then
        (plus the few seconds a killed command takes to exit), a check still running then C(failed) with a
        C(triage.check_failed) finding.
      - Must exceed the longest sampling window asked for (O(firewall_drops.interval), O(conntrack.interval),
        O(cilium_agent.interval)) by 10 seconds; otherwise the module fails and says so.
    type: float
    default: 300
  command_timeout:
    description:
      - Seconds one command (C(ip), C(nft), C(iptables-save), C(conntrack), C(journalctl), C(crictl) ...) may run,
        more than 0 and at most 3600. A command that runs out is killed with its process group and its scenario
        is C(failed) with a C(triage.check_failed) finding that names the command and the seconds; the other
        scenarios still report.
    type: float
    default: 60
  scenarios:
    description: The scenarios to run; the others are returned as C(skipped).
    type: list
    elements: str
    choices: [cni, calico, cilium_maps, cilium_agent, pod_network, firewall_drops, connectivity, dns, logs, conntrack,
              pmtu, sysctl, stale_arp]
    default: [cni, calico, cilium_maps, cilium_agent, pod_network, firewall_drops, connectivity, dns, logs, conntrack,
              pmtu, sysctl, stale_arp]
  cni:
    description: Options of the CNI files check (as M(k8snet.triage.cni_config_check)).
    type: dict
    default: {}
  calico:
    description: Options of the BGP session check (as M(k8snet.triage.calico_bgp_status)).
    type: dict
    default: {}
  cilium_maps:
    description: Options of the pinned bpf map check (as M(k8snet.triage.bpf_map_usage), read-only).
    type: dict
    default: {}
  pod_network:
    description: Options of the pod-CIDR route check (as M(k8snet.triage.route_check)).
    type: dict
    default: {}
  firewall_drops:
    description: Options of the DROP/REJECT counter check (as M(k8snet.triage.iptables_drops)).
    type: dict
    default: {}
  connectivity:
    description: Options of the peer probes (as M(k8snet.triage.reachability)).
    type: dict
    default: {}
  dns:
    description: Options of the DNS check (as M(k8snet.triage.dns_check)).
    type: dict
    default: {}
  stale_arp:
    description: Options of the neighbor cache check for VIPs (as M(k8snet.triage.arp_check), read-only).
    type: dict
    default: {}
  logs:
    description: Options of kubelet's and the runtime's log check (as M(k8snet.triage.node_logs), read-only).
    type: dict
    default: {}
  conntrack:
    description: Options of the conntrack table check (as M(k8snet.triage.conntrack_check)).
    type: dict
    default: {}
  pmtu:
    description: Options of the path-MTU probes to the peers (as M(k8snet.triage.pmtu_check)).
    type: dict
    default: {}
  cilium_agent:
    description: Options of the Cilium agent's API and metrics check (as M(k8snet.triage.cilium_agent_status)).
    type: dict
    default: {}
  sysctl:
    description: Options of the kernel parameter check (as M(k8snet.triage.sysctl_check)).
    type: dict
    default: {}
requirements:
  - Python 3.9 or later on the node (standard library; dnspython is used when importable). On an older Python the
    module fails at once with "needs Python 3.9 or later on the node, found ..." (3.8), or does not start at all
    (3.7 and older); the C(k8snet.triage.node_pass) action names the version in both cases.
  - C(ip) (iproute2), or pyroute2 where C(ip) is missing; C(iptables-save) / C(nft) for the firewall counters.
  - root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF) for the counters, raw probes and bpf maps.
notes:
  - The M(k8snet.triage.node_network_status) check and the API reads run on the controller, not here.
  - A pass whose SSH connection closes (the controller was killed) kills its running commands and returns at once.
    Through an SSH master connection that outlives the controller (ControlPersist) the node cannot tell; then
    O(deadline) ends the pass.
seealso:
  - module: k8snet.triage.route_check
  - module: k8snet.triage.iptables_drops
  - module: k8snet.triage.calico_bgp_status
"""

EXAMPLES = r"""
- name: One pass over the node
  k8snet.triage.node_triage:
    node_name: worker-1
    scenarios: [cni, calico, pod_network, firewall_drops, connectivity]
    calico:
      expected_peers: [10.0.0.11, 10.0.0.12, 10.0.0.13]
    pod_network:
      peers:
        - {node: worker-1, node_ip: 10.0.0.11, pod_cidrs: [10.244.1.0/24]}
        - {node: worker-2, node_ip: 10.0.0.12, pod_cidrs: [10.244.2.0/24]}
    connectivity:
      targets:
        - {address: 10.0.0.12, name: worker-2}
  register: pass_result
"""

RETURN = r"""
node:
  description: The node name used in the findings.
  returned: always
  type: str
scenarios:
  description:
    - One entry per scenario, C({status, reason, findings, data, seconds, cpu_seconds}). C(status) is C(ran),
      C(skipped) (with the C(reason)) or C(failed) (with the C(reason), and a C(triage.check_failed)
      finding). C(findings) are the scenario module's findings; C(data) is the rest of its result
      (e.g. C(peer_routes) for C(pod_network), C(drops) for C(firewall_drops), C(maps) for C(cilium_maps)).
    - C(seconds) is the check's wall time, C(cpu_seconds) the CPU of its thread (its commands' CPU not included).
  returned: always
  type: dict
  sample:
    calico: {status: ran, reason: "", findings: [], data: {peers: [], established: 0, sockets: []}, seconds: 0.02,
             cpu_seconds: 0.004}
    dns: {status: skipped, reason: "no DNS server to ask", findings: [], data: {}, seconds: 0.0, cpu_seconds: 0.0}
findings:
  description: Every scenario's findings together, most severe first.
  returned: always
  type: list
  elements: dict
timing:
  description:
    - C(seconds), the wall time of the pass on the node; C(cpu_seconds), the module's CPU (all threads)
      during the pass; C(children_cpu_seconds), the CPU of the commands it ran; C(process_cpu_seconds),
      the module process's CPU since it started (interpreter start and imports included).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.k8snet.triage.plugins.module_utils.core import payload

# before the imports below: a Python older than 3.9 fails here, naming its version; the payload's files are
# compiled once each, not twice
payload.require_python(AnsibleModule)
payload.compile_once()

from ansible_collections.k8snet.triage.plugins.module_utils import node_triage
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, fail_from


def main():
    module = rules.new_module(AnsibleModule, node_triage.RULES, argument_spec=node_triage.ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = node_triage.run(module.params, module)
    except InputError as exc:  # options that do not fit together (a window longer than the deadline)
        fail_from(module, exc)
    # each scenario's failure is already in its entry: nothing else fails the whole pass
    module.exit_json(**result)


if __name__ == "__main__":
    main()
