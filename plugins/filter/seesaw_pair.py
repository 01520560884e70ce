# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Seesaw pair's findings from the load-balancer nodes' captures (controller side)."""

from __future__ import annotations

DOCUMENTATION = """
name: seesaw_pair
short_description: judge a Seesaw load-balancer pair from its nodes' VRRP and gratuitous ARP captures
version_added: 0.2.0
description:
  - Takes the M(k8snet.triage.packet_capture) result (with O(k8snet.triage.packet_capture#module:protocol=arp_vrrp))
    of every load-balancer node, keyed by host, and returns the findings on the pair, C(seesaw.no_master),
    C(seesaw.split_brain) (critical, with no master or two), C(seesaw.peer_not_hearing) (a node that hears no
    advertisement), C(seesaw.garp_missing) and C(seesaw.garp_irregular) (the master's gratuitous ARPs for its VIPs
    missing or late), C(seesaw.not_checked) (a node without capture), or C(seesaw.pair) (ok, naming the master, its
    VIPs and their cadence).
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
    description:
      - The VIPs the master should announce (the LoadBalancer Services' VIPs, or a list given). One its gratuitous
        ARPs do not name, in a capture of at least 1.5 intervals, is C(seesaw.vip_not_announced) (critical), and
        the pair is not C(seesaw.pair) ok. Empty (the default) judges only what it announces.
    type: list
    elements: str
    default: []
  expected_from:
    description: Where O(expected_vips) come from, for the findings (for example C(the LoadBalancer Services)).
    type: str
    default: the VIPs given
"""

EXAMPLES = """
- name: Judge the pair
  ansible.builtin.set_fact:
    seesaw_fleet_findings: "{{ captures | k8snet.triage.seesaw_pair(vrid=60, garp_interval=10) }}"
"""

RETURN = """
_value:
  description: The findings.
  type: list
  elements: dict
"""

import math
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.lb.seesaw import pair_check
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def checked(captures, vrid, garp_interval, expected_vips, expected_from, name="seesaw_pair"):
    """The arguments of seesaw_pair / seesaw_view, validated: (captures, vrid, garp_interval, expected or None)."""
    if not isinstance(captures, Mapping):
        raise AnsibleFilterError("%s expects a mapping of host to packet_capture result, got %s"
                                 % (name, params.kind(captures)))
    if len(captures) > 64:
        raise AnsibleFilterError("%s: %d hosts; a Seesaw pair is two nodes (at most 64 are read)" % (name, len(captures)))
    for host, result in captures.items():
        if result is not None and not isinstance(result, Mapping):
            raise AnsibleFilterError("%s: the capture of %s is %s, not a packet_capture result"
                                     % (name, host, params.kind(result)))
    if isinstance(vrid, bool) or not isinstance(vrid, int) or not 1 <= vrid <= 255:
        raise AnsibleFilterError("%s: vrid must be a VRRP virtual router id from 1 to 255, got %r" % (name, vrid))
    if isinstance(garp_interval, bool) or not isinstance(garp_interval, (int, float)) or not math.isfinite(
            garp_interval) or not 0 < garp_interval <= 3600:
        raise AnsibleFilterError("%s: garp_interval must be seconds, more than 0 and at most 3600, got %r"
                                 % (name, garp_interval))
    try:
        vips = params.each(params.address(), max_items=1024)("expected_vips",
                                                             [] if expected_vips is None else expected_vips)
        source = params.short_text("expected_from", expected_from)
    except InputError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc.message))
    expected = {"vips": sorted(set(vips), key=vips.index), "source": source} if vips else None
    return dict((str(h), r) for h, r in captures.items()), vrid, float(garp_interval), expected


def seesaw_pair(captures, vrid=60, garp_interval=10.0, expected_vips=None, expected_from="the VIPs given"):
    return pair_check(*checked(captures, vrid, garp_interval, expected_vips, expected_from))


class FilterModule(object):
    def filters(self):
        return guard_all({"seesaw_pair": seesaw_pair})
