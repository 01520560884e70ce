# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks of Services with ``externalTrafficPolicy: Local``: the lb_health run.

kube-proxy (and Cilium) answer ``http://<node>:<healthCheckNodePort>/`` with JSON
``{"service": {...}, "localEndpoints": N}``: 200 when N > 0, 503 otherwise.  Nodes without a
ready local endpoint fail the load balancer's health check by design.  This module relates the
EndpointSlices (which nodes hold a ready endpoint) to the probes of every node.

Its parts beside it: ``health_plan`` (which nodes each Service's probes go to, and the probes run side by side
within ``probe_deadline``), ``lb_health_probes`` (the readers ``probe`` and ``traffic_probe``), ``lb_health_checks``
(pure: ``local_endpoints``, ``check_service``, ``check_traffic``, ``pool_view``, ``owner``, ``patch_reason``,
``forced_reason``) and ``lb_health_remediation`` (``set_cluster_policy``, ``remediate``, ``verify_switch`` and
their findings).  This file: ``api_run``, the module's whole run: ``select_services``, then ``run`` (read, probe
and judge each Service, remediate the ``remediation_targets``, verify what was patched).
"""

from __future__ import annotations

import functools

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import collapse, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta, node_address
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import split_ref
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_checks import (
    by_node, check_service, forced_reason, is_local_lb, local_endpoints, patch_reason, pool_nodes, probes_limited,
    service_model)
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_plan import probe_nodes, run_all
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_probes import probe, traffic_port, traffic_probe
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_remediation import (
    owner_finding, remediate, verify_findings, verify_switch)


def node_ips(nodes, address_type="InternalIP"):
    return dict((meta(n, "name"), node_address(n, address_type)) for n in nodes)


# ------------------------------------------------------------------ the lb_health run (reads, remediation, post-check)
MAX_PATCH_LIMIT = 100
# beyond this many Services with the same finding, one finding says it for them all
COLLAPSE_OVER = 20


def select_services(kube, names, namespaces):
    """The Services ``names`` names (InputError for one that does not exist), else the Local LoadBalancer Services
    of ``namespaces`` (of every namespace when empty)."""
    if names:
        found = []
        for ref in names:
            namespace, name = split_ref(ref)
            svc = kube.get("services", name, namespace)
            if svc is None:
                raise InputError("Service %s does not exist" % ref)
            found.append(svc)
        return found
    services = []
    for namespace in namespaces or [None]:
        services.extend(kube.services(namespace))
    return [s for s in services if is_local_lb(s)]


def remediation_targets(p):
    """The Services remediation may patch (validated, de-duplicated, in order); [] when not remediating."""
    if p["remediate"] == "none":
        return []
    if not p["remediate_services"]:
        raise InputError("remediate: %s needs remediate_services, the Services (namespace/name) it may patch; "
                         "nothing is patched without naming them" % p["remediate"])
    if not 1 <= p["max_patch"] <= MAX_PATCH_LIMIT:
        raise InputError("max_patch must be between 1 and %d, not %s" % (MAX_PATCH_LIMIT, p["max_patch"]))
    targets = []
    for ref in p["remediate_services"]:
        split_ref(ref)
        if ref not in targets:
            targets.append(ref)
    outside = [ref for ref in targets if p["services"] and ref not in p["services"]]
    if outside:
        raise InputError("remediate_services %s are not among services: add them to services, or leave services "
                         "empty" % ", ".join(outside))
    return targets


def _probe_jobs(ref, svc, chosen, addresses, p):
    """[(key, probe)] of one Service's chosen nodes that have an address: its healthCheckNodePort (``probe``) and
    its traffic nodePort (``probe_traffic``)."""
    jobs = []
    port, node_port = svc["spec"].get("healthCheckNodePort"), traffic_port(svc)
    for name in chosen:
        address = addresses.get(name)
        if not address:
            continue
        if p["probe"] and port:
            jobs.append(((ref, "health", name), functools.partial(probe, address, port, p["probe_timeout"])))
        if p["probe_traffic"] and node_port:
            jobs.append(((ref, "traffic", name), functools.partial(traffic_probe, address, node_port,
                                                                   p["probe_timeout"])))
    return jobs


def _read_services(kube, services, nodes, addresses, p):
    """([(Service, ref, its local endpoints, the nodes chosen, how many not)] of the Local LoadBalancer Services,
    {(ref, kind, node): probe result}, [keys not probed before the deadline], how many were planned)."""
    names = [meta(n, "name") for n in nodes]
    local, jobs = [], []
    for svc in services:
        if not is_local_lb(svc):
            continue
        ref = "%s/%s" % (meta(svc, "namespace"), meta(svc, "name"))
        endpoints = local_endpoints(kube.endpoint_slices(meta(svc, "namespace"), service=meta(svc, "name")))
        chosen, skipped = probe_nodes(names, endpoints, p["max_probe_nodes"])
        local.append((svc, ref, endpoints, chosen, skipped))
        jobs.extend(_probe_jobs(ref, svc, chosen, addresses, p))
    results, late = run_all(jobs, p["probe_workers"], p["probe_deadline"])
    return local, results, late, len(jobs)


def _judge_services(kube, services, nodes, addresses, p, targets):
    """(Service models, findings, {ref: patch reason}, {ref: traffic probes}) of the selected Services."""
    models, found, reasons, traffic_all = [], [], {}, {}
    local, results, late, planned = _read_services(kube, services, nodes, addresses, p)
    by_ref = dict((item[1], item) for item in local)
    for svc in services:
        ref = "%s/%s" % (meta(svc, "namespace"), meta(svc, "name"))
        if ref not in by_ref:
            models.append(service_model(svc, {}, {}))
            reasons[ref] = patch_reason(svc, nodes, {}, {})
            continue
        endpoints, chosen, skipped = by_ref[ref][2:]
        probes = dict((n, results[(ref, "health", n)]) for n in chosen if (ref, "health", n) in results)
        traffic = None
        if p["probe_traffic"] and traffic_port(svc):
            traffic = traffic_all[ref] = dict((n, results[(ref, "traffic", n)]) for n in chosen
                                              if (ref, "traffic", n) in results)
        found.extend(check_service(svc, nodes, endpoints, probes, traffic or {}))
        models.append(dict(service_model(svc, endpoints, probes), nodes_not_probed=skipped))
        reasons[ref] = patch_reason(svc, nodes, endpoints, probes)
        if p["force_policy_switch"] and ref in targets:
            reasons[ref] = forced_reason(svc, reasons[ref], probes)
    limited = probes_limited(local, planned, late, len(nodes), p)
    found.extend([limited] if limited else [])
    # Local's by-design condition on hundreds of Services is one thing to read: said once with the count; a node
    # that fails the health check of many Services is one problem of that node, and many such nodes one finding
    without = [f for f in found if f["check"] == "lb.nodes_without_endpoints"]
    mismatches = [f for f in found if f["check"] == "lb.health_probe_mismatch"]
    found = [f for f in found if f["check"] not in ("lb.nodes_without_endpoints", "lb.health_probe_mismatch")]
    found += collapse(without, COLLAPSE_OVER, "Services") + collapse(by_node(mismatches), COLLAPSE_OVER, "nodes")
    return models, found, reasons, traffic_all


def _verify_patched(kube, outcome, nodes, addresses, p, check_mode):
    """The post-check of every Service patched (``verify``, never in check mode): ``outcome["verification"]``
    filled, its findings returned."""
    found = []
    outcome["verification"] = []
    if p["verify"] and not check_mode:
        for ref in outcome["patched"]:
            namespace, name = split_ref(ref)
            result = verify_switch(kube, namespace, name, nodes, addresses, p["probe_timeout"], p["verify_timeout"])
            result["put_back"] = outcome["put_back"].get(ref)
            outcome["verification"].append(result)
            found.extend(verify_findings(result, outcome["owners"].get(ref), outcome["put_back"].get(ref)))
    return found


def run(p, kube, targets, check_mode=False):
    """(Service models, findings, remediation outcome) of one lb_health run through ``kube``: the Services
    selected, read, probed and judged, the ``targets`` remediated, the Services patched verified."""
    services = select_services(kube, p["services"] or targets, p["namespaces"])
    nodes = pool_nodes(kube.nodes())
    addresses = node_ips(nodes, p["address_type"])
    models, found, reasons, traffic_all = _judge_services(kube, services, nodes, addresses, p, targets)
    outcome = remediate(kube, [(ref,) + reasons[ref] for ref in targets], p["max_patch"], check_mode)
    for ref, who in outcome["owners"].items():
        found.append(owner_finding(ref, who, check_mode))
    found.extend(_verify_patched(kube, outcome, nodes, addresses, p, check_mode))
    outcome["traffic"] = traffic_all
    return models, found, outcome


def _module_result(models, found, outcome):
    """The module's result of a run (RV(diff) only when a Service was patched or would be)."""
    patched = outcome["patched"]
    result = dict(changed=bool(patched), services=models, patched=patched, failures=outcome["failures"],
                  not_attempted=outcome["not_attempted"], traffic=outcome["traffic"], owners=outcome["owners"],
                  verification=outcome["verification"], findings=sort_findings(found))
    if outcome["diffs"]:
        result["diff"] = outcome["diffs"] if len(outcome["diffs"]) > 1 else outcome["diffs"][0]
    return result


def api_run(params, kube_factory, check_mode=False):
    """The whole lb_health run: ``params`` (the module's options) in, the module's result out; the API client
    (``kube_factory(params)``) is built once the remediation targets are known to be valid.  A remediation that
    failed raises ChangeError, whose details are the whole result (what was patched, what failed, what was not
    attempted)."""
    targets = remediation_targets(params)
    models, found, outcome = run(params, kube_factory(params), targets, check_mode)
    result = _module_result(models, found, outcome)
    if outcome["failures"]:
        patched = outcome["patched"]
        first = outcome["failures"][0]
        raise ChangeError(
            "lb_health patched %d Service(s)%s, then failed on %s: %s" % (
                len(patched), " (%s)" % ", ".join(patched) if patched else "", first["service"], first["reason"]),
            **result)
    return result
