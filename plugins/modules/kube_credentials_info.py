#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_credentials_info
short_description: which Kubernetes credentials the API steps would use, and whether they load - without a request
version_added: 0.2.0
description:
  - Says which credentials the collection's API modules would use on the controller (RV(credential_source),
    one of a kubeconfig, C(host) with a token or a client certificate, the in-cluster service account, E(KUBECONFIG)
    or C(~/.kube/config)), null when there are none, and loads them (a kubeconfig that cannot be read or
    parsed fails the task, naming the problem). No request is sent. The same answer as
    M(k8snet.triage.kube_network_info) with O(k8snet.triage.kube_network_info#module:gather=[]), which
    C(triage.yml) uses to decide whether its API steps can run.
  - An action plugin. When the API modules would run in the controller's own Python (C(localhost) with
    the C(local) connection, an C(ansible_python_interpreter) that is the Python running Ansible, no
    become), it answers in the controller's process from the task's environment and the controller's
    files, as the module would, without starting a module (about 0.8 s less on a 2-core controller).
    Otherwise (an option given, module_defaults included, another Python, become, a E(K8S_AUTH_*) value
    holding a C($)) it runs M(k8snet.triage.kube_network_info) with O(k8snet.triage.kube_network_info#module:gather=[])
    and returns its result. RV(answered_by) says which.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.api_read
  - k8snet.triage.kube_auth
  - ansible.builtin.action_common_attributes.facts
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: Answers on the controller, or runs M(k8snet.triage.kube_network_info) on C(localhost).
  async:
    support: none
  bypass_host_loop:
    support: none
  facts:
    support: none
    details: Returns its result (register it); sets no fact.
seealso:
  - module: k8snet.triage.kube_network_info
notes:
  - Run it on C(localhost) (or C(delegate_to=localhost)), like the API modules.
"""

EXAMPLES = r"""
- name: Can the API steps run? (no request is sent)
  k8snet.triage.kube_credentials_info:
  run_once: true
  delegate_to: localhost
  register: kube_access
  failed_when: false

- name: Say why not
  ansible.builtin.debug:
    msg: "{{ kube_access.msg | default('no Kubernetes credentials') }}"
  when: kube_access.credential_source is none or kube_access is failed
  run_once: true
"""

RETURN = r"""
credential_source:
  description:
    - Where the credentials come from, V(kubeconfig), V(host), V(in_cluster) or V(default_kubeconfig);
      null when there are none.
  returned: success, and on a failure to load them
  type: str
  sample: kubeconfig
findings:
  description: Always empty (no request is sent); present when the credentials loaded.
  returned: success
  type: list
  elements: dict
answered_by:
  description: V(controller), or V(module) with the reason the module had to answer.
  returned: always
  type: str
  sample: "module: options given (kubeconfig)"
"""
