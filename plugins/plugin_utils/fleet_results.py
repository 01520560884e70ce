# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's conclusions, drawn once on the controller (the vip_owners and node_pass_fleet filters).

``vip_owners`` reads the VIP owners' arp_check results: who holds each VIP, its true MAC, and the
findings of a VIP no owner holds or several owners hold.  ``node_pass_fleet`` publishes, once, what
concerns several hosts in a one-pass triage, each a fleet record (plugin_utils/record.py): the API reads'
findings, and each node scenario's own conclusion over the fleet, its declaration's ``fleet(context)``
(module_utils/scenarios/<name>.py) called for every scenario of the registry that declares one, with a
``Context``.  The conclusions' code is here, below: those VIP owners' findings (``stale_arp``), the
cross-node connectivity matrix (``connectivity``), the DNS pod's view (``dns_pod``), the log lines the API
reads matched (``logs``).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.arp import options as neighbors_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import check_failed, finding, fleet
from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import READS, REGISTRY
from ansible_collections.k8snet.triage.plugins.plugin_utils.api_reads import api_down, api_read, pod_host
from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import as_list
from ansible_collections.k8snet.triage.plugins.plugin_utils.log_evidence import with_log_evidence
from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import matrix
from ansible_collections.k8snet.triage.plugins.plugin_utils.record import fleet_result
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.build import host_facts


# --- vip_owners: who holds each VIP ---------------------------------------------------------------


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


def _vips(vips):
    """The VIPs asked about, each checked as a VIP (neighbors_options.vip; text split first, as as_list does)."""
    if isinstance(vips, str):
        # a survey's textarea or -e key=value gives text: one VIP a line, or comma-separated
        vips = as_list(vips, "stale_arp_vips")
    try:
        return params.each(neighbors_options.vip)("stale_arp_vips", vips)
    except InputError as exc:
        raise AnsibleFilterError("vip_owners: %s" % exc.message)


def _owner_name(result, index):
    """The owner host a registered result is about: its loop ``item``, else the host it was delegated to.

    AnsibleFilterError when there is neither: the owners' names would otherwise be lost (None in every
    finding), so the input is refused with what vip_owners expects."""
    if not isinstance(result, dict):
        raise AnsibleFilterError(
            "vip_owners: result %d is %s, not a task result: pass the `results` list of an arp_check task "
            "registered with `loop` over the owner hosts" % (index, params.kind(result)))
    delegated = result.get("_ansible_delegated_vars")
    delegated = delegated if isinstance(delegated, dict) else {}
    node = result.get("item") or delegated.get("ansible_delegated_host") or delegated.get("ansible_host")
    if not isinstance(node, str) or not node:
        raise AnsibleFilterError(
            "vip_owners: result %d names no owner host (no `item`, not delegated): pass the `results` list of an "
            "arp_check task registered with `loop` over the owner hosts and `delegate_to: \"{{ item }}\"`" % index)
    return node


def _owner_names(results):
    """The owner host each result names (its ``item``, else the host it was delegated to), in order."""
    return [_owner_name(result, index) for index, result in enumerate(results)]


def _holders(results, vips):
    """``({vip: [{node, interface, mac}]}, [{node, status, msg}])``: who holds each VIP (every VIP asked
    about, and any other an owner holds), and the owners that could not be checked."""
    owners = dict((str(vip), []) for vip in vips)
    unreachable = []
    for index, item in enumerate(results):
        node = _owner_name(item, index)
        status = _not_checked(item)
        if status:
            unreachable.append({"node": node, "status": status, "msg": item.get("msg", "")})
            continue
        for bound in item.get("local", []):
            owners.setdefault(bound["address"], []).append(
                {"node": node, "interface": bound["interface"], "mac": bound["mac"]})
    return owners, unreachable


def _owner_unreachable(owner):
    """``arp.owner_unreachable``: an owner node that could not be checked."""
    return finding(
        "arp.owner_unreachable", "warning", "L2", owner["node"],
        "owner node %s could not be checked (%s): a VIP it holds has no known true MAC" % (
            owner["node"], owner["status"]),
        {"status": owner["status"], "msg": owner["msg"]},
        "Make %s reachable with a usable Python, or leave it out of the owners group; until then the "
        "probe results show which MACs answer for the VIPs." % owner["node"])


