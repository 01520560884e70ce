# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage: the findings that concern the fleet, once."""

from __future__ import annotations

DOCUMENTATION = """
name: node_pass_fleet
short_description: the fleet-scoped results of a one-pass triage, each published once
version_added: 0.2.0
description:
  - Returns a dict of scenario name to C(status), C(reason), C(findings) and C(hosts) for what concerns several hosts, not one.
  - C(stale_arp), the VIP owners' findings (a VIP no owner holds, a VIP several owners hold) from
    O(owners), once for the fleet instead of once per client.
  - C(connectivity), the cross-node matrix (C(connectivity_matrix)) of the hosts whose
    C(triage_results.connectivity) ran.
options:
  _input:
    description: The play's C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts of the pass (e.g. C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  owners:
    description: The output of C(vip_owners); empty without VIPs.
    type: dict
    default: {}
  api:
    description:
      - Registered results of the API reads run once on the controller, by scenario name, e.g.
        C(kube) (kube_network_facts) and C(cni) (node_network_status). A skipped read is left out;
        a failed one is C(failed) with its message and a C(triage.check_failed) finding.
    type: dict
    default: {}
"""

EXAMPLES = """
- name: Record the fleet results once
  ansible.builtin.set_fact:
    triage_fleet_results: "{{ hostvars | k8snet.triage.node_pass_fleet(ansible_play_hosts_all, __owners) }}"
  run_once: true
"""

RETURN = """
_value:
  description: a dict of scenario name to C(status), C(reason), C(findings) and C(hosts).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.module_utils.node_pass import failed_finding
from ansible_collections.k8snet.triage.plugins.module_utils.reachability import matrix
from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def _api_entry(name, result):
    if result.get("failed") or "findings" not in result:
        reason = str(result.get("msg") or "the read returned no findings")
        return {"status": "failed", "reason": reason, "hosts": [],
                "findings": [failed_finding(name, "the Kubernetes API", reason)]}
    hosts = sorted(set(n["name"] for n in result.get("nodes") or [] if isinstance(n, dict) and n.get("name")))
    return {"status": "ran", "reason": "", "findings": list(result["findings"]), "hosts": hosts}


def node_pass_fleet(hostvars, hosts, owners=None, api=None):
    for value, what in ((owners, "owners (the vip_owners result)"), (api, "api (the API scenarios' results)")):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("node_pass_fleet: %s must be a dict, not %s" % (what, type(value).__name__))
    if owners and not isinstance(owners.get("findings"), list):
        raise AnsibleFilterError("node_pass_fleet: owners must be the result of k8snet.triage.vip_owners "
                                 "(a dict with findings, owners and expected)")
    out = {}
    for name, result in sorted((api or {}).items()):
        if isinstance(result, dict) and result and not result.get("skipped"):
            out[name] = _api_entry(name, result)
    if owners:
        out["stale_arp"] = {"status": "ran", "reason": "", "findings": list(owners.get("findings") or []),
                            "hosts": sorted(set(h["node"] for held in owners.get("owners", {}).values() for h in held))}
    probed = {}
    for host in hosts:
        entry = ((hostvars[host].get("triage_results") or {}).get("connectivity") or {})
        if entry.get("status") == "ran":
            probed[host] = entry["data"]
    if probed:
        out["connectivity"] = dict(matrix(probed), status="ran", reason="", hosts=sorted(probed))
        out["connectivity"].pop("pairs")
    return out


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_fleet": node_pass_fleet})
