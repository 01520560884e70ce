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
  - Returns a dict of scenario name to C(status), C(reason), C(findings), C(details) and C(hosts) for
    what concerns several hosts, not one, in the shape of a host's C(triage_results), so the triage
    records them once, on the controller, in its C(triage_results).
  - Each finding is marked C(scope=fleet) with C(hosts), the hosts it concerns (the entry's C(hosts)),
    and is counted once by the report.
  - Each node scenario's own conclusion over the fleet, from the one registry of node scenarios (the scenarios
    that declare one, in report order) - C(connectivity), the cross-node matrix (C(connectivity_matrix)) of the
    hosts whose C(triage_results.connectivity) ran; C(dns), why no host checked the view of DNS from C(dns_pod);
    C(logs), its read's entry with the log lines the API reads matched as its data; C(stale_arp), the VIP owners'
    findings (a VIP no owner holds, a VIP several owners hold) from O(owners), once for the fleet instead of once
    per client.
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
        C(kube) (kube_network_info), C(cni) (a list - node_network_status and webhook_deadlock) and
        C(logs) (kube_logs, whose C(matches) put the agents' log lines under the fleet findings they explain). A skipped read is left out;
        one that found no credentials is C(skipped) with that reason; a failed one is C(failed) with
        its message and a C(triage.check_failed) finding.
      - C(down) is not a read but the C(api_down) filter's record of the first read that found the API server
        silent or refusing (or empty); that read holds its one finding (C(kube.api_unreachable) ...) instead of
        C(triage.check_failed), and a read skipped for it is C(skipped) with the reason naming it.
      - C(dns_pod) is not a read but C(ref) (the C(dns_pod) variable), C(result) (the registered
        kube_network_info result of that pod) and C(wanted) (whether the dns scenario was asked for).
        When no host checked that pod's view, C(dns) says why - skipped or failed read, or the finding
        C(dns.pod_view_not_checked) (its node is none of the hosts, or the dns check did not run there).
    type: dict
    default: {}
"""

EXAMPLES = """
- name: Record the fleet results once
  ansible.builtin.set_fact:
    node_pass_fleet_results: "{{ hostvars | k8snet.triage.node_pass_fleet(ansible_play_hosts_all, __owners) }}"
  run_once: true
"""

RETURN = """
_value:
  description: a dict of scenario name to C(status), C(reason), C(findings), C(details) and C(hosts).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.fleet_results import node_pass_fleet


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_fleet": node_pass_fleet})