def _owner_unknown(vip, results, unreachable):
    """``arp.vip_owner_unknown``: no reachable owner holds ``vip``, and some owners could not be checked."""
    not_checked = [owner["node"] for owner in unreachable]
    return finding(
        "arp.vip_owner_unknown", "warning", "L2", vip,
        "no reachable owner node holds %s, and %d owner node%s could not be checked (%s): whether it is "
        "unowned is unknown, and caches were not compared with an owner" % (
            vip, len(not_checked), "" if len(not_checked) == 1 else "s", ", ".join(not_checked)),
        {"owners_checked": _owner_names(results), "unreachable": unreachable},
        "Reach the owner nodes listed above (SSH, Python) and run again; the probe results show which "
        "MACs answer for %s meanwhile." % vip)


def _unowned(vip, results, unreachable):
    """``arp.vip_unowned``: no owner holds ``vip`` (or no owner was checked: the owners group is empty)."""
    return finding(
        "arp.vip_unowned", "critical", "L2", vip,
        "no owner node holds %s, so the true MAC is unknown: caches were not compared with an owner" % vip
        if results else
        "no owner node was checked for %s (the owners group is empty): caches were not compared with an "
        "owner" % vip,
        {"owners_checked": _owner_names(results), "unreachable": unreachable},
        "Check the VIP manager (keepalived / kube-vip) on the control-plane nodes; the probe results "
        "show which MACs answer for it." if results else
        "Set stale_arp_owners_group to the inventory group of the nodes that can hold the VIPs.")


def _answering(probes):
    """``{vip: {mac: [owner]}}``: the MACs that answered each owner's ARP probes (arp_check's ``probes``, the
    results of the owners' probe task; an owner not checked, or skipped, answers nothing)."""
    out = {}
    for index, item in enumerate(probes or []):
        if not isinstance(item, dict) or item.get("skipped") or _not_checked(item):
            continue
        node = _owner_name(item, index)
        for vip, answers in (item.get("probes") or {}).items():
            for answer in answers or []:
                heard = out.setdefault(vip, {}).setdefault(str(answer["mac"]).lower(), [])
                if node not in heard:
                    heard.append(node)
    return out


def _announced(vip, mac, heard):
    """``arp.vip_announced`` (info): no owner binds ``vip``, one MAC answers ARP for it (an L2 announcer such as
    MetalLB's speaker): that MAC is taken as the truth."""
    return finding(
        "arp.vip_announced", "info", "L2", vip,
        "no owner node binds %s; %s answers ARP for it (to the probes of %s): caches were compared with that MAC, "
        "the announcer's (MetalLB L2 and other speakers answer without binding the VIP)" % (
            vip, mac, ", ".join(heard)),
        {"truth_from": "announcer", "mac": mac, "answered": heard})


def _answered_by_several(vip, answering):
    """``arp.ip_conflict``: no owner binds ``vip`` and several MACs answer the owners' probes for it."""
    return finding(
        "arp.ip_conflict", "critical", "L2", vip,
        "no owner node binds %s and %d MACs answer ARP for it: %s" % (
            vip, len(answering), ", ".join(sorted(answering))),
        {"answering": [{"mac": mac, "answered": heard} for mac, heard in sorted(answering.items())]},
        "Make one node announce %s (several speakers answering: a split memberlist, or a second announcer)." % vip)


def _ip_conflict(vip, holders):
    """``arp.ip_conflict``: several owners hold ``vip`` at once."""
    return finding(
        "arp.ip_conflict", "critical", "L2", vip,
        "%s is held by %d owner nodes at once: %s" % (vip, len(holders), ", ".join(h["node"] for h in holders)),
        {"owners": holders},
        "Remove %s from all but one node (split-brain keepalived / kube-vip)." % vip)


def _vip_finding(vip, holders, results, unreachable, answering=None):
    """The finding of a VIP without one true MAC: held by several owners, else answered by several MACs, else unknown
    (owners not checked), else unowned."""
    if holders:
        return _ip_conflict(vip, holders)
    if answering:
        return _answered_by_several(vip, answering)
    if unreachable:
        return _owner_unknown(vip, results, unreachable)
    return _unowned(vip, results, unreachable)


