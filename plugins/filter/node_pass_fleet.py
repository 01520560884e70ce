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
        C(kube) (kube_network_info), C(cni) (a list - node_network_status and webhook_deadlock) and
        C(logs) (kube_logs, whose C(matches) put the agents' log lines under the fleet findings they explain). A skipped read is left out;
        one that found no credentials is C(skipped) with that reason; a failed one is C(failed) with
        its message and a C(triage.check_failed) finding.
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
    triage_fleet_results: "{{ hostvars | k8snet.triage.node_pass_fleet(ansible_play_hosts_all, __owners) }}"
  run_once: true
"""

RETURN = """
_value:
  description: a dict of scenario name to C(status), C(reason), C(findings), C(details) and C(hosts).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.findings import check_failed, finding
from ansible_collections.k8snet.triage.plugins.plugin_utils.api_reads import api_read, pod_host
from ansible_collections.k8snet.triage.plugins.plugin_utils.log_evidence import with_log_evidence
from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import matrix
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.record import fleet_result
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import host_facts


def _api_entry(name, result, hosts):
    status, message = api_read(result)
    if status == "skipped":
        return fleet_result("skipped", message, [], [])
    if status == "failed":
        reason = message or "the read returned no findings"
        return fleet_result("failed", reason, [check_failed(name, "the Kubernetes API", reason)], hosts)
    named = [n["name"] for n in result.get("nodes") or [] if isinstance(n, dict) and n.get("name")]
    return fleet_result("ran", "", list(result["findings"]), named or hosts)


def _dns_pod_entry(spec, hostvars, hosts):
    """The fleet's word on dns_pod when no host checked that pod's view (a host that did holds its
    findings): the read was skipped or failed, its node is none of the triage's hosts, or the dns
    check did not run there."""
    ref = spec.get("ref") if isinstance(spec, dict) else None
    if not ref or not spec.get("wanted"):
        return None
    facts = dict((host, host_facts(hostvars, host)) for host in hosts)
    if any(((((facts[h].get("triage_results") or {}).get("dns") or {}).get("data") or {}).get("pod")) for h in hosts):
        return None
    result = spec.get("result") if isinstance(spec.get("result"), dict) else {}
    status, message = api_read(result)
    if status != "ran":
        reason = "the view of DNS from pod %s (dns_pod) was not checked: %s" % (ref, message or "the read returned nothing")
        if status == "skipped":
            return fleet_result("skipped", reason, [], [])
        return fleet_result("failed", reason, [check_failed("dns", "pod %s" % ref, reason)], hosts)
    pod = result.get("pod") if isinstance(result.get("pod"), dict) else {}
    where = pod_host(pod, hosts, facts)
    if where is None:
        why = ("it runs on node %s, which is none of the triage's hosts (matched by k8s_node_name, else the "
               "inventory name)" % pod.get("node"))
        fix = "add node %s to the inventory (or set its k8s_node_name) and run again" % pod.get("node")
    else:
        dns = (facts[where].get("triage_results") or {}).get("dns") or {}
        why = "the dns check did not run with it on %s (%s%s)" % (
            where, dns.get("status") or "not run", ": %s" % dns["reason"] if dns.get("reason") else "")
        fix = "make the dns scenario run on %s (in the nodes group, reachable) and run again" % where
    return fleet_result("ran", "", [finding("dns.pod_view_not_checked", "warning", "DNS", "pod %s" % ref,
                                            "the view of DNS from pod %s was not checked: %s" % (ref, why),
                                            {"pod": pod, "host": where}, fix)], [where] if where else [])


def _api_entries(name, results, hosts):
    """One scenario's entry from its API reads (one registered result, or a list of them); the hosts
    it concerns are the nodes its reads name (node_network_status), else the pass's hosts."""
    results = [r for r in (results if isinstance(results, list) else [results])
               if isinstance(r, dict) and r and not r.get("skipped")]
    entries = [_api_entry(name, result, hosts) for result in results]
    if not entries:
        return None
    ran = [e for e in entries if e["status"] != "skipped"]
    if not ran:
        return entries[0]
    failed = [e for e in ran if e["status"] == "failed"]
    named = [n["name"] for r in results for n in (r.get("nodes") or []) if isinstance(n, dict) and n.get("name")]
    return fleet_result("failed" if failed else "ran", "; ".join(e["reason"] for e in failed),
                        [f for e in ran for f in e["findings"]], named or hosts)


def node_pass_fleet(hostvars, hosts, owners=None, api=None):
    if not hasattr(hostvars, "raw_get") and not isinstance(hostvars, dict):
        raise AnsibleFilterError("node_pass_fleet: the input must be hostvars, not %s" % type(hostvars).__name__)
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("node_pass_fleet: hosts must be the list of the play's host names (ansible_play_hosts_all)")
    for value, what in ((owners, "owners (the vip_owners result)"), (api, "api (the API scenarios' results)")):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("node_pass_fleet: %s must be a dict, not %s" % (what, type(value).__name__))
    if owners and not isinstance(owners.get("findings"), list):
        raise AnsibleFilterError("node_pass_fleet: owners must be the result of k8snet.triage.vip_owners "
                                 "(a dict with findings, owners and expected)")
    out, matches = {}, []
    api = dict(api or {})
    dns_pod = _dns_pod_entry(api.pop("dns_pod", None), hostvars, hosts)
    for name, results in sorted(api.items()):
        entry = _api_entries(name, results, hosts)
        if entry is not None:
            out[name] = entry
        for result in (results if isinstance(results, list) else [results]):
            if isinstance(result, dict) and isinstance(result.get("matches"), list) and "findings" in result:
                matches.extend(m for m in result["matches"] if isinstance(m, dict))
    if owners:
        out["stale_arp"] = fleet_result("ran", "", list(owners.get("findings") or []),
                                        [h["node"] for held in owners.get("owners", {}).values() for h in held])
    probed = {}
    for host in hosts:
        entry = ((host_facts(hostvars, host).get("triage_results") or {}).get("connectivity") or {})
        if entry.get("status") == "ran":
            probed[host] = entry["data"]
    if probed:
        found = matrix(probed)
        out["connectivity"] = fleet_result("ran", "", found.pop("findings"), probed,
                                           dict((k, v) for k, v in found.items() if k != "pairs"))
    if dns_pod is not None:
        out["dns"] = dns_pod
    if matches:
        with_log_evidence(out, matches)
    return out


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_fleet": node_pass_fleet})
