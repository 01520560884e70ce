#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: webhook_failure_policy
short_description: Break a CNI <-> admission webhook cycle by setting failurePolicy Ignore on one named webhook, and restore it
version_added: 0.2.0
description:
  - The opt-in repair of C(webhook.cni_deadlock) (M(k8snet.triage.webhook_deadlock)). With O(state=relaxed), sets
    C(failurePolicy=Ignore) on the one webhook O(webhook) of the configuration O(configuration), and records its
    previous value in the configuration's annotation C(k8snet.triage/failure-policy-restore). With
    O(state=restored), puts the recorded value back and removes the record.
  - Nothing else changes. The configuration is read right before the patch; the patch carries the other webhooks
    as read and the resourceVersion read, so the API server refuses it (409 Conflict, nothing changed) when
    the object changed meanwhile. Idempotent; check mode and diff show the change without making it.
  - "Security trade-off: while the webhook's failurePolicy is Ignore, the requests it would have rejected are
    admitted unchecked when it cannot be reached. Restore it once the CNI agent and the webhook's pods are up."
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.state_change
  - k8snet.triage.kube_auth
attributes:
  check_mode:
    details: Reads the configuration and reports the change it would make; patches nothing.
  diff_mode:
    details: The webhook's failurePolicy and the recorded value, before and after.
  platform:
    details: Runs on the controller; talks to the Kubernetes API (patch on the webhook configuration).
options:
  configuration:
    description: The name of the ValidatingWebhookConfiguration or MutatingWebhookConfiguration (a Kubernetes object name).
    type: str
    required: true
  webhook:
    description: The name of the one webhook in it to change (as in its C(webhooks[].name)).
    type: str
    required: true
  kind:
    description: Which kind of configuration O(configuration) is.
    type: str
    choices: [validating, mutating]
    default: validating
  state:
    description:
      - V(relaxed) sets C(failurePolicy=Ignore) and records the previous value; V(restored) puts the recorded value
        back. There is no default; the change is asked for explicitly.
    type: str
    choices: [relaxed, restored]
    required: true
"""

EXAMPLES = r"""
- name: Break the cycle the triage named (check mode first, with --check --diff)
  k8snet.triage.webhook_failure_policy:
    kubeconfig: /etc/kubernetes/admin.conf
    configuration: policy-guard
    webhook: validate.policy-guard.example.com
    state: relaxed
  delegate_to: localhost
  run_once: true

- name: Put the webhook's failurePolicy back once calico-node and the webhook's pods are up
  k8snet.triage.webhook_failure_policy:
    kubeconfig: /etc/kubernetes/admin.conf
    configuration: policy-guard
    webhook: validate.policy-guard.example.com
    state: restored
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
failure_policy:
  description: The webhook's failurePolicy after the run (what it would be, in check mode).
  returned: always
  type: str
  sample: Ignore
previous:
  description: The failurePolicy before the run (with O(state=relaxed), the value recorded for the restore).
  returned: always
  type: str
  sample: Fail
msg:
  description: What was done, or why nothing was.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks
from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks_options
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import api_change_main


def main():
    api_change_main(AnsibleModule, webhooks.set_failure_policy, webhooks_options.REPAIR_RULES,
                    webhooks_options.REPAIR_SPEC)


if __name__ == "__main__":
    main()
