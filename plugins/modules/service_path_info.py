#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: service_path_info
short_description: The packet path of one Service from the Kubernetes API - VIP, port, ready backends, announcer
version_added: 0.2.0
description:
  - Reads one Service and returns what an ingress bisection needs, so nothing is typed by hand.
  - The VIP, from C(status.loadBalancer.ingress), then C(spec.loadBalancerIP), then C(spec.externalIPs).
  - The Service port (O(port), by default the first), its C(nodePort) and C(targetPort), and
    C(externalTrafficPolicy).
  - Every ready endpoint of the Service's EndpointSlices (C(discovery.k8s.io/v1), label
    C(kubernetes.io/service-name)) with its pod (C(targetRef)), node (C(nodeName)), IP and port.
  - The node MetalLB says announces the VIP, from its C(servicel2statuses.metallb.io) objects (C(status.node))
    when that CRD is served, else from the speaker's C(nodeAssigned) events on the Service. Both reads are
    optional - one that fails (403, a timeout, a malformed answer) is a C(kube.read_skipped) warning and the
    announcer is left to the ARP answers.
  - With O(inventory), every node is mapped to its inventory host (the host variable C(k8s_node_name), else the
    inventory name); a backend's or the announcer's node that is no inventory host is named in a
    C(service.node_not_in_inventory) finding.
  - Findings C(service.no_vip) (not for a NodePort Service, whose path goes through C(nodeIP:nodePort)),
    C(service.no_ready_endpoints) (critical), C(service.only_terminating_endpoints) (warning - no ready endpoint, but
    serving terminating ones that kube-proxy still forwards new connections to), C(service.node_not_in_inventory),
    C(service.announcer_unknown) (info).
  - Read-only; runs on the controller. It returns its result (no C(ansible_facts)), so register it.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  service:
    description:
      - The Service as C(namespace/name), both Kubernetes names (1 to 63 lowercase letters, digits or V(-)).
    type: str
    required: true
  port:
    description:
      - The Service port to follow, by its number (1 to 65535) or its name (1 to 15 lowercase letters, digits
        or V(-)). By default the Service's first port.
    type: str
  inventory:
    description:
      - The inventory hosts, as a dict of host name to its variables; only C(k8s_node_name) is read (at most
        10000 hosts). When omitted, no node is mapped to a host and none is reported missing.
    type: dict
"""

EXAMPLES = r"""
- name: Read the path of Service default/web
  k8snet.triage.service_path_info:
    kubeconfig: ~/.kube/config
    service: default/web
    inventory: "{{ dict(groups['k8s_nodes'] | zip(groups['k8s_nodes'] | map('extract', hostvars))) }}"
  delegate_to: localhost
  run_once: true
  register: web_path
"""

RETURN = r"""
service:
  description: The Service and the chosen port.
  returned: always
  type: dict
  sample:
    {namespace: default, name: web, type: LoadBalancer, cluster_ip: 10.96.0.20, vip: 198.18.224.2,
     vips: [198.18.224.2], vip_source: status.loadBalancer.ingress, hostnames: [], port: 80, port_name: http,
     protocol: TCP, node_port: 30080, target_port: 8080, external_traffic_policy: Cluster,
     health_check_node_port: null, load_balancer_class: null}
endpoints:
  description: The ready, not terminating endpoints (at most 64), sorted by node and IP.
  returned: always
  type: list
  elements: dict
  sample:
    - {ip: 198.19.2.5, port: 8080, pod: web-7d9c5, namespace: default, node: node2, host: node2}
endpoints_count:
  description: How many ready endpoints there are (also beyond the 64 returned).
  returned: always
  type: int
announcer:
  description:
    - What the load balancer says about who announces the VIP. C(source) is V(servicel2status), V(events) or
      null; C(nodes) the Kubernetes names, C(hosts) their inventory hosts; C(interfaces) MetalLB's interfaces;
      C(objects) the objects read.
  returned: always
  type: dict
  sample: {source: servicel2status, nodes: [node1], hosts: [node1], interfaces: [eth0],
           objects: [metallb-system/l2-web-node1]}
nodes:
  description: The nodes of the path and of the inventory, with their inventory host and InternalIP.
  returned: always
  type: list
  elements: dict
  sample:
    - {name: node1, host: node1, internal_ip: 198.18.224.11}
findings:
  description: Findings (see the collection's findings contract); empty when there is nothing to say.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import service as service_path
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import service_options as service_path_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, service_path.api_check, service_path_options.RULES, service_path_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
