# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet view of Calico BGP (controller side): nodes, the session table, stale Node resources.

Pure functions over the results of ``calico_bgp_status`` collected from every node; the
filters ``calico_fleet_table`` and ``calico_stale_nodes`` are thin wrappers around them.  A node
is ``{"name", "address"}`` (plus ``host``, the inventory name, when it comes from the inventory:
``inventory.inventory_nodes``, the inventory-node contract).
"""

from __future__ import annotations

import ipaddress

from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
# the inventory-node contract, re-exported for the filters that take it from here
from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import NodeListError, inventory_nodes  # noqa: F401 pylint: disable=unused-import

TABLE_COLUMNS = ("NODE", "PEER ADDRESS", "PEER NODE", "TYPE", "STATE", "BGP STATE", "SINCE", "CAUSE")


def normalise_nodes(nodes, what="nodes"):
    """Check a list of ``{name, address}`` (e.g. filled from the Kubernetes Node list)."""
    result = []
    for i, node in enumerate(nodes or []):
        if not isinstance(node, dict) or "address" not in node:
            raise NodeListError("%s[%d] must be a dict with name and address, got %r" % (what, i, node))
        try:
            address = host_address(node["address"])
        except ValueError:
            raise NodeListError("%s[%d]: address %r is not an IP address" % (what, i, node["address"]))
        entry = dict(node)
        entry["address"] = address
        entry["name"] = str(node.get("name") or address)
        result.append(entry)
    return result


def _names_by_address(*lists):
    names = {}
    for nodes in lists:
        for node in nodes or []:
            names.setdefault(node["address"], node["name"])
    return names


def fleet_rows(statuses, nodes=(), resources=()):
    """One row per (node, peer); a node without data or with BIRD down gets one row of its own.

    ``statuses``: {inventory host: calico_bgp_status result or None}.
    """
    names = _names_by_address(nodes, resources)
    rows = []
    for host in sorted(statuses):
        status = statuses[host]
        if not status:
            rows.append({"node": host, "peer": "-", "peer_node": "-", "type": "-", "state": "no data",
                         "bgp_state": "-", "since": "-", "cause": "host failed or unreachable"})
            continue
        for socket in status.get("sockets", []):
            if socket.get("down"):
                rows.append({"node": host, "peer": "-", "peer_node": "-", "type": "-", "state": "BIRD down",
                             "bgp_state": "-", "since": "-", "cause": "%s %s" % (socket.get("path"), socket.get("status"))})
        for peer in status.get("peers", []):
            address = peer.get("address") or "?"
            rows.append({
                "node": host,
                "peer": address,
                "peer_node": names.get(address, "(none)"),
                "type": peer.get("type", ""),
                "state": peer.get("state", ""),
                "bgp_state": peer.get("bgp_state", ""),
                "since": peer.get("since", ""),
                "cause": peer.get("cause") or "",
            })
    return rows


def fleet_table(statuses, nodes=(), resources=()):
    """The rows of ``fleet_rows`` as aligned text lines, a heading first."""
    rows = fleet_rows(statuses, nodes, resources)
    keys = ("node", "peer", "peer_node", "type", "state", "bgp_state", "since", "cause")
    table = [list(TABLE_COLUMNS)] + [[str(row[k]) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(keys))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table]


def stale_nodes(statuses, resources=()):
    """The Node resources to decommission: every stale mesh peer (``stale`` in the peers' data, the
    peers ``bgp.stale_peer`` names) across the fleet,
    with the nodes that see it, their BGP states and causes, and the resource name when known."""
    names = _names_by_address(resources)
    stale = {}
    for host in sorted(statuses):
        for peer in (statuses[host] or {}).get("peers", []):
            if not peer.get("stale"):
                continue
            address = peer.get("address")
            entry = stale.setdefault(address, {"address": address, "name": names.get(address),
                                               "seen_by": [], "bgp_states": [], "causes": []})
            entry["seen_by"].append(host)
            for key, value in (("bgp_states", peer.get("bgp_state")), ("causes", peer.get("stale_cause"))):
                if value and value not in entry[key]:
                    entry[key].append(value)
    result = []
    for address in sorted(stale, key=ipaddress.ip_address):
        entry = stale[address]
        if entry["name"]:
            entry["action"] = "kubectl delete node %s (then calicoctl delete node %s if it remains)" % (entry["name"], entry["name"])
        else:
            entry["action"] = ("find the Node whose projectcalico.org/IPv4Address is %s (calicoctl get nodes -o wide) "
                               "and delete it" % address)
        result.append(entry)
    return result
