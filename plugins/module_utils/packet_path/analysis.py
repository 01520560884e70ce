# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where do the packets vanish?  Pure checks over packet_capture results taken at every hop.

Ingress (client -> LoadBalancer VIP -> LB node -> DNAT -> worker -> pod veth -> pod) is walked
in order and the first hop where the probes were not seen is reported with the runbook step
that belongs to it.  The egress checks (the source address pod traffic leaves the node with, and
the reply coming back) live in ``egress``.

Inputs are the ``packet_capture`` results (their ``flows``), so these run on the controller.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding

# (check, layer, the runbook step)
STEPS = {
    "client": ("ingress.client_network", "L3", "packets do not leave the client: check the client's route and "
               "firewall toward the VIP (ip route get VIP on the client)"),
    "arp": ("ingress.arp", "L2", "the VIP is not reachable at layer 2: check which node owns the VIP (keepalived / "
            "MetalLB speaker / kube-vip), that it answers ARP, and the MAC cached on the client and routers "
            "(k8snet.triage.arp_check)"),
    "fabric": ("ingress.fabric", "L2", "ARP is right - the LB node answers for the VIP and the client gets its reply - "
               "but the packets the client sends to that MAC never reach the node: the network between them drops "
               "or misdelivers them, not the node nor its announcer. Take the evidence (each side's packets) to the "
               "network / infrastructure team: the physical switch (its MAC table for the node's MAC, port security, "
               "VLAN, ACLs) or the SDN / virtual switch, whose data-plane learning may ignore ARP replies and keep "
               "the VIP's MAC elsewhere (vSphere / NSX, a cloud's anti-spoofing or allowed-address list)"),
    "nat": ("ingress.nat", "L4", "the LB node receives the packets but does not translate them to a pod: check "
            "kube-proxy / the dataplane NAT for the Service (iptables-save -t nat | grep VIP, or the Cilium LB "
            "maps: k8snet.triage.bpf_map_usage) and the Service's endpoints"),
    "forward": ("ingress.lb_forward", "L2", "the LB node receives the packets but does not forward them to a "
                "backend node: a direct-server-return load balancer (Seesaw) keeps the VIP as the destination and "
                "only rewrites the MAC: check it on its master node (ipvsadm -Ln: the VIP's service and its real "
                "servers, their health checks) and that the backend nodes are up"),
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


def _client_hop(client, vip, port, hop):
    """(ARP requests, ARP replies, vanished) at the client: its probes to vip:port leaving it (hop
    ``client_out``); none leaving is ``arp`` when its ARP requests for the VIP got no reply, else ``client``."""
    if not client:
        return 0, 0, None
    arp_requests = seen(client, direction="out", proto="arp", arp_op="request", dst=vip)
    arp_replies = seen(client, direction="in", proto="arp", arp_op="reply", src=vip)
    if not hop("client_out", client.get("host"), seen(client, direction="out", proto="tcp", dst=vip, dport=port)):
        return arp_requests, arp_replies, "arp" if arp_requests and not arp_replies else "client"
    return arp_requests, arp_replies, None


def _hops_recorder(hops):
    """``hop(name, host, packets)``: appends the hop to ``hops`` and returns its packets."""
    def hop(name, host, packets):
        hops.append({"hop": name, "host": host, "packets": packets})
        return packets
    return hop


def _lb_hops(lbs, vip, port, hop, translated, lb_mode="nat"):
    """The LB nodes' hops: the probes in to vip:port (``lb_in``), then translated toward the backends
    (``lb_translated``: ``translated()`` packets); the step where they vanished (``arp``, ``nat``) or None.
    A direct-server-return LB (``lb_mode`` dsr, Seesaw) translates nothing: its second hop is the probes
    leaving it still to vip:port (``lb_forwarded``, vanished: ``forward``)."""
    names = ",".join(r.get("host") or "?" for r in lbs)
    if not hop("lb_in", names, sum(seen(r, direction="in", proto="tcp", dst=vip, dport=port) for r in lbs)):
        return "arp"
    if lb_mode == "dsr":
        out = sum(seen(r, direction="out", proto="tcp", dst=vip, dport=port) for r in lbs)
        return None if hop("lb_forwarded", names, out) else "forward"
    if not hop("lb_translated", names, translated()):
        return "nat"
    return None


def _fabric(client, lbs, vip, port, arp_answering):
    """The client's side and the LB nodes' side when the probes vanish before ``lb_in`` although ARP is right, or
    None.  Right means: exactly one MAC answered the client's ARP probe for ``vip`` (``arp_answering``, the
    ``answering`` of vip_announcer: [{mac, hosts}]), it belongs to LB nodes that were captured, the client's
    probes left it (``client_out``), and the client's own ARP for the VIP in this capture, if it asked, was
    answered (none asked: it used its cached entry)."""
    if not client or not lbs or not arp_answering or len(arp_answering) != 1:
        return None
    owners = set(arp_answering[0].get("hosts") or [])
    captured = set(r.get("host") for r in lbs)
    if not owners or not owners <= captured:
        return None
    sent = seen(client, direction="out", proto="tcp", dst=vip, dport=port)
    requests = seen(client, direction="out", proto="arp", arp_op="request", dst=vip)
    replies = seen(client, direction="in", proto="arp", arp_op="reply", src=vip)
    if not sent or (requests and not replies):
        return None
    return {"arp_answered_by": {"mac": arp_answering[0].get("mac"), "hosts": sorted(owners)},
            "client": {"host": client.get("host"), "tcp_out": sent, "arp_requests": requests, "arp_replies": replies,
                       "arp_cached": not requests},
            "lb_nodes": dict((r.get("host"), {"tcp_in": seen(r, direction="in", proto="tcp", dst=vip, dport=port)})
                             for r in lbs)}


def _fabric_note(sides):
    """The summary's account of each side when the probes vanish in the fabric."""
    client = sides["client"]
    arp = ("its %d ARP requests got %d replies" % (client["arp_requests"], client["arp_replies"])
           if not client["arp_cached"] else "it used its cached entry for the VIP")
    return (" (ARP is right: %s answers the client's ARP probe with %s and %s; the client sent %d probes, %s "
            "received none)" % ("/".join(sides["arp_answered_by"]["hosts"]), sides["arp_answered_by"]["mac"], arp,
                                client["tcp_out"], ", ".join(sorted(sides["lb_nodes"]))))


def _worker_walk(worker, ip, port, interface, same_node, hop, arrives=None):
    """The worker's hops toward the backend ``ip:port`` behind ``interface`` (the worker's route to ``ip``),
    each recorded by ``hop(name, packets)``; the step where the probes vanished or None.  ``same_node``: the
    worker is an LB node too, so there is no ``worker_in`` hop to cross.  ``arrives``: the (address, port)
    the probes carry when they reach the worker, when not the backend's (a DSR LB leaves the VIP as the
    destination: the worker translates it)."""
    arrive_ip, arrive_port = arrives or (ip, port)
    # a backend on the host network (a hostNetwork pod) has the node's own address: the kernel routes it to lo,
    # there is no veth to cross, and its answer leaves the node's own interface
    host_network = interface == "lo"
    if not same_node and not hop("worker_in", seen(
            worker, exclude_interface=None if host_network else interface, direction="in", proto="tcp", dst=arrive_ip,
            dport=arrive_port)):
        return "between_nodes"
    if host_network:
        return None if hop("host_socket", seen(worker, direction="out", proto="tcp", src=ip, sport=port)) else "backend"
    if not hop("pod_veth", seen(worker, interface=interface, direction="out", proto="tcp", dst=ip, dport=port)
               if interface else 0):
        return "pod"
    if not hop("pod_reply", seen(worker, interface=interface, direction="in", proto="tcp", src=ip, sport=port)):
        return "backend"
    return None


def _last_seen(hops):
    """``<hop> on <host>`` of the last hop that saw packets, ``no hop`` when none did."""
    last = [h for h in hops if h["packets"]]
    return last[-1]["hop"] + " on " + str(last[-1]["host"]) if last else "no hop"


def _arp_note(vanished, client, arp_requests, arp_replies, vip):
    """The summary's note on the client's unanswered ARP requests when the probes vanish at ``arp``."""
    if vanished == "arp" and client and arp_requests and not arp_replies:
        return " (the client's %d ARP requests for %s got no reply)" % (arp_requests, vip)
    return ""


def _arp_or_fabric(vanished, walk, evidence, arp_answering):
    """(the step, the summary's note) once the walk is done: probes that vanish before ``lb_in`` although ARP is
    right (_fabric) are the network between (``fabric``, each side's packets in ``evidence.fabric``), not ``arp``.
    ``walk``: (client, lbs, vip, port, arp_requests, arp_replies)."""
    client, lbs, vip, port, arp_requests, arp_replies = walk
    sides = _fabric(client, lbs, vip, port, arp_answering) if vanished == "arp" else None
    if sides:
        evidence["fabric"] = sides
        return "fabric", _fabric_note(sides)
    return vanished, _arp_note(vanished, client, arp_requests, arp_replies, vip)


# where the probes vanish, by the step of STEPS (ingress_bisect)
_WHERE = {"client": "on the client", "arp": "between the client and the LB node",
          "fabric": "in the network between the client and the LB node",
          "nat": "on the LB node (not translated)", "forward": "on the LB node (not forwarded to a backend node)",
          "between_nodes": "between the LB node and the worker",
          "pod": "on the worker, before the pod's veth", "backend": "in the pod (no reply)",
          "return": "on the way back to the client"}


def _ingress_vanished(vanished, vip, port, pod_ip, hops, evidence, arp_note, worker):
    """The critical finding of ingress_bisect for the step where the probes vanished (``arp_note``: _arp_note)."""
    check, layer, step = STEPS[vanished]
    where = ("in the backend on the host network (no reply)"
             if vanished == "backend" and evidence["backend_on_host_network"] else _WHERE[vanished])
    summary = "packets to %s:%s vanish %s; last seen at %s" % (vip, port, where, _last_seen(hops)) + arp_note
    if vanished == "pod" and worker and evidence["pod_interface"] is None:
        summary += " (the worker has no route to %s)" % pod_ip
    return finding(check, "critical", layer, "%s:%s" % (vip, port), summary, evidence, step)


def _ingress_walk(client, lbs, worker, vip, port, pod_ip, pod_port, pod_interface, lb_mode="nat"):
    """The walk client -> LB nodes -> worker -> pod: (hops, the client's ARP requests, its ARP replies, the step
    where the probes vanished or None)."""
    same_node = worker is not None and any(r.get("host") == worker.get("host") for r in lbs)
    hops = []
    hop = _hops_recorder(hops)
    arp_requests, arp_replies, vanished = _client_hop(client, vip, port, hop)
    if vanished is None and lbs:
        vanished = _lb_hops(lbs, vip, port, hop, lambda: sum(
            seen(r, direction="out", proto="tcp", dst=pod_ip, dport=pod_port) for r in lbs), lb_mode)
    if vanished is None and worker:
        vanished = _worker_walk(worker, pod_ip, pod_port, pod_interface, same_node,
                                lambda name, packets: hop(name, worker.get("host"), packets),
                                (vip, port) if lb_mode == "dsr" and lbs else None)
    return hops, arp_requests, arp_replies, vanished


def ingress_bisect(captures, vip, port, pod_ip, pod_port, probe=None, pod_interface=None, lb_mode="nat",
                   arp_answering=None):
    """captures: {"client": result|None, "lb": [results], "worker": result}; results carry ``host``.
    ``lb_mode``: ``nat`` (the LB node translates the VIP to the pod: kube-proxy, MetalLB, kube-vip) or ``dsr``
    (direct server return, Seesaw: the LB node forwards the packets to the worker with the VIP kept, the worker
    translates it, and the reply goes to the client without the LB node).  ``arp_answering``: the MACs that
    answered the client's ARP probe for the VIP with their nodes ([{mac, hosts}], vip_announcer's ``answering``):
    with the LB node the one answering, probes lost before it are ``fabric``, not ``arp``.

    Returns {"hops": [{"hop", "host", "packets"}], "vanished_at": hop|None, "findings": [...]}.
    """
    client = captures.get("client")
    lbs = [r for r in captures.get("lb") or [] if r]
    worker = captures.get("worker")
    if pod_interface is None and worker:
        pod_interface = (worker.get("routed") or {}).get(pod_ip)
    hops, arp_requests, arp_replies, vanished = _ingress_walk(client, lbs, worker, vip, port, pod_ip, pod_port,
                                                              pod_interface, lb_mode)
    host_network = pod_interface == "lo"  # the backend on the host network (_worker_walk says why)
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
                "pod_interface": pod_interface, "probe_ok": probe_ok, "backend_on_host_network": host_network,
                "lb_mode": lb_mode}
    if client:
        evidence["client_arp"] = {"requests": arp_requests, "replies": arp_replies}
    vanished, note = _arp_or_fabric(vanished, (client, lbs, vip, port, arp_requests, arp_replies), evidence,
                                    arp_answering)
    if vanished is None:
        findings = [finding("ingress.ok", "ok", "L4", "%s:%s" % (vip, port),
                            "the probes crossed every hop to the pod and back", evidence)]
    else:
        findings = [_ingress_vanished(vanished, vip, port, pod_ip, hops, evidence, note, worker)]
    return {"hops": hops, "vanished_at": vanished, "findings": findings}


