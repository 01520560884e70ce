#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lb_health
short_description: Load-balancer health checks of Services with externalTrafficPolicy Local
version_added: 0.1.0
description:
  - For Services of type C(LoadBalancer) with C(externalTrafficPolicy=Local), finds which nodes hold a ready local
    endpoint (from EndpointSlices) and which do not, and probes C(http://<node>:<healthCheckNodePort>/) on every
    node the way a load balancer does, parsing kube-proxy's JSON (C(localEndpoints), 200 or 503).
  - Findings C(lb.nodes_without_endpoints) (the nodes, the replica count, and the trade-off of C(Cluster)) and
    C(lb.health_probe_mismatch) (the probe disagrees with the API, or gets no answer).
  - Only with O(remediate=cluster), and not in check mode, does it merge-patch C(externalTrafficPolicy) to
    C(Cluster) on the Services that have nodes without endpoints, re-reading each Service first; C(--diff) shows it.
  - The probes go from the host the module runs on (the controller, or a node with C(delegate_to)).
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - k8snet.triage.kube_auth
attributes:
  check_mode:
    support: full
    details: With O(remediate=cluster), reports what would be patched and patches nothing.
  diff_mode:
    support: full
    details: The Service's externalTrafficPolicy before and after the patch.
  platform:
    support: full
    platforms: posix
    details: Runs on the controller (or a node with C(delegate_to)); talks to the Kubernetes API and probes the nodes.
options:
  services:
    description:
      - Services to check, as C(namespace/name). Empty means every LoadBalancer Service with policy Local.
      - At most 1024, each part 1 to 63 lowercase letters, digits or V(-).
    type: list
    elements: str
    default: []
  namespaces:
    description:
      - Namespaces to look in when O(services) is empty. Empty means all namespaces.
      - At most 1024 Kubernetes names.
    type: list
    elements: str
    default: []
  probe:
    description: Probe the health check node port of every node.
    type: bool
    default: true
  probe_timeout:
    description: Seconds to wait for one health check answer, a finite number more than 0 and at most 60.
    type: float
    default: 2.0
  address_type:
    description: Which Node address to probe.
    type: str
    default: InternalIP
    choices: [InternalIP, ExternalIP]
  remediate:
    description:
      - C(none) only reports. C(cluster) switches C(externalTrafficPolicy) to C(Cluster) on Services with nodes
        without endpoints (every node then passes the health check; the client source IP is lost and traffic may
        take an extra hop).
    type: str
    default: none
    choices: [none, cluster]
"""

EXAMPLES = r"""
- name: Which nodes fail the LB health check of the OpenShift router
  k8snet.triage.lb_health:
    services: [openshift-ingress/router-default]
  register: lb

- name: Switch to externalTrafficPolicy Cluster (check mode and --diff first)
  k8snet.triage.lb_health:
    services: [openshift-ingress/router-default]
    remediate: cluster
"""

RETURN = r"""
services:
  description: Per Service, its policy, health check node port, ready local endpoints per node and the probes.
  returned: always
  type: list
  elements: dict
  sample:
    - service: openshift-ingress/router-default
      external_traffic_policy: Local
      health_check_node_port: 31910
      local_endpoints: {node1: 1, node2: 1}
      probes: {node1: {status: 200, local_endpoints: 1, error: null}, node3: {status: 503, local_endpoints: 0, error: null}}
patched:
  description: Services whose policy was (or in check mode would be) switched to Cluster.
  returned: always
  type: list
  elements: str
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.k8snet.triage.plugins.module_utils import lb_health
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.findings import sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks
from ansible_collections.k8snet.triage.plugins.module_utils.kube import AUTH_ARG_SPEC, Kube, meta, require_kubernetes


def select_services(kube, names, namespaces):
    if names:
        found = []
        for ref in names:
            namespace, sep, name = ref.partition("/")
            if not sep or not namespace or not name:
                raise InputError("service %r is not namespace/name" % ref)
            svc = kube.get("services", name, namespace)
            if svc is None:
                raise InputError("Service %s does not exist" % ref)
            found.append(svc)
        return found
    services = []
    for namespace in namespaces or [None]:
        services.extend(kube.services(namespace))
    return [s for s in services if lb_health.is_local_lb(s)]


def run(module, kube):
    p = module.params
    services = select_services(kube, p["services"], p["namespaces"])
    nodes = lb_health.pool_nodes(kube.nodes())
    addresses = lb_health.node_ips(nodes, p["address_type"])
    models, found, patched, diffs = [], [], [], []
    for svc in services:
        namespace, name = meta(svc, "namespace"), meta(svc, "name")
        if not lb_health.is_local_lb(svc):
            models.append(lb_health.service_model(svc, {}, {}))
            continue
        endpoints = lb_health.local_endpoints(kube.endpoint_slices(namespace, service=name))
        port = svc["spec"].get("healthCheckNodePort")
        probes = {}
        if p["probe"] and port:
            for node in nodes:
                address = addresses[meta(node, "name")]
                if address:
                    probes[meta(node, "name")] = lb_health.probe(address, port, p["probe_timeout"])
        svc_found = lb_health.check_service(svc, nodes, endpoints, probes)
        found.extend(svc_found)
        models.append(lb_health.service_model(svc, endpoints, probes))
        if p["remediate"] == "cluster" and any(f["check"] == "lb.nodes_without_endpoints" for f in svc_found):
            changed, diff = lb_health.set_cluster_policy(kube, namespace, name, module.check_mode)
            if changed:
                patched.append("%s/%s" % (namespace, name))
                diffs.append(diff)
    return models, found, patched, diffs


RULES = dict(
    checks.KUBE_AUTH_RULES,
    services=checks.each(checks.namespaced_name),
    namespaces=checks.each(checks.k8s_name),
    probe_timeout=checks.seconds(0, 60),
)


def main():
    argument_spec = dict(AUTH_ARG_SPEC)
    argument_spec.update(
        services=dict(type="list", elements="str", default=[]),
        namespaces=dict(type="list", elements="str", default=[]),
        probe=dict(type="bool", default=True),
        probe_timeout=dict(type="float", default=2.0),
        address_type=dict(type="str", default="InternalIP", choices=["InternalIP", "ExternalIP"]),
        remediate=dict(type="str", default="none", choices=["none", "cluster"]),
    )
    module = checks.new_module(AnsibleModule, RULES, argument_spec=argument_spec, supports_check_mode=True)
    require_kubernetes(module)
    try:
        models, found, patched, diffs = run(module, Kube(module.params))
    except TriageError as exc:
        fail_from(module, exc)
    result = dict(changed=bool(patched), services=models, patched=patched, findings=sort_findings(found))
    if diffs:
        result["diff"] = diffs if len(diffs) > 1 else diffs[0]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
