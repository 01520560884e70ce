# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where do the packets vanish?  Pure checks over packet_capture results taken at every hop.

Ingress (client -> LoadBalancer VIP -> LB node -> DNAT -> worker -> pod veth -> pod) is walked
in order and the first hop where the probes were not seen is reported with the runbook step
that belongs to it.  Egress checks the source address pod traffic has when it leaves the
node's external interface (masquerade to the node IP, or not).

Inputs are the ``packet_capture`` results (their ``flows``), so these run on the controller.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding

# (check, layer, the runbook step)
STEPS = {
    "client": ("ingress.client_network", "L3", "packets do not leave the client: check the client's route and "
               "firewall toward the VIP (ip route get VIP on the client)"),
    "arp": ("ingress.arp", "L2", "the VIP is not reachable at layer 2: check which node owns the VIP (keepalived / "
            "MetalLB speaker / kube-vip), that it answers ARP, and the MAC cached on the client and routers "
            "(k8snet.triage.arp_check)"),
    "nat": ("ingress.nat", "L4", "the LB node receives the packets but does not translate them to a pod: check "
            "kube-proxy / the dataplane NAT for the Service (iptables-save -t nat | grep VIP, or the Cilium LB "
            "maps: k8snet.triage.bpf_map_usage) and the Service's endpoints"),
    "between_nodes": ("ingress.between_nodes", "L3", "translated packets leave the LB node but never reach the "
                      "worker: check the network between the nodes (route to the pod CIDR on the LB node, "
                      "firewalls / security groups, k8snet.triage.route_check and k8snet.triage.iptables_drops)"),
    "pod": ("ingress.pod_forwarding", "L3", "the worker receives the packets but does not forward them to the pod's "
            "veth: check the pod's /32 route and the FORWARD chain on the worker (k8snet.triage.route_check, "
            "k8snet.triage.iptables_drops)"),
    "backend": ("ingress.backend", "L7", "the pod receives the packets and does not answer: check the application "
                "(listening port, readiness) and NetworkPolicies"),
    "return": ("ingress.return_path", "L3", "the pod answers but the client never gets the reply: check the "
               "return path (SNAT on the LB node for externalTrafficPolicy: Cluster, rp_filter, asymmetric routes)"),
}


def seen(result, exclude_interface=None, **match):
    """Packets in ``result['flows']`` whose fields equal every value of ``match``."""
    if not result:
        return 0
    total = 0
    for flow in result.get("flows") or []:
        if exclude_interface and flow.get("interface") == exclude_interface:
            continue
        if all(flow.get(key) == value for key, value in match.items()):
            total += flow.get("packets", 0)
    return total


def _probe_ok(probe):
    """True / False from a reachability result (any TCP probe open), None when there is none."""
    if not probe:
        return None
    rows = probe.get("targets") or []
    return any((row.get("tcp") or {}).get("status") == "open" for row in rows)


