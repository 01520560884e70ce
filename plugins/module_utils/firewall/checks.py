# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Firewall drops, the checks: two snapshots compared into growth rates, what a drop rule means by who wrote it (kube-
proxy, Calico, Cilium, firewalld, ufw), and the findings. Pure: rulesets in, rows and findings out (iptables_parsers
makes the rulesets).
"""

from __future__ import annotations

import json
import re

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.firewall.options import BACKENDS
from ansible_collections.k8snet.triage.plugins.module_utils.firewall.parsers import render_expr

# ----------------------------------------------------------------- compare and check


def rule_text(entry):
    """The rule as text (native nftables rules are rendered here, only when shown)."""
    if entry["rule"] is None:
        expr = entry.get("expr")
        if expr is None and entry.get("chunk"):
            expr = json.loads(entry["chunk"])["rule"].get("expr") or []
        entry["rule"] = render_expr(expr or [])
    return entry["rule"]


def _row(entry, packets, bytes_, seconds, jumps=None, refusals=()):
    row = dict((k, entry[k]) for k in ("backend", "family", "table", "chain", "kind", "verdict", "owner"))
    row["rule"] = rule_text(entry)
    row["reading"] = interpret(entry, jumps, refusals) if entry["kind"] == "rule" else None
    row.update({"packets": packets, "bytes": bytes_, "packets_total": entry["packets"], "bytes_total": entry["bytes"],
                "pps": round(packets / seconds, 2) if seconds else None,
                "bps": round(bytes_ / seconds, 2) if seconds else None})
    if entry.get("handle") is not None:
        row["handle"] = entry["handle"]
    return row


def compare(before, after):
    """Growth of every counted entry between two snapshots, fastest first.

    An entry is matched by backend, family, table, chain and rule text (nftables: handle);
    a rule that appeared in between counts from zero, a counter that went down (rule
    replaced) counts from zero too.  Idle entries are not returned.
    """
    old = {}
    for rs in before:
        for key, entry in rs.entries.items():
            old[key] = (entry, rs.taken)
    grown = []
    for rs in after:
        for key, entry in rs.entries.items():
            if not entry["counted"]:
                continue
            prev, taken = old.get(key, (None, None))
            packets = entry["packets"] - (prev["packets"] if prev else 0)
            bytes_ = entry["bytes"] - (prev["bytes"] if prev else 0)
            if packets < 0:
                packets, bytes_ = entry["packets"], entry["bytes"]
            if packets > 0:
                seconds = rs.taken - taken if taken is not None else None
                grown.append(_row(entry, packets, bytes_, seconds, rs.jumps, rs.refusals))
    grown.sort(key=lambda r: (-(r["pps"] or 0), -r["packets"], r["backend"], r["chain"]))
    return grown


def totals(snapshot, limit):
    """Per-backend counts and the drop entries with the most packets so far."""
    per = {}
    entries = []
    jumps, refusals = {}, []
    for rs in snapshot:
        jumps.update(rs.jumps)
        refusals.extend(rs.refusals)
        item = per.setdefault(rs.backend, {"rules": 0, "drop_rules": 0, "drop_policies": 0, "packets": 0, "bytes": 0})
        item["rules"] += rs.rules
        for entry in rs.entries.values():
            item["drop_rules" if entry["kind"] == "rule" else "drop_policies"] += 1
            item["packets"] += entry["packets"]
            item["bytes"] += entry["bytes"]
            entries.append(entry)
    entries.sort(key=lambda e: (-e["packets"], e["backend"], e["chain"]))
    top = [_row(e, 0, 0, None, jumps, refusals) for e in entries[:limit] if e["packets"]]
    for row in top:
        for key in ("packets", "bytes", "pps", "bps"):
            row.pop(key)
    return per, top


# ----------------------------------------------------------------- what a drop rule means (by who wrote it)

# kube-proxy writes ns/name:port; a comment naming the Service without its namespace is read by the name as it is
_SVC_COMMENT = re.compile(r'--comment "?(?:(?P<ns>[a-z0-9][-a-z0-9]*)/)?(?P<name>[a-z0-9][-a-z0-9.]*)(?::(?P<port>[-a-z0-9]*))?'
                          r' (?P<what>has no endpoints|has no local endpoints|traffic not accepted by \S+)"?')
_NFT_SVC_CHAIN = re.compile(r"^(?P<kind>firewall|external|service)-[A-Z0-9]{8}-(?P<ns>[^/]+)/(?P<name>[^/]+)/(?P<proto>[a-z]+)/(?P<port>.*)$")
_COMMENTS = re.compile(r'--comment (?:"([^"]*)"|(\S+))')


def _endpointslices(ns, name):
    """The EndpointSlices of Service ``name`` in ``ns`` (None: a name without namespace, looked for in all)."""
    where = "-n %s" % ns if ns else "-A"
    return "kubectl get endpointslices %s -l kubernetes.io/service-name=%s" % (where, name)


def _service(ns, name, port, reason):
    svc = "%s:%s" % (name, port) if port else name
    svc = "%s/%s" % (ns, svc) if ns else svc
    if reason == "no_endpoints":
        what = "kube-proxy rejects traffic to Service %s: it has no ready endpoints" % svc
        step = "%s (no ready endpoint: are the pods Ready, does the selector match?)" % _endpointslices(ns, name)
    elif reason == "no_local_endpoints":
        what = ("kube-proxy drops external traffic to Service %s on this node: externalTrafficPolicy Local and no ready "
                "endpoint on this node" % svc)
        step = ("%s -o wide (which nodes have ready endpoints; the load balancer health check on "
                "healthCheckNodePort should take this node out)" % _endpointslices(ns, name))
    else:
        what = "kube-proxy drops traffic to Service %s: the source is not in the Service's loadBalancerSourceRanges" % svc
        step = ("kubectl get service %s -o jsonpath='{.spec.loadBalancerSourceRanges}' (is the client, or the "
                "load balancer's SNAT address, in the ranges?)" % (
                    "-n %s %s" % (ns, name) if ns else "-A --field-selector metadata.name=%s" % name))
    return {"object": {"kind": "Service", "namespace": ns, "name": name, "port": port},
            "reason": reason, "meaning": what, "next_step": step}


def _service_by_name(service, reason):
    """``_service`` for a Service named ``ns/name[:port]`` (None when the name has no namespace)."""
    ns_name = re.match(r"^([^/]+)/([^:]+):?(.*)$", service)
    return _service(ns_name.group(1), ns_name.group(2), ns_name.group(3), reason) if ns_name else None


def _service_by_any_name(service, reason):
    """``_service`` for a Service named ``ns/name[:port]``, or by a name without namespace taken as it is."""
    name, port = (service.split(":", 1) + [""])[:2]
    return _service_by_name(service, reason) or _service(None, name, port, reason)


def _endpointslices_of(service):
    """``_endpointslices`` for a Service named ``ns/name[:port]`` or by its name alone."""
    ns_name = re.match(r"^(?:([^/]+)/)?([^:]*)", service)
    return _endpointslices(ns_name.group(1), ns_name.group(2))


_SVC_COMMENT_REASONS = {"has no endpoints": "no_endpoints", "has no local endpoints": "no_local_endpoints"}


def _kube_proxy_service(chain, rule):
    """kube-proxy's rules that name their Service: a comment ``ns/name:port has no (local) endpoints`` or
    an nftables firewall chain ``firewall-HASH-ns/name/proto/port``."""
    match = _SVC_COMMENT.search(rule)
    if match:
        reason = _SVC_COMMENT_REASONS.get(match.group("what"), "load_balancer_source_ranges")
        return _service(match.group("ns"), match.group("name"), match.group("port"), reason)
    nft = _NFT_SVC_CHAIN.match(chain)
    if nft and nft.group("kind") == "firewall":
        return _service(nft.group("ns"), nft.group("name"), nft.group("port"), "load_balancer_source_ranges")
    return None


def _kube_proxy_prefixed_chain(chain):
    """kube-proxy's per-Service chains of the iptables and IPVS modes (KUBE-XLB-, KUBE-FW-)."""
    if chain.startswith("KUBE-XLB-"):   # kube-proxy before 1.24: the policy Local chain
        return {"object": {"kind": "Service", "chain": chain}, "reason": "no_local_endpoints",
                "meaning": "kube-proxy drops external traffic to a policy-Local Service without an endpoint on this "
                           "node",
                "next_step": "iptables-save | grep -- '%s' names the Service in its comments; then its EndpointSlices"
                             % chain}
    if chain in ("KUBE-SOURCE-RANGES-FIREWALL",) or chain.startswith("KUBE-FW-"):
        return {"object": {"kind": "Service", "ipset": "KUBE-LOAD-BALANCER-FW"},
                "reason": "load_balancer_source_ranges",
                "meaning": "kube-proxy (IPVS mode) drops traffic to a LoadBalancer IP from outside its "
                           "loadBalancerSourceRanges",
                "next_step": "ipset list KUBE-LOAD-BALANCER-FW (the LB IP:port) and ipset list "
                             "KUBE-LOAD-BALANCER-SOURCE-CIDR (the allowed sources); kubectl get svc -A -o wide | grep "
                             "the LB IP"}
    return None