def _translated(lbs, backends):
    """{backend ip: the packets the LB nodes sent out translated to that backend's ip:port}."""
    return dict((b["ip"], sum(seen(r, direction="out", proto="tcp", dst=b["ip"], dport=b["port"]) for r in lbs))
                for b in backends)


def _backend_walk(worker, backend, lb_hosts):
    """The worker's hops of one backend: (hops, the hop where its probes vanished or None)."""
    ip, port = backend["ip"], backend["port"]
    interface = (worker.get("routed") or {}).get(ip)
    hops = []

    def hop(name, packets):
        hops.append({"hop": name, "host": backend.get("host"), "packets": packets, "backend": backend.get("pod") or ip})
        return packets

    vanished = _worker_walk(worker, ip, port, interface, backend.get("host") in lb_hosts, hop)
    return hops, vanished, interface


def _backend_row(backend, worker, translated, lbs, lb_hosts, hops):
    """One backend's row of the evidence (its translated packets and verdict); its worker's hops go to ``hops``."""
    row = {"pod": backend.get("pod"), "ip": backend["ip"], "port": backend["port"], "node": backend.get("node"),
           "host": backend.get("host"), "translated": translated.get(backend["ip"], 0) if lbs else None,
           "vanished_at": None}
    if lbs and not row["translated"]:
        row["verdict"] = "not hit"
    elif worker is None:
        row["verdict"] = "not captured (node not in the inventory or not reached)"
    else:
        backend_hops, row["vanished_at"], row["pod_interface"] = _backend_walk(worker, backend, lb_hosts)
        hops.extend(backend_hops)
        row["verdict"] = "ok" if row["vanished_at"] is None else "vanished"
    return row


