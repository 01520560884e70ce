# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pod egress: the source address pod traffic leaves the node with, and whether the remote's reply came back.

Pure checks over one ``packet_capture`` result taken on the pod's node while the pod probed the target
(the role ``egress``), and that probe's result (``reachability``'s row for the target).  The capture on
``any`` sees both legs: the pod's packets leaving the external interface (their source tells the
masquerade) and the target's replies arriving at the node's address, then leaving toward the pod's
address once the node translated them back.  Where the reply was last seen is the verdict:

- nowhere: the remote, its firewall or the infrastructure's path back to the node lost it (``egress.no_reply``);
- at the node, not toward the pod: the node did not translate it back or dropped it (``egress.reply_not_delivered``);
- at the pod (or the pod's connect was answered: open or refused): ``egress.ok``.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding

ANSWERED = ("open", "refused")


def _packets(flows, src, dst):
    return sum(f.get("packets", 0) for f in flows if f.get("src") == src and f.get("dst") == dst
               and f.get("proto") != "arp")


def probe_row(probe, target):
    """The tcp row of ``target`` in a ``reachability`` result (None when the probe is not given or has no row)."""
    for row in (probe or {}).get("targets") or []:
        if row.get("address") == target and isinstance(row.get("tcp"), dict):
            return row["tcp"]
    return None


def _sources(flows, target):
    """Packets per source address of the flows that left the node toward ``target`` (ARP left out)."""
    sources = {}
    for flow in flows:
        if flow.get("direction") == "out" and flow.get("dst") == target and flow.get("proto") != "arp":
            sources[flow["src"]] = sources.get(flow["src"], 0) + flow.get("packets", 0)
    return sources


def _evidence(capture, node_ip, pod_ip, target, sources, replies, pod, node):
    """The evidence every egress finding carries (``pod`` and ``node`` only when given)."""
    ordered = sorted(sources, key=lambda s: -sources[s])
    evidence = {"target": target, "node_ip": node_ip, "pod_ip": pod_ip, "sources": sources,
                "source_seen": ordered[0] if ordered else None, "interfaces": capture.get("interfaces"),
                "replies": replies}
    if pod:
        evidence["pod"] = pod
    if node:
        evidence["node"] = node
    return evidence


def _source_finding(sources, node_ip, pod_ip, target, node, who, where, subject, evidence):
    """The finding when the source address is wrong (none seen, the pod IP, another one), else None."""
    if not sources:
        return finding("egress.not_leaving", "warning", "L3", subject,
                       "no packet from %s%s to %s left the node's external interface during the probe" % (
                           who, " on %s" % node if node else "", target), evidence,
                       "the pod's traffic does not leave the node: check the pod's default route, the node's route "
                       "to the target and the FORWARD chain (k8snet.triage.route_check, iptables_drops)")
    if pod_ip in sources:
        return finding("egress.no_snat", "critical", "L3", subject,
                       "traffic of %s leaves %s with the pod IP %s as source, not the node IP %s: no "
                       "masquerade" % (who, where, pod_ip, node_ip), evidence,
                       "restore the CNI's masquerade rule (iptables -t nat POSTROUTING MASQUERADE for the pod CIDR, "
                       "Cilium enable-ipv4-masquerade / Calico natOutgoing) or route the pod CIDR back to this node")
    if set(sources) != {node_ip}:
        return finding("egress.unexpected_source", "warning", "L3", subject,
                       "traffic of %s leaves %s with source %s (neither the node IP %s nor the pod IP)" % (
                           who, where, ", ".join(sorted(sources)), node_ip), evidence,
                       "an egress gateway or another SNAT rule rewrites it: check that this is intended")
    return None


def _reply_finding(replies, node_ip, target, who, where, subject, evidence):
    """The finding once the traffic is SNAT-ed to the node IP: where the reply was last seen."""
    snat = "traffic of %s leaves %s SNAT-ed to the node IP %s" % (who, where, node_ip)
    if replies["probe"] in ANSWERED or replies["to_pod"]:
        answer = "connection %s" % replies["probe"] if replies["probe"] in ANSWERED else "replies seen toward the pod"
        return finding("egress.ok", "ok", "L3", subject, "%s, and %s answered (%s)" % (snat, target, answer), evidence)
    if replies["to_node"]:
        return finding(
            "egress.reply_not_delivered", "critical", "L3", subject,
            "%s and %s answered it (%d packets to %s seen on %s), but no reply went on to the pod: %s did not "
            "translate it back or dropped it" % (snat, target, replies["to_node"], node_ip, where, where), evidence,
            "on %s: conntrack -L -d %s (the masquerade's entry for the pod), the FORWARD chain and rp_filter "
            "(k8snet.triage.iptables_drops, conntrack_check)" % (where, target))
    return finding(
        "egress.no_reply", "critical", "L3", subject,
        "%s, but %s sent no reply during the probe%s: the reply was last seen nowhere, so it is lost beyond %s "
        "(the remote, its firewall, or the infrastructure's route back to %s)" % (
            snat, target, " (the pod's connect: %s)" % replies["probe"] if replies["probe"] else "", where, node_ip),
        evidence,
        "the masquerade is right: check the path outside the cluster, that %s accepts traffic from %s and routes "
        "its replies back to it (firewalls, security groups, NAT gateways)" % (target, node_ip))


def egress_snat(capture, node_ip, pod_ip, target, pod=None, node=None, probe=None):
    """Findings on pod traffic to ``target`` as the node's capture saw it (one finding).

    ``pod`` (namespace/name) and ``node`` name the pod and its node in the finding; ``probe`` is the
    ``reachability`` result of the pod's probes (its tcp status tells whether the pod got an answer)."""
    flows = capture.get("flows") or []
    sources = _sources(flows, target)
    tcp = probe_row(probe, target)
    replies = {"to_node": _packets(flows, target, node_ip), "to_pod": _packets(flows, target, pod_ip),
               "probe": (tcp or {}).get("status")}
    evidence = _evidence(capture, node_ip, pod_ip, target, sources, replies, pod, node)
    who = "pod %s (%s)" % (pod, pod_ip) if pod else "pod %s" % pod_ip
    where = node or "the node"
    subject = "%s -> %s" % (pod or pod_ip, target)
    wrong_source = _source_finding(sources, node_ip, pod_ip, target, node, who, where, subject, evidence)
    if wrong_source is not None:
        return [wrong_source]
    return [_reply_finding(replies, node_ip, target, who, where, subject, evidence)]
