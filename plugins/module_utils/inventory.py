# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The inventory-node contract (controller side), in one place for every role and filter.

Host variables of a node: ``k8s_node_name`` (default: the inventory name), ``k8s_node_ip``
(default: ``ansible_host``, else the inventory name; a prefix length is dropped), ``k8s_pod_cidr``
(optional; one CIDR or a list).  Pure functions over ``hostvars``.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.addresses import host_address


class NodeListError(ValueError):
    """A node list entry is unusable (the message names the host and the fix)."""


def inventory_nodes(hosts, hostvars):
    """``[{host, name, address}]`` of inventory hosts, by the contract above."""
    nodes = []
    for host in hosts:
        variables = hostvars[host]
        name = variables.get("k8s_node_name") or host
        raw = variables.get("k8s_node_ip") or variables.get("ansible_host") or host
        try:
            address = host_address(raw)
        except ValueError:
            raise NodeListError(
                "host %s: %r is not an IP address; set k8s_node_ip to the node's address (its InternalIP; "
                "with Calico, its BGP address, the projectcalico.org/IPv4Address of its Node)" % (host, raw))
        nodes.append({"host": str(host), "name": str(name), "address": address})
    return nodes


def pod_cidr_peers(hosts, hostvars):
    """route_check's ``peers`` (``[{node, node_ip, pod_cidrs}]``) of the hosts that have ``k8s_pod_cidr``."""
    with_cidrs = [host for host in hosts if hostvars[host].get("k8s_pod_cidr")]
    peers = []
    for node in inventory_nodes(with_cidrs, hostvars):
        cidrs = hostvars[node["host"]]["k8s_pod_cidr"]
        peers.append({"node": node["name"], "node_ip": node["address"],
                      "pod_cidrs": [cidrs] if isinstance(cidrs, str) else list(cidrs)})
    return peers
