#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: f5_configmap_audit
short_description: Audit F5 BIG-IP Controller (CIS) ConfigMaps against LoadBalancer Services
version_added: 0.1.0
description:
  - For every Service of type C(LoadBalancer) and each of its ports, expects exactly one ConfigMap labelled
    C(f5type=virtual-server) in the Service's namespace, with schema C(f5schemadb://bigip-virtual-server_v0.1.7.json),
    data that validates against that schema, C(frontend.virtualAddress.bindAddr) equal to the Service's
    load-balancer IP, C(port) equal to the Service port and C(backend.serviceName)/C(servicePort) naming the Service.
  - Checks that the controller pods run in C(kube-system), and, across O(clusters), that no BIG-IP partition is
    used by more than one cluster.
  - Findings C(f5.missing_configmap), C(f5.invalid_configmap), C(f5.vip_mismatch), C(f5.port_mismatch),
    C(f5.orphan_configmap), C(f5.duplicate_configmap), C(f5.controller_not_running), C(f5.shared_partition),
    C(f5.cluster_unreachable).
  - With O(clusters), a cluster whose API cannot be read (unreachable, TLS, 401, 403) gets one critical
    C(f5.cluster_unreachable) finding and the findings of the other clusters are still returned; the
    C(f5.shared_partition) comparison then covers only the clusters that were read. A cluster whose options
    are wrong (a missing kubeconfig) fails the module before any cluster is read.
  - Read-only; runs on the controller and talks to the Kubernetes API.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  clusters:
    description:
      - Audit several clusters in one run (for C(f5.shared_partition)). Each entry names the cluster and how to reach
        its API; options not given in an entry come from the module's own API options, except that an entry with
        its own O(clusters[].kubeconfig) or O(clusters[].context) does not take the module's O(host), O(api_key),
        O(ca_cert), O(client_cert) and O(client_key) (nor their E(K8S_AUTH_*) variables), which name another
        cluster.
      - When empty, the one cluster given by the module's API options is audited.
      - At most 64 clusters.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The cluster's name, used in findings (at most 253 characters).
        type: str
        required: true
      kubeconfig:
        description: Path to the cluster's kubeconfig (an absolute path without V(..) segments).
        type: path
      context:
        description: The kubeconfig context of the cluster.
        type: str
  namespaces:
    description:
      - Namespaces to audit. Empty means all namespaces.
      - At most 1024 Kubernetes names (1 to 63 lowercase letters, digits or V(-)).
    type: list
    elements: str
    default: []
  controller_pods:
    description:
      - Names or name prefixes of the controller pods expected to run (ready) in C(kube-system).
      - At most 1024 names of at most 253 characters.
    type: list
    elements: str
    default: [load-balancer-f5, k8s-bigip-ctlr]
requirements:
  - jsonschema (on the controller)
"""

EXAMPLES = r"""
- name: Audit the F5 ConfigMaps of the current kubeconfig context
  k8snet.triage.f5_configmap_audit:
  register: f5

- name: Audit two clusters that share one BIG-IP
  k8snet.triage.f5_configmap_audit:
    clusters:
      - {name: prod-a, kubeconfig: /etc/k8s/prod-a.kubeconfig}
      - {name: prod-b, kubeconfig: /etc/k8s/prod-b.kubeconfig}
    namespaces: [web, shop]
"""

RETURN = r"""
clusters:
  description: Per cluster, what was audited; C(reached) is false (with C(error)) for a cluster that could not be read.
  returned: always
  type: list
  elements: dict
  sample:
    - {name: prod-a, server: "https://198.18.0.1:6443", reached: true, load_balancer_ports: 4, configmaps: 5, partitions: [kubernetes]}
    - {name: prod-b, server: "https://198.18.0.2:6443", reached: false, error: "cannot reach the Kubernetes API ..."}
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.k8snet.triage.plugins.module_utils import payload

# before the imports below: the payload's files are compiled once each, not twice
payload.compile_once()