def _backend_rows(backends, workers, translated, lbs, lb_hosts, hops):
    """(every backend's row, the first row whose probes vanished or None)."""
    rows, culprit = [], None
    for backend in backends:
        worker = workers.get(backend.get("host")) if backend.get("host") else None
        row = _backend_row(backend, worker, translated, lbs, lb_hosts, hops)
        if row["vanished_at"] and culprit is None:
            culprit = row
        rows.append(row)
    return rows, culprit


def _backends_walk(client, lbs, workers, vip, port, backends):
    """The walk client -> LB nodes -> every backend: (hops, the client's ARP requests, its ARP replies, the step
    where the probes vanished or None, the backends' rows, the first row whose probes vanished or None)."""
    hops, rows, culprit = [], [], None
    hop = _hops_recorder(hops)
    arp_requests, arp_replies, vanished = _client_hop(client, vip, port, hop)
    lb_hosts = set(r.get("host") for r in lbs)
    translated = _translated(lbs, backends)
    if vanished is None and lbs:
        vanished = _lb_hops(lbs, vip, port, hop, lambda: sum(translated.values()))
    if vanished is None:
        rows, culprit = _backend_rows(backends, workers, translated, lbs, lb_hosts, hops)
        vanished = culprit["vanished_at"] if culprit else None
    return hops, arp_requests, arp_replies, vanished, rows, culprit


