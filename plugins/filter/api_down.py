# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether an API step of the triage found the Kubernetes API server silent or refusing every request."""

from __future__ import annotations

DOCUMENTATION = """
name: api_down
short_description: the first API step that found the Kubernetes API server silent or refusing the triage
version_added: 0.2.0
description:
  - Reads the registered results of the triage's Kubernetes API steps, in the order they ran, and returns the
    first that shows the API server does not answer (a call passed its deadline, the connection was refused or
    broken) or refuses the triage (401 Unauthorized; 403 Forbidden on a read the step needed), else an empty dict.
  - The triage records it once (the fact C(triage_api_down) on the controller) with its one fleet finding
    (C(kube.api_unreachable), C(kube.api_unauthorized) or C(kube.api_forbidden)), and skips every later API step
    at once, its skip reason naming that finding, instead of waiting out the same deadline once per step.
  - A step that ran (it has C(findings)), was skipped, or failed for another reason (a malformed answer, a
    missing library) is not one.
options:
  _input:
    description: The registered results of the API steps, in the order they ran (an undefined one as C({})).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = """
- name: Skip this API step when an earlier one found the API server down
  k8snet.triage.node_network_status:
  register: __cni_api
  failed_when: false
  when: not ([__kube_read | default({})] | k8snet.triage.api_down)
"""

RETURN = """
_value:
  description:
    - Empty when no step found the API server down; else C(kind) (C(unreachable), C(unauthorized), C(forbidden)),
      C(check) (the finding's id), C(server), C(request) (the request that found it, e.g. C(list nodes)),
      C(deadline) (seconds, when a deadline passed), C(status) (the HTTP status, when one was answered),
      C(error) (the step's message), C(said) (one sentence), C(reason) (the skip reason of a later step, naming
      the finding) and C(finding) (the one fleet finding).
  type: dict
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.api_reads import api_down
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


class FilterModule(object):
    def filters(self):
        return guard_all({"api_down": api_down})
