#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: f5_configmap_audit
short_description: Audit F5 BIG-IP Controller (CIS) ConfigMaps, alone or in GDC's integrated F5 mode
version_added: 0.1.0
description:
  - Judges each cluster in one of two modes, returned in RV(modes) and in the findings' C(evidence.mode).
    GDC's integrated mode is chosen when a C(load-balancer-f5) Deployment or pod (C(kube-system)) exists, or a
    ConfigMap carries the label C(onprem.cluster.gke.io/legacy-f5-resource); otherwise the cluster is judged as
    F5 Container Ingress Services (CIS) alone.
  - Every ConfigMap labelled C(f5type=virtual-server) is read. A virtual-server ConfigMap is validated against
    the schema version it names (C(f5schemadb://bigip-virtual-server_v0.1.0.json) to C(_v0.1.8.json), F5's
    published schemas, shipped); a version F5 never published is C(f5.unknown_schema_version) and is validated
    against the nearest known one. An AS3 ConfigMap (label C(as3) or C(overrideAS3)) must hold in
    C(data.template) an AS3 declaration (class C(AS3) / C(ADC)); its tenants, applications, virtual addresses
    and pools are read, each pool's Services found by the labels C(cis.f5.com/as3-tenant), C(-app), C(-pool)
    or a member's C(serviceName); an C(overrideAS3) one amends CIS's own objects and only has to parse, an
    C(as3=false) one (a removal) is not checked.
  - In both modes, a ConfigMap's Service (of any type) and port must exist (C(f5.orphan_configmap) names the
    Service, C(f5.port_mismatch) the ports the Service has).
  - In GDC's integrated mode only, every LoadBalancer Service port, except Services handed to another
    implementation (C(spec.loadBalancerClass), MetalLB's C(metallb.universe.tf/*) or C(metallb.io/*)
    annotations), has exactly one virtual-server ConfigMap naming schema v0.1.7, with
    C(frontend.virtualAddress.bindAddr) equal to the Service's load-balancer IP and C(port) equal to the
    Service port; the controller pods O(controller_pods) run in C(kube-system).
  - CIS is found by what it is, a Deployment whose container image is C(.../k8s-bigip-ctlr) or labelled
    C(app=k8s-bigip-ctlr); its arguments C(--namespace), C(--namespace-label), C(--pool-member-type) and
    C(--bigip-partition) are read. A ConfigMap in a namespace no CIS watches (C(f5.unwatched_namespace)), a
    ClusterIP Service behind a CIS whose pool member type is C(nodeport) (C(f5.pool_member_type_mismatch)), a
    partition CIS does not manage (C(f5.partition_not_managed)), a CIS Deployment scaled to zero
    (C(f5.controller_scaled_to_zero)) or without a ready replica are findings. When Deployments cannot be
    listed, the pods O(controller_pods) in C(kube-system) are checked instead (without C(load-balancer-f5)
    outside GDC's mode).
  - Across O(clusters), no BIG-IP partition (a virtual-server ConfigMap's C(frontend.partition), an AS3 tenant)
    may be used by more than one cluster.
  - Findings C(f5.missing_configmap), C(f5.invalid_configmap), C(f5.unknown_schema_version), C(f5.vip_mismatch),
    C(f5.port_mismatch), C(f5.orphan_configmap), C(f5.duplicate_configmap), C(f5.unwatched_namespace),
    C(f5.pool_member_type_mismatch), C(f5.partition_not_managed), C(f5.controller_not_running),
    C(f5.controller_scaled_to_zero), C(f5.shared_partition), C(f5.cluster_unreachable).
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
      - Names or name prefixes of the controller pods expected to run (ready) in C(kube-system), in GDC's integrated
        mode, or when Deployments cannot be listed (then without C(load-balancer-f5) outside GDC's mode).
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
modes:
  description:
    - Per cluster read, the mode it was judged in (C(gdc) or C(cis)) and why, whether Deployments could be listed,
      the ConfigMaps by kind, the schema versions they name and the CIS controllers found with their arguments.
  returned: always
  type: list
  elements: dict
  sample:
    - name: prod-a
      server: "https://198.18.0.1:6443"
      mode: cis
      mode_name: F5 CIS without GDC
      why: no load-balancer-f5 Deployment or pod, no ConfigMap labelled onprem.cluster.gke.io/legacy-f5-resource
      deployments_read: true
      configmaps: {virtual-server: 2, as3: 1}
      schema_versions: [v0.1.0, v0.1.6]
      cis_controllers:
        - {ref: kube-system/k8s-bigip-ctlr, replicas: 1, ready: 1, watch: namespaces default, pool_member_type: nodeport,
           partitions: [kubernetes]}
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.f5 import cluster as f5_cluster
from ansible_collections.k8snet.triage.plugins.module_utils.f5 import cluster_options as f5_cluster_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, f5_cluster.api_check, f5_cluster_options.RULES, f5_cluster_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