def _backends_unbroken(subject, rows, backends, evidence):
    """The finding when no hop lost the probes: ok when a captured backend got them, else not checked."""
    hit = [r for r in rows if r["verdict"] == "ok"]
    if not backends:
        return finding(
            "ingress.not_checked", "warning", "L4", subject,
            "no ready backend was given: no probe could be followed beyond the LB node, so the path to a backend "
            "was not checked", evidence,
            "check the Service's endpoints (kubectl get endpointslices -n <namespace> -l "
            "kubernetes.io/service-name=<service>): a Service without a ready backend answers nothing")
    if not hit:
        return finding(
            "ingress.not_checked", "warning", "L4", subject,
            "the probes were translated only to backends whose node was not captured: the path beyond the LB node "
            "was not checked", evidence,
            "add the backends' nodes to the inventory (k8s_node_name) and run the play on them")
    return finding(
        "ingress.ok", "ok", "L4", subject, "the probes crossed every hop to %d backend%s (%s) and back" % (
            len(hit), "" if len(hit) == 1 else "s", ", ".join(r["pod"] or r["ip"] for r in hit)), evidence)


def _culprit_summary(subject, culprit, rows, vanished):
    """The summary naming the backend (pod, node) whose probes vanished, and those that got through."""
    others = [r["pod"] or r["ip"] for r in rows if r["verdict"] == "ok"]
    where = {"between_nodes": "between the LB node and %s" % culprit["host"],
             "pod": "on %s, before the pod's veth" % culprit["host"],
             "backend": "on the node's own network (host network: no pod veth), no reply"
             if culprit.get("pod_interface") == "lo" else "in the pod (no reply)"}[vanished]
    summary = "packets to %s translated to backend %s (%s on node %s) vanish %s%s" % (
        subject, culprit["pod"] or culprit["ip"], culprit["ip"], culprit["node"] or culprit["host"], where,
        "; the probes to %s got through" % ", ".join(others) if others else "")
    if vanished == "pod" and culprit.get("pod_interface") is None:
        summary += " (%s has no route to %s)" % (culprit["host"], culprit["ip"])
    return summary