def ingress_bisect(captures, vip, port, pod_ip, pod_port, probe=None, pod_interface=None):
    """captures: {"client": result|None, "lb": [results], "worker": result}; results carry ``host``.

    Returns {"hops": [{"hop", "host", "packets"}], "vanished_at": hop|None, "findings": [...]}.
    """
    client = captures.get("client")
    lbs = [r for r in captures.get("lb") or [] if r]
    worker = captures.get("worker")
    if pod_interface is None and worker:
        pod_interface = (worker.get("routed") or {}).get(pod_ip)
    same_node = worker is not None and any(r.get("host") == worker.get("host") for r in lbs)
    hops = []

    def hop(name, host, packets):
        hops.append({"hop": name, "host": host, "packets": packets})
        return packets

    vanished = None
    arp_requests = arp_replies = 0
    if client:
        arp_requests = seen(client, direction="out", proto="arp", arp_op="request", dst=vip)
        arp_replies = seen(client, direction="in", proto="arp", arp_op="reply", src=vip)
        if not hop("client_out", client.get("host"), seen(client, direction="out", proto="tcp", dst=vip, dport=port)):
            vanished = "arp" if arp_requests and not arp_replies else "client"
    if vanished is None and lbs:
        lb_hosts = ",".join(r.get("host") or "?" for r in lbs)
        if not hop("lb_in", lb_hosts, sum(seen(r, direction="in", proto="tcp", dst=vip, dport=port) for r in lbs)):
            vanished = "arp"
        elif not hop("lb_translated", lb_hosts,
                     sum(seen(r, direction="out", proto="tcp", dst=pod_ip, dport=pod_port) for r in lbs)):
            vanished = "nat"
    if vanished is None and worker:
        if not same_node and not hop("worker_in", worker.get("host"), seen(
                worker, exclude_interface=pod_interface, direction="in", proto="tcp", dst=pod_ip, dport=pod_port)):
            vanished = "between_nodes"
        elif not hop("pod_veth", worker.get("host"), seen(worker, interface=pod_interface, direction="out",
                                                          proto="tcp", dst=pod_ip, dport=pod_port)
                     if pod_interface else 0):
            vanished = "pod"
        elif not hop("pod_reply", worker.get("host"), seen(worker, interface=pod_interface, direction="in",
                                                           proto="tcp", src=pod_ip, sport=pod_port)):
            vanished = "backend"
    probe_ok = _probe_ok(probe)
    if vanished is None and probe_ok is False:
        vanished = "return"
    if not hops:
        return {"hops": hops, "vanished_at": None, "findings": [finding(
            "ingress.not_checked", "warning", "L4", "%s:%s" % (vip, port),
            "no hop's capture result was given (client, LB nodes and worker all missing): nothing was checked",
            {"vip": "%s:%s" % (vip, port), "pod": "%s:%s" % (pod_ip, pod_port), "probe_ok": probe_ok},
            "run the captures on the client, the LB nodes and the worker (role k8snet.triage.ingress_path)")]}
    evidence = {"hops": hops, "vip": "%s:%s" % (vip, port), "pod": "%s:%s" % (pod_ip, pod_port),
                "pod_interface": pod_interface, "probe_ok": probe_ok}
    if client:
        evidence["client_arp"] = {"requests": arp_requests, "replies": arp_replies}
    if vanished is None:
        findings = [finding("ingress.ok", "ok", "L4", "%s:%s" % (vip, port),
                            "the probes crossed every hop to the pod and back", evidence)]
    else:
        check, layer, step = STEPS[vanished]
        last = [h for h in hops if h["packets"]]
        where = {"client": "on the client", "arp": "between the client and the LB node",
                 "nat": "on the LB node (not translated)", "between_nodes": "between the LB node and the worker",
                 "pod": "on the worker, before the pod's veth", "backend": "in the pod (no reply)",
                 "return": "on the way back to the client"}[vanished]
        summary = "packets to %s:%s vanish %s; last seen at %s" % (
            vip, port, where, last[-1]["hop"] + " on " + str(last[-1]["host"]) if last else "no hop")
        if vanished == "arp" and client and arp_requests and not arp_replies:
            summary += " (the client's %d ARP requests for %s got no reply)" % (arp_requests, vip)
        if vanished == "pod" and worker and pod_interface is None:
            summary += " (the worker has no route to %s)" % pod_ip
        findings = [finding(check, "critical", layer, "%s:%s" % (vip, port), summary, evidence, step)]
    return {"hops": hops, "vanished_at": vanished, "findings": findings}


def egress_snat(capture, node_ip, pod_ip, target):
    """Source addresses of pod traffic to ``target`` leaving the node (capture on the external interface)."""
    sources = {}
    for flow in capture.get("flows") or []:
        if flow.get("direction") == "out" and flow.get("dst") == target and flow.get("proto") != "arp":
            sources[flow["src"]] = sources.get(flow["src"], 0) + flow.get("packets", 0)
    evidence = {"target": target, "node_ip": node_ip, "pod_ip": pod_ip, "sources": sources,
                "interfaces": capture.get("interfaces")}
    subject = "%s -> %s" % (pod_ip, target)
    if not sources:
        return [finding("egress.not_leaving", "warning", "L3", subject,
                        "no packet to %s left the node's external interface during the probe" % target, evidence,
                        "the pod's traffic does not leave the node: check the pod's default route, the node's route "
                        "to the target and the FORWARD chain (k8snet.triage.route_check, iptables_drops)")]
    if pod_ip in sources:
        return [finding("egress.no_snat", "critical", "L3", subject,
                        "pod traffic leaves the node with the pod IP %s as source, not the node IP %s: no "
                        "masquerade" % (pod_ip, node_ip), evidence,
                        "restore the CNI's masquerade rule (iptables -t nat POSTROUTING MASQUERADE for the pod CIDR, "
                        "Cilium enable-ipv4-masquerade / Calico natOutgoing) or route the pod CIDR back to this node")]
    if set(sources) == {node_ip}:
        return [finding("egress.ok", "ok", "L3", subject, "pod traffic leaves SNAT-ed to the node IP %s" % node_ip,
                        evidence)]
    return [finding("egress.unexpected_source", "warning", "L3", subject,
                    "pod traffic leaves with source %s (neither the node IP %s nor the pod IP)" % (
                        ", ".join(sorted(sources)), node_ip), evidence,
                    "an egress gateway or another SNAT rule rewrites it: check that this is intended")]