from ansible_collections.k8snet.triage.plugins.module_utils import f5
from ansible_collections.k8snet.triage.plugins.module_utils.errors import PrivilegeError, ReadError, TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks
from ansible_collections.k8snet.triage.plugins.module_utils.kube import AUTH_ARG_SPEC, Kube, require_kubernetes


# API options that name one cluster's server and identity: not inherited by a clusters entry with its own kubeconfig
CLUSTER_IDENTITY = ("host", "api_key", "ca_cert", "client_cert", "client_key")


def audit_cluster(kube, namespaces, controllers):
    name = kube.name
    services, configmaps = [], []
    for namespace in namespaces or [None]:
        services.extend(kube.services(namespace))
        configmaps.extend(kube.config_maps(namespace, label_selector=f5.F5_LABEL))
    found, parsed = f5.audit(services, configmaps, cluster=name)
    found.extend(f5.check_controllers(kube.pods(f5.CONTROLLER_NAMESPACE), controllers, cluster=name))
    ports = sum(len(s["spec"].get("ports") or []) for s in services if s.get("spec", {}).get("type") == "LoadBalancer")
    partitions = f5.partitions_of(parsed)
    summary = {"name": name, "server": kube.server, "reached": True, "load_balancer_ports": ports,
               "configmaps": len(parsed), "partitions": sorted(partitions)}
    return found, summary, partitions


RULES = dict(
    checks.KUBE_AUTH_RULES,
    clusters=checks.each(checks.fields(name=checks.short_text, kubeconfig=checks.absolute_path,
                                       context=checks.short_text), max_items=64),
    namespaces=checks.each(checks.k8s_name),
    controller_pods=checks.each(checks.short_text),
)


def main():
    argument_spec = dict(AUTH_ARG_SPEC)
    argument_spec.update(
        clusters=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
        )),
        namespaces=dict(type="list", elements="str", default=[]),
        controller_pods=dict(type="list", elements="str", default=list(f5.DEFAULT_CONTROLLERS)),
    )
    module = checks.new_module(AnsibleModule, RULES, argument_spec=argument_spec, supports_check_mode=True)
    require_kubernetes(module)
    if not f5.HAS_JSONSCHEMA:
        module.fail_json(msg=missing_required_lib("jsonschema"), exception=f5.JSONSCHEMA_IMPORT_ERROR)
    p = module.params
    targets = []
    for cluster in p["clusters"]:
        params = dict(p)
        if cluster.get("kubeconfig") or cluster.get("context"):
            # the module's server, token and certificates (K8S_AUTH_* in AWX) belong to another cluster
            params.update(dict.fromkeys(CLUSTER_IDENTITY))
        params.update((k, v) for k, v in cluster.items() if v is not None and k != "name")
        targets.append((cluster["name"], params))
    several = bool(targets)
    if not targets:
        targets = [(None, p)]
    found, summaries, partitions = [], [], {}
    try:
        # every cluster's options first: a wrong one fails before anything is read
        kubes = [Kube(params, name=name) for name, params in targets]
        for kube in kubes:
            try:
                cluster_found, summary, parts = audit_cluster(kube, p["namespaces"], p["controller_pods"])
            except (ReadError, PrivilegeError) as exc:
                if not several:
                    raise
                found.append(f5.cluster_unreachable(kube.name, kube.server, exc.message))
                summaries.append({"name": kube.name, "server": kube.server, "reached": False, "error": exc.message})
                continue
            found.extend(cluster_found)
            summaries.append(summary)
            partitions[kube.name or summary["server"]] = parts
    except TriageError as exc:
        fail_from(module, exc, clusters=summaries)
    found.extend(f5.shared_partitions(partitions))
    if not found:
        found.append(finding("f5.audit_clean", "ok", "L4", ", ".join(s["name"] or s["server"] for s in summaries),
                             "every LoadBalancer Service port has exactly one valid, matching ConfigMap",
                             {"load_balancer_ports": sum(s["load_balancer_ports"] for s in summaries)}))
    module.exit_json(changed=False, clusters=summaries, findings=sort_findings(found))


if __name__ == "__main__":
    main()
