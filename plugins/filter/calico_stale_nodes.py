# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller-side: the stale Node resources behind the fleet's stale BGP peers."""

from __future__ import annotations

DOCUMENTATION = """
name: calico_stale_nodes
short_description: the Node resources to decommission, from the fleet's stale BGP peers
version_added: 0.1.0
description:
  - Collects every C(bgp.stale_peer) finding of the C(calico_bgp_status) results of several
    nodes into one entry per peer address, with the nodes that see it, its BGP states and
    causes, the Node resource name when known, and the action to take. It deletes nothing.
options:
  _input:
    description: "Results by inventory host, C({host: calico_bgp_status result})."
    type: dict
    required: true
  resources:
    description: Node resources (C(name), C(address)) from the Kubernetes API, used to name the stale ones.
    type: list
    elements: dict
    default: []
"""

EXAMPLES = """
- name: Name the Node resources to decommission
  ansible.builtin.debug:
    msg: "{{ results_by_host | k8snet.triage.calico_stale_nodes }}"
"""

RETURN = """
_value:
  description: One dict per stale address with C(address), C(name) (null when unknown), C(seen_by), C(bgp_states), C(causes) and C(action).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.calico.fleet import NodeListError, normalise_nodes, stale_nodes
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def calico_stale_nodes(statuses, resources=None):
    if not isinstance(statuses, dict):
        raise AnsibleFilterError("calico_stale_nodes expects a dict of results by host, got %s" % kind(statuses))
    try:
        return stale_nodes(statuses, normalise_nodes(resources, "resources"))
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return guard_all({"calico_stale_nodes": calico_stale_nodes})
