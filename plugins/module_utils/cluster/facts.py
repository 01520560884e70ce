# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Network facts other roles need from the Kubernetes API, read once on the controller.

Pure functions over the plain dicts ``kube_client.Kube`` returns (the API's own field names):

* ``node_facts``: name, InternalIP, pod CIDRs and Calico's per-node annotations
  (``projectcalico.org/IPv4Address`` without its prefix length, ``projectcalico.org/ASNumber``);
* ``service_frontends``: every ``ip:port/proto`` frontend Cilium programs for the Services and
  HostPorts, in the format of bpf_map_usage's ``live_frontends`` (see ``live_forms``);
* ``dns_servers``: the kube-dns Service ClusterIP and every coredns pod, in dns_check's
  ``servers`` format;
* ``pod``: one pod's IP, node and phase (the pod whose view of DNS the ``dns`` role checks);
* small findings about what is missing (``kube.node_without_pod_cidr`` ...).

``gather`` reads them through a ``kube_client.Kube``, each list once; ``api_check`` is kube_network_info's run.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.core import frontends
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta, node_address
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import split_ref
from ansible_collections.k8snet.triage.plugins.module_utils.kube.auth import configuration, credential_source
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.service import service_vips

GATHER = ("nodes", "service_frontends", "dns_servers")  # the default: what the node-side roles need
GATHER_CHOICES = GATHER + ("pod", "lb_vips")  # and one pod, when asked for by name; the LoadBalancer VIPs
CALICO_IPV4_ANNOTATION = "projectcalico.org/IPv4Address"
CALICO_ASN_ANNOTATION = "projectcalico.org/ASNumber"
DNS_NAMESPACE = "kube-system"
DNS_SERVICE = "kube-dns"
DNS_POD_SELECTOR = "k8s-app=kube-dns"
# Service types whose ports also get a NodePort frontend on every node.
NODEPORT_TYPES = ("NodePort", "LoadBalancer")


# ------------------------------------------------------------------ nodes
def _strip_prefix(value):
    """'10.0.0.5/24' -> '10.0.0.5'; None for an empty or malformed annotation."""
    if not value:
        return None
    try:
        return host_address(value)
    except ValueError:
        return None


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def node_ips(node):
    """Every address of a Node's status.addresses that is an IP (InternalIP, ExternalIP, ...), in order."""
    return _addresses(a.get("address") for a in (node.get("status") or {}).get("addresses") or [])


def node_facts(node):
    """One Node object -> {name, internal_ip, addresses, pod_cidrs, calico_ipv4_address, calico_asn}."""
    spec = node.get("spec") or {}
    annotations = meta(node, "annotations") or {}
    cidrs = list(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))
    return {
        "name": meta(node, "name"),
        "internal_ip": node_address(node),
        "addresses": node_ips(node),
        "pod_cidrs": cidrs,
        "calico_ipv4_address": _strip_prefix(annotations.get(CALICO_IPV4_ANNOTATION)),
        "calico_asn": _int_or_none(annotations.get(CALICO_ASN_ANNOTATION)),
    }


def nodes_facts(nodes):
    return sorted((node_facts(n) for n in nodes), key=lambda n: n["name"] or "")


def calico_address(node):
    """The address Calico peers with: its IPv4Address annotation, else the InternalIP."""
    return node.get("calico_ipv4_address") or node.get("internal_ip")


def node_findings(facts):
    found = []
    no_cidr = [n["name"] for n in facts if not n["pod_cidrs"]]
    if no_cidr:
        found.append(finding(
            "kube.node_without_pod_cidr", "info", "L3", ", ".join(sample(no_cidr)),
            "%d node(s) have no spec.podCIDR: %s" % (len(no_cidr), ", ".join(sample(no_cidr))),
            {"nodes": sample(no_cidr), "count": len(no_cidr)},
            "expected with Calico or Cilium cluster-pool IPAM (they assign pod blocks themselves); with "
            "host-local or Kubernetes IPAM, check kube-controller-manager --allocate-node-cidrs and --cluster-cidr"))
    no_ip = [n["name"] for n in facts if not n["internal_ip"]]
    if no_ip:
        found.append(finding(
            "kube.node_without_internal_ip", "warning", "L3", ", ".join(sample(no_ip)),
            "%d node(s) report no InternalIP address: %s" % (len(no_ip), ", ".join(sample(no_ip))),
            {"nodes": sample(no_ip), "count": len(no_ip)},
            "check the kubelet's --node-ip and the cloud provider; NodePort frontends and peer checks skip these nodes"))
    return found


