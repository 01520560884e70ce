# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who announces a VIP, judged from the announcer candidates' side: pure checks over one ``packet_capture``
result (protocol ``arp``, capture packet model) per candidate node (the LB nodes, the MetalLB speakers' nodes,
the node holding the VIP).

On each node: the ARP requests for the VIP that arrive (direction in, target the VIP), the node's replies for the
VIP that leave (direction out, sender the VIP) and its gratuitous ARPs (sender equals target, or a reply to the
broadcast). With what the client saw (``client_got_reply``) and whether the client is on the VIP's subnet, the
verdict separates "no node announces", "a node answers but the reply is not delivered" and "the client is
off-subnet, ARP from it proves nothing"."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, EVIDENCE_SAMPLE


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


def announce_check(vip, captures, client=None, client_on_subnet=True, client_got_reply=None):
    """Findings for ``vip`` from ``captures`` ({node: [packet, ...]}); ``client_got_reply`` is True/False when the
    client probed the VIP by ARP, None when it did not."""
    nodes = {node: node_arp(pkts, vip) for node, pkts in sorted((captures or {}).items())}
    answering = [n for n, s in nodes.items() if s["replies_out"] or s["gratuitous_out"]]
    replying = [n for n, s in nodes.items() if s["replies_out"]]
    asked = [n for n, s in nodes.items() if s["requests_in"]]
    evidence = {"vip": vip, "client": client, "client_on_subnet": client_on_subnet,
                "client_got_reply": client_got_reply, "nodes": nodes}
    subject = "vip/%s" % vip
    out = []
    if not client_on_subnet:
        out.append(finding("ingress.client_off_subnet", "info", "L2", subject,
                           "the client %s is not on the VIP's subnet: ARP from it proves nothing about the announcer, "
                           "judged from the nodes' side" % (client or "?"), evidence))
    if not nodes:
        out.append(finding("ingress.announcer_not_checked", "info", "L2", subject,
                           "no capture from an announcer candidate", evidence))
        return out
    if client_on_subnet and client_got_reply is False and replying:
        out.append(finding("ingress.vip_reply_not_delivered", "critical", "L2", subject,
                           "%s replied to ARP for %s but the client saw no reply: the reply is lost between the node "
                           "and the client" % (", ".join(replying), vip), evidence,
                           remediation="check the segment between them (VLAN, switch port security, the client's "
                                       "arp_ignore/arp_filter and rp_filter)"))
    elif asked and not answering:
        out.append(finding("ingress.vip_unannounced", "critical", "L2", subject,
                           "ARP requests for %s reach %s and no node answers: no node announces the VIP"
                           % (vip, ", ".join(asked)), evidence,
                           remediation="check the load balancer's speaker on these nodes (MetalLB speaker, "
                                       "its L2 advertisement and the node selector)"))
    elif len(answering) > 1:
        out.append(finding("ingress.vip_multiple_announcers", "warning", "L2", subject,
                           "several nodes announce %s: %s" % (vip, ", ".join(answering)), evidence))
    elif answering:
        out.append(finding("ingress.vip_announced", "ok", "L2", subject,
                           "%s announces %s" % (answering[0], vip), evidence))
    else:
        out.append(finding("ingress.vip_arp_not_seen", "info" if not client_on_subnet else "warning", "L2", subject,
                           "no ARP for %s arrived at or left the candidate nodes during the capture" % vip, evidence))
    return out
