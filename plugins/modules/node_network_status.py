#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_network_status
short_description: Node network conditions, taints and CNI agent pods from the Kubernetes API
version_added: 0.1.0
description:
  - Per node, the C(Ready) and C(NetworkUnavailable) conditions (status, reason, message, since), the taints
    C(network-unavailable), C(not-ready), C(unreachable) (and Cilium's C(agent-not-ready)), and the CNI agent pods
    on it (pods of the DaemonSets in O(cni_daemonsets)) with phase, readiness and restart count.
  - Findings C(node.network_unavailable) (critical past O(stuck_after)), C(node.cni_not_ready)
    (C(NetworkPluginNotReady) / C(cni plugin not initialized) in the Ready message), C(node.cni_pod_crashloop),
    C(node.cni_pod_pending), C(node.cni_pod_missing).
  - C(node.pods_waiting_for_network) (warning) names the other pods of O(cni_namespaces) (not the CNI's, not on
    the host network) that wait for the pod network on a node without it, such as the API server's tunnel pod
    rescheduled onto an updated worker.
  - With O(pending_pods), the pods of all namespaces that wait for their sandbox (scheduled, C(Pending), the
    kubelet's C(PodReadyToStartContainers) C(False)) for longer than O(stuck_after) are one finding
    C(node.pods_waiting_for_sandbox) however many they are (critical when the kubelet's error is the network's
    or their nodes' CNI agent is not ready), with the counts, the nodes and namespaces with the most, the first pods and
    the kubelet's errors from the C(FailedCreatePodSandBox) Events, grouped. It reads only the C(Pending) pods (the
    field selector C(status.phase=Pending)) and only those Events (C(reason=FailedCreatePodSandBox)), a page of 500
    at a time, never every pod of a large cluster.
  - Where a Cilium or anetd agent pod runs, its C(cilium-config) ConfigMap is read (a failed read is a
    C(kube.read_skipped) warning) and C(node.cni_conf_by_agent_config) (info) names a C(custom-cni-conf) or
    C(write-cni-conf-when-ready) setting that keeps the agent from writing the node's CNI configuration.
  - Read-only; runs on the controller. The files on the nodes are checked by M(k8snet.triage.cni_config_check).
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  node_selector:
    description: A label selector limiting the nodes checked (for example C(node-role.kubernetes.io/worker)).
    type: str
  cni_daemonsets:
    description: Names of the DaemonSets whose pods are the CNI agent (C(anetd) is GKE Dataplane V2).
    type: list
    elements: str
    default: [calico-node, cilium, anetd]
  cni_namespaces:
    description: Namespaces where those DaemonSets run.
    type: list
    elements: str
    default: [kube-system, calico-system]
  stuck_after:
    description: Seconds after which C(NetworkUnavailable=True) is critical rather than a restart in progress.
    type: int
    default: 300
  restart_threshold:
    description: A CNI pod that is not ready and restarted at least this many times counts as crash-looping.
    type: int
    default: 5
  pending_pods:
    description:
      - Also read the C(Pending) pods of all namespaces to find those the CNI gives no network (the pods of
        O(cni_namespaces) are judged node by node). Needs C(list pods) in all namespaces; without it the read is a
        C(kube.read_skipped) warning, not a silent pass.
    type: bool
    default: true
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: Check node network status
  k8snet.triage.node_network_status:
    kubeconfig: /etc/kubernetes/admin.conf
    stuck_after: 120
  register: nodes
"""

RETURN = r"""
nodes:
  description: Per node, its conditions, watched taints and CNI pods.
  returned: always
  type: list
  elements: dict
  sample:
    - name: node2
      ready: {status: "True", reason: KubeletReady, message: kubelet is posting ready status, since: "2026-01-01T10:00:05Z", seconds: 7195}
      network_unavailable: {status: "True", reason: CalicoIsDown, message: Calico is shutting down on this node,
                            since: "2026-01-01T11:50:00Z", seconds: 600}
      taints: ["node.kubernetes.io/network-unavailable:NoSchedule"]
      cni_pods: [{name: calico-node-m4q8z, namespace: kube-system, daemonset: calico-node, phase: Running, ready: false,
                  restarts: 14, waiting: CrashLoopBackOff}]
pending_pods:
  description: Whether the pods of all namespaces were read (O(pending_pods)), and how many wait for their sandbox.
  returned: when O(pending_pods) is true
  type: dict
  sample: {read: true, waiting_for_sandbox: 6000, events_read: true}
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network
from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, node_network.api_check, node_network_options.RULES, node_network_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