def _kube_proxy_reject_chain(entry, refusals):
    """kube-proxy's nftables reject-chain, read from the no-endpoint map entries that jump to it."""
    services = sorted(set(r["service"] for r in refusals if r["reason"] == "no_endpoints" and r["service"]))
    if len(services) == 1:
        return _service_by_any_name(services[0], "no_endpoints")
    if services:
        return {"object": {"kind": "Service", "names": services}, "reason": "no_endpoints",
                "meaning": "kube-proxy rejects traffic to Services without ready endpoints: %s" % ", ".join(services),
                "next_step": "; ".join(_endpointslices_of(name) for name in services[:5])}
    return {"object": {"kind": "Service", "map": "no-endpoint-services"}, "reason": "no_endpoints",
            "meaning": "kube-proxy (nftables mode) rejects traffic to a Service without ready endpoints",
            "next_step": "nft list map %s %s no-endpoint-services and no-endpoint-nodeports (each element's "
                         "comment names the Service: ns/name:port), then its EndpointSlices"
                         % (entry["family"] if entry["family"] in ("ip", "ip6") else "ip", entry["table"])}


def _kube_proxy_cluster_ips_check(entry):
    """kube-proxy's nftables cluster-ips-check chain: an unallocated ClusterIP (drop) or a wrong port (reject)."""
    unallocated = entry["verdict"] == "drop"
    return {"object": {"kind": "ClusterIP", "set": "cluster-ips"},
            "reason": "clusterip_unallocated" if unallocated else "clusterip_invalid_port",
            "meaning": "kube-proxy (nftables mode) %s" % (
                "drops traffic to an address of the service CIDR that no Service has" if unallocated else
                "rejects traffic to a ClusterIP on a port its Service does not define"),
            "next_step": "the client's target: kubectl get svc -A -o wide | grep the address (a stale or "
                         "hard-coded ClusterIP, or a wrong port)"}


