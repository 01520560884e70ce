# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""F5 BIG-IP Controller (CIS) in ConfigMap mode, alone or in GDC's integrated mode.

The audit: parsed ConfigMaps judged against the Services they name, and the partitions compared across clusters.
Pure: Kubernetes objects (plain dicts) in, findings out.  Its parts beside it: ``f5_parsers`` (the virtual-server
and AS3 ConfigMaps, validated against the CIS schemas) and ``f5_controller`` (the controller and the mode).

Two modes are judged differently.  In GDC's integrated mode (``load-balancer-f5`` runs, or ConfigMaps
carry its label) every LoadBalancer Service port not handed to another implementation has exactly one
ConfigMap whose VIP is the Service's address.  On a plain CIS cluster a ConfigMap only needs its Service
and port to exist, in a namespace CIS watches, reachable by CIS's pool member type.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.f5.controller import subject, watches
from ansible_collections.k8snet.triage.plugins.module_utils.f5.parsers import F5_LABEL, bind_ip, parse_configmap, schema_defects
from ansible_collections.k8snet.triage.plugins.module_utils.f5.schema import SCHEMA_URI, SCHEMAS, URI_FORMAT
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta

# Services whose load balancer another implementation provides (GDC's F5 integration then owes them nothing)
METALLB_ANNOTATIONS = ("metallb.universe.tf/", "metallb.io/")


def lb_ip(service):
    """The Service's load-balancer IP: status.loadBalancer.ingress[0].ip, else spec.loadBalancerIP."""
    for ingress in ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if ingress.get("ip"):
            return ingress["ip"]
    return (service.get("spec") or {}).get("loadBalancerIP")


def cluster_unreachable(cluster, server, error):
    """f5.cluster_unreachable: a cluster of several that could not be audited (never ok for it)."""
    return finding(
        "f5.cluster_unreachable", "critical", "control-plane", "cluster %s" % cluster,
        "cluster %s was not audited: %s" % (cluster, error),
        {"cluster": cluster, "server": server, "error": error},
        "fix the API access of cluster %s (its kubeconfig/context in clusters) and run again: its ConfigMaps, "
        "controller and partitions were not checked" % cluster)


def handed_elsewhere(svc):
    """Why a LoadBalancer Service belongs to another implementation (spec.loadBalancerClass, MetalLB's annotations)."""
    spec = svc.get("spec") or {}
    if spec.get("loadBalancerClass"):
        return "spec.loadBalancerClass %s" % spec["loadBalancerClass"]
    for key in sorted((svc.get("metadata") or {}).get("annotations") or {}):
        if key.startswith(METALLB_ANNOTATIONS):
            return "annotation %s" % key
    return None


def service_ports(svc):
    return [p.get("port") for p in (svc.get("spec") or {}).get("ports") or []]


def _invalid(cm, cluster, mode):
    path, message = cm["errors"][0]
    against = URI_FORMAT % cm["validated_with"] if cm["validated_with"] else (
        "an AS3 declaration" if cm["kind"] == "as3" else "a known schema")
    return finding(
        "f5.invalid_configmap", "critical", "L4", subject(cluster, cm["ref"]),
        "ConfigMap %s does not validate against %s at %s: %s" % (cm["ref"], against, path, message),
        {"path": path, "error": message, "error_count": len(cm["errors"]), "mode": mode,
         "other_errors": ["%s: %s" % e for e in sample(cm["errors"][1:], 3)]},
        "fix the ConfigMap's data so that it validates (CIS ignores an invalid ConfigMap and logs the error)")


def _backends(cm, services, by_labels):
    """[(what, namespace, service name or None, servicePort, [Services])] of one ConfigMap."""
    if cm["kind"] != "as3":
        svc = services.get((cm["namespace"], cm["service"]))
        return [("backend", cm["namespace"], cm["service"], cm["service_port"], [svc] if svc else [])]
    out = []
    if not cm["active"]:
        return out
    for tenant, apps in sorted(cm["tenants"].items()):
        for app, body in sorted(apps.items()):
            for pool in body["pools"]:
                for member in pool["members"]:
                    what = "pool /%s/%s/%s" % (tenant, app, pool["name"])
                    if member["serviceName"]:
                        ns = member["serviceNamespace"] or cm["namespace"]
                        svc = services.get((ns, member["serviceName"]))
                        out.append((what, ns, member["serviceName"], member["servicePort"], [svc] if svc else []))
                    else:
                        out.append((what, None, None, member["servicePort"], by_labels.get((tenant, app, pool["name"]), [])))
    return out