# where the probes vanish before any backend, by the step of STEPS (ingress_bisect_backends)
_WHERE_BEFORE_BACKENDS = {"client": "on the client", "arp": "between the client and the LB node",
                          "fabric": "in the network between the client and the LB node",
                          "nat": "on the LB node (translated to no backend)", "return": "on the way back to the client"}


def _backends_vanished(vanished, subject, culprit, rows, hops, evidence, arp_note):
    """The critical finding of ingress_bisect_backends for the step where the probes vanished: naming the
    culprit backend (also put in ``evidence.backend``) when they vanished beyond the LB node."""
    check, layer, step = STEPS[vanished]
    if culprit:
        summary = _culprit_summary(subject, culprit, rows, vanished)
        evidence["backend"] = dict((k, culprit.get(k)) for k in ("pod", "ip", "port", "node", "host"))
    else:
        summary = "packets to %s vanish %s; last seen at %s" % (
            subject, _WHERE_BEFORE_BACKENDS[vanished], _last_seen(hops)) + arp_note
    return finding(check, "critical", layer, subject, summary, evidence, step)


def ingress_bisect_backends(captures, vip, port, backends, probe=None, arp_answering=None):
    """The bisection over every ready backend.  ``backends``: [{ip, port, pod, node, host}]; ``captures``:
    {"client": result, "lb": [results], "workers": {host: result}} (results carry ``host``).

    Each probe is attributed to the backend the LB node translated it to (its packets out to that backend's
    ip:port), so a probe that went to another backend is never a NAT failure: ``ingress.nat`` only when the
    LB node translated nothing to any backend.  The first backend whose probes vanish is named (pod, node) in
    the finding; ``backends`` in the evidence gives each one's translated packets and verdict."""
    client = captures.get("client")
    lbs = [r for r in captures.get("lb") or [] if r]
    workers = captures.get("workers") or {}
    hops, arp_requests, arp_replies, vanished, rows, culprit = _backends_walk(
        client, lbs, workers, vip, port, backends)
    probe_ok = _probe_ok(probe)
    if vanished is None and probe_ok is False and any(r["verdict"] == "ok" for r in rows):
        vanished = "return"
    evidence = {"hops": hops, "vip": "%s:%s" % (vip, port), "backends": rows, "probe_ok": probe_ok}
    if client:
        evidence["client_arp"] = {"requests": arp_requests, "replies": arp_replies}
    subject = "%s:%s" % (vip, port)
    if not hops:
        return {"hops": hops, "vanished_at": None, "backend": None, "findings": [finding(
            "ingress.not_checked", "warning", "L4", subject,
            "no hop's capture result was given (client, LB nodes and workers all missing): nothing was checked",
            evidence, "run the captures on the client, the LB nodes and the backends' nodes (role "
                      "k8snet.triage.ingress_path)")]}
    if vanished is None:
        return {"hops": hops, "vanished_at": None, "backend": None,
                "findings": [_backends_unbroken(subject, rows, backends, evidence)]}
    vanished, note = _arp_or_fabric(vanished, (client, lbs, vip, port, arp_requests, arp_replies), evidence,
                                    arp_answering)
    vanished_finding = _backends_vanished(vanished, subject, culprit, rows, hops, evidence, note)
    return {"hops": hops, "vanished_at": vanished, "backend": evidence.get("backend"), "findings": [vanished_finding]}