def _kube_proxy_ipvs_out_filter(entry):
    """kube-proxy's IPVS-mode KUBE-IPVS-OUT-FILTER chain."""
    return {"object": {"kind": "Service", "chain": entry["chain"]}, "reason": "lb_access_from_node",
            "meaning": "kube-proxy (IPVS mode) drops this node's own traffic to a LoadBalancer IP it must not reach",
            "next_step": "the LoadBalancer Service of the -d/--vaddr address (kubectl get svc -A -o wide | grep it)"}


def _kube_proxy_rule_text(rule):
    """kube-proxy's rules told apart by their text only: marked packets, conntrack INVALID, localnet."""
    if "dropping marked packets" in rule or "0x8000/0x8000" in rule:
        # kubelet/kube-proxy before 1.25: KUBE-MARK-DROP marks, KUBE-FIREWALL drops
        return {"object": {"kind": "Service", "mark": "0x8000"}, "reason": "marked_for_drop",
                "meaning": "kube-proxy drops packets its nat chains marked 0x8000 (KUBE-MARK-DROP): a policy-Local "
                           "Service without an endpoint on this node (KUBE-XLB-) or a source outside "
                           "loadBalancerSourceRanges (KUBE-FW-)",
                "next_step": "iptables-save -t nat | grep -- '-j KUBE-MARK-DROP' (the marking rule's comment names "
                             "the Service), then its EndpointSlices or loadBalancerSourceRanges"}
    if "ctstate INVALID" in rule or "ct state invalid" in rule:
        return {"object": {"kind": "conntrack"}, "reason": "invalid_state",
                "meaning": "kube-proxy drops packets conntrack marks INVALID (out-of-window or asymmetric return "
                           "traffic)",
                "next_step": "conntrack -S (insert_failed, invalid) and whether replies take another path "
                             "(k8snet.triage.route_check)"}
    if "127.0.0.0/8" in rule or "localnet" in rule:
        return {"object": {"kind": "node"}, "reason": "localnet",
                "meaning": "kube-proxy blocks connections to 127.0.0.0/8 that do not come from the node itself",
                "next_step": "the client: it reached a localhost-bound NodePort from outside (route_localnet)"}
    return None


