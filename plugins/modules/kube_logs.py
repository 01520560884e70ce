#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_logs
short_description: Read the network agents' pod logs and events through the Kubernetes API and match known signatures
version_added: 0.2.0
description:
  - For each target of O(targets) (by default the CNI agents C(calico-node) and C(cilium), C(coredns), the MetalLB
    speakers and the F5 BIG-IP controller, by their upstream labels), reads the last O(tail_lines) lines of the
    last O(since_seconds) seconds (at most O(limit_bytes) bytes; the API server applies these bounds) of each
    pod's containers, and of the previous container of a container that restarted (a crash loop's cause is there).
  - Reads the events of those pods and, for the nodes of O(nodes), the nodes' events.
  - Matches every line and event against the collection's signature table (the one M(k8snet.triage.node_logs)
    uses); one finding per signature and pod or node, whose subject is the pod's node and name (C(node2/calico-node-x),
    the subject of C(node.cni_pod_crashloop)) or the node, and whose evidence holds a few matching lines with their
    timestamps (tokens and C(Authorization) headers masked), the findings it explains and the signature's source.
  - C(log.not_readable) (warning) names the containers whose log could not be read (RBAC needs C(get) on
    C(pods/log)); C(log.no_signature) (info) says what was read when nothing matched, and shows the pods' lines
    an operator would read next (C(evidence.shown), C(evidence.shown_kind)) - the newest 10 at error or warning
    level, else the last 10 - masked and cut as all log evidence is. A pod not running and ready
    (or restarted) whose lines and events match no signature gets C(log.crash_unexplained) (info, its last 10
    lines, the previous container's first, as evidence) and, when it is Pending or ContainerCreating,
    C(log.pod_not_started) (warning, its Warning events, latest first; info when no event says why). An events read that fails
    (403, a timeout, a malformed answer) is a C(kube.read_skipped) warning and the logs still count. Read-only; runs
    on the controller.
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  targets:
    description:
      - The pods to read, at most 32 targets. Defaults to C(calico-node) (C(k8s-app=calico-node) in C(kube-system) and
        C(calico-system)), C(cilium) (C(k8s-app=cilium)), C(coredns) (C(k8s-app=kube-dns)), C(metallb-speaker)
        (C(component=speaker) in C(metallb-system)) and C(f5-cis) (C(app=k8s-bigip-ctlr) in C(kube-system)).
    type: list
    elements: dict
    suboptions:
      name:
        description: A label for the target in results (at most 253 characters).
        type: str
        required: true
      namespace:
        description: The pods' namespace (a Kubernetes name).
        type: str
        required: true
      label_selector:
        description: The pods' label selector (at most 1024 characters).
        type: str
        required: true
      per_node:
        description: The target runs one pod per node (a DaemonSet); with O(nodes), only the pods on those nodes are read.
        type: bool
        default: false
      containers:
        description: The containers to read (at most 16); all of the pod's containers when empty.
        type: list
        elements: str
        default: []
  nodes:
    description: Node names (at most 1000) whose events are read; they also limit the C(per_node) targets to their pods.
    type: list
    elements: str
    default: []
  events:
    description: Read the events of the pods (and of O(nodes)).
    type: bool
    default: true
  tail_lines:
    description: The last lines read of each container's log (1 to 10000).
    type: int
    default: 200
  since_seconds:
    description: How far back to read logs and events, in seconds (1 to 604800).
    type: int
    default: 3600
  limit_bytes:
    description: The most bytes read of each container's log (1024 to 16777216).
    type: int
    default: 262144
  max_pods:
    description: The most pods read per target (1 to 500), in name order.
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: Read the network agents' logs and events, and the events of two nodes
  k8snet.triage.kube_logs:
    kubeconfig: /etc/kubernetes/admin.conf
    nodes: [node2, node3]
  delegate_to: localhost
  run_once: true
  register: agent_logs
"""

RETURN = r"""
pods:
  description: Per pod read, its target, node, phase and per container the lines read (current and previous) and errors.
  returned: always
  type: list
  elements: dict
  sample:
    - {namespace: kube-system, name: calico-node-m4q8z, node: node2, phase: Running, target: calico-node,
       containers: [{name: calico-node, restarts: 14, lines: 12, previous_lines: 40, errors: []}]}
events:
  description: The latest Warning events of those pods and nodes (at most 20; time, subject, reason, count, message).
  returned: always
  type: list
  elements: dict
events_count:
  description: How many Warning events were read.
  returned: always
  type: int
matches:
  description:
    - One entry per signature and subject matched (C(check), C(subject), C(count), C(first), C(last), C(lines),
      C(targets), C(origins), C(explains) the checks of the findings it explains, C(severity), C(layer)).
  returned: always
  type: list
  elements: dict
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.logs import kube_logs
from ansible_collections.k8snet.triage.plugins.module_utils.logs import kube_logs_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, kube_logs.api_check, kube_logs_options.RULES, kube_logs_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
