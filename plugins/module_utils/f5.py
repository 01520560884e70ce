# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""F5 BIG-IP Controller (CIS) in ConfigMap mode, alone or in GDC's integrated mode.

Parsers and checks are pure: Kubernetes objects (plain dicts) in, findings out.  A virtual-server
ConfigMap's ``data`` is validated against the CIS schema version it names (``f5_schema``: v0.1.0 to
v0.1.8) with ``jsonschema``, using the schemas' draft (4) and the two formats CIS registers
(``bigipv4`` / ``bigipv6``: an address with an optional ``%<route domain>``).  AS3 ConfigMaps (label
``as3: "true"``, ``data.template``) are read for their tenants, applications, virtual addresses and pools.

Two modes are judged differently.  In GDC's integrated mode (``load-balancer-f5`` runs, or ConfigMaps
carry its label) every LoadBalancer Service port not handed to another implementation has exactly one
ConfigMap whose VIP is the Service's address.  On a plain CIS cluster a ConfigMap only needs its Service
and port to exist, in a namespace CIS watches, reachable by CIS's pool member type.
"""

from __future__ import annotations

import ipaddress
import json
import re
import traceback

from ansible_collections.k8snet.triage.plugins.module_utils.f5_schema import SCHEMA_URI, SCHEMAS, URI_FORMAT
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


GDC_CONTROLLER = "load-balancer-f5"
# GDC (Anthos on-prem) labels the F5 objects of its integrated mode with this
GDC_LABEL = "onprem.cluster.gke.io/legacy-f5-resource"
CIS_IMAGE = "k8s-bigip-ctlr"
# Services whose load balancer another implementation provides (GDC's F5 integration then owes them nothing)
METALLB_ANNOTATIONS = ("metallb.universe.tf/", "metallb.io/")
URI_RE = re.compile(r"^f5schemadb://bigip-virtual-server_(v(\d+)\.(\d+)\.(\d+))\.json$")
MODES = {"gdc": "GDC integrated mode (load-balancer-f5)", "cis": "F5 CIS without GDC"}


# JSON Schema keywords whose value must be a non-negative integer
INTEGER_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def schema_defects(schema, path="#"):
    """[(JSON pointer, keyword, value)]: integer keywords a schema gives as something else (v0.1.0's
    ``"minLength": "1"``).  CIS's validator (gojsonschema) refuses to load such a schema."""
    found = []
    if isinstance(schema, dict):
        for key, value in sorted(schema.items()):
            if key in INTEGER_KEYWORDS and (not isinstance(value, int) or isinstance(value, bool)):
                found.append((path, key, value))
            else:
                found.extend(schema_defects(value, "%s/%s" % (path, key)))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found.extend(schema_defects(value, "%s/%d" % (path, i)))
    return found


def _repaired(schema):
    """The schema with numeric strings of integer keywords made integers (what F5's own test tool read them as)."""
    if isinstance(schema, dict):
        return dict((k, int(v) if k in INTEGER_KEYWORDS and isinstance(v, str) and v.isdigit() else _repaired(v))
                    for k, v in schema.items())
    if isinstance(schema, list):
        return [_repaired(v) for v in schema]
    return schema


def _validator(version="v0.1.7"):
    checker = jsonschema.FormatChecker()
    checker.checks("bigipv4")(lambda value: _bigip_address(value, 4))
    checker.checks("bigipv6")(lambda value: _bigip_address(value, 6))
    return jsonschema.Draft4Validator(_repaired(SCHEMAS[version][1]), format_checker=checker)


def schema_version(uri):
    """(version named, known version to validate against) of a schema URI; (None, None) when it names none."""
    match = URI_RE.match(uri) if isinstance(uri, str) else None
    if not match:
        return None, None
    version = match.group(1)
    if version in SCHEMAS:
        return version, version
    wanted = tuple(int(n) for n in match.groups()[1:])

    def linear(numbers):
        return sum(n * 1000 ** (2 - i) for i, n in enumerate(numbers))

    def distance(known):
        numbers = tuple(int(n) for n in known[1:].split("."))
        return (abs(linear(numbers) - linear(wanted)), numbers)
    return version, min(SCHEMAS, key=distance)


def schema_errors(data, version="v0.1.7"):
    """[(path, message)] of ``data`` against the schema ``version``, the most relevant first."""
    validator = _validator(version)
    errors = list(validator.iter_errors(data))
    if not errors:
        return []
    first = best_match(errors)
    ordered = [first] + [e for e in errors if e is not first]
    return [(".".join(str(p) for p in e.absolute_path) or "(top level)", e.message) for e in ordered]


