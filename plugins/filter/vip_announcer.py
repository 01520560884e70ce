# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who answers ARP for a VIP, from the client's arp_check probe and the nodes' arp_check results."""

from __future__ import annotations

DOCUMENTATION = """
name: vip_announcer
short_description: name the node that answers ARP for a VIP, and whether it is the one that should
version_added: 0.2.0
description:
  - Takes the client's C(k8snet.triage.arp_check) result with O(k8snet.triage.arp_check#module:probe=true) for
    the VIP, and the nodes' C(arp_check) results asked about the VIP and their own address, whose C(local) gives
    each node's interface MACs; maps every MAC that answered to the node owning it.
  - Compares with the nodes the load balancer names (MetalLB's status, O(declared)) or, without them, with the
    nodes holding the VIP on an interface.
  - Findings C(ingress.vip_unannounced) (no node answers), C(ingress.announcer_mismatch) (several MACs answer,
    or not the expected node), C(ingress.announcer_unknown) (a MAC of no node read) and
    C(ingress.announcer_not_checked) (the client's probe gave no result), C(ingress.vip_reply_not_delivered) (a
    node's capture shows its reply leaving, the client got none, see O(captures)); C(ingress.client_off_subnet) (info) when
    the client reaches the VIP through a gateway (its arp_check C(off_subnet)) - ARP from it proves nothing, the
    nodes holding the VIP are named instead, and no C(ingress.vip_unannounced) is concluded.
options:
  _input:
    description: The client's arp_check result (with C(probes)).
    type: dict
    required: true
  vip:
    description: The VIP.
    type: str
    required: true
  nodes:
    description: The nodes' arp_check results, by inventory host.
    type: dict
    required: true
  declared:
    description: The inventory hosts the load balancer says announce the VIP; empty or null when it says nothing.
    type: list
    elements: str
  captures:
    description:
      - The C(k8snet.triage.packet_capture) results (protocol C(arp), host the VIP) of the candidate nodes, by
        inventory host, taken while the client probed; null when none was taken.
      - A node whose reply left while the client got none makes C(ingress.vip_reply_not_delivered) (critical) instead
        of C(ingress.vip_unannounced); for an off-subnet client they name the nodes that answered the router's ARP.
    type: dict
"""

EXAMPLES = """
- name: Who announces the VIP?
  ansible.builtin.set_fact:
    announce: "{{ client_arp | k8snet.triage.vip_announcer('198.18.0.2', {'node1': node1_arp, 'node2': node2_arp}, ['node1']) }}"
"""

RETURN = """
_value:
  description:
    - C(announcer) (the one inventory host answering, else null), C(answering) (each MAC with the hosts owning it),
      C(expected), C(expected_from), C(holders) (hosts holding the VIP on an interface) and C(findings).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.service import vip_announcer as _announcer
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def vip_announcer(client, vip, nodes, declared=None, captures=None):
    if client is not None and not isinstance(client, dict):
        raise AnsibleFilterError("vip_announcer expects the client's arp_check result (a dict), got %s"
                                 % params.kind(client))
    if not isinstance(nodes, dict) or not all(isinstance(v, dict) for v in nodes.values()):
        raise AnsibleFilterError("vip_announcer: nodes must be a dict {inventory host: arp_check result}")
    try:
        vip = params.address()("vip", vip)
        declared = params.each(params.node_name)("declared", declared) if declared else []
    except InputError as exc:
        raise AnsibleFilterError("vip_announcer: %s" % exc.message)
    if captures is not None and (not isinstance(captures, dict) or not all(isinstance(v, dict) for v in captures.values())):
        raise AnsibleFilterError("vip_announcer: captures must be a dict {inventory host: packet_capture result}")
    return _announcer(vip, client, nodes, declared, captures)


class FilterModule(object):
    def filters(self):
        return guard_all({"vip_announcer": vip_announcer})
