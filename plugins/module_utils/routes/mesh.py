# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pod-CIDR route mesh: checks on a node's routing table (pure functions).

This file is the node check; the input and ``RouteIndex`` are in ``routes_index``, the checks in
``routes_checks``.

Models come from ``netlink.py`` (routes, links, neighbors, addresses).  ``RouteIndex``
indexes one routing table once (exact prefixes in a dict, prefixes sorted by start
address for "what lies inside this CIDR"), so that a table of 100k routes is checked
in one pass plus a few dictionary lookups per peer CIDR.

Checks (all return findings built with ``findings.finding``):

* ``route.missing``            no route for a peer's pod CIDR (or only a less specific one)
* ``route.wrong_gateway``      the CIDR (or part of it) goes via another gateway
* ``route.wrong_device``       the CIDR goes out of another device than the uplink / tunnel
* ``route.unreachable``        a blackhole / unreachable / prohibit route over all or part
* ``route.next_hop_unresolved`` the gateway's neighbor entry is FAILED / INCOMPLETE, and still is after a packet
  made the kernel resolve it again (``confirm_next_hops``)
* ``route.next_hop_recovered`` (info) it was FAILED / INCOMPLETE and resolved when a packet asked for it
* ``route.pod_device_missing`` / ``route.pod_device_down``  local /32 and /128 pod routes
* ``route.overlap``            peers' CIDRs overlap, or the local CIDR is routed away
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink
from ansible_collections.k8snet.triage.plugins.module_utils.routes.checks import (
    check_local_cidrs, check_overlaps, check_peer_routes, check_pod_routes, confirm_next_hops, summary,
    validate_destinations, validate_tunnel)
from ansible_collections.k8snet.triage.plugins.module_utils.routes.index import RouteIndex, normalize_peers


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The whole route_check on this node: ``params`` (route_check's options, a plain dict) in,
    ``{"data": {...}, "findings": [...]}`` out.  ``runner`` runs commands (``get_bin_path`` and
    ``run_command``, e.g. the AnsibleModule); no module is needed otherwise."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sort_findings

    destinations = validate_destinations(params.get("destinations") or [])
    mode = params.get("mode") or "direct"
    tunnel = params.get("tunnel_device")
    with Netlink(runner, params.get("reader") or "auto") as netlink:
        links = netlink.links()
        if mode == "overlay":
            validate_tunnel(tunnel, links)
        local_addresses = [a["address"] for a in netlink.addresses()]
        local, remote = normalize_peers(params.get("peers") or [], params.get("node_name"), local_addresses)
        node = local["node"] if local else (params.get("node_name") or "this node")
        table = netlink.routes(table="main")
        index = RouteIndex(table)
        neighbors = netlink.neighbors() if mode == "direct" and remote else []
        found = check_overlaps(local, remote, node)
        peer_findings, results = check_peer_routes(index, remote, node, mode, tunnel, neighbors)
        peer_findings = confirm_next_hops(peer_findings, results, netlink.neighbor)
        found += peer_findings
        found += check_local_cidrs(index, local, node)
        checked = None
        if params.get("local_pod_routes", True):
            pod_findings, checked = check_pod_routes(table, links, node, local)
            found += pod_findings
        found += summary(found, results, node, checked)
        data = {
            "peer_routes": results,
            "destinations": netlink.routes_get(destinations),
            "local_node": local["node"] if local else None,
            "routes_read": len(table),
            "reader": netlink.name,
        }
    return {"data": data, "findings": sort_findings(found)}
