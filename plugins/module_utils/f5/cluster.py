# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The f5_configmap_audit run: F5 CIS ConfigMaps read and audited cluster by cluster through the Kubernetes API.

``f5``, ``f5_parsers`` and ``f5_controller`` judge the objects (pure); this file reads them from each cluster asked
for, picks the mode each cluster is judged in, and joins the clusters' results (partitions shared across clusters,
an unreachable cluster among several as a finding).
"""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.k8snet.triage.plugins.module_utils.f5 import configmaps as f5, controller as f5_controller, parsers as f5_parsers
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sort_findings

# API options that name one cluster's server and identity: not inherited by a clusters entry with its own kubeconfig
CLUSTER_IDENTITY = ("host", "api_key", "ca_cert", "client_cert", "client_key")
# what RV(modes) shows of each CIS controller
CIS_SHOWN = ("ref", "replicas", "ready", "watch", "pool_member_type", "partitions")


def deployments(kube):
    """Every Deployment, or None when the API does not let us list them (RBAC, or not served)."""
    try:
        return kube.list("deployments")
    except PrivilegeError:
        return None
    except ReadError as exc:
        if exc.details.get("status") == 404:
            return None
        raise


def _read_services_and_configmaps(kube, namespaces):
    """(Services, F5 ConfigMaps) of ``namespaces`` (all namespaces when empty), read namespace by namespace."""
    services, configmaps = [], []
    for namespace in namespaces or [None]:
        services.extend(kube.services(namespace))
        configmaps.extend(kube.config_maps(namespace, label_selector=f5_parsers.F5_LABEL))
    return services, configmaps


def _check_running(pods, deps, cis, controllers, name, mode):
    """The controller findings: the controller pods in GDC's mode or when Deployments cannot be listed (without
    load-balancer-f5 outside GDC's mode), else the CIS Deployments."""
    if mode == "gdc" or deps is None:
        expected = [c for c in controllers if mode == "gdc" or c != f5_controller.GDC_CONTROLLER]
        return f5_controller.check_controllers(pods, expected, cluster=name, mode=mode)
    return f5_controller.check_cis(cis, pods, cluster=name)


def _judged(kube, mode, why, deps, parsed, cis):
    """What RV(modes) shows of one cluster: its mode and why, the ConfigMaps by kind, the schema versions they
    name and the CIS controllers found."""
    return {"name": kube.name, "server": kube.server, "mode": mode, "mode_name": f5_controller.MODES[mode], "why": why,
            "deployments_read": deps is not None,
            "configmaps": {"virtual-server": len([c for c in parsed if c["kind"] == "virtual-server"]),
                           "as3": len([c for c in parsed if c["kind"] == "as3"])},
            "schema_versions": sorted(set(c["schema_version"] for c in parsed if c["schema_version"])),
            "cis_controllers": [dict((k, c[k]) for k in CIS_SHOWN) for c in cis]}


def audit_cluster(kube, namespaces, controllers):
    """(findings, summary, {partition: [ConfigMap refs]}, judged mode) of one cluster, read through ``kube``."""
    name = kube.name
    services, configmaps = _read_services_and_configmaps(kube, namespaces)
    pods = kube.pods(f5_controller.CONTROLLER_NAMESPACE)
    deps = deployments(kube)
    mode, why = f5_controller.detect_mode(deps, pods, configmaps)
    cis = f5_controller.cis_controllers(deps or [])
    if any(c["namespace_label"] and not c["namespaces"] for c in cis):
        f5_controller.resolve_namespace_labels(cis, kube.namespaces())
    found, parsed = f5.audit(services, configmaps, cluster=name, mode=mode, controllers=cis)
    found.extend(_check_running(pods, deps, cis, controllers, name, mode))
    specs = [s.get("spec") or {} for s in services]  # a Service read with spec: null has no ports
    ports = sum(len(spec.get("ports") or []) for spec in specs if spec.get("type") == "LoadBalancer")
    partitions = f5.partitions_of(parsed)
    summary = {"name": name, "server": kube.server, "reached": True, "load_balancer_ports": ports,
               "configmaps": len(parsed), "partitions": sorted(partitions)}
    return found, summary, partitions, _judged(kube, mode, why, deps, parsed, cis)


