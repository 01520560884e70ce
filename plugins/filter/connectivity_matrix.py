# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role connectivity: the node-to-node matrix from every node's probes."""

from __future__ import annotations

DOCUMENTATION = """
name: connectivity_matrix
short_description: fleet view of k8snet.triage.reachability results taken on every node
version_added: 0.1.0
description:
  - Takes the reachability results keyed by node and returns the probed pairs, the silent ones,
    and findings C(connectivity.node_isolated) (no prober got an answer), C(connectivity.partial)
    (some did, some did not) or C(connectivity.ok).
options:
  _input:
    description: Reachability results keyed by the node that sent the probes.
    type: dict
    required: true
"""

EXAMPLES = """
- name: Fleet view
  ansible.builtin.debug:
    msg: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'probe'))) | k8snet.triage.connectivity_matrix }}"
"""

RETURN = """
_value:
  description: C(pairs) ({from, to, ok}), C(silent_pairs) and C(findings).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import matrix
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def connectivity_matrix(results):
    if not isinstance(results, dict):
        raise AnsibleFilterError("connectivity_matrix expects {node: reachability result}, got %s" % kind(results))
    return matrix(results)


class FilterModule(object):
    def filters(self):
        return guard_all({"connectivity_matrix": connectivity_matrix})