def _without(result, addresses):
    """A copy of a capture result without the flows from or to one of ``addresses``."""
    if not result or not addresses:
        return result
    kept = [f for f in result.get("flows") or [] if f.get("src") not in addresses and f.get("dst") not in addresses]
    return dict(result, flows=kept)


def _translated_sources(result, keys):
    """The source addresses a node sent translated packets to the backends ``keys`` ({(ip, port)}) with: those
    of its packets out to a backend that did not come in with that source (forwarded for another node)."""
    outs, ins = set(), set()
    for flow in (result or {}).get("flows") or []:
        if (flow.get("dst"), flow.get("dport")) in keys:
            (outs if flow.get("direction") == "out" else ins).add(flow.get("src"))
    return outs - ins


def _no_local_endpoint(host, ip, port, backends, item):
    """The finding for an entry node without a local endpoint under policy Local whose probes were not
    translated: what the policy does by design, not a NAT failure."""
    serving = sorted(set(b.get("node") or b.get("host") for b in backends if b.get("node") or b.get("host")))
    evidence = dict(item["evidence"], policy="Local", local_endpoint=False, serving_nodes=serving)
    return finding(
        "ingress.nodeport_no_local_endpoint", "info", "L4", item["subject"],
        "via node %s: expected with externalTrafficPolicy Local: %s has no local endpoint of the Service (they run "
        "on %s), so it does not forward %s:%s - the connect is dropped, or accepted and never answered; a load "
        "balancer's health check keeps the node out of its pool, so there is no impact unless clients connect to "
        "it directly" % (host, host, ", ".join(serving) or "no node", ip, port), evidence,
        "nothing to fix on %s; enter through a node with an endpoint (%s), or switch the Service to "
        "externalTrafficPolicy Cluster (every node forwards, the client source IP is lost: "
        "k8snet.triage.lb_health with force_policy_switch)" % (host, ", ".join(serving) or "none"))


def _entry_sources(client, lbs, entries, backends):
    """{entry host: the source addresses its translated packets carry (its own address with them), the client's
    own addresses left out}."""
    keys = set((b["ip"], b["port"]) for b in backends)
    client_ip = set(f.get("src") for f in (client or {}).get("flows") or [] if f.get("direction") == "out")
    return dict((e.get("host"), (_translated_sources(lbs.get(e.get("host")), keys) | set([e["ip"]])) - client_ip)
                for e in entries)