def bind_ip(value):
    """The address part of a bindAddr (``10.0.0.1%2`` -> ``10.0.0.1``)."""
    return value.partition("%")[0] if isinstance(value, str) else value


def is_as3(cm):
    """An AS3 ConfigMap (label as3 or overrideAS3 "true"/"false", as CIS reads them) rather than a virtual-server one."""
    labels = (cm.get("metadata") or {}).get("labels") or {}
    return labels.get("as3") in ("true", "false") or labels.get("overrideAS3") in ("true", "false")


def parse_configmap(cm, mode="gdc"):
    """The fields of a CIS ConfigMap the audit needs, and why it is invalid (if it is).

    In GDC's integrated mode a virtual-server ConfigMap names v0.1.7 (what load-balancer-f5 writes); with CIS
    alone any version CIS knows is fine.  Either way the data is validated against the version named."""
    if is_as3(cm):
        return parse_as3(cm)
    data = cm.get("data") or {}
    parsed = {
        "ref": "%s/%s" % (meta(cm, "namespace"), meta(cm, "name")),
        "kind": "virtual-server",
        "namespace": meta(cm, "namespace"),
        "name": meta(cm, "name"),
        "schema": data.get("schema"),
        "schema_version": None, "validated_with": None,
        "errors": [],
        "service": None, "service_port": None, "bind_addr": None, "port": None, "partition": None,
    }
    version, known = schema_version(parsed["schema"])
    parsed.update(schema_version=version, validated_with=known)
    if mode == "gdc" and known is not None and parsed["schema"] != SCHEMA_URI:
        parsed["errors"].append(("schema", "schema is %r, expected %r (what GDC's load-balancer-f5 writes)"
                                 % (parsed["schema"], SCHEMA_URI)))
    if known is None:
        parsed["errors"].append(("schema", "schema is %r, not f5schemadb://bigip-virtual-server_<version>.json (CIS "
                                           "knows %s to %s)" % (parsed["schema"], min(SCHEMAS), max(SCHEMAS))))
    try:
        body = json.loads(data.get("data") or "")
    except ValueError as exc:
        parsed["errors"].append(("data", "data is not JSON: %s" % exc))
        return parsed
    if known is not None:
        parsed["errors"].extend(schema_errors(body, known))
    vs = body.get("virtualServer") if isinstance(body, dict) else None
    vs = vs if isinstance(vs, dict) else {}
    backend = vs.get("backend") if isinstance(vs.get("backend"), dict) else {}
    frontend = vs.get("frontend") if isinstance(vs.get("frontend"), dict) else {}
    address = frontend.get("virtualAddress") if isinstance(frontend.get("virtualAddress"), dict) else {}
    parsed.update(service=backend.get("serviceName"), service_port=backend.get("servicePort"),
                  bind_addr=address.get("bindAddr"), port=address.get("port"), partition=frontend.get("partition"),
                  iapp=frontend.get("iapp"))
    return parsed


def _classed(obj, prefix):
    return [(k, v) for k, v in sorted(obj.items()) if isinstance(v, dict) and str(v.get("class", "")).startswith(prefix)]


def _as3_base(cm, labels):
    """The fields of an AS3 ConfigMap before its template is read (the virtual-server ones left empty)."""
    return {
        "ref": "%s/%s" % (meta(cm, "namespace"), meta(cm, "name")),
        "kind": "as3", "namespace": meta(cm, "namespace"), "name": meta(cm, "name"),
        "schema": None, "schema_version": None, "validated_with": None, "errors": [], "tenants": {},
        "service": None, "service_port": None, "bind_addr": None, "port": None, "partition": None,
        # as3 "false" asks CIS to remove what the ConfigMap declared; an overrideAS3 one amends the objects CIS
        # generates (and needs --override-as3-declaration): neither has pools of its own to check
        "override": labels.get("overrideAS3") in ("true", "false"),
        "active": labels.get("as3") == "true" and labels.get("overrideAS3") not in ("true", "false"),
    }


def _as3_declaration(data):
    """(the ADC declaration of ``data.template``, None) or (None, (path, error)) when it is not one."""
    try:
        body = json.loads(data.get("template") or "")
    except ValueError as exc:
        return None, ("template", "data.template is not JSON: %s" % exc)
    declaration = body.get("declaration") if isinstance(body, dict) and body.get("class") == "AS3" else body
    if not isinstance(declaration, dict) or declaration.get("class") != "ADC":
        return None, ("template", "data.template is not an AS3 declaration (class AS3 with a declaration "
                                  "of class ADC, or class ADC)")
    return declaration, None