# ------------------------------------------------------------------ service frontends
def _addresses(candidates):
    """Valid, unique IP addresses in order; skips empty values and ``None`` (headless)."""
    out = []
    for value in candidates:
        if not value or value == "None":  # headless
            continue
        try:
            address = str(ipaddress.ip_address(value))
        except ValueError:
            continue
        if address not in out:
            out.append(address)
    return out


def cluster_ips(service):
    spec = service.get("spec") or {}
    return _addresses(spec.get("clusterIPs") or [spec.get("clusterIP")])


def service_addresses(service):
    """The virtual addresses of one Service: ClusterIPs, externalIPs, LoadBalancer ingress IPs, loadBalancerIP."""
    spec = service.get("spec") or {}
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return _addresses(cluster_ips(service) + list(spec.get("externalIPs") or []) + [i.get("ip") for i in ingress]
                      + [spec.get("loadBalancerIP")])


def _surrogates(addresses):
    """Cilium's surrogate NodePort / HostPort addresses for the families among ``addresses`` (IPv4 always)."""
    out = ["0.0.0.0"]
    if any(ipaddress.ip_address(a).version == 6 for a in addresses):
        out.append("::")
    return out


def _protocol(port):
    """The protocol of a Service or container port as declared, TCP when absent."""
    return (port.get("protocol") or "TCP").upper()


def _node_addresses(nodes):
    """(every IP address of every node, unique in order; node name -> its IP addresses) of node facts."""
    every_node_ip = []
    by_node = {}
    for node in nodes:
        by_node[node.get("name")] = list(node.get("addresses") or [])
        every_node_ip.extend(a for a in node.get("addresses") or [] if a not in every_node_ip)
    return every_node_ip, by_node