def _kube_proxy_reading(entry, rule, refusals):
    """What a kube-proxy DROP/REJECT entry means: by the Service it names, then its chain, then its text."""
    chain = entry["chain"]
    reading = _kube_proxy_service(chain, rule) or _kube_proxy_prefixed_chain(chain)
    if reading:
        return reading
    if chain == "reject-chain":
        return _kube_proxy_reject_chain(entry, refusals)
    if chain == "cluster-ips-check":
        return _kube_proxy_cluster_ips_check(entry)
    if chain == "KUBE-IPVS-OUT-FILTER":
        return _kube_proxy_ipvs_out_filter(entry)
    return _kube_proxy_rule_text(rule)


def _calico_endpoint_reading(chain, comments, jumps):
    """Calico's per-pod chains (cali-tw-/cali-fw-) that drop what no policy or profile allowed."""
    iface = chain[len("cali-tw-"):] if chain.startswith(("cali-tw-", "cali-fw-")) else None
    direction = "to" if chain.startswith("cali-tw-") else "from"
    policies = [j for j in (jumps or {}).get(chain, [])
                if j.startswith(("cali-pi-", "cali-po-", "cali-pri-", "cali-pro-"))]
    if not (iface and ("no policies passed" in comments or "no profiles matched" in comments)):
        return None
    what = "no policy" if "no policies passed" in comments else "no profile"
    return {"object": {"kind": "WorkloadEndpoint", "interface": iface, "policy_chains": policies},
            "reason": "no_policy_allowed" if what == "no policy" else "no_profile_allowed",
            "meaning": "Calico drops traffic %s the pod on %s: %s allowed it (a policy selects the pod and "
                       "none of its rules matched)" % (direction, iface, what),
            "next_step": "calicoctl get workloadendpoints -A -o wide | grep %s (the pod), then its policies: "
                         "kubectl get networkpolicy -n NS, calicoctl get networkpolicy,globalnetworkpolicy -o wide%s"
                         % (iface, " (chains %s)" % ", ".join(policies) if policies else "")}


def _calico_reading(chain, rule, jumps):
    """What a Calico DROP entry means: a pod's endpoint chain, or a policy's rule chain."""
    comments = " ".join(a or b for a, b in _COMMENTS.findall(rule))
    reading = _calico_endpoint_reading(chain, comments, jumps)
    if reading:
        return reading
    if chain.startswith(("cali-pi-", "cali-po-")):
        return {"object": {"kind": "NetworkPolicy", "chain": chain}, "reason": "policy_deny",
                "meaning": "a Calico policy rule denies it (chain %s; cali-pi-/cali-po- are a policy's in/outbound "
                           "rules)" % chain,
                "next_step": "calicoctl get networkpolicy,globalnetworkpolicy -A -o wide; the chain name carries the "
                             "policy name (or its hash)"}
    return None


def _cilium_reading(chain):
    """A rule of the Cilium agent."""
    return {"object": {"kind": "cilium", "chain": chain}, "reason": "cilium_rule",
            "meaning": "a rule of the Cilium agent (%s) drops it" % chain,
            "next_step": "cilium-dbg monitor --type drop or hubble observe --verdict DROPPED (the reason and the "
                         "endpoint)"}


def _firewalld_reading(chain):
    """A chain of a firewalld zone (the zone is in the chain name)."""
    zone = re.match(r"^(?:filter_)?(?:IN|FWD|FWDI|FWDO|OUT)_([^_]+)", chain)
    return {"object": {"kind": "firewalld zone", "name": zone.group(1) if zone else None, "chain": chain},
            "reason": "host_firewall", "meaning": "the node's firewalld drops it (chain %s)" % chain,
            "next_step": "firewall-cmd --get-active-zones; firewall-cmd --list-all --zone=%s"
                         % (zone.group(1) if zone else "ZONE")}


