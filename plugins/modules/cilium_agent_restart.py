#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cilium_agent_restart
short_description: Restart one named Cilium or anetd agent pod on one named node (opt-in repair)
version_added: 0.2.0
description:
  - The runbook's "restart anetd" (or cilium), when the agent's datapath holds wrong state (drops of
    C(Stale or unroutable IP), maps out of step with the API), deletes the one agent pod O(pod), so that its
    DaemonSet starts a new one on the same node, which rebuilds the node's datapath state.
  - Guards, each a clear failure that changes nothing. O(pod) must belong to a DaemonSet of O(daemonsets) and run on
    O(node) (the node is named twice on purpose); every other agent pod of that DaemonSet must be ready, since
    while an agent restarts nothing updates its node's datapath and two at once widen the outage.
  - The pod is read right before the delete, which carries its uid as a precondition (the API server refuses with
    409 Conflict, nothing deleted, when the name now holds another pod). Check mode and diff show the pod that
    would be deleted. A second run with the same name fails (the new pod has another name); nothing is deleted twice.
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.state_change
  - k8snet.triage.kube_auth
attributes:
  check_mode:
    details: Reads the pod and its DaemonSet's other pods and reports the delete it would make; deletes nothing.
  diff_mode:
    details: The pod (uid, node, phase, readiness, restarts) before, and its deletion after.
  platform:
    details: Runs on the controller; talks to the Kubernetes API (get and list pods, delete one pod).
options:
  pod:
    description: The agent pod, C(namespace/name) (for example C(kube-system/anetd-5kx8w)).
    type: str
    required: true
  node:
    description: The node that pod runs on (its C(spec.nodeName)); the restart is refused when they differ.
    type: str
    required: true
  daemonsets:
    description: The DaemonSets whose pods are agents that may be restarted.
    type: list
    elements: str
    default: [cilium, anetd]
"""

EXAMPLES = r"""
- name: Restart the agent on node3 (run with --check --diff first)
  k8snet.triage.cilium_agent_restart:
    kubeconfig: /etc/kubernetes/admin.conf
    pod: kube-system/anetd-5kx8w
    node: node3
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
pod:
  description: The pod as read before the delete (C(pod), C(uid), C(node), C(phase), C(ready), C(restarts), C(daemonset)).
  returned: success
  type: dict
findings:
  description: C(cilium.agent_restarted) once the pod was deleted (none in check mode).
  returned: success
  type: list
  elements: dict
msg:
  description: What was done.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cilium import restart as cilium_restart
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import restart_options as cilium_restart_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_change_main


def main():
    api_change_main(AnsibleModule, cilium_restart.restart, cilium_restart_options.RULES,
                    cilium_restart_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