AS3_LABELS = ("cis.f5.com/as3-tenant", "cis.f5.com/as3-app", "cis.f5.com/as3-pool")


def _as3_services(services):
    """{(tenant, application, pool): [Services]} of the Services labelled with all three AS3 labels."""
    by_labels = {}
    for svc in services:
        labels = (svc.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) for k in AS3_LABELS):
            by_labels.setdefault(tuple(labels[k] for k in AS3_LABELS), []).append(svc)
    return by_labels


def _schema_findings(cm, cluster, mode):
    """f5.invalid_configmap, f5.unknown_schema_version and f5.schema_not_loadable of one ConfigMap."""
    found = []
    if cm["errors"]:
        found.append(_invalid(cm, cluster, mode))
    if cm["schema_version"] and cm["schema_version"] != cm["validated_with"]:
        found.append(finding(
            "f5.unknown_schema_version", "warning", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s names schema %s, which F5 never published (known: %s to %s); it was validated against "
            "the nearest, %s" % (cm["ref"], cm["schema_version"], min(SCHEMAS), max(SCHEMAS), cm["validated_with"]),
            {"schema": cm["schema"], "validated_with": URI_FORMAT % cm["validated_with"], "mode": mode},
            "name a schema version your CIS release ships (CIS rejects a ConfigMap whose schema it cannot load)"))
    defects = schema_defects(SCHEMAS[cm["validated_with"]][1]) if cm["validated_with"] else []
    if defects:
        found.append(finding(
            "f5.schema_not_loadable", "warning", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s names %s, which CIS's validator cannot load (%s): CIS releases whose gojsonschema checks "
            "keyword types reject every ConfigMap naming it" % (
                cm["ref"], URI_FORMAT % cm["validated_with"],
                "; ".join("%s %s is %r, not an integer" % d for d in defects)),
            {"schema": cm["schema"], "defects": ["%s %s=%r" % d for d in defects], "mode": mode,
             "source": "F5Networks/k8s-bigip-ctlr vendor/github.com/xeipuuv/gojsonschema/schema.go (minLength "
                       "must be an integer), vendored from df94ce9c (2017-05-25, CIS v1.1.0) to 7c845c534ba5"},
            "name a later schema version that the data validates against, and look for 'must be of an "
            "integer' in CIS's log"))
    return found


def _controller_findings(cm, controllers, cluster, mode):
    """(f5.unwatched_namespace or f5.partition_not_managed of one ConfigMap, the CIS controllers watching its
    namespace); the controllers are None when none was given."""
    if not controllers:
        return [], None
    watchers = [c for c in controllers if watches(c, cm["namespace"])]
    if not watchers:
        return [finding(
            "f5.unwatched_namespace", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s is in namespace %s, which no CIS controller watches (%s): it configures nothing"
            % (cm["ref"], cm["namespace"], "; ".join("%s: %s" % (c["ref"], c["watch"]) for c in controllers)),
            {"namespace": cm["namespace"], "controllers": [c["ref"] for c in controllers], "mode": mode},
            "add --namespace=%s to the CIS controller's args (or label the namespace for its "
            "--namespace-label), or move the ConfigMap to a watched namespace" % cm["namespace"])], watchers
    if cm["kind"] == "virtual-server" and cm["partition"] and not any(
            not c["partitions"] or cm["partition"] in c["partitions"] for c in watchers):
        return [finding(
            "f5.partition_not_managed", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s uses BIG-IP partition %s, which its CIS controller does not manage (--bigip-partition %s)"
            % (cm["ref"], cm["partition"], ", ".join(sorted(set(p for c in watchers for p in c["partitions"])))),
            {"partition": cm["partition"], "controllers": [c["ref"] for c in watchers], "mode": mode},
            "set frontend.partition to the controller's --bigip-partition")], watchers
    return [], watchers