def _other_sources(sources, host):
    """The translated-source addresses of the entry nodes other than ``host``, but none of its own."""
    others = set()
    for other, addresses in sources.items():
        if other != host:
            others |= addresses
    return others - sources[host]


def _entry_captures(client, lbs, workers, host, others):
    """The captures of entry node ``host``'s own walk: without the packets of the ``others`` addresses."""
    lb = _without(lbs.get(host), others)
    own = dict((name, _without(result, others)) for name, result in workers.items())
    return {"client": client, "lb": [lb] if lb else [], "workers": own}


def _no_local_backend(host, backends):
    """True when entry node ``host`` holds no backend (by inventory host or node name)."""
    local = set(b.get("host") for b in backends) | set(b.get("node") for b in backends)
    return host not in local


def _label_findings(findings, host, ip, port, backends, expected):
    """Name the entry node in each finding (``evidence.entry_node``, the summary); an ``expected`` NAT failure
    becomes ``ingress.nodeport_no_local_endpoint``."""
    for index, item in enumerate(findings):
        item["evidence"]["entry_node"] = host
        if expected:
            findings[index] = _no_local_endpoint(host, ip, port, backends, item)
        else:
            item["summary"] = "via node %s: %s" % (host, item["summary"])


def nodeport_bisect(captures, entries, port, backends, probe=None, policy=None):
    """The bisection of a NodePort (or a ManualLB VIP outside the cluster, which forwards to the nodes):
    every entry node's ``ip:port`` was probed from the client and captured on that node and on the backends'
    nodes.  ``entries``: [{host, ip}]; ``captures`` as for ingress_bisect_backends, ``lb`` holding the entry
    nodes' results.  Each entry node is walked on its own (ingress_bisect_backends with that node as the LB
    node, its own probes): the packets another entry node translated (their source address after its SNAT)
    are left out of its walk, so one broken entry node is not hidden by the others.  Without SNAT every
    translated packet keeps the client's address and the entries cannot be told apart on the workers.

    With ``policy`` Local an entry node that holds no backend (by inventory host or node name) does not
    forward the nodePort by design (kube-proxy drops it: kubernetes/kubernetes pkg/proxy/iptables/proxier.go,
    "has no local endpoints", commit 092dddd12ca4cc5e66597de66a81fc77fdd3f29b; OVN-Kubernetes accepts the
    connect and never answers): its untranslated probes are ``ingress.nodeport_no_local_endpoint`` (info,
    expected), not ``ingress.nat``.

    Returns {"entries": [{host, ip, vanished_at, backend, expected}], "hops", "findings"}: every finding names
    its entry node (``evidence.entry_node``)."""
    client = captures.get("client")
    lbs = dict((r.get("host"), r) for r in captures.get("lb") or [] if r)
    workers = captures.get("workers") or {}
    rows = (probe or {}).get("targets") or []
    sources = _entry_sources(client, lbs, entries, backends)
    out = {"entries": [], "hops": [], "findings": []}
    for entry in entries:
        host, ip = entry.get("host"), entry["ip"]
        others = _other_sources(sources, host)
        own = _entry_captures(client, lbs, workers, host, others)
        result = ingress_bisect_backends(own, ip, port, backends,
                                         {"targets": [r for r in rows if r.get("address") == ip]} if probe else None)
        expected = policy == "Local" and _no_local_backend(host, backends) and result["vanished_at"] == "nat"
        _label_findings(result["findings"], host, ip, port, backends, expected)
        out["entries"].append({"host": host, "ip": ip, "vanished_at": result["vanished_at"],
                               "backend": result["backend"], "expected": expected})
        out["hops"].extend(dict(h, entry_node=host) for h in result["hops"])
        out["findings"].extend(result["findings"])
    if not entries:
        out["findings"].append(finding(
            "ingress.not_checked", "warning", "L4", "nodePort %s" % port,
            "no entry node was given: no nodeIP:nodePort was probed", {"port": port},
            "run the role on the nodes (ingress_path_entry_nodes, or the play's nodes)"))
    return out
