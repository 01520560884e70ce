# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role egress: which source address pod traffic leaves the node with."""

from __future__ import annotations

DOCUMENTATION = """
name: egress_snat
short_description: findings on the source address of pod traffic leaving a node
version_added: 0.1.0
description:
  - Reads a C(k8snet.triage.packet_capture) result taken on the pod's node (interface C(any), both legs) while
    the pod sent traffic to O(target), and returns one finding. On the source address, C(egress.no_snat) (the pod
    IP leaves the node), C(egress.unexpected_source) or C(egress.not_leaving).
  - SNAT-ed to the node IP, by where the target's reply was last seen, C(egress.ok) (the pod's connect was
    answered, open or refused, or replies went on toward the pod), C(egress.reply_not_delivered) (replies reached
    the node's address and went no further) or C(egress.no_reply) (no reply reached the node, so the remote or the
    path outside the cluster lost it).
options:
  _input:
    description: The packet_capture result.
    type: dict
    required: true
  node_ip:
    description: The node's IP on the external interface.
    type: str
    required: true
  pod_ip:
    description: The pod that sent the traffic.
    type: str
    required: true
  target:
    description: The external address the pod sent to.
    type: str
    required: true
  pod:
    description: The pod's C(namespace/name), named in the finding's subject, summary and evidence.
    type: str
  node:
    description: The node the pod runs on (inventory name), named in the finding's summary and evidence.
    type: str
  probe:
    description:
      - The C(k8snet.triage.reachability) result of the pod's TCP probes to O(target) (its tcp status, C(open) or
        C(refused), says that the pod got an answer). Without it, only the capture tells.
    type: dict
"""

EXAMPLES = """
- name: Is pod egress masqueraded?
  ansible.builtin.set_fact:
    egress_findings: "{{ capture | k8snet.triage.egress_snat(node_ip='198.18.0.12', pod_ip='10.244.1.5', target='198.18.0.100') }}"
"""

RETURN = """
_value:
  description: A list with one finding.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.egress import egress_snat as _egress_snat
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def egress_snat(capture, node_ip, pod_ip, target, pod=None, node=None, probe=None):
    if not isinstance(capture, dict) or not isinstance(capture.get("flows"), list):
        raise AnsibleFilterError("egress_snat expects a packet_capture result (with its flows), got %s%s" % (
            params.kind(capture), ": %s" % capture.get("msg") if isinstance(capture, dict) and capture.get("msg") else ""))
    try:
        node_ip, pod_ip, target = (params.address()(name, value) for name, value in (
            ("node_ip", node_ip), ("pod_ip", pod_ip), ("target", target)))
    except InputError as exc:
        raise AnsibleFilterError("egress_snat: %s" % exc.message)
    for name, value in (("pod", pod), ("node", node)):
        if value is not None and (not isinstance(value, str) or len(value) > 253 or not value.strip()):
            raise AnsibleFilterError("egress_snat: %s must be a non-empty name of at most 253 characters, got %r"
                                     % (name, value))
    if probe is not None and not isinstance(probe, dict):
        raise AnsibleFilterError("egress_snat: probe must be the reachability result of the pod's probes (a dict), "
                                 "got %s" % params.kind(probe))
    return _egress_snat(capture, node_ip, pod_ip, target, pod=pod, node=node, probe=probe)


class FilterModule(object):
    def filters(self):
        return guard_all({"egress_snat": egress_snat})