def _orphan(cm, what, namespace, name, port, cluster, mode):
    """f5.orphan_configmap: a ConfigMap's backend (or AS3 pool) without its Service."""
    return finding(
        "f5.orphan_configmap", "warning", "L4", subject(cluster, cm["ref"]),
        ("ConfigMap %s's %s points at Service %s/%s, which does not exist" % (cm["ref"], what, namespace, name))
        if name else ("ConfigMap %s's %s has no Service labelled %s" % (cm["ref"], what, "/".join(AS3_LABELS))),
        {"service": name, "service_port": port, "partition": cm["partition"], "mode": mode},
        "delete the ConfigMap, or correct backend.serviceName (the Service must be in the ConfigMap's "
        "namespace)" if cm["kind"] != "as3" else
        "label the pool's Service with cis.f5.com/as3-tenant, -app and -pool (or name it in the member's "
        "serviceName), or remove the pool")


def _service_findings(cm, svc, port, watchers, cluster, mode):
    """f5.port_mismatch and f5.pool_member_type_mismatch of one ConfigMap against one Service it names."""
    found = []
    ports = service_ports(svc)
    sref = "%s/%s" % (meta(svc, "namespace"), meta(svc, "name"))
    if port not in ports:
        found.append(finding(
            "f5.port_mismatch", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s names servicePort %s, but Service %s has ports %s" % (cm["ref"], port, sref, ports),
            {"configmap_service_port": port, "service_ports": ports, "service": sref, "mode": mode},
            "set %s servicePort to one of the Service's ports %s"
            % ("backend.servicePort (and virtualAddress.port)" if cm["kind"] != "as3" else "the members'",
               ports)))
    stype = (svc.get("spec") or {}).get("type") or "ClusterIP"
    if watchers and stype == "ClusterIP" and all(c["pool_member_type"] == "nodeport" for c in watchers):
        found.append(finding(
            "f5.pool_member_type_mismatch", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s's Service %s is ClusterIP, but CIS (%s) runs with --pool-member-type nodeport: "
            "the pool has no members" % (cm["ref"], sref, ", ".join(c["ref"] for c in watchers)),
            {"service": sref, "service_type": stype, "controllers": [c["ref"] for c in watchers],
             "mode": mode},
            "make the Service type NodePort, or run CIS with --pool-member-type cluster (the BIG-IP must "
            "then reach pod addresses)"))
    return found


def _backend_findings(cm, by_name, by_labels, watchers, cluster, mode):
    """The findings of one ConfigMap's backends: each Service missing, or its ports and type."""
    found = []
    for what, namespace, name, port, svcs in _backends(cm, by_name, by_labels):
        if name is None and cm["kind"] == "virtual-server":
            continue
        if not svcs:
            found.append(_orphan(cm, what, namespace, name, port, cluster, mode))
            continue
        for svc in svcs:
            found.extend(_service_findings(cm, svc, port, watchers, cluster, mode))
    return found


def audit(services, configmaps, cluster=None, mode="gdc", controllers=None):
    """Findings for CIS ConfigMaps against the Services they name, judged in ``mode`` (gdc or cis).

    ``controllers`` (from cis_controllers) adds the checks of CIS's arguments: watched namespaces, pool member
    type against the Service's type, managed partitions.  Returns (findings, parsed ConfigMaps) so that
    partitions can be compared across clusters.
    """
    found = []
    parsed = [parse_configmap(cm, mode) for cm in configmaps]
    by_name = dict(((meta(s, "namespace"), meta(s, "name")), s) for s in services)
    by_labels = _as3_services(services)
    for cm in parsed:
        found.extend(_schema_findings(cm, cluster, mode))
        controller_found, watchers = _controller_findings(cm, controllers, cluster, mode)
        found.extend(controller_found)
        found.extend(_backend_findings(cm, by_name, by_labels, watchers, cluster, mode))
    if mode == "gdc":
        found.extend(_gdc_checks(services, parsed, cluster))
    return found, parsed


def _lb_services(services):
    """{(namespace, name): Service} of the LoadBalancer Services not handed to another implementation."""
    lb_services = {}
    for svc in services:
        if (svc.get("spec") or {}).get("type") == "LoadBalancer" and not handed_elsewhere(svc):
            lb_services[(meta(svc, "namespace"), meta(svc, "name"))] = svc
    return lb_services


