#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: webhook_deadlock
short_description: Find admission webhooks that close a cycle with the CNI (NetworkUnavailable that never clears)
version_added: 0.2.0
description:
  - Reads the ValidatingWebhookConfigurations and MutatingWebhookConfigurations, the namespaces, the nodes, the CNI
    agent pods (pods of O(cni_daemonsets) in O(cni_namespaces)) and, for each webhook with C(failurePolicy=Fail),
    its backing Service's EndpointSlices and pods.
  - A webhook closes the cycle when its C(failurePolicy) is C(Fail) (the v1 default), its rules match pod creation
    or C(nodes/status) updates (what the CNI agent needs to start and to clear C(NetworkUnavailable)), its
    C(namespaceSelector) / C(objectSelector) do not exclude the CNI's namespaces and pods, its Service has no ready
    endpoint or only endpoints on nodes that are C(NetworkUnavailable) / C(NotReady), and a node without network
    has its CNI agent pod not running and ready.
  - Where the API server reaches in-cluster webhooks through a tunnel whose cluster end is a pod (IBM Cloud's
    OpenVPN client C(app=vpn) and its C(konnectivity-agent), Konnectivity on AKS, GKE, HyperShift and Gardener,
    AKS tunnelfront; see O(tunnel_pods)), a Service-backed webhook is out of the API server's reach while no
    tunnel pod is ready on a node with network, however healthy its own pods are. When a tunnel pod waits on a
    node without network whose CNI agent is down, the cycle runs through it (the source runbook's incident, the
    VPN client pod rescheduled onto the updated worker), C(webhook.cni_deadlock) names the tunnel pod as a link
    and also offers rescheduling it. A tunnel down with its pods on nodes with network is
    C(webhook.cni_blocked_by_tunnel) (critical, not a cycle).
  - Finding C(webhook.cni_deadlock) (critical) per webhook in a cycle, naming each link (webhook, Service, pods,
    nodes, CNI pod); its remediation gives the exact C(kubectl patch) that sets C(failurePolicy=Ignore) on that one
    webhook and its security trade-off. C(webhook.no_cni_deadlock) when none closes a cycle. Read-only; runs on
    the controller.
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
options:
  cni_daemonsets:
    description: Names of the DaemonSets whose pods are the CNI agent (at most 1024 names).
    type: list
    elements: str
    default: [calico-node, cilium, anetd]
  cni_namespaces:
    description: Namespaces where those DaemonSets run (Kubernetes names).
    type: list
    elements: str
    default: [kube-system, calico-system]
  tunnel_pods:
    description:
      - Where the cluster end of the API server's tunnel runs, as C(namespace/label-selector) entries (the
        namespace ends at the first C(/)). The pods all entries select form one tunnel; an empty list says the API
        server reaches pods directly.
      - The defaults and their sources are C(kube-system/app=vpn) and C(kube-system/app=konnectivity-agent) (IBM
        Cloud docs, "Why do cluster operations fail due to a broken webhook?"), C(kube-system/k8s-app=konnectivity-agent)
        (the Kubernetes docs' "Set up Konnectivity service" example) and C(kube-system/component=tunnel) (AKS
        tunnelfront). At most 64 entries.
    type: list
    elements: str
    default: [kube-system/app=vpn, kube-system/app=konnectivity-agent, kube-system/k8s-app=konnectivity-agent,
              kube-system/component=tunnel]
"""

EXAMPLES = r"""
- name: Is an admission webhook holding the CNI hostage?
  k8snet.triage.webhook_deadlock:
    kubeconfig: /etc/kubernetes/admin.conf
  delegate_to: localhost
  run_once: true
  register: deadlock
"""

RETURN = r"""
webhooks:
  description:
    - Every webhook read (C(configuration), C(kind), C(webhook), C(failure_policy)), whether it C(closes_cycle),
      whether the cycle runs C(via_tunnel) (the API server's tunnel is down), and C(why_not) when it does not.
  returned: always
  type: list
  elements: dict
  sample:
    - {configuration: policy-guard, kind: ValidatingWebhookConfiguration, webhook: validate.policy-guard.example.com,
       failure_policy: Fail, closes_cycle: true, via_tunnel: false, why_not: ""}
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks
from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, webhooks.api_check, webhooks_options.RULES, webhooks_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