def _as3_application(abody):
    """An AS3 application's virtual addresses and pools with their members."""
    addresses, pools = [], []
    for dummy, svc in _classed(abody, "Service_"):
        addresses.extend(a for a in svc.get("virtualAddresses") or [] if isinstance(a, str))
    for pool, pbody in _classed(abody, "Pool"):
        members = [{"servicePort": m.get("servicePort"), "serviceName": m.get("serviceName"),
                    "serviceNamespace": m.get("serviceNamespace")}
                   for m in pbody.get("members") or [] if isinstance(m, dict)]
        pools.append({"name": pool, "members": members})
    return {"virtual_addresses": addresses, "pools": pools}


def parse_as3(cm):
    """An AS3 ConfigMap: its declaration's tenants, applications, virtual addresses and pools with their members."""
    data = cm.get("data") or {}
    labels = (cm.get("metadata") or {}).get("labels") or {}
    parsed = _as3_base(cm, labels)
    if labels.get("as3") == "false" and not parsed["override"]:
        return parsed
    declaration, error = _as3_declaration(data)
    if error:
        parsed["errors"].append(error)
        return parsed
    for tenant, tbody in _classed(declaration, "Tenant"):
        apps = parsed["tenants"].setdefault(tenant, {})
        for app, abody in _classed(tbody, "Application"):
            apps[app] = _as3_application(abody)
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


def check_controllers(pods, prefixes, cluster=None, mode=None):
    """f5.controller_not_running for every prefix without a Running, ready pod in kube-system (``mode``, when
    given, goes into the evidence)."""
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
            dict({"pods": sample(states), "pod_count": len(matching)}, **({"mode": mode} if mode else {})),
            "kubectl -n %s describe pod and logs of %s; check the bigip-login secret and the BIG-IP's reachability"
            % (CONTROLLER_NAMESPACE, prefix)))
    return found


