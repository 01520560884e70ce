# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""F5 BIG-IP Controller (CIS) in ConfigMap mode: one valid ConfigMap per LoadBalancer Service port.

Parsers and checks are pure: Kubernetes objects (plain dicts) in, findings out.  The ConfigMap
``data`` is validated against the CIS schema itself (``f5_schema``) with ``jsonschema``, using
the schema's draft (4) and the two formats CIS registers (``bigipv4`` / ``bigipv6``: an address
with an optional ``%<route domain>``).
"""

from __future__ import annotations

import ipaddress
import json
import traceback

from ansible_collections.k8snet.triage.plugins.module_utils.f5_schema import SCHEMA, SCHEMA_URI
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube import condition, meta

try:
    import jsonschema
    from jsonschema.exceptions import best_match
except ImportError:
    HAS_JSONSCHEMA = False
    JSONSCHEMA_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_JSONSCHEMA = True
    JSONSCHEMA_IMPORT_ERROR = None

F5_LABEL = "f5type=virtual-server"
DEFAULT_CONTROLLERS = ("load-balancer-f5", "k8s-bigip-ctlr")
CONTROLLER_NAMESPACE = "kube-system"


def _bigip_address(value, version):
    if not isinstance(value, str):
        return True  # formats apply to strings only (JSON Schema)
    address, sep, route_domain = value.partition("%")
    if sep and not route_domain.isdigit():
        return False
    try:
        return ipaddress.ip_address(address).version == version
    except ValueError:
        return False


def _validator():
    checker = jsonschema.FormatChecker()
    checker.checks("bigipv4")(lambda value: _bigip_address(value, 4))
    checker.checks("bigipv6")(lambda value: _bigip_address(value, 6))
    return jsonschema.Draft4Validator(SCHEMA, format_checker=checker)


def schema_errors(data):
    """[(path, message)] of ``data`` against the v0.1.7 schema, the most relevant first."""
    validator = _validator()
    errors = list(validator.iter_errors(data))
    if not errors:
        return []
    first = best_match(errors)
    ordered = [first] + [e for e in errors if e is not first]
    return [(".".join(str(p) for p in e.absolute_path) or "(top level)", e.message) for e in ordered]


def bind_ip(value):
    """The address part of a bindAddr (``10.0.0.1%2`` -> ``10.0.0.1``)."""
    return value.partition("%")[0] if isinstance(value, str) else value


def parse_configmap(cm):
    """The fields of a CIS ConfigMap the audit needs, and why it is invalid (if it is)."""
    data = cm.get("data") or {}
    parsed = {
        "ref": "%s/%s" % (meta(cm, "namespace"), meta(cm, "name")),
        "namespace": meta(cm, "namespace"),
        "name": meta(cm, "name"),
        "schema": data.get("schema"),
        "errors": [],
        "service": None, "service_port": None, "bind_addr": None, "port": None, "partition": None,
    }
    if parsed["schema"] != SCHEMA_URI:
        parsed["errors"].append(("schema", "schema is %r, expected %r" % (parsed["schema"], SCHEMA_URI)))
    try:
        body = json.loads(data.get("data") or "")
    except ValueError as exc:
        parsed["errors"].append(("data", "data is not JSON: %s" % exc))
        return parsed
    if parsed["schema"] == SCHEMA_URI:
        parsed["errors"].extend(schema_errors(body))
    vs = body.get("virtualServer") if isinstance(body, dict) else None
    vs = vs if isinstance(vs, dict) else {}
    backend = vs.get("backend") if isinstance(vs.get("backend"), dict) else {}
    frontend = vs.get("frontend") if isinstance(vs.get("frontend"), dict) else {}
    address = frontend.get("virtualAddress") if isinstance(frontend.get("virtualAddress"), dict) else {}
    parsed.update(service=backend.get("serviceName"), service_port=backend.get("servicePort"),
                  bind_addr=address.get("bindAddr"), port=address.get("port"), partition=frontend.get("partition"))
    return parsed


def lb_ip(service):
    """The Service's load-balancer IP: status.loadBalancer.ingress[0].ip, else spec.loadBalancerIP."""
    for ingress in ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if ingress.get("ip"):
            return ingress["ip"]
    return (service.get("spec") or {}).get("loadBalancerIP")


def _subject(cluster, ref):
    return "%s:%s" % (cluster, ref) if cluster else ref


def cluster_unreachable(cluster, server, error):
    """f5.cluster_unreachable: a cluster of several that could not be audited (never ok for it)."""
    return finding(
        "f5.cluster_unreachable", "critical", "control-plane", "cluster %s" % cluster,
        "cluster %s was not audited: %s" % (cluster, error),
        {"cluster": cluster, "server": server, "error": error},
        "fix the API access of cluster %s (its kubeconfig/context in clusters) and run again: its ConfigMaps, "
        "controller and partitions were not checked" % cluster)


def check_controllers(pods, prefixes, cluster=None):
    """f5.controller_not_running for every prefix without a Running, ready pod in kube-system."""
    found = []
    for prefix in prefixes:
        matching = [p for p in pods if (meta(p, "name") or "").startswith(prefix)]
        running = [p for p in matching if _pod_ready(p)]
        if running:
            continue
        states = ["%s: %s" % (meta(p, "name"), _pod_state(p)) for p in matching]
        found.append(finding(
            "f5.controller_not_running", "critical", "control-plane", _subject(cluster, "%s/%s" % (CONTROLLER_NAMESPACE, prefix)),
            "no running, ready %s pod in %s: ConfigMap changes are not pushed to the BIG-IP"
            % (prefix, CONTROLLER_NAMESPACE) if matching else
            "no %s pod in %s: nothing pushes ConfigMaps to the BIG-IP" % (prefix, CONTROLLER_NAMESPACE),
            {"pods": sample(states), "pod_count": len(matching)},
            "kubectl -n %s describe pod and logs of %s; check the bigip-login secret and the BIG-IP's reachability"
            % (CONTROLLER_NAMESPACE, prefix)))
    return found


