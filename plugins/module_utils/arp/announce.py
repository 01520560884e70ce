# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who announces a VIP, seen from the announcer candidates' side: what one ``packet_capture`` (protocol ``arp``,
host the VIP) on each candidate node (the nodes of the play but the client: the LB nodes, the MetalLB speakers'
nodes, the node holding the VIP) saw while the client asked for the VIP.

On each node: the ARP requests for the VIP that arrive (direction in, target the VIP), the node's replies for the
VIP that leave (direction out, sender the VIP) and its gratuitous ARPs (sender equals target, or a reply to the
broadcast).  ``service_path.vip_announcer`` reads them beside the client's own probe: a node whose reply left while
the client got none is "a node answers but the reply is not delivered", not "no node announces"; and for a client
off the VIP's subnet they name who answers the router's ARP."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import EVIDENCE_SAMPLE


def node_arp(packets, vip):
    """One node's ARP traffic about ``vip``: requests in (and who asked), replies out, gratuitous ARPs out.
    ``packets``: capture packets, or the ``flows`` of a packet_capture result (each counted ``packets`` times)."""
    requests, askers, replies, garps = 0, set(), 0, 0
    for pkt in packets or []:
        if pkt.get("proto") != "arp":
            continue
        src, dst, direction, op = pkt.get("src"), pkt.get("dst"), pkt.get("direction"), pkt.get("arp_op")
        count = pkt.get("packets", 1)
        gratuitous = src == vip and (dst == vip or (op == "reply" and dst == "255.255.255.255"))
        if direction == "out" and gratuitous:
            garps += count
        elif direction == "out" and op == "reply" and src == vip:
            replies += count
        elif direction == "in" and op == "request" and dst == vip and src != vip:
            requests += count
            askers.add(src)
    return {"requests_in": requests, "askers": sorted(askers)[:EVIDENCE_SAMPLE], "replies_out": replies,
            "gratuitous_out": garps}


def nodes_view(captures, vip):
    """``({node: node_arp}, [nodes whose capture gave nothing to read])`` from ``captures`` ({node: packet_capture
    result}); a failed or skipped capture is listed, never read as silence."""
    seen, unread = {}, []
    for node, result in sorted((captures or {}).items()):
        flows = result.get("flows") if isinstance(result, dict) and not result.get("failed") else None
        if isinstance(flows, list):
            seen[node] = node_arp(flows, vip)
        else:
            unread.append(node)
    return seen, unread


def replying(view, gratuitous=False):
    """The nodes whose capture shows a reply for the VIP leaving (or, with ``gratuitous``, a gratuitous ARP)."""
    return sorted(node for node, seen in view.items() if seen["replies_out"] or (gratuitous and seen["gratuitous_out"]))
