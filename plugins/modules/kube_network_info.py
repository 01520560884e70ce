#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_network_info
short_description: Nodes, Service frontends and DNS servers from the Kubernetes API, for the node-side checks
version_added: 0.1.0
description:
  - Reads the Kubernetes API once, on the controller, and returns what the node-side roles compare the
    kernel and daemons against, so they check against the cluster instead of the inventory.
  - C(nodes) with the InternalIP, pod CIDRs and Calico's C(projectcalico.org/IPv4Address) (prefix length
    removed) and C(projectcalico.org/ASNumber) annotations (the C(calico) role's expected BGP peers).
  - C(service_frontends) as C(ip:port/proto), the format of M(k8snet.triage.bpf_map_usage)'s
    O(k8snet.triage.bpf_map_usage#module:live_frontends) (the C(cilium_maps) role), in every form Cilium
    programs, namely every ClusterIP, externalIP, LoadBalancer ingress IP and C(spec.loadBalancerIP) with each
    Service port (protocol as declared); each NodePort on the surrogate C(0.0.0.0) (and C([::]) with IPv6);
    each hostPort of a scheduled, unfinished pod on its C(hostIP), or on C(0.0.0.0). ExternalName Services
    have none. The surrogate of a port makes that port live on every address for
    M(k8snet.triage.bpf_map_usage), so the NodePorts and hostPorts are not repeated on every address of every
    Node (at 5,000 nodes that was 2.5 million items for 500 NodePorts) unless O(node_port_addresses) asks.
  - C(dns_servers) in M(k8snet.triage.dns_check)'s O(k8snet.triage.dns_check#module:servers) format (the
    C(dns) role), namely the DNS Service's ClusterIP (role V(service)) and each DNS pod with its IP and node
    (role V(pod)).
  - Findings C(kube.node_without_pod_cidr) (info), C(kube.node_without_internal_ip),
    C(kube.dns_service_missing), C(kube.dns_service_headless), C(kube.dns_pods_missing),
    C(kube.dns_pod_without_ip).
  - Read-only. It returns its result (no C(ansible_facts)), so register it.
  - This module was named C(k8snet.triage.kube_network_facts) before 0.2.0. The old name still works (it is
    redirected here, with a deprecation warning) and will be removed in 1.0.0.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  gather:
    description:
      - What to read and return. V(service_frontends) also lists the Nodes (for the NodePort addresses) and
        every pod (for hostPorts); V(dns_servers) reads one Service and the DNS pods of O(dns_namespace).
      - An empty list reads nothing and sends no request; the result then says only which credentials
        the API steps would use (RV(credential_source)), null when there are none (instead of failing),
        so a playbook can decide whether API steps are possible.
      - V(pod) reads the one pod O(pod) names (not part of the default).
      - V(lb_vips) lists the VIPs of every LoadBalancer Service (not part of the default).
    type: list
    elements: str
    choices: [nodes, service_frontends, dns_servers, pod, lb_vips]
    default: [nodes, service_frontends, dns_servers]
  pod:
    description:
      - C(namespace/name) of the pod V(pod) in O(gather) reads. The module fails, naming the fix, when that pod
        does not exist, does not run or has no IP yet.
    type: str
  node_port_addresses:
    description:
      - List each NodePort, and each hostPort without a C(hostIP), on every IP address of every Node (of the pod's
        node) too (InternalIP, ExternalIP, ...), as Cilium programs them, besides the surrogate C(0.0.0.0). This
        was the only form before 0.3.0; it grows with nodes times NodePorts.
    type: bool
    default: false
    version_added: 0.3.0
  dns_namespace:
    description: Namespace of the cluster DNS Service and pods (1 to 63 lowercase letters, digits or V(-)).
    type: str
    default: kube-system
  dns_service:
    description:
      - Name of the cluster DNS Service (the ClusterIP kubelet's C(--cluster-dns) names).
      - 1 to 63 lowercase letters, digits or V(-).
    type: str
    default: kube-dns
  dns_pod_selector:
    description:
      - Label selector of the DNS pods (coredns keeps the C(k8s-app=kube-dns) label).
      - At most 1024 characters, no control characters.
    type: str
    default: k8s-app=kube-dns
"""

EXAMPLES = r"""
- name: Read the cluster's network facts once
  k8snet.triage.kube_network_info:
    kubeconfig: /etc/kubernetes/admin.conf
  run_once: true
  delegate_to: localhost
  register: cluster

- name: Are API steps possible? (no request is sent)
  k8snet.triage.kube_network_info:
    gather: []
  run_once: true
  delegate_to: localhost
  register: kube_access
  # kube_access.credential_source is null when no kubeconfig, K8S_AUTH_* or service account is there

- name: One pod's IP and node (the dns role's dns_pod)
  k8snet.triage.kube_network_info:
    gather: [pod]
    pod: default/web-7d4b9c-x2k4q
  run_once: true
  delegate_to: localhost
  register: target_pod

- name: Only the Service frontends, for the eBPF map cross-check
  k8snet.triage.kube_network_info:
    kubeconfig: "{{ cilium_maps_kubeconfig }}"
    gather: [service_frontends]
  run_once: true
  delegate_to: localhost
  register: frontends
"""

RETURN = r"""
nodes:
  description: One item per Node, sorted by name.
  returned: when V(nodes) is in O(gather)
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    internal_ip:
      description: The InternalIP address, or null.
      type: str
    addresses:
      description: Every address in C(status.addresses) that is an IP (InternalIP, ExternalIP, ...), in order.
      type: list
      elements: str
    pod_cidrs:
      description: C(spec.podCIDRs) (or C(spec.podCIDR)); empty when the node has none.
      type: list
      elements: str
    calico_ipv4_address:
      description: The C(projectcalico.org/IPv4Address) annotation without its prefix length, or null.
      type: str
    calico_asn:
      description: The C(projectcalico.org/ASNumber) annotation, or null.
      type: int
  sample:
    - {name: node1, internal_ip: 198.18.0.11, addresses: [198.18.0.11], pod_cidrs: [198.19.0.0/24],
       calico_ipv4_address: 198.18.0.11, calico_asn: null}
service_frontends:
  description: Sorted, unique C(ip:port/proto) of every Service frontend (IPv6 as C([addr]:port/proto)).
  returned: when V(service_frontends) is in O(gather)
  type: list
  elements: str
  sample: [0.0.0.0:30080/TCP, 10.96.0.1:443/TCP, 10.96.0.10:53/TCP, 10.96.0.10:53/UDP]
lb_vips:
  description:
    - The VIPs of every LoadBalancer Service (C(status.loadBalancer.ingress) IPs and C(spec.loadBalancerIP), not
      C(spec.externalIPs)), sorted by address, each with the Services (C(namespace/name)) that have it.
  returned: when V(lb_vips) is in O(gather)
  type: list
  elements: dict
  sample: [{address: 198.18.0.202, services: [default/web]}]
dns_servers:
  description: The DNS Service ClusterIP and each DNS pod with an IP, in dns_check's C(servers) format.
  returned: when V(dns_servers) is in O(gather)
  type: list
  elements: dict
  sample:
    - {address: 10.96.0.10, name: kube-dns, role: service}
    - {address: 198.19.0.2, name: coredns-5d78c9869d-8kq2x, node: node1, role: pod}
pod:
  description: The pod O(pod) names.
  returned: when V(pod) is in O(gather)
  type: dict
  contains:
    namespace:
      description: Its namespace.
      type: str
    name:
      description: Its name.
      type: str
    ip:
      description: C(status.podIP).
      type: str
    ips:
      description: Every address of C(status.podIPs).
      type: list
      elements: str
    node:
      description: C(spec.nodeName), the Kubernetes name of the node it runs on.
      type: str
    phase:
      description: C(status.phase), always V(Running) here.
      type: str
    host_network:
      description: Whether it uses the node's network namespace (C(spec.hostNetwork)).
      type: bool
  sample: {namespace: default, name: web-7d4b9c-x2k4q, ip: 198.19.1.3, ips: [198.19.1.3], node: node2,
           phase: Running, host_network: false}
credential_source:
  description:
    - Which credentials the API options resolve to, decided without a request. V(kubeconfig) (the O(kubeconfig)
      or O(context) option, or E(K8S_AUTH_KUBECONFIG)), V(host) (O(host) with O(api_key) or a client certificate,
      for example AWX's E(K8S_AUTH_HOST) and E(K8S_AUTH_API_KEY)), V(in_cluster) (a pod's service account),
      V(default_kubeconfig) (E(KUBECONFIG) or C(~/.kube/config)), or null when there are none.
  returned: always
  type: str
  sample: host
findings:
  description: Findings (see the collection's findings contract); empty when there is nothing to say.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts as kube_facts
from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts_options as kube_facts_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, kube_facts.api_check, kube_facts_options.RULES, kube_facts_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
