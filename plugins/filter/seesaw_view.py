# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Seesaw pair as data (controller side): its master and the VIPs it announces, with the pair's findings."""

from __future__ import annotations

DOCUMENTATION = """
name: seesaw_view
short_description: the Seesaw pair's master, the VIPs it announces and the pair's findings
version_added: 0.2.0
description:
  - The same judgement as P(k8snet.triage.seesaw_pair#filter), returned as data for the plays that follow it (the
    ingress path through a Seesaw VIP) - C(master) (the one node sending VRRP advertisements, null with none or
    two), C(announced) (the VIPs its gratuitous ARPs name) and C(findings) (what P(k8snet.triage.seesaw_pair#filter)
    returns).
options:
  _input:
    description: "Mapping of host to its packet_capture result (null: that host was not captured)."
    type: dict
    required: true
  vrid:
    description: The VRRP virtual router id of the pair (Seesaw's default is 60).
    type: int
    default: 60
  garp_interval:
    description: Seconds between the master's gratuitous ARPs (Seesaw's C(garp_interval_sec), 10 by default).
    type: float
    default: 10.0
  expected_vips:
    description: The VIPs the master should announce (see P(k8snet.triage.seesaw_pair#filter)).
    type: list
    elements: str
    default: []
  expected_from:
    description: Where O(expected_vips) come from, for the findings.
    type: str
    default: the VIPs given
"""

EXAMPLES = """
- name: The pair's master and its VIPs
  ansible.builtin.set_fact:
    pair: "{{ captures | k8snet.triage.seesaw_view(vrid=60, expected_vips=['198.18.0.202']) }}"
"""

RETURN = """
_value:
  description: C(master) (a host or null), C(announced) (VIPs) and C(findings).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.filter.seesaw_pair import checked
from ansible_collections.k8snet.triage.plugins.module_utils.lb.seesaw import pair_view
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def seesaw_view(captures, vrid=60, garp_interval=10.0, expected_vips=None, expected_from="the VIPs given"):
    return pair_view(*checked(captures, vrid, garp_interval, expected_vips, expected_from, name="seesaw_view"))


class FilterModule(object):
    def filters(self):
        return guard_all({"seesaw_view": seesaw_view})
