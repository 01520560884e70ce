# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller-side: the fleet table of BGP sessions (node x peer x state)."""

from __future__ import annotations

DOCUMENTATION = """
name: calico_fleet_table
short_description: BGP sessions of every node as one aligned table
version_added: 0.1.0
description:
  - Turns the C(calico_bgp_status) results of several nodes into text lines, one per node
    and peer, with the peer's node name, type, state, BGP state, since and cause.
  - A node with no result (failed or unreachable) and a node whose BIRD is down get one row each.
  - Control and bidirectional-override characters in what BIRD or the API reported are shown as visible
    escapes such as C(\\x1b).
options:
  _input:
    description: "Results by inventory host, C({host: calico_bgp_status result}); a null result means no data."
    type: dict
    required: true
  nodes:
    description: Known nodes (C(name), C(address)) used to name the peers.
    type: list
    elements: dict
    default: []
  resources:
    description: Node resources (C(name), C(address)) from the Kubernetes API, used to name the other peers.
    type: list
    elements: dict
    default: []
"""

EXAMPLES = """
- name: Print the fleet table
  ansible.builtin.debug:
    msg: "{{ results_by_host | k8snet.triage.calico_fleet_table(nodes) }}"
"""

RETURN = """
_value:
  description: The heading line, then one line per row.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.calico.fleet import NodeListError, fleet_table, normalise_nodes
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.terminal import terminal_text


def calico_fleet_table(statuses, nodes=None, resources=None):
    if not isinstance(statuses, dict):
        raise AnsibleFilterError("calico_fleet_table expects a dict of results by host, got %s" % kind(statuses))
    try:
        return [terminal_text(line) for line in fleet_table(
            statuses, normalise_nodes(nodes, "nodes"), normalise_nodes(resources, "resources"))]
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return guard_all({"calico_fleet_table": calico_fleet_table})