def cluster_targets(params):
    """([(cluster name, its API options)], several): the ``clusters`` entries, or the one cluster of the module's
    own options (name None) when there is none."""
    targets = []
    for cluster in params["clusters"]:
        cluster_params = dict(params)
        if cluster.get("kubeconfig") or cluster.get("context"):
            # the module's server, token and certificates (K8S_AUTH_* in AWX) belong to another cluster
            cluster_params.update(dict.fromkeys(CLUSTER_IDENTITY))
        cluster_params.update((k, v) for k, v in cluster.items() if v is not None and k != "name")
        targets.append((cluster["name"], cluster_params))
    if not targets:
        return [(None, params)], False
    return targets, True


def _audit_or_unreachable(kube, params, several):
    """audit_cluster of one cluster; among ``several``, one whose API cannot be read gives (its
    f5.cluster_unreachable finding, a summary saying so, None, None) instead of failing the run."""
    try:
        return audit_cluster(kube, params["namespaces"], params["controller_pods"])
    except (ReadError, PrivilegeError) as exc:
        if not several:
            raise
        return ([f5.cluster_unreachable(kube.name, kube.server, exc.message)],
                {"name": kube.name, "server": kube.server, "reached": False, "error": exc.message}, None, None)


def _audit_clean(summaries, modes):
    """f5.audit_clean: no finding in any cluster read."""
    gdc = [m for m in modes if m["mode"] == "gdc"]
    return finding("f5.audit_clean", "ok", "L4", ", ".join(s["name"] or s["server"] for s in summaries),
                   ("every LoadBalancer Service port has exactly one valid, matching ConfigMap" if gdc else
                    "every CIS ConfigMap validates against its schema and names an existing Service and port")
                   + " (judged as %s)" % "; ".join(sorted(set(m["mode_name"] for m in modes))),
                   {"load_balancer_ports": sum(s["load_balancer_ports"] for s in summaries),
                    "modes": dict((m["name"] or m["server"], m["mode"]) for m in modes)})


def audit_clusters(params, kube_factory):
    """The whole f5_configmap_audit run over the clusters ``params`` names: ``{"clusters", "modes", "findings"}``.

    A TriageError raised carries in its details (``clusters``) the summaries of the clusters audited before it."""
    targets, several = cluster_targets(params)
    found, summaries, partitions, modes = [], [], {}, []
    try:
        # every cluster's options first: a wrong one fails before anything is read
        kubes = [kube_factory(cluster_params, name=name) for name, cluster_params in targets]
        for kube in kubes:
            cluster_found, summary, parts, judged = _audit_or_unreachable(kube, params, several)
            found.extend(cluster_found)
            summaries.append(summary)
            if judged is not None:
                modes.append(judged)
                partitions[kube.name or summary["server"]] = parts
    except TriageError as exc:
        exc.details["clusters"] = summaries
        raise
    found.extend(f5.shared_partitions(partitions))
    if not found:
        found.append(_audit_clean(summaries, modes))
    return {"clusters": summaries, "modes": modes, "findings": sort_findings(found)}


def api_check(params, kube_factory):
    """The f5_configmap_audit run as kube_module.api_module_main runs it: the jsonschema library required,
    then ``audit_clusters``; ``{"data": {"clusters", "modes"}, "findings": [...]}``.

    A TriageError raised carries in its details (``clusters``) the summaries of the clusters audited before it."""
    if not f5_parsers.HAS_JSONSCHEMA:
        raise ReadError(missing_required_lib("jsonschema"), exception=f5_parsers.JSONSCHEMA_IMPORT_ERROR)
    result = audit_clusters(params, kube_factory)
    findings = result.pop("findings")
    return {"data": result, "findings": findings}