def _terminating(pod):
    """A pod being deleted (metadata.deletionTimestamp): its status stays Running and Ready until its kubelet has
    stopped it, but its controller is going away (what kubectl shows as Terminating)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _pod_ready(pod):
    return (not _terminating(pod) and (pod.get("status") or {}).get("phase") == "Running"
            and (condition(pod, "Ready") or {}).get("status") == "True")


def _pod_state(pod):
    if _terminating(pod):
        return "Terminating"
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return "%s (%s restarts)" % (waiting.get("reason"), cs.get("restartCount", 0))
    return status.get("phase") or "Unknown"


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
        "f5.invalid_configmap", "critical", "L4", _subject(cluster, cm["ref"]),
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
            "f5.unknown_schema_version", "warning", "L4", _subject(cluster, cm["ref"]),
            "ConfigMap %s names schema %s, which F5 never published (known: %s to %s); it was validated against "
            "the nearest, %s" % (cm["ref"], cm["schema_version"], min(SCHEMAS), max(SCHEMAS), cm["validated_with"]),
            {"schema": cm["schema"], "validated_with": URI_FORMAT % cm["validated_with"], "mode": mode},
            "name a schema version your CIS release ships (CIS rejects a ConfigMap whose schema it cannot load)"))
    defects = schema_defects(SCHEMAS[cm["validated_with"]][1]) if cm["validated_with"] else []
    if defects:
        found.append(finding(
            "f5.schema_not_loadable", "warning", "L4", _subject(cluster, cm["ref"]),
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
            "f5.unwatched_namespace", "critical", "L4", _subject(cluster, cm["ref"]),
            "ConfigMap %s is in namespace %s, which no CIS controller watches (%s): it configures nothing"
            % (cm["ref"], cm["namespace"], "; ".join("%s: %s" % (c["ref"], c["watch"]) for c in controllers)),
            {"namespace": cm["namespace"], "controllers": [c["ref"] for c in controllers], "mode": mode},
            "add --namespace=%s to the CIS controller's args (or label the namespace for its "
            "--namespace-label), or move the ConfigMap to a watched namespace" % cm["namespace"])], watchers
    if cm["kind"] == "virtual-server" and cm["partition"] and not any(
            not c["partitions"] or cm["partition"] in c["partitions"] for c in watchers):
        return [finding(
            "f5.partition_not_managed", "critical", "L4", _subject(cluster, cm["ref"]),
            "ConfigMap %s uses BIG-IP partition %s, which its CIS controller does not manage (--bigip-partition %s)"
            % (cm["ref"], cm["partition"], ", ".join(sorted(set(p for c in watchers for p in c["partitions"])))),
            {"partition": cm["partition"], "controllers": [c["ref"] for c in watchers], "mode": mode},
            "set frontend.partition to the controller's --bigip-partition")], watchers
    return [], watchers


def _orphan(cm, what, namespace, name, port, cluster, mode):
    """f5.orphan_configmap: a ConfigMap's backend (or AS3 pool) without its Service."""
    return finding(
        "f5.orphan_configmap", "warning", "L4", _subject(cluster, cm["ref"]),
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
            "f5.port_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
            "ConfigMap %s names servicePort %s, but Service %s has ports %s" % (cm["ref"], port, sref, ports),
            {"configmap_service_port": port, "service_ports": ports, "service": sref, "mode": mode},
            "set %s servicePort to one of the Service's ports %s"
            % ("backend.servicePort (and virtualAddress.port)" if cm["kind"] != "as3" else "the members'",
               ports)))
    stype = (svc.get("spec") or {}).get("type") or "ClusterIP"
    if watchers and stype == "ClusterIP" and all(c["pool_member_type"] == "nodeport" for c in watchers):
        found.append(finding(
            "f5.pool_member_type_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
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
            "f5.port_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
            "ConfigMap %s exposes virtual port %s for Service %s/%s port %s"
            % (cm["ref"], cm["port"], namespace, name, port),
            {"virtual_port": cm["port"], "service_port": port, "mode": "gdc"},
            "set frontend.virtualAddress.port to %s" % port))
    if ip and cm["bind_addr"] is not None and bind_ip(cm["bind_addr"]) != ip:
        found.append(finding(
            "f5.vip_mismatch", "critical", "L4", _subject(cluster, cm["ref"]),
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
            "f5.missing_configmap", "critical", "L4", _subject(cluster, ref),
            "LoadBalancer Service %s/%s port %s has no ConfigMap labelled %s: the BIG-IP has no virtual "
            "server for it" % (namespace, name, port, F5_LABEL),
            {"service": "%s/%s" % (namespace, name), "port": port, "load_balancer_ip": ip, "mode": "gdc",
             "configmaps_of_service": sample(cm["ref"] for cm in mine)},
            "create one ConfigMap (label f5type: virtual-server, schema %s) with bindAddr %s and port %s"
            % (SCHEMA_URI, ip, port))]
    found = []
    if len(covering) > 1:
        found.append(finding(
            "f5.duplicate_configmap", "warning", "L4", _subject(cluster, ref),
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


# ------------------------------------------------------------------ the controller and the mode
def image_name(image):
    """The last path part of an image reference without tag or digest (``host:5000/f5networks/x:1@sha256:..`` -> x)."""
    name = (image or "").split("@")[0].rsplit("/", 1)[-1]
    return name.split(":")[0]


def _is_cis_container(container):
    return image_name(container.get("image")) == CIS_IMAGE


def is_cis(workload):
    """A Deployment (or Pod) running F5 CIS: an image .../k8s-bigip-ctlr, or CIS's own labels."""
    labels = (workload.get("metadata") or {}).get("labels") or {}
    if CIS_IMAGE in (labels.get("app"), labels.get("app.kubernetes.io/name")):
        return True
    spec = workload.get("spec") or {}
    pod_spec = ((spec.get("template") or {}).get("spec") or spec) if "template" in spec else spec
    return any(_is_cis_container(c) for c in pod_spec.get("containers") or [])


def cis_args(container):
    """{flag: [values]} of a CIS container's command and args (``--flag=value`` or ``--flag value``)."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    flags = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            if not sep and i + 1 < len(words) and not words[i + 1].startswith("--"):
                value, i = words[i + 1], i + 1
            flags.setdefault(name, []).append(value.strip("\"'") if sep or value else "true")
        i += 1
    return flags


def cis_controllers(deployments):
    """The CIS Deployments: ref, replicas, watched namespaces / namespace label, pool member type, partitions."""
    out = []
    for dep in deployments:
        if not is_cis(dep):
            continue
        spec = dep.get("spec") or {}
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        cis = [c for c in containers if _is_cis_container(c)] or containers[:1]
        flags = cis_args(cis[0]) if cis else {}
        namespaces = [n for v in flags.get("namespace", []) for n in [v] if n]
        label = (flags.get("namespace-label") or [""])[-1]
        out.append({
            "ref": "%s/%s" % (meta(dep, "namespace"), meta(dep, "name")),
            "replicas": spec.get("replicas", 1),
            "ready": (dep.get("status") or {}).get("readyReplicas") or 0,
            "namespaces": namespaces, "namespace_label": label, "namespace_labels": None,
            "watch": ("namespaces %s" % ", ".join(namespaces)) if namespaces else
                     ("namespaces labelled %s" % label) if label else "all namespaces",
            "pool_member_type": (flags.get("pool-member-type") or ["nodeport"])[-1],
            "partitions": flags.get("bigip-partition", []),
        })
    return out


def label_matches(selector, labels):
    """``key``, ``key=value`` or ``key==value`` (what CIS users put in --namespace-label) against labels."""
    key, sep, value = selector.replace("==", "=").partition("=")
    return key in labels and (not sep or labels[key] == value)


def resolve_namespace_labels(controllers, namespaces):
    """Fill each controller's watched namespaces from its --namespace-label and the cluster's Namespaces."""
    for c in controllers:
        if c["namespace_label"] and not c["namespaces"]:
            c["namespace_labels"] = sorted(meta(n, "name") for n in namespaces
                                           if label_matches(c["namespace_label"], (n.get("metadata") or {}).get("labels") or {}))
    return controllers


def watches(controller, namespace):
    if controller["namespaces"]:
        return namespace in controller["namespaces"]
    if controller["namespace_label"]:
        return namespace in (controller["namespace_labels"] or [])
    return True


def detect_mode(deployments, pods, configmaps):
    """("gdc" or "cis", why): GDC's integrated mode when its load-balancer-f5 exists or labelled the ConfigMaps."""
    for dep in deployments or []:
        if meta(dep, "name") == GDC_CONTROLLER:
            return "gdc", "Deployment %s/%s" % (meta(dep, "namespace"), GDC_CONTROLLER)
    for pod in pods:
        if meta(pod, "namespace") == CONTROLLER_NAMESPACE and (meta(pod, "name") or "").startswith(GDC_CONTROLLER):
            return "gdc", "pod %s/%s" % (CONTROLLER_NAMESPACE, meta(pod, "name"))
    for cm in configmaps:
        if GDC_LABEL in ((cm.get("metadata") or {}).get("labels") or {}):
            return "gdc", "ConfigMap %s/%s labelled %s" % (meta(cm, "namespace"), meta(cm, "name"), GDC_LABEL)
    return "cis", "no %s Deployment or pod, no ConfigMap labelled %s" % (GDC_CONTROLLER, GDC_LABEL)


def check_cis(controllers, pods, cluster=None):
    """In CIS mode: a CIS Deployment exists (or a ready CIS pod in ``pods``), is not scaled to zero, and has a
    ready replica."""
    if not controllers:
        if any(is_cis(p) and _pod_ready(p) for p in pods):
            return []  # CIS runs as a pod that no Deployment of ours owns (a bare pod, another workload kind)
        return [finding(
            "f5.controller_not_running", "critical", "control-plane", _subject(cluster, CIS_IMAGE),
            "no Deployment runs F5 CIS (image .../%s or label app=%s): nothing pushes ConfigMaps to the BIG-IP"
            % (CIS_IMAGE, CIS_IMAGE),
            {"mode": "cis", "cis_pods": sample("%s/%s" % (meta(p, "namespace"), meta(p, "name")) for p in pods if is_cis(p))},
            "deploy CIS (F5's k8s-bigip-ctlr Deployment, F5's sample in its docs/config_examples/Install), or check "
            "that it runs: kubectl get pods -A -l app=k8s-bigip-ctlr")]
    found = []
    for c in controllers:
        if c["replicas"] == 0:
            found.append(finding(
                "f5.controller_scaled_to_zero", "critical", "control-plane", _subject(cluster, c["ref"]),
                "CIS Deployment %s is scaled to 0 replicas: ConfigMap changes are not pushed to the BIG-IP" % c["ref"],
                {"replicas": 0, "mode": "cis"},
                "kubectl -n %s scale deployment %s --replicas=1" % tuple(c["ref"].split("/"))))
        elif not c["ready"]:
            found.append(finding(
                "f5.controller_not_running", "critical", "control-plane", _subject(cluster, c["ref"]),
                "CIS Deployment %s has no ready replica (of %s): ConfigMap changes are not pushed to the BIG-IP"
                % (c["ref"], c["replicas"]),
                {"replicas": c["replicas"], "ready": 0, "mode": "cis"},
                "kubectl -n %s describe deployment %s, and the logs of its pods (bigip-login secret, BIG-IP reachable?)"
                % tuple(c["ref"].split("/"))))
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