def vip_owners(results, vips, probes=None):
    """``{expected, owners, announced, findings}`` from the owners' arp_check results and, for the VIPs no owner
    binds, the MACs that answered their probes (``probes``; see the vip_owners filter)."""
    if not isinstance(results, list) or not isinstance(probes, (list, type(None))):
        raise AnsibleFilterError("vip_owners expects the results list of a looped arp_check task (and as probes, "
                                 "the results list of the owners' looped arp_check task with probe: true)")
    owners, unreachable = _holders(results, _vips(vips))
    answering = _answering(probes)
    expected, announced, findings = {}, {}, [_owner_unreachable(owner) for owner in unreachable]
    for vip, holders in owners.items():
        macs = sorted(set(h["mac"] for h in holders))
        heard = answering.get(vip) or {}
        if len(macs) == 1:
            expected[vip] = macs[0]
        elif not holders and len(heard) == 1:
            [(mac, nodes)] = heard.items()
            expected[vip] = announced[vip] = mac
            findings.append(_announced(vip, mac, nodes))
        else:
            findings.append(_vip_finding(vip, holders, results, unreachable, heard if not holders else None))
    # conclusions about the VIP across the owner nodes: published by every client, counted once
    checked = sorted(set(_owner_names(results)))
    findings = [fleet(f, checked) for f in findings]
    return {"expected": expected, "owners": owners, "announced": announced, "findings": findings}


# --- node_pass_fleet: the fleet-scoped results of a one-pass triage ----------------------------------


def _reads(results):
    """One scenario's registered API results as a list (it registered one result, or a list of them)."""
    return results if isinstance(results, list) else [results]


def _node_names(results, node_hosts):
    """The inventory hosts of the nodes the reads ``results`` name (node_network_status), in order: a cluster's
    other nodes are none of the triage's hosts (5,000 of them on every finding were 70 kB each)."""
    names = [n["name"] for r in results for n in (r.get("nodes") or []) if isinstance(n, dict) and n.get("name")]
    return [node_hosts[n] for n in names if n in node_hosts]


def _scenario_record(facts, scenario):
    """A host's record of ``scenario`` (its ``triage_results`` entry), {} when it has none."""
    return (facts.get("triage_results") or {}).get(scenario) or {}


def _node_hosts(hostvars, hosts):
    """``{Kubernetes node name: inventory host}`` of ``hosts`` (k8s_node_name, else the inventory name)."""
    out = {}
    for host in hosts:
        out.setdefault(str(host_facts(hostvars, host).get("k8s_node_name") or host), host)
    return out


def _subject_node(item):
    """The node a finding's subject names first ("node2", "node2/pod", "node2: ..."), else ''."""
    subject = item.get("subject")
    return re.split(r"[/:]", subject, maxsplit=1)[0] if isinstance(subject, str) else ""


def _placed_on_nodes(found, node_hosts):
    """``found`` with each finding whose subject names one of the play's nodes concerning that host alone
    (an API read's finding about node2 is node2's); the others keep the hosts they are given."""
    return [dict(f, hosts=[node_hosts[_subject_node(f)]]) if _subject_node(f) in node_hosts and not f.get("hosts") else f
            for f in found if isinstance(f, dict)]


def _api_entry(name, result, hosts, node_hosts, down=None):
    """The entry of one API read: skipped (not tried after ``down``, an earlier read that found the API server
    down: named), failed (with a triage.check_failed finding; the read that found the API server down, with
    its one finding instead: kube.api_unreachable ...) or its findings."""
    status, message = api_read(result, down)
    if status == "skipped":
        return fleet_result("skipped", message, [], [])
    if status == "failed":
        reason = message or "the read returned no findings"
        found = api_down([result]) if down else {}
        if found and found["check"] == down["check"] and found["request"] == down["request"]:
            return fleet_result("failed", reason, [down["finding"]], hosts)
        return fleet_result("failed", reason, [check_failed(name, "the Kubernetes API", reason)], hosts)
    named = _node_names([result], node_hosts)
    return fleet_result("ran", "", _placed_on_nodes(result["findings"], node_hosts), named or hosts)


def _usable_reads(results, down=None):
    """The registered results that are reads: dicts, not empty, not skipped (but for a read not tried because
    an earlier one found the API server down, ``down``: it is said)."""
    return [r for r in _reads(results) if isinstance(r, dict) and r and (
        not r.get("skipped") or (down and "__node_pass_api_down" in str(r.get("false_condition") or "")))]