def _ufw_reading(chain):
    """A chain of ufw."""
    return {"object": {"kind": "ufw", "chain": chain}, "reason": "host_firewall",
            "meaning": "the node's ufw drops it (chain %s)" % chain,
            "next_step": "ufw status verbose; allow the pod and service CIDRs (ufw route allow) and the node ports"}


# host firewalls and Cilium: the chain name is all their reading needs
_CHAIN_READERS = {"cilium": _cilium_reading, "firewalld": _firewalld_reading, "ufw": _ufw_reading}


def interpret(entry, jumps=None, refusals=()):
    """What a DROP/REJECT entry means for the one who wrote it, from its chain name and comments (and, for
    kube-proxy's nftables reject-chain, from the maps that jump to it): ``{"object", "reason", "meaning",
    "next_step"}``, or None for an entry nobody known wrote."""
    chain, owner = entry["chain"], entry["owner"]
    rule = entry["rule"] if entry["rule"] is not None else ""
    if owner == "kube-proxy":
        return _kube_proxy_reading(entry, rule, refusals)
    if owner == "calico":
        return _calico_reading(chain, rule, jumps)
    reader = _CHAIN_READERS.get(owner)
    return reader(chain) if reader else None


REMEDIATION = {
    "kube-proxy": "kube-proxy drops here: KUBE-FIREWALL drops invalid/martian packets, KUBE-EXTERNAL-SERVICES and "
                  "KUBE-SERVICES REJECT traffic to a Service without ready endpoints; check the Service's "
                  "EndpointSlices (`kubectl get endpointslices -n NS -l kubernetes.io/service-name=NAME`).",
    "calico": "A Calico policy drops it: find the policy from the chain name (`cali-pi-`/`cali-po-` are "
              "policy chains) with `calicoctl get networkpolicy,globalnetworkpolicy -A -o wide`.",
    "cilium": "Cilium drops it: `cilium-dbg monitor --type drop` or `hubble observe --verdict DROPPED` names the reason.",
    "firewalld": "firewalld drops it: `firewall-cmd --get-active-zones` and `firewall-cmd --list-all --zone=ZONE`; "
                 "allow the pod and service CIDRs and the node ports the cluster uses.",
    "ufw": "ufw drops it: `ufw status verbose`; allow the pod and service CIDRs and the node ports the cluster uses.",
    "other": "Find who installs this rule (configuration management, a host firewall, a CNI) and whether it "
             "should drop this traffic; watch it live with `watch -d iptables -L CHAIN -v -n` or `nft list chain`.",
}


def _severity(pps, warning_pps, critical_pps):
    """critical / warning / info for a drop rate against the thresholds."""
    return "critical" if pps >= critical_pps else "warning" if pps >= warning_pps else "info"


def _drops_growing(row, node, interval, warning_pps, critical_pps):
    """The drops_growing finding of one grown entry, read as its owner means it when known."""
    pps = row["pps"] or 0
    what = "the %s policy" % row["verdict"] if row["kind"] == "policy" else "a %s rule" % row["verdict"]
    counted = "%s of %s %s %s/%s dropped %d packets in %ss (%.1f/s)" % (
        what, row["backend"], row["family"], row["table"], row["chain"], row["packets"], interval, pps)
    reading = row.get("reading")
    evidence = {"rule": row["rule"], "pps": row["pps"], "bps": row["bps"], "packets": row["packets"],
                "packets_total": row["packets_total"], "owner": row["owner"], "family": row["family"]}
    if reading:
        evidence.update(object=reading["object"], reason=reading["reason"])
    return finding(
        "iptables.drops_growing", _severity(pps, warning_pps, critical_pps), "L4",
        "%s %s %s %s/%s" % (node, row["backend"], row["family"], row["table"], row["chain"]),
        "%s: %s" % (reading["meaning"], counted) if reading else counted,
        evidence,
        reading["next_step"] if reading else REMEDIATION[row["owner"]],
    )


