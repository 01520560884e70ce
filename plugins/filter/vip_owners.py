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
options:
  _input:
    description: The C(results) list of the looped, registered arp_check task.
    type: list
    elements: dict
    required: true
  vips:
    description:
      - The VIPs that were asked about.
      - Text, as an AWX survey or C(-e key=value) gives it, is split as P(k8snet.triage.as_list#filter) does (one a
        line, comma-separated, or JSON text).
    type: list
    elements: str
    required: true
"""

EXAMPLES = """
- name: Build the expected MAC of every VIP
  ansible.builtin.set_fact:
    __stale_arp_owners: "{{ owners.results | k8snet.triage.vip_owners(stale_arp_vips) }}"
"""

RETURN = """
_value:
  description: C(expected) (VIP to MAC), C(owners) (VIP to list of owner/interface/mac) and C(findings).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.as_list import as_list
from ansible_collections.k8snet.triage.plugins.module_utils import params
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, fleet
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def _not_checked(item):
    """Why an owner's result holds no answer (unreachable, or the module failed), else None.

    The owner task runs with ``failed_when: false``, so a failed module (no usable Python, a
    missing tool) shows as not failed: a result without ``local`` is one that did not answer.
    """
    if item.get("unreachable"):
        return "unreachable"
    if item.get("failed") or item.get("skipped") or "local" not in item:
        return "failed"
    return None


def vip_owners(results, vips):
    if not isinstance(results, list):
        raise AnsibleFilterError("vip_owners expects the results list of a looped arp_check task")
    if isinstance(vips, str):
        # a survey's textarea or -e key=value gives text: one VIP a line, or comma-separated
        vips = as_list(vips, "stale_arp_vips")
    try:
        vips = params.each(params.address())("vips", vips)
    except InputError as exc:
        raise AnsibleFilterError("vip_owners: %s" % exc.message)
    owners = dict((str(vip), []) for vip in vips)
    unreachable = []
    for item in results:
        node = item.get("item") or item.get("_ansible_delegated_vars", {}).get("ansible_host")
        status = _not_checked(item)
        if status:
            unreachable.append({"node": node, "status": status, "msg": item.get("msg", "")})
            continue
        for bound in item.get("local", []):
            owners.setdefault(bound["address"], []).append(
                {"node": node, "interface": bound["interface"], "mac": bound["mac"]})
    expected, findings = {}, []
    for owner in unreachable:
        findings.append(finding(
            "arp.owner_unreachable", "warning", "L2", owner["node"],
            "owner node %s could not be checked (%s): a VIP it holds has no known true MAC" % (
                owner["node"], owner["status"]),
            {"status": owner["status"], "msg": owner["msg"]},
            "Make %s reachable with a usable Python, or leave it out of the owners group; until then the "
            "probe results show which MACs answer for the VIPs." % owner["node"]))
    not_checked = [owner["node"] for owner in unreachable]
    for vip, holders in owners.items():
        macs = sorted(set(h["mac"] for h in holders))
        if len(macs) == 1:
            expected[vip] = macs[0]
        elif not holders and not_checked:
            findings.append(finding(
                "arp.vip_owner_unknown", "warning", "L2", vip,
                "no reachable owner node holds %s, and %d owner node%s could not be checked (%s): whether it is "
                "unowned is unknown, and caches were not compared with an owner" % (
                    vip, len(not_checked), "" if len(not_checked) == 1 else "s", ", ".join(not_checked)),
                {"owners_checked": [r.get("item") for r in results], "unreachable": unreachable},
                "Reach the owner nodes listed above (SSH, Python) and run again; the probe results show which "
                "MACs answer for %s meanwhile." % vip))
        elif not holders:
            findings.append(finding(
                "arp.vip_unowned", "critical", "L2", vip,
                "no owner node holds %s, so the true MAC is unknown: caches were not compared with an owner" % vip
                if results else
                "no owner node was checked for %s (the owners group is empty): caches were not compared with an "
                "owner" % vip,
                {"owners_checked": [r.get("item") for r in results], "unreachable": unreachable},
                "Check the VIP manager (keepalived / kube-vip) on the control-plane nodes; the probe results "
                "show which MACs answer for it." if results else
                "Set stale_arp_owners_group to the inventory group of the nodes that can hold the VIPs."))
        else:
            findings.append(finding(
                "arp.ip_conflict", "critical", "L2", vip,
                "%s is held by %d owner nodes at once: %s" % (vip, len(holders), ", ".join(h["node"] for h in holders)),
                {"owners": holders},
                "Remove %s from all but one node (split-brain keepalived / kube-vip)." % vip))
    # conclusions about the VIP across the owner nodes: published by every client, counted once
    checked = sorted(set(str(r.get("item")) for r in results if r.get("item")))
    findings = [fleet(f, checked) for f in findings]
    return {"expected": expected, "owners": owners, "findings": findings}


class FilterModule(object):
    def filters(self):
        return guard_all({"vip_owners": vip_owners})