def _service_forms(service, every_node_ip, node_addresses=False):
    """The live forms of one Service (none for ExternalName): each of its addresses on each port; with a
    nodePort, the surrogates on it (and every node IP address with ``node_addresses``)."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return set()
    out = set()
    addresses = service_addresses(service)
    for port in spec.get("ports") or []:
        proto = _protocol(port)
        for address in addresses:
            out.add((address, int(port["port"]), proto))
        if port.get("nodePort"):
            for address in (every_node_ip if node_addresses else []) + _surrogates(every_node_ip + addresses):
                out.add((address, int(port["nodePort"]), proto))
    return out


def _host_port_targets(port, node_ips, node_addresses=False):
    """The addresses a hostPort is programmed on: its hostIP when that names an address, else the surrogate (and
    every IP address of the pod's node, ``node_ips``, with ``node_addresses``)."""
    host_ip = _addresses([port.get("hostIP")])
    if host_ip and host_ip[0] not in frontends.UNSPECIFIED:
        return host_ip
    return (node_ips if node_addresses else []) + _surrogates(node_ips)


def _host_port_forms(pod, by_node, node_addresses=False):
    """The live forms of the hostPorts of one pod, when it is scheduled and not finished."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return set()
    out = set()
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            if not port.get("hostPort"):
                continue
            proto = _protocol(port)
            for address in _host_port_targets(port, by_node.get(spec["nodeName"], []), node_addresses):
                out.add((address, int(port["hostPort"]), proto))
    return out


def host_port_pod(pod):
    """What ``live_forms`` needs of a pod (its node, phase and hostPort container ports), or None for a pod without a
    hostPort (most of them): the ``keep`` of the list of every pod, so that only these stay in memory."""
    spec = pod.get("spec") or {}
    containers = [{"ports": [port for port in c.get("ports") or [] if port.get("hostPort")]}
                  for c in spec.get("containers") or []]
    if not any(c["ports"] for c in containers):
        return None
    return {"metadata": {"name": meta(pod, "name"), "namespace": meta(pod, "namespace")},
            "spec": {"nodeName": spec.get("nodeName"), "containers": containers},
            "status": {"phase": (pod.get("status") or {}).get("phase")}}


def live_forms(services, nodes, pods=(), node_addresses=False):
    """Every form in which Cilium programs a live frontend, as (address, port, proto name) tuples.

    Per Service port (protocol as declared, TCP when absent; ExternalName Services have none):
    each ClusterIP, externalIP, LoadBalancer ingress IP and spec.loadBalancerIP on the port;
    with a nodePort, the surrogate ``0.0.0.0:<nodePort>`` (``[::]`` too when a node or the
    Service has IPv6).
    Per container port with a hostPort of a scheduled, unfinished pod: ``<hostIP>:<hostPort>``
    when hostIP names an address, else the surrogate.
    ``nodes`` are node facts (``addresses``).

    The surrogate of a port makes that port live on every address (``frontends.LiveFrontends``'s third rule), so
    ``<node address>:<nodePort>`` for every address of every node says nothing more to the matching: at 5,000 nodes
    it was 2.5 million forms (66 MB) for 500 NodePorts. ``node_addresses`` lists them all the same.
    """
    every_node_ip, by_node = _node_addresses(nodes)
    out = set()
    for service in services:
        out.update(_service_forms(service, every_node_ip, node_addresses))
    for pod in pods:
        out.update(_host_port_forms(pod, by_node, node_addresses))
    return out


def service_frontends(services, nodes, pods=(), node_addresses=False):
    """Sorted unique ip:port/proto of every live frontend form (``live_forms``)."""
    return sorted(set(frontends.text(*form) for form in live_forms(services, nodes, pods, node_addresses)),
                  key=frontends.sort_key)


# ------------------------------------------------------------------ LoadBalancer VIPs
LB_VIP_SOURCES = ("status.loadBalancer.ingress", "spec.loadBalancerIP")


def lb_vips(services):
    """[{address, services}] of the VIPs of every LoadBalancer Service (its load-balancer ingress IPs and
    spec.loadBalancerIP, not its externalIPs), sorted by address: what a load balancer should announce."""
    out = {}
    for service in services:
        spec = service.get("spec") or {}
        if spec.get("type") != "LoadBalancer":
            continue
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        vips, sources = service_vips(spec, ingress)
        for vip in vips:
            if sources[vip] in LB_VIP_SOURCES:
                out.setdefault(vip, []).append("%s/%s" % (meta(service, "namespace"), meta(service, "name")))
    return [{"address": vip, "services": sorted(refs)} for vip, refs in sorted(
        out.items(), key=lambda item: ipaddress.ip_address(item[0]).packed.rjust(16, b"\0"))]


# ------------------------------------------------------------------ DNS servers
def dns_servers(service, pods):
    """dns_check servers: the Service ClusterIP(s) (role service), then each pod with an IP (role pod)."""
    out = []
    if service:
        for address in cluster_ips(service):
            out.append({"address": address, "name": meta(service, "name"), "role": "service"})
    for pod in sorted(pods, key=lambda p: meta(p, "name") or ""):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            continue
        server = {"address": ip, "name": meta(pod, "name"), "role": "pod"}
        if (pod.get("spec") or {}).get("nodeName"):
            server["node"] = pod["spec"]["nodeName"]
        out.append(server)
    return out


def dns_findings(service, pods, namespace=DNS_NAMESPACE, name=DNS_SERVICE, selector=DNS_POD_SELECTOR):
    found = []
    if service is None:
        found.append(finding(
            "kube.dns_service_missing", "critical", "DNS", "%s/%s" % (namespace, name),
            "the DNS Service %s/%s does not exist" % (namespace, name),
            {"namespace": namespace, "service": name},
            "pods resolve through this Service's ClusterIP (kubelet --cluster-dns): recreate it, or set "
            "dns_service to the name your cluster uses (e.g. coredns)"))
    elif not cluster_ips(service):
        found.append(finding(
            "kube.dns_service_headless", "warning", "DNS", "%s/%s" % (namespace, name),
            "the DNS Service %s/%s has no ClusterIP" % (namespace, name),
            {"cluster_ip": (service.get("spec") or {}).get("clusterIP")},
            "kubelet's --cluster-dns must name a ClusterIP: recreate the Service with one"))
    without_ip = sorted(meta(p, "name") for p in pods if not (p.get("status") or {}).get("podIP"))
    if not pods:
        found.append(finding(
            "kube.dns_pods_missing", "critical", "DNS", "%s/%s" % (namespace, selector),
            "no pod in %s matches %s: nothing serves cluster DNS" % (namespace, selector),
            {"namespace": namespace, "selector": selector},
            "check the coredns Deployment (kubectl -n %s get deploy,rs,pods -l %s), or set dns_pod_selector"
            % (namespace, selector)))
    elif without_ip:
        found.append(finding(
            "kube.dns_pod_without_ip", "warning", "DNS", ", ".join(sample(without_ip)),
            "%d of %d DNS pod(s) have no IP yet (not asked): %s" % (len(without_ip), len(pods), ", ".join(sample(without_ip))),
            {"pods": sample(without_ip), "count": len(without_ip)},
            "kubectl -n %s describe pod %s: Pending pods usually wait for the CNI or for resources" % (namespace, without_ip[0])))
    return found


# ------------------------------------------------------------------ one pod
def pod_facts(pod, ref):
    """{namespace, name, ip, ips, node, phase, host_network} of a running pod with an IP (pure);
    InputError naming the fix for a pod that does not exist, does not run or has no IP yet."""
    if pod is None:
        raise InputError("pod %s does not exist (kubectl -n %s get pod %s): give the namespace/name of a running pod"
                         % ((ref,) + tuple(ref.split("/", 1))))
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase, ip, node = status.get("phase"), status.get("podIP"), spec.get("nodeName")
    if phase != "Running" or not ip or not node:
        raise InputError("pod %s is not running (phase %s, IP %s, node %s): its network namespace exists only while "
                         "it runs; give a running pod (kubectl -n %s get pods)" % (
                             ref, phase or "unknown", ip or "none", node or "none", ref.split("/", 1)[0]))
    ips = [item.get("ip") for item in status.get("podIPs") or [] if item.get("ip")] or [ip]
    return {"namespace": meta(pod, "namespace"), "name": meta(pod, "name"), "ip": ip, "ips": ips, "node": node,
            "phase": phase, "host_network": bool(spec.get("hostNetwork"))}


# ------------------------------------------------------------------ one read of the API
def gather(kube, what=GATHER, dns_namespace=DNS_NAMESPACE, dns_service=DNS_SERVICE, dns_pod_selector=DNS_POD_SELECTOR,
           pod=None, node_port_addresses=False):
    """Read what ``what`` names through ``kube`` (a kube_client.Kube), each list once; returns the result dict."""
    result, found = {}, []
    if "pod" in what:
        if not pod:
            raise InputError("gather includes pod but no pod was given: give pod: namespace/name")
        namespace, name = split_ref(pod, "pod")
        result["pod"] = pod_facts(kube.get("pods", name, namespace), pod)
    nodes = None
    if "nodes" in what or "service_frontends" in what:
        nodes = nodes_facts(kube.nodes())
    if "nodes" in what:
        result["nodes"] = nodes
        found.extend(node_findings(nodes))
    services = kube.services() if "service_frontends" in what or "lb_vips" in what else None
    if "service_frontends" in what:
        result["service_frontends"] = service_frontends(services, nodes, kube.pods(keep=host_port_pod),
                                                        node_port_addresses)
    if "lb_vips" in what:
        result["lb_vips"] = lb_vips(services)
    if "dns_servers" in what:
        service = kube.get("services", dns_service, dns_namespace)
        pods = kube.pods(dns_namespace, label_selector=dns_pod_selector)
        result["dns_servers"] = dns_servers(service, pods)
        found.extend(dns_findings(service, pods, dns_namespace, dns_service, dns_pod_selector))
    result["findings"] = found
    return result


def _read(params, kube_factory, source):
    """What kube_network_info reads: ``gather``'s result, or with an empty ``gather`` no request at all, only the
    credentials of ``source`` loaded."""
    if not params["gather"]:
        if source:
            configuration(params)  # a kubeconfig that cannot be loaded fails here, still without a request
        return {"findings": []}
    return gather(kube_factory(params), params["gather"], params["dns_namespace"], params["dns_service"],
                  params["dns_pod_selector"], params["pod"], params.get("node_port_addresses", False))


def api_check(params, kube_factory):
    """The whole kube_network_info run, as kube_module.api_module_main runs it: ``params`` in,
    ``{"data": {"credential_source", what was gathered}, "findings": [...]}`` out; a TriageError raised carries
    the credential source in its details (``credential_source``)."""
    source = credential_source(params)
    try:
        result = _read(params, kube_factory, source)
    except TriageError as exc:
        exc.details["credential_source"] = source
        raise
    findings = sort_findings(result.pop("findings"))
    return {"data": dict(credential_source=source, **result), "findings": findings}
