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
    C(connectivity) (M(k8snet.triage.reachability)), C(dns) (M(k8snet.triage.dns_check)) and
    C(stale_arp) (M(k8snet.triage.arp_check), read-only). Each check is the same function the
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
    before the pass (see the C(tasks/node_pass.yml) playbook of this collection) and passes it
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
  - ansible.builtin.action_common_attributes
options:
  node_name:
    description:
      - This node's Kubernetes name (C(k8s_node_name), else the inventory name); names the node in
        the findings of C(cni), C(firewall_drops) and C(pod_network) and recognises its own entry in
        O(pod_network.peers). Defaults to the host name.
    type: str
  scenarios:
    description: The scenarios to run; the others are returned as C(skipped).
    type: list
    elements: str
    choices: [firewall_drops, connectivity, dns, stale_arp, cni, calico, cilium_maps, pod_network, conntrack, pmtu]
    default: [firewall_drops, connectivity, dns, stale_arp, cni, calico, cilium_maps, pod_network, conntrack, pmtu]
  cni:
    description: Options of the CNI files check (as M(k8snet.triage.cni_config_check)).
    type: dict
    default: {}
    suboptions:
      conf_dir:
        description: The CNI configuration directory.
        type: path
        default: /etc/cni/net.d
      bin_dir:
        description: The CNI plugin binaries directory.
        type: path
        default: /opt/cni/bin
  calico:
    description: Options of the BGP session check (as M(k8snet.triage.calico_bgp_status)).
    type: dict
    default: {}
    suboptions:
      sockets:
        description: BIRD control sockets; default calicoctl's (C(/var/run/calico/bird.ctl), C(bird6.ctl)).
        type: list
        elements: path
      expected_peers:
        description: The BGP addresses of every node of the cluster (this node's own is left out on the node).
        type: list
        elements: str
        default: []
      node_to_node_mesh:
        description: Whether Calico's node-to-node mesh is on (false with route reflectors).
        type: bool
        default: true
      stuck_after:
        description: Seconds a session may be down before its finding is critical.
        type: int
        default: 300
      timeout:
        description: Seconds to wait for BIRD.
        type: int
        default: 5
      when_not_calico:
        description:
          - V(skip) (the triage's C(triage_cni=auto)) records the scenario as skipped, "not a Calico node",
            when the node has no BIRD socket and no Calico CNI configuration; V(critical) keeps a missing
            BIRD a critical C(bgp.bird_down) (C(triage_cni=calico)).
        type: str
        choices: [critical, skip]
        default: skip
      cni_conf_dir:
        description: Where to look for a Calico CNI configuration when no BIRD socket answers.
        type: path
        default: /etc/cni/net.d
  cilium_maps:
    description: Options of the pinned bpf map check (as M(k8snet.triage.bpf_map_usage), read-only).
    type: dict
    default: {}
    suboptions:
      bpffs:
        description: Where the bpf filesystem is mounted.
        type: path
        default: /sys/fs/bpf
      maps:
        description: Pinned maps to read (paths under O(cilium_maps.bpffs) or base names, globs allowed); empty means every map.
        type: list
        elements: str
        default: []
      warn_ratio:
        description: Fill ratio from which a map is a warning.
        type: float
        default: 0.8
      critical_ratio:
        description: Fill ratio from which a map is critical.
        type: float
        default: 0.95
      live_frontends:
        description:
          - The frontends Kubernetes knows, as C(ip:port/proto); unset means unknown (no stale-frontend check).
        type: list
        elements: str
      when_not_cilium:
        description:
          - V(skip) (the triage's C(triage_cni=auto)) records the scenario as skipped, "not a Cilium node",
            when the node shows no pinned C(cilium_*) maps, no Cilium agent socket and no C(cilium-cni)
            configuration; V(check) reads the maps anyway (C(triage_cni=cilium)).
        type: str
        choices: [check, skip]
        default: skip
  pod_network:
    description: Options of the pod-CIDR route check (as M(k8snet.triage.route_check)).
    type: dict
    default: {}
    suboptions:
      peers:
        description: Every node with its address and pod CIDRs (from the inventory).
        type: list
        elements: dict
        default: []
        suboptions:
          node:
            description: Node name.
            type: str
            required: true
          node_ip:
            description: The node's address.
            type: str
            required: true
          node_ips:
            description: More addresses of the node.
            type: list
            elements: str
            default: []
          pod_cidrs:
            description: The node's pod CIDRs.
            type: list
            elements: str
            required: true
      mode:
        description: C(direct) routing via the peers, or C(overlay) via O(pod_network.tunnel_device).
        type: str
        choices: [direct, overlay]
        default: direct
      tunnel_device:
        description: The overlay's tunnel device (C(overlay) mode).
        type: str
      local_pod_routes:
        description: Also check the /32 and /128 routes to the local pod devices.
        type: bool
        default: true
      destinations:
        description: Addresses to resolve like C(ip route get).
        type: list
        elements: str
        default: []
      reader:
        description: How to read the tables (see M(k8snet.triage.route_check)).
        type: str
        choices: [auto, pyroute2, iproute2]
        default: auto
  firewall_drops:
    description: Options of the DROP/REJECT counter check (as M(k8snet.triage.iptables_drops)).
    type: dict
    default: {}
    suboptions:
      backends:
        description: Firewall backends to read.
        type: list
        elements: str
        choices: [legacy, nft, nftables]
        default: [legacy, nft, nftables]
      interval:
        description: Seconds between the two counter snapshots; 0 takes one snapshot (totals only).
        type: float
        default: 5
      limit:
        description: Most rules reported.
        type: int
        default: 20
      warning_pps:
        description: Drop rate (packets per second) from which a rule is a warning.
        type: float
        default: 1.0
      critical_pps:
        description: Drop rate from which a rule is critical.
        type: float
        default: 100.0
  connectivity:
    description: Options of the peer probes (as M(k8snet.triage.reachability)).
    type: dict
    default: {}
    suboptions:
      targets:
        description: The peers to probe (the controller picks a sample per node).
        type: list
        elements: dict
        default: []
        suboptions:
          address:
            description: IPv4 address of the peer.
            type: str
            required: true
          name:
            description: Its name in the results.
            type: str
          port:
            description: TCP port for this peer; default O(connectivity.tcp_port).
            type: int
      probes:
        description: Probes to send.
        type: list
        elements: str
        choices: [icmp, tcp, arp]
        default: [icmp, tcp, arp]
      tcp_port:
        description: TCP port to connect to (the kubelet's by default).
        type: int
        default: 10250
      count:
        description: Probes of each kind per peer.
        type: int
        default: 2
      timeout:
        description: Seconds to wait for each answer.
        type: float
        default: 1.0
  dns:
    description: Options of the DNS check (as M(k8snet.triage.dns_check)).
    type: dict
    default: {}
    suboptions:
      names:
        description: Names to resolve.
        type: list
        elements: str
        default: [kubernetes.default.svc.cluster.local]
      servers:
        description:
          - The kube-dns Service and coredns pods to ask; a plain address (V(10.96.0.10)) or a dict with
            the keys below, as in M(k8snet.triage.dns_check).
        type: list
        elements: raw
        default: []
        suboptions:
          address:
            description: Server address.
            type: str
            required: true
          name:
            description: Its name (Service or pod).
            type: str
          node:
            description: The node the pod runs on.
            type: str
          role:
            description: What the server is.
            type: str
            choices: [service, pod, upstream]
            default: pod
      protocols:
        description: Transports to ask over.
        type: list
        elements: str
        choices: [udp, tcp]
        default: [udp, tcp]
      record_type:
        description: Record type to ask for.
        type: str
        choices: [A, AAAA]
        default: A
      port:
        description: DNS port.
        type: int
        default: 53
      timeout:
        description: Seconds per query.
        type: float
        default: 2.0
      retries:
        description: Retries after a timeout.
        type: int
        default: 1
      expect:
        description: Expected addresses per name.
        type: dict
        default: {}
      cluster_domain:
        description: The cluster's DNS domain.
        type: str
        default: cluster.local
      host_resolvers:
        description: Also ask the node's own resolvers (from O(dns.resolv_conf)).
        type: bool
        default: true
      resolv_conf:
        description: resolv.conf files to read the node's resolvers from.
        type: list
        elements: path
        default: [/etc/resolv.conf, /run/systemd/resolve/resolv.conf]
      backend:
        description: DNS client (dnspython when importable, else the standard library).
        type: str
        choices: [auto, dnspython, stdlib]
        default: auto
  stale_arp:
    description: Options of the neighbor cache check for VIPs (as M(k8snet.triage.arp_check), read-only).
    type: dict
    default: {}
    suboptions:
      addresses:
        description: The VIPs to check.
        type: list
        elements: str
        default: []
      expected:
        description: The true MAC of each VIP (read on its owner node by the controller before the pass).
        type: dict
        default: {}
      interface:
        description: Only this interface.
        type: str
      probe:
        description: Send ARP requests for the VIPs and collect every MAC that answers.
        type: bool
        default: true
      probe_timeout:
        description: Seconds to wait for ARP answers.
        type: float
        default: 0.5
      reader:
        description: How to read the neighbor table.
        type: str
        choices: [auto, pyroute2, iproute2]
        default: auto
  conntrack:
    description: Options of the conntrack table pressure check (as M(k8snet.triage.conntrack_check)).
    type: dict
    default: {}
    suboptions:
      warn_ratio:
        description: Fill ratio from which C(conntrack.pressure) is a warning (more than 0, at most 1).
        type: float
        default: 0.75
      critical_ratio:
        description: Fill ratio from which it is critical (at least O(conntrack.warn_ratio), at most 1).
        type: float
        default: 0.9
      interval:
        description: Seconds between the two reads of the drop counters (0 to 60); overlaps the other windows.
        type: float
        default: 5.0
      top:
        description: Source/destination pairs to name when the table is under pressure (0 to 50).
        type: int
        default: 10
      top_pairs:
        description: When to read the entries for the top pairs.
        type: str
        choices: [pressure, always, never]
        default: pressure
      reader:
        description: How the entries are read (C(/proc/net/nf_conntrack), else the C(conntrack) tool).
        type: str
        choices: [auto, proc, pyroute2, conntrack]
        default: auto
  pmtu:
    description: Options of the path-MTU black hole check (as M(k8snet.triage.pmtu_check)).
    type: dict
    default: {}
    suboptions:
      targets:
        description: The peers to measure the path to; empty skips the scenario.
        type: list
        elements: dict
        default: []
        suboptions:
          address:
            description: IPv4 address of the peer.
            type: str
            required: true
          name:
            description: A label for reports (a node name).
            type: str
      min_size:
        description: Smallest total IP size probed (68 to 9000).
        type: int
        default: 576
      max_size:
        description: Largest total IP size probed; by default the MTU of the route's interface.
        type: int
      timeout:
        description: Seconds to wait for the answer to one size (more than 0, at most 5).
        type: float
        default: 0.5
      reader:
        description: How routes and links are read.
        type: str
        choices: [auto, pyroute2, iproute2]
        default: auto
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: read-only.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
requirements:
  - Python 3.9 or later on the node (standard library; pyroute2 and dnspython are used when importable).
  - C(ip) (iproute2) when pyroute2 is not importable; C(iptables-save) / C(nft) for the firewall counters.
  - root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF) for the counters, raw probes and bpf maps.
notes:
  - The M(k8snet.triage.node_network_status) check and the API reads run on the controller, not here.
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
    - One entry per scenario, C({status, reason, findings, data, seconds}). C(status) is C(ran),
      C(skipped) (with the C(reason)) or C(failed) (with the C(reason), and a C(triage.check_failed)
      finding). C(findings) are the scenario module's findings; C(data) is the rest of its result
      (e.g. C(peer_routes) for C(pod_network), C(drops) for C(firewall_drops), C(maps) for C(cilium_maps)).
  returned: always
  type: dict
  sample:
    calico: {status: ran, reason: "", findings: [], data: {peers: [], established: 0, sockets: []}, seconds: 0.02}
    dns: {status: skipped, reason: "no DNS server to ask", findings: [], data: {}, seconds: 0.0}
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

from ansible_collections.k8snet.triage.plugins.module_utils import node_pass
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks


def main():
    module = checks.new_module(AnsibleModule, node_pass.RULES, argument_spec=node_pass.ARGUMENT_SPEC, supports_check_mode=True)
    # each scenario's failure is already in its entry: nothing here fails the whole pass
    module.exit_json(**node_pass.run(module.params, module))


if __name__ == "__main__":
    main()