def _pod_ready(pod):
    return (pod.get("status") or {}).get("phase") == "Running" and (condition(pod, "Ready") or {}).get("status") == "True"


def _pod_state(pod):
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return "%s (%s restarts)" % (waiting.get("reason"), cs.get("restartCount", 0))
    return status.get("phase") or "Unknown"


def audit(services, configmaps, cluster=None):
    """Findings for LoadBalancer Services vs the CIS ConfigMaps of their namespaces.

    Returns (findings, parsed ConfigMaps) so that partitions can be compared across clusters.
    """
    found = []
    parsed = [parse_configmap(cm) for cm in configmaps]
    lb_services = {}
    for svc in services:
        if (svc.get("spec") or {}).get("type") == "LoadBalancer":
            lb_services[(meta(svc, "namespace"), meta(svc, "name"))] = svc
    for cm in parsed:
        if cm["errors"]:
            path, message = cm["errors"][0]
            found.append(finding(
                "f5.invalid_configmap", "critical", "L4", _subject(cluster, cm["ref"]),
                "ConfigMap %s does not validate against %s at %s: %s" % (cm["ref"], SCHEMA_URI, path, message),
                {"path": path, "error": message, "error_count": len(cm["errors"]),
                 "other_errors": ["%s: %s" % e for e in sample(cm["errors"][1:], 3)]},
                "fix the ConfigMap's data so that it validates (CIS ignores an invalid ConfigMap and logs the error)"))
        svc = lb_services.get((cm["namespace"], cm["service"]))
        if cm["service"] is not None and svc is None:
            found.append(finding(
                "f5.orphan_configmap", "warning", "L4", _subject(cluster, cm["ref"]),
                "ConfigMap %s points at Service %s/%s, which is not a LoadBalancer Service in that namespace"
                % (cm["ref"], cm["namespace"], cm["service"]),
                {"service": cm["service"], "service_port": cm["service_port"], "partition": cm["partition"]},
                "delete the ConfigMap, or correct backend.serviceName (the Service must be in the ConfigMap's namespace)"))
    for (namespace, name), svc in sorted(lb_services.items()):
        ports = [p.get("port") for p in (svc.get("spec") or {}).get("ports") or []]
        ip = lb_ip(svc)
        mine = [cm for cm in parsed if cm["namespace"] == namespace and cm["service"] == name]
        for cm in mine:
            if cm["service_port"] not in ports:
                found.append(finding(
                    "f5.port_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
                    "ConfigMap %s names servicePort %s, but Service %s/%s has ports %s"
                    % (cm["ref"], cm["service_port"], namespace, name, ports),
                    {"configmap_service_port": cm["service_port"], "service_ports": ports},
                    "set backend.servicePort (and virtualAddress.port) to one of the Service's ports"))
        for port in ports:
            ref = "%s/%s:%s" % (namespace, name, port)
            covering = [cm for cm in mine if cm["service_port"] == port]
            if not covering:
                found.append(finding(
                    "f5.missing_configmap", "critical", "L4", _subject(cluster, ref),
                    "LoadBalancer Service %s/%s port %s has no ConfigMap labelled %s: the BIG-IP has no virtual "
                    "server for it" % (namespace, name, port, F5_LABEL),
                    {"service": "%s/%s" % (namespace, name), "port": port, "load_balancer_ip": ip,
                     "configmaps_of_service": sample(cm["ref"] for cm in mine)},
                    "create one ConfigMap (label f5type: virtual-server, schema %s) with bindAddr %s and port %s"
                    % (SCHEMA_URI, ip, port)))
                continue
            if len(covering) > 1:
                found.append(finding(
                    "f5.duplicate_configmap", "warning", "L4", _subject(cluster, ref),
                    "%d ConfigMaps configure Service %s/%s port %s; CIS applies them in turn"
                    % (len(covering), namespace, name, port),
                    {"configmaps": sample(cm["ref"] for cm in covering)},
                    "keep exactly one ConfigMap per Service port and delete the others"))
            for cm in covering:
                if cm["port"] is not None and cm["port"] != port:
                    found.append(finding(
                        "f5.port_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
                        "ConfigMap %s exposes virtual port %s for Service %s/%s port %s"
                        % (cm["ref"], cm["port"], namespace, name, port),
                        {"virtual_port": cm["port"], "service_port": port},
                        "set frontend.virtualAddress.port to %s" % port))
                if ip and cm["bind_addr"] is not None and bind_ip(cm["bind_addr"]) != ip:
                    found.append(finding(
                        "f5.vip_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
                        "ConfigMap %s binds %s, but Service %s/%s's load-balancer IP is %s"
                        % (cm["ref"], cm["bind_addr"], namespace, name, ip),
                        {"bind_addr": cm["bind_addr"], "load_balancer_ip": ip},
                        "set frontend.virtualAddress.bindAddr to %s (or fix the Service's loadBalancerIP)" % ip))
    return found, parsed


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
    parts = {}
    for cm in parsed:
        if cm["partition"]:
            parts.setdefault(cm["partition"], []).append(cm["ref"])
    return parts