def _api_entries(name, results, hosts, node_hosts, down=None):
    """One scenario's entry from its API reads (one registered result, or a list of them); the hosts
    it concerns are the nodes its reads name (node_network_status), else the pass's hosts; a finding
    about one node of the play concerns that node's host.  ``down``: api_down's record, when a read found the
    API server silent or refusing (that read holds its one finding, a later one is skipped naming it)."""
    results = _usable_reads(results, down)
    entries = [_api_entry(name, result, hosts, node_hosts, down) for result in results]
    if not entries:
        return None
    ran = [e for e in entries if e["status"] != "skipped"]
    if not ran:
        return entries[0]
    failed = [e for e in ran if e["status"] == "failed"]
    named = _node_names(results, node_hosts)
    return fleet_result("failed" if failed else "ran", "; ".join(e["reason"] for e in failed),
                        [f for e in ran for f in e["findings"]], named or hosts)


def _log_matches(results):
    """The log lines one scenario's reads matched (a kube_logs result's ``matches``), in order."""
    return [m for result in _reads(results)
            if isinstance(result, dict) and isinstance(result.get("matches"), list) and "findings" in result
            for m in result["matches"] if isinstance(m, dict)]


def _api_results(api, hosts, node_hosts, down=None):
    """``({scenario: entry}, matches)``: the API reads' entries, by scenario name, and the log lines they matched.
    An input named as a read (a scenario's API_READS: dns_pod) is not an entry: its scenario's conclusion reads it."""
    out, matches = {}, []
    for name, results in sorted(api.items()):
        if name in READS:
            continue
        entry = _api_entries(name, results, hosts, node_hosts, down)
        if entry is not None:
            out[name] = entry
        matches.extend(_log_matches(results))
    return out, matches


def _pod_view_checked(facts, hosts):
    """Whether a host's dns check recorded the view of DNS from the dns_pod (its data's ``pod``)."""
    return any((_scenario_record(facts[h], "dns").get("data") or {}).get("pod") for h in hosts)


def _dns_pod_unread(ref, status, message, hosts):
    """The dns entry when the read of the dns_pod was skipped or failed."""
    reason = "the view of DNS from pod %s (dns_pod) was not checked: %s" % (ref, message or "the read returned nothing")
    if status == "skipped":
        return fleet_result("skipped", reason, [], [])
    return fleet_result("failed", reason, [check_failed("dns", "pod %s" % ref, reason)], hosts)


def _pod_view_gap(pod, where, facts):
    """``(why, fix)`` of a pod view no host checked: its node is none of the hosts (``where`` None), or the
    dns check did not run on ``where``."""
    if where is None:
        why = ("it runs on node %s, which is none of the triage's hosts (matched by k8s_node_name, else the "
               "inventory name)" % pod.get("node"))
        fix = "add node %s to the inventory (or set its k8s_node_name) and run again" % pod.get("node")
        return why, fix
    dns = _scenario_record(facts[where], "dns")
    why = "the dns check did not run with it on %s (%s%s)" % (
        where, dns.get("status") or "not run", ": %s" % dns["reason"] if dns.get("reason") else "")
    fix = "make the dns scenario run on %s (in the nodes group, reachable) and run again" % where
    return why, fix


def _dns_pod_entry(spec, hostvars, hosts, down=None):
    """The fleet's word on dns_pod when no host checked that pod's view (a host that did holds its
    findings): the read was skipped or failed, its node is none of the triage's hosts, or the dns
    check did not run there."""
    ref = spec.get("ref") if isinstance(spec, dict) else None
    if not ref or not spec.get("wanted"):
        return None
    facts = dict((host, host_facts(hostvars, host)) for host in hosts)
    if _pod_view_checked(facts, hosts):
        return None
    result = spec.get("result") if isinstance(spec.get("result"), dict) else {}
    status, message = api_read(result, down)
    if status != "ran":
        entry = _dns_pod_unread(ref, status, message, hosts)
        if status == "failed" and down and api_down([result]).get("request") == down["request"]:
            # this read found the API server down: its one finding
            entry = fleet_result("failed", entry["reason"], [down["finding"]], hosts)
        return entry
    pod = result.get("pod") if isinstance(result.get("pod"), dict) else {}
    where = pod_host(pod, hosts, facts)
    why, fix = _pod_view_gap(pod, where, facts)
    return fleet_result("ran", "", [finding("dns.pod_view_not_checked", "warning", "DNS", "pod %s" % ref,
                                            "the view of DNS from pod %s was not checked: %s" % (ref, why),
                                            {"pod": pod, "host": where}, fix)], [where] if where else [])