def _drop_policies(snapshot, node):
    """One drop_policy finding per chain whose policy drops."""
    out = []
    for rs in snapshot:
        for entry in rs.entries.values():
            if entry["kind"] != "policy":
                continue
            out.append(finding(
                "iptables.drop_policy", "info", "L4",
                "%s %s %s %s/%s" % (node, entry["backend"], entry["family"], entry["table"], entry["chain"]),
                "chain %s of %s %s table %s drops what no rule accepts (policy %s)" % (
                    entry["chain"], entry["backend"], entry["family"], entry["table"], entry["verdict"]),
                {"policy": entry["verdict"], "family": entry["family"],
                 "packets_total": entry["packets"] if entry["counted"] else None,
                 "counted": entry["counted"]},
                "Expected on a hardened host; when traffic is lost, make sure the cluster's rules accept it "
                "before the policy applies (FORWARD DROP needs pod CIDR accepts, as kube-proxy and the CNI add).",
            ))
    return out


def _services_refused(snapshot, node, limit):
    """service_refused findings: kube-proxy nftables no-endpoint map entries, one per Service and reason."""
    by_service = {}
    for rs in snapshot:
        for item in rs.refusals:
            by_service.setdefault((item["service"] or "?", item["reason"]), []).append(item)
    out = []
    for (service, reason), items in sorted(by_service.items())[:limit]:
        reading = _service_by_name(service, reason)
        matches = ", ".join("%s %s" % ("NodePort" if i["kind"] == "nodeport" else "to", i["match"]) for i in items)
        out.append(finding(
            "iptables.service_refused", "info", "L4", "%s %s" % (node, service),
            "%s (%s; kube-proxy nftables map entries, which have no counter)" % (
                reading["meaning"] if reading else "kube-proxy refuses traffic to %s" % service, matches),
            {"service": service, "reason": reason, "matches": [i["match"] for i in items],
             "verdict": items[0]["verdict"]},
            reading["next_step"] if reading else REMEDIATION["kube-proxy"],
        ))
    return out


def _mixed_backends(snapshot, node):
    """The mixed_backends finding when iptables-legacy and nf_tables both hold rules (else none)."""
    with_rules = dict((b, sum(rs.rules for rs in snapshot if rs.backend == b)) for b in BACKENDS)
    if not (with_rules["legacy"] and (with_rules["nft"] or with_rules["nftables"])):
        return []
    warnings = sorted(set(w for rs in snapshot for w in rs.warnings))
    return [finding(
        "iptables.mixed_backends", "warning", "L4", node,
        "rules in both iptables-legacy (%d) and nf_tables (iptables-nft %d, nft %d): both run, a packet "
        "accepted by one can still be dropped by the other" % (
            with_rules["legacy"], with_rules["nft"], with_rules["nftables"]),
        {"rules": with_rules, "warnings": sample(warnings)},
        "Use one backend: the one kube-proxy and the CNI use (`iptables --version` in their containers says "
        "legacy or nf_tables); flush the other's leftovers after checking who wrote them.",
    )]


def check(grown, snapshot, node, interval, limit, warning_pps, critical_pps):
    """Findings: drops_growing (top ``limit``, read as their owner means them), drop_policy, service_refused
    (kube-proxy nftables no-endpoint map entries), mixed_backends."""
    out = [_drops_growing(row, node, interval, warning_pps, critical_pps) for row in grown[:limit]]
    out += _drop_policies(snapshot, node)
    out += _services_refused(snapshot, node, limit)
    out += _mixed_backends(snapshot, node)
    return out


def summary(found, snapshot, node, interval):
    """One ``ok`` finding when no drop counter grew, saying what was read.

    When no backend could be read at all (no iptables and no nft on the host), nothing was
    checked: that is a warning, never ``ok``.
    """
    if any(f["check"] == "iptables.drops_growing" for f in found):
        return []
    if not snapshot:
        return [finding("iptables.no_backend", "warning", "L4", node,
                        "no firewall backend could be read (none of iptables-save, ip6tables-save, "
                        "iptables-legacy-save or nft is installed): no drop counter was checked",
                        {"backends": []},
                        "install iptables or nftables on the node, or run the check where the firewall "
                        "tools are (drops cannot be ruled out)")]
    entries = sum(len(rs.entries) for rs in snapshot)
    if interval:
        text = "no DROP/REJECT counter grew in %ss (%d drop rules and policies read)" % (interval, entries)
    else:
        text = "%d drop rules and policies read (interval 0: totals only)" % entries
    return [finding("iptables.drops", "ok", "L4", node, text,
                    {"backends": sorted(set(rs.backend for rs in snapshot)), "entries": entries})]
