#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: iptables_drops
short_description: find DROP / REJECT rules and DROP policies whose counters grow
version_added: 0.1.0
description:
  - Reads every firewall backend present on the node, IPv4 and IPv6 - iptables-legacy
    (C(iptables-legacy-save -c), C(ip6tables-legacy-save -c)), iptables-nft
    (C(iptables-nft-save -c), C(ip6tables-nft-save -c)) and native nftables
    (C(nft -j list ruleset), without the tables iptables-nft already showed) - twice,
    O(interval) seconds apart, and reports the DROP / REJECT rules and DROP policies whose
    packet counters grew, fastest first, with the owner guessed from the chain name.
  - Each growing rule is read as the one who wrote it means it, from its chain name and comments; the
    finding names the object and the next step. kube-proxy (iptables, IPVS and nftables modes) - the
    Service and port of C(ns/name:port has no endpoints) (no ready endpoint), C(has no local endpoints)
    (externalTrafficPolicy Local and no endpoint on this node; also the old C(KUBE-XLB-) chains) and
    C(traffic not accepted by KUBE-FW-...), C(KUBE-SOURCE-RANGES-FIREWALL) or the nftables C(firewall-...)
    chains (outside loadBalancerSourceRanges), with C(kubectl get endpointslices -n NS -l
    kubernetes.io/service-name=NAME) as the next step; Calico - the pod interface of a C(cali-tw-)/C(cali-fw-)
    chain's C(Drop if no policies passed packet) and the policy chains it ran; Cilium (C(CILIUM_*)), firewalld
    zones and ufw chains by name.
  - kube-proxy's nftables mode drops through map elements (C(@no-endpoint-services),
    C(@no-endpoint-nodeports)) that have no counter; each Service in them is reported as an
    C(iptables.service_refused) finding (info) with its reason.
  - Rules that did not count anything during the window are totals, never "growing".
  - Read-only; never changes the node.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.iptables
options:
  node_name:
    description: The node name used as the subject of findings (default the host name).
    type: str
notes:
  - "Reading counters needs root (CAP_NET_ADMIN): use C(become: true)."
  - Native nftables rules are counted only when they have a C(counter) statement, and nftables
    base chains have no policy counter, so a native C(policy drop) is reported but its growth is
    unknown. iptables-legacy and iptables-nft both count their chain policies.
"""

EXAMPLES = r"""
- name: Which drop counters grow during 10 seconds
  k8snet.triage.iptables_drops:
    interval: 10
  become: true

- name: Totals only, iptables-legacy and iptables-nft
  k8snet.triage.iptables_drops:
    interval: 0
    backends: [legacy, nft]
"""

RETURN = r"""
findings:
  description: The findings (C(iptables.drops_growing), C(iptables.drop_policy), C(iptables.service_refused),
    C(iptables.mixed_backends)).
  returned: always
  type: list
  elements: dict
drops:
  description:
    - The growing entries, fastest first (at most O(limit)).
    - C(reading) is what the rule means for its owner (C(object), C(reason), C(meaning), C(next_step)), or
      null for a rule of an unknown owner.
  returned: always
  type: list
  elements: dict
  sample:
    - backend: legacy
      family: ipv4
      table: filter
      chain: KUBE-SERVICES
      kind: rule
      verdict: REJECT
      rule: -A KUBE-SERVICES -d 198.18.0.246/32 -p tcp -m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp
        --dport 80 -j REJECT --reject-with icmp-port-unreachable
      owner: kube-proxy
      reading:
        object: {kind: Service, namespace: ns6, name: svc6, port: p80}
        reason: no_endpoints
        meaning: "kube-proxy rejects traffic to Service ns6/svc6:p80: it has no ready endpoints"
        next_step: "kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6 (no ready endpoint: are the
          pods Ready, does the selector match?)"
      packets: 50
      bytes: 4200
      pps: 10.0
      bps: 840.0
      packets_total: 65
      bytes_total: 5460
drops_count:
  description: How many entries grew (before O(limit)).
  returned: always
  type: int
totals:
  description: Per backend, the rules read, DROP/REJECT rules, DROP policies and their packets and bytes so far.
  returned: always
  type: dict
  sample: {legacy: {rules: 3, drop_rules: 2, drop_policies: 1, packets: 15, bytes: 1260}}
top_totals:
  description: The drop entries with the most packets so far (at most O(limit)).
  returned: always
  type: list
  elements: dict
backends:
  description: Each command, whether it is installed, and whether its output was read.
  returned: always
  type: list
  elements: dict
  sample:
    - {backend: legacy, family: ipv4, command: iptables-legacy-save -c, installed: true, read: true, rules: 3}
interval:
  description: The seconds between the two snapshots.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.firewall import iptables
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import options as iptables_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, iptables.node_check, iptables_options.RULES, dict(iptables_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
