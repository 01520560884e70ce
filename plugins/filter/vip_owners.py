# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who holds each VIP, from arp_check results registered on the owner nodes."""

from __future__ import annotations

DOCUMENTATION = """
name: vip_owners
short_description: map each VIP to the node that holds it and its MAC, from arp_check results
version_added: 0.1.0
description:
  - Takes the C(results) of an C(arp_check) task looped over the owner nodes (each item has the
    owner's name in C(item) and the VIPs it holds in C(local)) and returns, for each VIP, its
    owners, the true MAC when exactly one owner holds it, and findings for VIPs that nobody
    holds or that several owners hold.
  - An owner that is unreachable or whose module failed (for example no usable Python) becomes an
    C(arp.owner_unreachable) warning, and a VIP that no reachable owner holds while some owners could
    not be checked is C(arp.vip_owner_unknown), not C(arp.vip_unowned).
  - A VIP no owner binds (MetalLB in L2 mode, where the elected speaker answers ARP for it without binding it) takes as
    its true MAC the one MAC that answered the owners' ARP probes (O(probes)), with an C(arp.vip_announced) info
    finding whose evidence has C(truth_from=announcer); several MACs answering are an C(arp.ip_conflict); a VIP
    no owner binds and nothing answers stays C(arp.vip_unowned).
options:
  _input:
    description: The C(results) list of the looped, registered arp_check task.
    type: list
    elements: dict
    required: true
  vips:
    description:
      - The VIPs that were asked about. One that no host can hold (unspecified, loopback, multicast, broadcast,
        reserved, link-local) is refused, naming it as an item of C(stale_arp_vips).
      - Text, as an AWX survey or C(-e key=value) gives it, is split as P(k8snet.triage.as_list#filter) does (one a
        line, comma-separated, or JSON text).
    type: list
    elements: str
    required: true
  probes:
    description:
      - The C(results) of an C(arp_check) task with C(probe=true) looped over the same owner nodes, for the VIPs no
        owner holds (each item's C(probes), the MACs that answered). Skipped items and owners not checked count
        for nothing.
    type: list
    elements: dict
    required: false
"""

EXAMPLES = """
- name: Build the expected MAC of every VIP
  ansible.builtin.set_fact:
    __stale_arp_owners: "{{ owners.results | k8snet.triage.vip_owners(stale_arp_vips) }}"
"""

RETURN = """
_value:
  description:
    - C(expected) (VIP to MAC), C(owners) (VIP to list of owner/interface/mac), C(announced) (VIP to the MAC that
      answered the probes, for the VIPs no owner binds) and C(findings).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.fleet_results import vip_owners


class FilterModule(object):
    def filters(self):
        return guard_all({"vip_owners": vip_owners})