def _covering_findings(cm, namespace, name, port, ip, cluster):
    """f5.port_mismatch and f5.vip_mismatch of a ConfigMap covering one LoadBalancer Service port."""
    found = []
    if cm["port"] is not None and cm["port"] != port:
        found.append(finding(
            "f5.port_mismatch", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s exposes virtual port %s for Service %s/%s port %s"
            % (cm["ref"], cm["port"], namespace, name, port),
            {"virtual_port": cm["port"], "service_port": port, "mode": "gdc"},
            "set frontend.virtualAddress.port to %s" % port))
    if ip and cm["bind_addr"] is not None and bind_ip(cm["bind_addr"]) != ip:
        found.append(finding(
            "f5.vip_mismatch", "critical", "L4", subject(cluster, cm["ref"]),
            "ConfigMap %s binds %s, but Service %s/%s's load-balancer IP is %s"
            % (cm["ref"], cm["bind_addr"], namespace, name, ip),
            {"bind_addr": cm["bind_addr"], "load_balancer_ip": ip},
            "set frontend.virtualAddress.bindAddr to %s (or fix the Service's loadBalancerIP)" % ip))
    return found


def _port_findings(namespace, name, port, ip, mine, cluster):
    """The findings of one LoadBalancer Service port: no ConfigMap, several, or ones that do not match it."""
    ref = "%s/%s:%s" % (namespace, name, port)
    covering = [cm for cm in mine if cm["service_port"] == port]
    if not covering:
        return [finding(
            "f5.missing_configmap", "critical", "L4", subject(cluster, ref),
            "LoadBalancer Service %s/%s port %s has no ConfigMap labelled %s: the BIG-IP has no virtual "
            "server for it" % (namespace, name, port, F5_LABEL),
            {"service": "%s/%s" % (namespace, name), "port": port, "load_balancer_ip": ip, "mode": "gdc",
             "configmaps_of_service": sample(cm["ref"] for cm in mine)},
            "create one ConfigMap (label f5type: virtual-server, schema %s) with bindAddr %s and port %s"
            % (SCHEMA_URI, ip, port))]
    found = []
    if len(covering) > 1:
        found.append(finding(
            "f5.duplicate_configmap", "warning", "L4", subject(cluster, ref),
            "%d ConfigMaps configure Service %s/%s port %s; CIS applies them in turn"
            % (len(covering), namespace, name, port),
            {"configmaps": sample(cm["ref"] for cm in covering), "mode": "gdc"},
            "keep exactly one ConfigMap per Service port and delete the others"))
    for cm in covering:
        found.extend(_covering_findings(cm, namespace, name, port, ip, cluster))
    return found


def _gdc_checks(services, parsed, cluster):
    """GDC's integrated mode: one ConfigMap per LoadBalancer Service port, its VIP the Service's address."""
    found = []
    for (namespace, name), svc in sorted(_lb_services(services).items()):
        ports = service_ports(svc)
        ip = lb_ip(svc)
        mine = [cm for cm in parsed if cm["kind"] == "virtual-server" and cm["namespace"] == namespace
                and cm["service"] == name]
        for port in ports:
            found.extend(_port_findings(namespace, name, port, ip, mine, cluster))
    return found


def shared_partitions(partitions):
    """f5.shared_partition for every BIG-IP partition used by ConfigMaps of more than one cluster.

    ``partitions`` maps cluster name -> {partition: [ConfigMap refs]}.
    """
    users = {}
    for cluster, parts in partitions.items():
        for partition, refs in parts.items():
            users.setdefault(partition, {})[cluster] = refs
    found = []
    for partition, clusters in sorted(users.items()):
        if len(clusters) < 2:
            continue
        found.append(finding(
            "f5.shared_partition", "critical", "L4", "partition %s" % partition,
            "BIG-IP partition %s is used by %d clusters (%s): each cluster's controller deletes the other's objects"
            % (partition, len(clusters), ", ".join(sorted(clusters))),
            {"clusters": sorted(clusters), "configmaps": dict((c, sample(r, 3)) for c, r in sorted(clusters.items()))},
            "give every cluster its own partition (frontend.partition and the controller's --bigip-partition)"))
    return found


def partitions_of(parsed):
    """{BIG-IP partition: [ConfigMap refs]}: a virtual-server ConfigMap's frontend.partition, an AS3 tenant."""
    parts = {}
    for cm in parsed:
        for partition in [cm["partition"]] + sorted(cm["tenants"] if cm.get("active") else []):
            if partition:
                parts.setdefault(partition, []).append(cm["ref"])
    return parts
