# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The packet path of one Service, from the Kubernetes API, and who announces its VIP.

Pure functions over the plain dicts ``kube.Kube`` returns (the API's own field names), and over
``arp_check`` results; ``api_check`` is the only reader:

* ``service_view``: the VIP (``status.loadBalancer.ingress``, ``spec.loadBalancerIP``,
  ``spec.externalIPs``), the chosen port with its nodePort and targetPort, and
  ``externalTrafficPolicy``;
* ``ready_endpoints``: every ready endpoint of the EndpointSlices, with its pod, node and IP and the
  port the pod listens on for the chosen Service port;
* ``declared_announcer``: the node MetalLB says announces the VIP, from its ``ServiceL2Status``
  objects (``metallb.io/v1beta1``) when the CRD is served, else from the speaker's ``nodeAssigned``
  events on the Service;
* ``host_of``: Kubernetes node names to inventory hosts (``k8s_node_name``, else the inventory name);
* ``vip_announcer``: who answers ARP for the VIP (the client's probe), each MAC mapped to the node
  that owns it (the nodes' own ``arp_check`` ``local`` data), compared with the declared announcer
  or the node holding the VIP on an interface.
"""

from __future__ import annotations

import re

from ansible_collections.k8snet.triage.plugins.module_utils.arp import announce as arp_announce
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta, node_address
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import split_ref
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import optional_read
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.service_options import RULES

METALLB_GROUP = "metallb.io"
METALLB_VERSION = "v1beta1"
L2_STATUS_PLURAL = "servicel2statuses"
# the speaker's event (speaker/main.go): announcing from node "node1" with protocol "layer2"
_ASSIGNED = re.compile(r'announcing from node "([^"]+)"')
# the most endpoints returned (a Deployment of thousands is summarised by the count)
MAX_ENDPOINTS = 64


# ------------------------------------------------------------------ the Service
def _ip_or_none(value):
    from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
    try:
        return host_address(value) if value else None
    except ValueError:
        return None


def service_vips(spec, ingress):
    """(the Service's VIPs in order of preference, without duplicates, {vip: the field that gives it})."""
    vips, sources = [], {}
    for source, values in (("status.loadBalancer.ingress", [i.get("ip") for i in ingress]),
                           ("spec.loadBalancerIP", [spec.get("loadBalancerIP")]),
                           ("spec.externalIPs", spec.get("externalIPs") or [])):
        for value in values:
            ip = _ip_or_none(value)
            if ip and ip not in vips:
                vips.append(ip)
                sources[ip] = source
    return vips, sources


def _chosen_port(service, ports, port):
    """The Service port named or numbered ``port`` (the first one when None); InputError when it has none."""
    if port is None:
        return ports[0] if ports else None
    chosen = next((p for p in ports if p.get("name") == port or p.get("port") == port), None)
    if chosen is None:
        raise InputError("Service %s has no port %s; its ports are %s: give one of them as port" % (
            "%s/%s" % (meta(service, "namespace"), meta(service, "name")), port,
            ", ".join("%s%s" % (p.get("port"), " (%s)" % p["name"] if p.get("name") else "") for p in ports)
            or "none"))
    return chosen


def service_view(service, port=None):
    """The Service's addresses and the chosen port; InputError when ``port`` names no port of it."""
    spec = service.get("spec") or {}
    status = service.get("status") or {}
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    vips, sources = service_vips(spec, ingress)
    chosen = _chosen_port(service, spec.get("ports") or [], port) or {}
    target = chosen.get("targetPort", chosen.get("port"))
    return {
        "namespace": meta(service, "namespace"),
        "name": meta(service, "name"),
        "type": spec.get("type") or "ClusterIP",
        "cluster_ip": spec.get("clusterIP"),
        "vip": vips[0] if vips else None,
        "vips": vips,
        "vip_source": sources.get(vips[0]) if vips else None,
        "hostnames": [i["hostname"] for i in ingress if i.get("hostname")],
        "port": chosen.get("port"),
        "port_name": chosen.get("name"),
        "protocol": chosen.get("protocol") or "TCP",
        "node_port": chosen.get("nodePort"),
        "target_port": target,
        "external_traffic_policy": spec.get("externalTrafficPolicy"),
        "health_check_node_port": spec.get("healthCheckNodePort"),
        "load_balancer_class": spec.get("loadBalancerClass"),
    }


def _slice_port(slice_ports, view):
    """The port number a slice gives for the Service port of ``view`` (slices name ports as the Service does)."""
    for item in slice_ports or []:
        if ((item.get("name") or None) == (view["port_name"] or None)
                and (item.get("protocol") or "TCP") == view["protocol"]):
            return item.get("port")
    return view["target_port"] if isinstance(view["target_port"], int) else None


def ready_endpoints(slices, view):
    """Every ready, not terminating endpoint: ``[{ip, port, pod, namespace, node}]`` sorted by node and IP.

    A missing ``ready`` condition means ready (the EndpointSlice API's own rule)."""
    out, seen = [], set()
    for item in slices:
        if item.get("addressType") not in ("IPv4", "IPv6"):
            continue
        port = _slice_port(item.get("ports"), view)
        for endpoint in item.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            if conditions.get("ready") is False or conditions.get("terminating") is True:
                continue
            target = endpoint.get("targetRef") or {}
            for address in (endpoint.get("addresses") or [])[:1]:
                ip = _ip_or_none(address)
                if not ip or ip in seen:
                    continue
                seen.add(ip)
                out.append({"ip": ip, "port": port,
                            "pod": target.get("name") if target.get("kind", "Pod") == "Pod" else None,
                            "namespace": target.get("namespace") or meta(item, "namespace"),
                            "node": endpoint.get("nodeName")})
    return sorted(out, key=lambda e: (e["node"] or "", e["ip"]))


def serving_terminating_endpoints(slices, view):
    """The endpoints kube-proxy falls back to when a Service has no ready endpoint: serving and terminating (a pod
    being deleted whose Ready condition still holds). ``[{ip, pod, node}]`` sorted by node and IP; a missing
    ``serving`` condition means serving, a missing ``terminating`` not terminating (kube-proxy's own reading)."""
    out, seen = [], set()
    for item in slices:
        if item.get("addressType") not in ("IPv4", "IPv6"):
            continue
        for endpoint in item.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            if conditions.get("terminating") is not True or conditions.get("serving") is False:
                continue
            target = endpoint.get("targetRef") or {}
            for address in (endpoint.get("addresses") or [])[:1]:
                ip = _ip_or_none(address)
                if ip and ip not in seen:
                    seen.add(ip)
                    out.append({"ip": ip, "pod": target.get("name") if target.get("kind", "Pod") == "Pod" else None,
                                "node": endpoint.get("nodeName")})
    return sorted(out, key=lambda e: (e["node"] or "", e["ip"]))


def _event_time(event):
    return (event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
            or meta(event, "creationTimestamp") or "")


def _l2_status_of(status_object, namespace, name):
    """True when the ServiceL2Status object names a node announcing Service ``namespace/name``."""
    status = status_object.get("status") or {}
    return status.get("serviceName") == name and status.get("serviceNamespace") == namespace and status.get("node")


def _announcer_from_l2_statuses(namespace, name, l2_statuses):
    """The declared announcer from MetalLB's ServiceL2Status objects of the Service, None when none names one."""
    mine = [s for s in l2_statuses if _l2_status_of(s, namespace, name)]
    if not mine:
        return None
    return {"source": "servicel2status",
            "nodes": sorted(set(s["status"]["node"] for s in mine)),
            "interfaces": sorted(set(i.get("name") for s in mine for i in s["status"].get("interfaces") or []
                                     if i.get("name"))),
            "objects": sorted("%s/%s" % (meta(s, "namespace"), meta(s, "name")) for s in mine)}


def _node_assigned(event, name):
    """True when ``event`` is the speaker's nodeAssigned event of Service ``name``, naming the node."""
    involved = event.get("involvedObject") or {}
    return (event.get("reason") == "nodeAssigned" and involved.get("kind") == "Service"
            and involved.get("name") == name and _ASSIGNED.search(event.get("message") or ""))


def declared_announcer(namespace, name, l2_statuses, events):
    """``{source, nodes, interfaces}``: MetalLB's ServiceL2Status objects of the Service when the CRD is served
    (``l2_statuses`` is not None), else the newest ``nodeAssigned`` event's node; ``source`` None when neither
    says anything (not MetalLB, or BGP mode)."""
    if l2_statuses is not None:
        declared = _announcer_from_l2_statuses(namespace, name, l2_statuses)
        if declared:
            return declared
    assigned = [e for e in events or [] if _node_assigned(e, name)]
    if assigned:
        newest = max(assigned, key=_event_time)
        return {"source": "events", "nodes": [_ASSIGNED.search(newest["message"]).group(1)], "interfaces": [],
                "objects": ["%s/%s" % (meta(newest, "namespace"), meta(newest, "name"))]}
    return {"source": None, "nodes": [], "interfaces": [], "objects": []}


# ------------------------------------------------------------------ the inventory
def host_of(inventory):
    """{Kubernetes node name: inventory host} by ``k8s_node_name``, falling back to the inventory name."""
    out = {}
    for host in sorted(inventory or {}):
        variables = inventory[host] or {}
        out.setdefault(str(variables.get("k8s_node_name") or host), str(host))
    return out


def _no_vip(view, ref, subject):
    """[``service.no_vip``] when the Service has no VIP to follow, else []."""
    if view["vip"] or (view["type"] == "NodePort" and view["node_port"]):
        # a NodePort Service has no VIP by design: its path is followed through nodeIP:nodePort
        return []
    return [finding(
        "service.no_vip", "warning", "L4", subject,
        "Service %s (type %s) has no load-balancer or external IP%s: there is no VIP to follow" % (
            ref, view["type"], " (only the hostnames %s)" % ", ".join(view["hostnames"]) if view["hostnames"] else ""),
        {"type": view["type"], "cluster_ip": view["cluster_ip"], "node_port": view["node_port"],
         "hostnames": view["hostnames"]},
        "Check the load-balancer controller (MetalLB's controller logs, the cloud provider) for why no IP was "
        "assigned, or give the VIP by hand (ingress_path_vip).")]


def _no_ready_endpoints(view, ref, subject, slices):
    """``service.no_ready_endpoints``: the Service has no ready endpoint."""
    return finding(
        "service.no_ready_endpoints", "critical", "L4", subject,
        "Service %s has no ready endpoint in its EndpointSlices: every connection to it fails before any hop "
        "of the network" % ref,
        {"endpoint_slices": [meta(s, "name") for s in slices]},
        "kubectl -n %s get pods -l <the Service's selector>: make its pods ready (readiness probe, "
        "crash loop), or fix the selector." % view["namespace"])


def _only_terminating_endpoints(view, ref, subject, terminating):
    """``service.only_terminating_endpoints``: no ready endpoint, but serving terminating ones that kube-proxy
    still forwards new connections to (its fallback since Kubernetes 1.28)."""
    return finding(
        "service.only_terminating_endpoints", "warning", "L4", subject,
        "Service %s has no ready endpoint, only %d serving terminating one(s) (%s): kube-proxy still sends new "
        "connections to them until their pods are gone, then every connection fails" % (
            ref, len(terminating), ", ".join(e["pod"] or e["ip"] for e in terminating[:5])),
        {"serving_terminating": sample(terminating)},
        "kubectl -n %s get pods -l <the Service's selector>: the Service's pods are being deleted (a rollout, a "
        "drain, a scale-down) and none replaces them ready; check the Deployment's rollout and the new pods' "
        "readiness." % view["namespace"])


def _nodes_not_in_inventory(endpoints, announcer, hosts, ips, ref):
    """``service.node_not_in_inventory`` for every node on the path (a backend's, the announcer) that is no
    host of the inventory, sorted by node."""
    wanted = [(e["node"], "backend %s (%s)" % (e["pod"] or e["ip"], e["ip"])) for e in endpoints if e["node"]]
    wanted += [(n, "the announcer of the VIP (%s)" % announcer["source"]) for n in announcer["nodes"]]
    missing = {}
    for node, role in wanted:
        if node not in hosts:
            missing.setdefault(node, []).append(role)
    return [finding(
        "service.node_not_in_inventory", "warning", "L3", node,
        "node %s, on the path of Service %s, is no host of the inventory: its hop cannot be captured" % (
            node, ref),
        {"service": ref, "roles": sample(missing[node]), "node_ip": ips.get(node)},
        "Add node %s to the inventory (or set k8s_node_name: %s on its host) so the path can be "
        "captured there." % (node, node)) for node in sorted(missing)]


def _announcer_unknown(view, subject, l2_statuses):
    """``service.announcer_unknown``: no load-balancer status names the node announcing the VIP."""
    return finding(
        "service.announcer_unknown", "info", "L2", subject,
        "no load-balancer status names the node announcing %s (no MetalLB ServiceL2Status nor nodeAssigned "
        "event): the announcer is found from the ARP answers alone" % view["vip"],
        {"servicel2status_served": l2_statuses is not None},
        "")


def _path_findings(view, endpoints, announcer, hosts, ips, slices, l2_statuses):
    """The findings on one Service's path (unsorted)."""
    ref = "%s/%s" % (view["namespace"], view["name"])
    subject = "%s:%s" % (ref, view["port"]) if view["port"] else ref
    findings = _no_vip(view, ref, subject)
    terminating = [] if endpoints else serving_terminating_endpoints(slices, view)
    if terminating:
        findings.append(_only_terminating_endpoints(view, ref, subject, terminating))
    elif not endpoints:
        findings.append(_no_ready_endpoints(view, ref, subject, slices))
    if hosts is not None:
        findings.extend(_nodes_not_in_inventory(endpoints, announcer, hosts, ips, ref))
    if view["vip"] and announcer["source"] is None:
        findings.append(_announcer_unknown(view, subject, l2_statuses))
    return findings


def _node_rows(endpoints, announcer, hosts, ips):
    """The nodes on the path (a backend's, the announcer, a host of the inventory): {name, host, internal_ip}."""
    relevant = set(e["node"] for e in endpoints if e["node"]) | set(announcer["nodes"]) | set(hosts or {})
    return [{"name": name, "host": hosts.get(name) if hosts is not None else None, "internal_ip": ips[name]}
            for name in sorted(ips) if name in relevant]


def path_model(service, slices, nodes, l2_statuses, events, inventory, port=None):
    """``{data, findings}`` of one Service's path.  ``inventory`` ({host: {k8s_node_name}}) may be None: then
    no host is named and no node is reported missing from it."""
    view = service_view(service, port)
    endpoints = ready_endpoints(slices, view)
    announcer = declared_announcer(view["namespace"], view["name"], l2_statuses, events)
    hosts = host_of(inventory) if inventory is not None else None
    ips = dict((meta(n, "name"), node_address(n)) for n in nodes)
    for endpoint in endpoints:
        endpoint["host"] = hosts.get(endpoint["node"]) if hosts is not None and endpoint["node"] else None
    announcer["hosts"] = [hosts[n] for n in announcer["nodes"] if n in hosts] if hosts is not None else []
    findings = _path_findings(view, endpoints, announcer, hosts, ips, slices, l2_statuses)
    data = {"service": view, "endpoints": endpoints[:MAX_ENDPOINTS], "endpoints_count": len(endpoints),
            "announcer": announcer, "nodes": _node_rows(endpoints, announcer, hosts, ips)}
    return {"data": data, "findings": sort_findings(findings)}


def api_check(params, kube_factory):
    """The whole service_path_info run: the Service, its EndpointSlices, the Nodes, MetalLB's ServiceL2Status
    objects (or the Service's events when the CRD is not served)."""
    checked = rules.validate(params, RULES)
    namespace, name = split_ref(checked["service"])
    kube = kube_factory(params)
    service = kube.get("services", name, namespace)
    if service is None:
        raise ReadError("Service %s/%s not found on %s: check the namespace and the name (kubectl get svc -A)"
                        % (namespace, name, kube.server))
    slices = kube.endpoint_slices(namespace, service=name)
    nodes = kube.nodes()
    # MetalLB's status objects and the events are optional: they only name the announcer, which the ARP
    # answers also give; a 403, a timeout or a malformed answer is a warning and the path goes on
    skipped = []
    statuses, failed = optional_read(lambda: kube.custom_objects(METALLB_GROUP, METALLB_VERSION, L2_STATUS_PLURAL),
                                     "MetalLB's ServiceL2Status objects (%s/%s)" % (METALLB_GROUP, METALLB_VERSION),
                                     "%s/%s" % (namespace, name), "they name the announcing node")
    skipped.extend([failed] if failed else [])
    events = []
    if statuses is None or not any((s.get("status") or {}).get("serviceName") == name for s in statuses):
        events, failed = optional_read(
            lambda: kube.events(namespace, field_selector="involvedObject.kind=Service,involvedObject.name=%s,"
                                                          "reason=nodeAssigned" % name),
            "the events of Service %s/%s" % (namespace, name), "%s/%s" % (namespace, name),
            "MetalLB's nodeAssigned event names the announcing node")
        skipped.extend([failed] if failed else [])
    inventory = params.get("inventory")
    result = path_model(service, slices, nodes, statuses, events or [], inventory, checked.get("port"))
    result["findings"] = sort_findings(result["findings"] + skipped)
    return result


# ------------------------------------------------------------------ who answers ARP for the VIP
def _arp_owners(node_reads):
    """({mac: [hosts]}, [hosts holding the VIP], [hosts not read]) from arp_check results per host."""
    owners, unread = {}, []
    for host in sorted(node_reads):
        result = node_reads[host] or {}
        if result.get("unreachable") or result.get("failed") or result.get("skipped") or "local" not in result:
            unread.append(host)
            continue
        for bound in result.get("local") or []:
            hosts = owners.setdefault(str(bound.get("mac") or "").lower(), [])
            if host not in hosts:
                hosts.append(host)
    return owners, unread


def _expected(vip, node_reads, declared):
    """(the hosts holding ``vip`` on an interface, the hosts expected to announce it, where that comes from)."""
    holders = sorted(host for host in node_reads if any(
        b.get("address") == vip for b in (node_reads[host] or {}).get("local") or []))
    if declared:
        return holders, sorted(declared), "load balancer status"
    return holders, holders, "VIP on an interface"


def _answering(client_read, vip, owners):
    """(the client's route to ``vip`` when it is off the VIP's segment, whether the client's probe gave an answer
    list for ``vip``, [{mac, hosts}]: each MAC answering with the nodes that own it)."""
    probes = (client_read or {}).get("probes")
    off_subnet = ((client_read or {}).get("off_subnet") or {}).get(vip)
    checked = isinstance(probes, dict) and vip in probes
    answering = []
    for item in (probes[vip] or []) if checked else []:
        mac = str(item.get("mac") if isinstance(item, dict) else item).lower()
        answering.append({"mac": mac, "hosts": owners.get(mac, [])})
    return off_subnet, checked, answering


def _replying_nodes(seen):
    """(lost, announcing) from the candidates' captures ``seen`` (None: not captured)."""
    # from the candidates' captures: the nodes whose reply left (lost if the client got none), and those announcing
    lost = arp_announce.replying(seen) if seen else []
    announcing = arp_announce.replying(seen, gratuitous=True) if seen else []
    return lost, announcing


def _off_subnet_findings(vip, off_subnet, holders, announcing, evidence):
    """The findings for a client off the VIP's segment: its ARP proves nothing; its gateway may not resolve."""
    findings = [finding(
        "ingress.client_off_subnet", "info", "L2", vip,
        "the client reaches %s through its gateway %s: it is not on the VIP's segment, so ARP from it proves "
        "nothing about who announces the VIP%s%s" % (
            vip, off_subnet.get("gateway"), "; the nodes holding it: %s" % ", ".join(holders) if holders else
            "; no node of the play holds it on an interface",
            "; from the nodes' side, %s answered ARP for it during the capture" % ", ".join(announcing)
            if announcing else ""),
        evidence,
        "Judge the announcer from a host on the VIP's segment (a node of its subnet as the client), or from the "
        "router's neighbour table for the VIP; the packet walk below still shows where the probes stop.")]
    if off_subnet.get("gateway_resolved") is False:
        findings.append(finding(
            "ingress.client_gateway_unresolved", "critical", "L2", vip,
            "the client's gateway %s toward %s does not resolve (%s): what the client sends to the VIP does not "
            "leave its segment, whoever announces the VIP" % (off_subnet.get("gateway"), vip,
                                                              off_subnet.get("gateway_neighbor")), evidence,
            "Check the gateway %s on %s (is it up, does it hold that address, does the segment pass ARP); "
            "`ip neigh show %s` on the client, `arping -I %s %s` from it" % (
                off_subnet.get("gateway"), off_subnet.get("interface"), off_subnet.get("gateway"),
                off_subnet.get("interface"), off_subnet.get("gateway"))))
    return findings


def _not_checked(vip, client_read, evidence):
    """``ingress.announcer_not_checked``: the client's ARP probe gave no answer list."""
    return finding(
        "ingress.announcer_not_checked", "warning", "L2", vip,
        "the client's ARP probe for %s gave no answer list (%s): who announces the VIP is unknown" % (
            vip, (client_read or {}).get("msg") or "no result"), evidence,
        "Run the role with become: true on the client (ARP probes need CAP_NET_RAW).")


def _unanswered(vip, lost, expected, expected_from, seen, evidence):
    """The finding when no MAC answered the client's ARP for ``vip``: the reply was lost on the way (a node's
    reply left, in its capture), else no node announces it."""
    if lost:
        return finding(
            "ingress.vip_reply_not_delivered", "critical", "L2", vip,
            "%s answered the client's ARP for %s (the reply left %s, in its capture) but the client got no answer: "
            "the reply is lost between the node and the client" % (
                ", ".join(lost), vip, "it" if len(lost) == 1 else "them"),
            evidence,
            "Check the segment between %s and the client: the switch or bridge (port security, a VLAN mismatch, an "
            "ARP filter such as ebtables/nft bridge rules), then the client's own arp_ignore / arp_filter and its "
            "interface; `tcpdump -eni <if> arp` on the client shows whether the reply arrives." % ", ".join(lost))
    who = "%s should (%s)" % (", ".join(expected), expected_from) if expected else "no node holds it"
    asked = sorted(node for node, arp in (seen or {}).items() if arp["requests_in"])
    if asked:
        who += "; the client's requests reached %s and no reply left any node captured" % ", ".join(sample(asked, 5))
    return finding(
        "ingress.vip_unannounced", "critical", "L2", vip, "no node answers ARP for %s; %s" % (vip, who), evidence,
        "On %s: check the announcer (MetalLB speaker logs and its memberlist, keepalived / kube-vip), that the "
        "VIP is in an L2Advertisement's pool and the interface is selected; `arping -c 3 %s` from the "
        "client shows when it answers again." % (", ".join(expected) or "the LB nodes", vip))


def _status_behind(hosts, expected_from, evidence):
    """True when one node answers ARP for the VIP without holding it on an interface (a MetalLB speaker answers
    from memory) while the load balancer's status names other nodes: the status is behind MetalLB's election."""
    return (expected_from == "load balancer status" and len(hosts) == 1
            and hosts[0] not in (evidence.get("holders") or []))


def _stale_status(vip, host, expected, evidence):
    """MetalLB's ServiceL2Status naming a node whose speaker no longer announces (seen with MetalLB 0.15.2: after a
    speaker died, the speaker elected in its place patched the object's labels and owners to itself, but not its
    status.node, which is immutable)."""
    named = ", ".join(expected)
    return finding(
        "ingress.announcer_mismatch", "warning", "L2", evidence["vip"],
        "%s answers ARP for %s (its MetalLB speaker won the election), but MetalLB's ServiceL2Status still names %s: "
        "the status is stale" % (host, vip, named), evidence,
        "Check the speaker on %s (`kubectl -n metallb-system get pods -o wide -l component=speaker`, its logs). A "
        "speaker elected after another died cannot rewrite status.node (immutable): it leaves the object naming %s, "
        "its label metallb.io/node and its owners already its own, so deleting the dead speaker's Pod does not "
        "remove it. Delete the ServiceL2Status whose status.node is %s (`kubectl -n metallb-system get "
        "servicel2status -o custom-columns=NAME:.metadata.name,NODE:.status.node,SERVICE:.status.serviceName`); "
        "%s's speaker writes a new one. Traffic follows the ARP answer, not the status." % (named, named, named, host))


def _answered(vip, answering, hosts, expected, expected_from, evidence):
    """The findings when MACs answered the client's ARP for ``vip``: several MACs, or not the expected nodes, or
    a MAC of no node read; [] when the expected node answers."""
    if len(answering) > 1:
        return [finding(
            "ingress.announcer_mismatch", "critical", "L2", vip,
            "%d MACs answer ARP for %s (%s): the clients' caches flip between them" % (
                len(answering), vip, ", ".join("%s=%s" % (a["mac"], "/".join(a["hosts"]) or "unknown")
                                               for a in answering)), evidence,
            "Keep the VIP on one node: remove it from the others (`ip addr del %s/32 dev <if>`), or fix the "
            "split-brain of the announcers (MetalLB memberlist, keepalived priorities)." % vip)]
    if expected and hosts != expected and _status_behind(hosts, expected_from, evidence):
        return [_stale_status(vip, hosts[0], expected, evidence)]
    if expected and hosts != expected:
        return [finding(
            "ingress.announcer_mismatch", "critical", "L2", vip,
            "%s answers ARP for %s, but %s should (%s)" % (
                "/".join(hosts) or "a MAC of no inventory node (%s)" % answering[0]["mac"], vip,
                ", ".join(expected), expected_from), evidence,
            "Find who holds %s on %s and remove it there; restart the announcer the load balancer names if it "
            "does not answer." % (vip, "/".join(hosts) or answering[0]["mac"]))]
    if not hosts:
        return [finding(
            "ingress.announcer_unknown", "warning", "L2", vip,
            "%s answers ARP for %s, a MAC of no node that was read" % (answering[0]["mac"], vip), evidence,
            "Look the MAC up on the LB nodes (`ip -br link`) or the switch's MAC table; add that node to the "
            "inventory so its hop can be captured.")]
    return []


def vip_announcer(vip, client_read, node_reads, declared=None, captures=None):
    """Who answers ARP for ``vip`` and whether that is who should.

    ``client_read``: the client's arp_check result (``probes``: {vip: [{mac}]}); ``node_reads``: {host:
    arp_check result} on the nodes, asked about the VIP and their own address, whose ``local`` gives each
    node's interface MACs; ``declared``: the hosts the load balancer names (MetalLB), else the hosts holding
    the VIP on an interface are expected; ``captures``: {host: packet_capture result} of the ARP for the VIP on
    the candidate nodes while the client asked (arp_announce), or None.  Returns ``{announcer, answering,
    expected, expected_from, holders, findings}``; ``announcer`` is the one inventory host answering, else None."""
    owners, unread = _arp_owners(node_reads)
    holders, expected, expected_from = _expected(vip, node_reads, declared)
    off_subnet, checked, answering = _answering(client_read, vip, owners)
    hosts = sorted(set(h for a in answering for h in a["hosts"]))
    announcer = hosts[0] if len(answering) == 1 and len(hosts) == 1 else None
    evidence = {"vip": vip, "answering": answering, "expected": expected, "expected_from": expected_from,
                "holders": holders, "not_read": unread}
    seen = None
    if captures is not None:
        seen, not_captured = arp_announce.nodes_view(captures, vip)
        evidence.update(nodes_arp=seen, not_captured=not_captured)
    lost, announcing = _replying_nodes(seen)
    if off_subnet:
        evidence["client_route"] = off_subnet
        findings = _off_subnet_findings(vip, off_subnet, holders, announcing, evidence)
    elif not checked:
        findings = [_not_checked(vip, client_read, evidence)]
    elif not answering:
        findings = [_unanswered(vip, lost, expected, expected_from, seen, evidence)]
    else:
        findings = _answered(vip, answering, hosts, expected, expected_from, evidence)
    return {"announcer": announcer, "answering": answering, "expected": expected, "expected_from": expected_from,
            "holders": holders, "findings": findings}
