#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cilium_agent_drops
short_description: The packets each named node's Cilium or anetd agent drops, read through the Kubernetes API's exec
version_added: 0.2.0
description:
  - The runbook's C(cilium monitor --type drop) for the nodes whose agent monitor socket cannot be read over SSH
    (M(k8snet.triage.cilium_agent_status) then reports C(cilium.monitor_unavailable)), because there is no root
    on the node, the socket is not on the host, or there is no SSH to the node at all.
  - For each node in O(nodes), its agent pod (a pod of one of O(daemonsets) in O(namespace) running there), then one
    exec in it of the agent's own CLI, C(timeout SECONDS cilium-dbg monitor --type drop -j) (C(cilium) when the
    container has no C(cilium-dbg), before Cilium 1.15), as C(kubectl exec) runs it. Each dropped flow is given
    once with its packet count, reason, source endpoint and identities; the pods behind the flows' addresses are
    named from the node's pod list.
  - Findings C(cilium.dropped_flows) per node (warning with the top flows and what to look at next, or ok when the
    window saw no drop), C(cilium.agent_pod_missing) when no agent pod runs on a node, C(cilium.monitor_exec_failed)
    when the exec could not run or the CLI failed (RBAC, the container, the agent down), with the API's or the
    CLI's own message.
  - The execs of the nodes run at once (up to 25), each bounded by O(seconds) plus 10 s, within O(api_timeout).
    The CLI prints no count of notifications the kernel lost, so the counts are what the agent passed on.
  - Read-only in effect (the monitor only listens); the exec needs the verb C(create) on C(pods/exec).
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
attributes:
  platform:
    details: Runs on the controller; talks to the Kubernetes API (list pods, create pods/exec).
options:
  nodes:
    description: The nodes whose agents to read (their C(spec.nodeName)), at most 100.
    type: list
    elements: str
    required: true
  namespace:
    description: The namespace of the agent pods.
    type: str
    default: kube-system
  daemonsets:
    description: The DaemonSets whose pods are the agents (C(anetd) is GKE / Google Distributed Cloud's Dataplane V2).
    type: list
    elements: str
    default: [cilium, anetd]
  container:
    description: The agent's container in its pod (a pod of one container is exec'd in that one).
    type: str
    default: cilium-agent
  seconds:
    description: How long the monitor listens on each node, in seconds (more than 0, at most 60).
    type: float
    default: 5.0
  top:
    description: How many flows each node's finding and data list (1 to 100), the most frequent first.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: The packets node3's agent drops, read through the API (its monitor socket is not readable over SSH)
  k8snet.triage.cilium_agent_drops:
    kubeconfig: /etc/kubernetes/admin.conf
    nodes: [node3]
    seconds: 10
  delegate_to: localhost
  run_once: true
  register: drops
"""

RETURN = r"""
nodes:
  description:
    - Per node, C(status) (C(ok), C(failed), C(no agent)), C(agent) (namespace/pod), the C(command) run, its
      C(exit_code) (124 when timeout ended the window, as asked), C(ended) (C(closed), C(deadline), C(truncated)),
      C(seconds), and when it ran C(drops), C(flows) (C(flow), C(reason), C(packets), C(endpoint), C(pod),
      C(identities), C(ifindex)) or C(error).
  returned: success
  type: dict
  sample: {node3: {status: ok, agent: kube-system/cilium-x2k4p, drops: 5, exit_code: 124, ended: closed,
                   flows: [{flow: "198.19.1.10:41000 -> 198.19.2.20:8080 tcp", reason: Policy denied, packets: 5,
                            endpoint: 1201, pod: default/client-7d9}]}}
reads:
  description: One row per node, C(node), C(agent), C(status), C(drops), C(ended), C(error).
  returned: success
  type: list
  elements: dict
flows:
  description: Every node's flows in one table (the rows of O(nodes) with C(node)), the most packets first, at most 50.
  returned: success
  type: list
  elements: dict
findings:
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cilium import drops as cilium_drops
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import drops_options as cilium_drops_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_module_main


def main():
    api_module_main(AnsibleModule, cilium_drops.check, cilium_drops_options.RULES, cilium_drops_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