class Context(object):
    """What a scenario's conclusion over the fleet (its declaration's ``fleet(context)``) reads: the pass's ``hosts``,
    each one's variables as stored (``facts``: its records), the VIP owners' result (``owners``, {} without VIPs), the
    inputs named as reads (``inputs``: dns_pod's ``{ref, result, wanted}``), api_down's record (``down``, None when no
    read found the API server down), the API reads' entries by name (``entries``) and the log lines they matched
    (``matches``)."""

    def __init__(self, facts, hosts, owners, inputs, down, entries, matches):
        self.facts, self.hosts, self.owners, self.inputs, self.down = facts, hosts, owners, inputs, down
        self.entries, self.matches = entries, matches

    def record(self, host, scenario):
        """``host``'s record of ``scenario`` (its ``triage_results`` entry), {} when it has none."""
        return _scenario_record(self.facts.get(host) or {}, scenario)


def stale_arp(context):
    """The stale_arp entry: the VIP owners' findings, concerning the nodes that hold the VIPs (None: no VIPs)."""
    owners = context.owners
    if not owners:
        return None
    return fleet_result("ran", "", list(owners.get("findings") or []),
                        [h["node"] for held in owners.get("owners", {}).values() for h in held])


def dns_pod(context):
    """The dns entry: the fleet's word on dns_pod when no host checked that pod's view (None: one did, or none asked)."""
    return _dns_pod_entry(context.inputs.get("dns_pod"), context.facts, context.hosts, context.down)


def logs(context):
    """The logs entry: its API read's entry with the log lines the API reads matched, as read, as its data (the logs
    role gives each node its own); None when it has no entry or nothing matched."""
    entry = context.entries.get("logs")
    if entry is None or not context.matches:
        return None
    return dict(entry, data={"matches": context.matches})


def connectivity(context):
    """The connectivity entry: the cross-node matrix of the hosts whose connectivity scenario ran (None: none ran)."""
    probed = {}
    for host in context.hosts:
        entry = context.record(host, "connectivity")
        if entry.get("status") == "ran":
            probed[host] = entry["data"]
    if not probed:
        return None
    found = matrix(probed)
    # the report draws the matrix without its pairs (n x k rows); the whole matrix is the record's data
    return fleet_result("ran", "", found["findings"], probed,
                        dict((k, v) for k, v in found.items() if k not in ("pairs", "findings")), found)


def _check_fleet_arguments(hostvars, hosts, owners, api):
    """Refuse node_pass_fleet's arguments that are not of the shape it reads (AnsibleFilterError names which)."""
    if not hasattr(hostvars, "raw_get") and not isinstance(hostvars, dict):
        raise AnsibleFilterError("node_pass_fleet: the input must be hostvars, not %s" % params.kind(hostvars))
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("node_pass_fleet: hosts must be the list of the play's host names "
                                 "(ansible_play_hosts_all)")
    for value, what in ((owners, "owners (the vip_owners result)"), (api, "api (the API scenarios' results)")):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("node_pass_fleet: %s must be a dict, not %s" % (what, params.kind(value)))
    if owners and not isinstance(owners.get("findings"), list):
        raise AnsibleFilterError("node_pass_fleet: owners must be the result of k8snet.triage.vip_owners "
                                 "(a dict with findings, owners and expected)")


def node_pass_fleet(hostvars, hosts, owners=None, api=None):
    """``{scenario: fleet record}`` of what concerns several hosts (see the node_pass_fleet filter)."""
    _check_fleet_arguments(hostvars, hosts, owners, api)
    # each host's variables read once (a read of Ansible's hostvars is a get_vars of the host: three of them per host
    # were about half of this filter's time at 100 nodes)
    hostvars = dict((host, host_facts(hostvars, host)) for host in hosts)
    api = dict(api or {})
    down = api.pop("down", None) or None
    if down is not None and not (isinstance(down, dict) and isinstance(down.get("finding"), dict)):
        raise AnsibleFilterError("node_pass_fleet: api's down must be the result of k8snet.triage.api_down (a dict with "
                                 "finding), or empty")
    out, matches = _api_results(api, hosts, _node_hosts(hostvars, hosts), down)
    context = Context(hostvars, hosts, owners or {}, dict((name, api[name]) for name in READS if name in api), down,
                      dict(out), matches)
    # each scenario's own conclusion, in the registry's order: its declaration's fleet(context)
    for declared in REGISTRY:
        conclude = getattr(declared, "fleet", None)
        entry = conclude(context) if conclude else None
        if entry is not None:
            out[declared.NAME] = entry
    if matches:
        with_log_evidence(out, matches)
    return out
