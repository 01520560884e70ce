# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pod-CIDR route mesh, the checks (pure, findings built with findings.finding): peers' routes (missing, wrong
gateway or device, unreachable, unresolved next hops and their confirmation), the local CIDRs, the local pod routes,
overlaps and the summary.
"""

from __future__ import annotations

import ipaddress
import socket
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import EVIDENCE_SAMPLE, finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.routes.index import (
    _address, _hops, _node_ip, describe, is_pod_device)

BAD_TYPES = ("blackhole", "unreachable", "prohibit")
NEXT_HOP_BAD = ("FAILED", "INCOMPLETE")
# how long a re-resolution may take before an unresolved next hop is confirmed: an ARP / ND answer takes
# milliseconds, even from a busy node; the kernel itself gives up after 3 x 1 s (mcast_solicit x retrans_time)
CONFIRM_SECONDS = 1.5
CONFIRM_POLL = 0.1
DISCARD_PORT = 9
LINK_DOWN_STATES = ("DOWN", "LOWERLAYERDOWN", "NOTPRESENT")


# ----------------------------------------------------------------- checks


def check_overlaps(local, remote, node):
    """Peers' pod CIDRs that overlap each other (or this host's)."""
    entries = []
    for peer in ([local] if local else []) + list(remote):
        for cidr in peer["pod_cidrs"]:
            entries.append((cidr.version, int(cidr.network_address), int(cidr.broadcast_address), str(cidr), peer["node"]))
    entries.sort()
    out = []
    reach = None  # (family, end, cidr, node) of the widest range seen so far
    for family, start, end, cidr, owner in entries:
        if reach and reach[0] == family and start <= reach[1] and reach[3] != owner:
            out.append(finding(
                "route.overlap", "critical", "L3", node,
                "pod CIDR %s of %s overlaps %s of %s: one of them cannot be routed" % (cidr, owner, reach[2], reach[3]),
                {"cidr": cidr, "node": owner, "overlaps": reach[2], "other_node": reach[3]},
                "Give every node a distinct pod CIDR (kube-controller-manager --cluster-cidr / the CNI's IPAM "
                "blocks) and remove the stale Node object or inventory k8s_pod_cidr that duplicates it.",
            ))
        if not reach or reach[0] != family or end > reach[1]:
            reach = (family, end, cidr, owner)
    return out


def uplink_for(index, gateway):
    """The device through which this table reaches ``gateway`` (the uplink)."""
    route = index.lookup(gateway)
    if route is None or route.get("type", "unicast") != "unicast":
        return None
    return route.get("dev") or (_hops(route)[0][1] if route.get("nexthops") else None)


def _neighbor_table(neighbors):
    """Neighbor entries keyed by (address, interface), for next-hop lookups."""
    neigh = {}
    for entry in neighbors:
        neigh[(entry["address"], entry.get("interface"))] = entry
    return neigh


class _PeerCidr(object):
    """One peer pod CIDR under check: the route it should have, the route found, and the problems seen."""

    def __init__(self, index, peer, cidr, mode, tunnel_device):
        self.peer = peer
        self.node = peer["node"]
        self.cidr = cidr
        self.cidr_text = str(cidr)
        self.mode = mode
        self.gateway = _node_ip(peer, cidr.version)
        if mode == "overlay":
            self.device = tunnel_device
            self.expected = "%s dev %s" % (self.cidr_text, self.device)
        else:
            self.device = uplink_for(index, self.gateway) if self.gateway else None
            self.expected = "%s via %s dev %s" % (
                self.cidr_text, self.gateway or "<%s node address>" % self.node, self.device or "?")
        self.route = index.exact.get(self.cidr_text)
        self.found = self.route or index.covering(cidr)
        self.evidence = {"cidr": self.cidr_text, "peer": self.node, "expected": self.expected,
                         "found": describe(self.found)}
        self.subject = "%s %s" % (self.node, self.cidr_text)
        self.statuses = []
        self.findings = []

    def add(self, status, item):
        """Record one problem: its status for the results row and its finding."""
        self.statuses.append(status)
        self.findings.append(item)

    def result(self):
        """The results row of this CIDR."""
        return {"node": self.node, "cidr": self.cidr_text, "expected": self.expected,
                "found": describe(self.found), "status": self.statuses or ["ok"]}


def _check_unreachable_all(target):
    """A blackhole / unreachable / prohibit route over all of the CIDR."""
    found = target.found
    target.add("unreachable", finding(
        "route.unreachable", "critical", "L3", target.subject,
        "all of %s (pods of %s) hits a %s route" % (target.cidr_text, target.node, found["type"]),
        dict(target.evidence, covers="all"),
        "Delete the %s route (`ip route del %s`) if nothing should drop this range, then restore "
        "`%s` (the CNI or routing daemon normally does it)." % (found["type"], found["dst"], target.expected),
    ))


def _check_missing(target):
    """No route for the CIDR itself (at best a less specific one)."""
    found = target.found
    target.add("missing", finding(
        "route.missing", "critical", "L3", target.subject,
        "no route for %s (pods of %s)%s" % (
            target.cidr_text, target.node, "; it falls to the less specific %s" % found["dst"] if found else ""),
        target.evidence,
        "Add `ip route add %s` or restart the component that programs it (routing daemon, CNI agent); "
        "check that node %s is still a member of the cluster." % (target.expected, target.node),
    ))


def _check_gateway(target, hops):
    """Direct mode: the exact route goes via the peer's node address."""
    gateway = target.gateway
    if target.mode != "direct" or not gateway or gateway in [h[0] for h in hops]:
        return
    target.add("wrong_gateway", finding(
        "route.wrong_gateway", "critical", "L3", target.subject,
        "%s (pods of %s) goes via %s instead of %s" % (
            target.cidr_text, target.node, ", ".join(str(h[0]) for h in hops), gateway),
        target.evidence,
        "Replace it: `ip route replace %s`; a wrong gateway usually means a re-used node IP or a "
        "stale route of a node that left the cluster." % target.expected,
    ))


def _check_device(target, hops):
    """The exact route (its hops via the gateway, in direct mode) leaves by the uplink / tunnel device."""
    device, gateway = target.device, target.gateway
    if target.mode == "overlay":
        matching = hops
    else:
        matching = [h for h in hops if h[0] == gateway] if gateway else hops
    if not (device and matching and device not in [h[1] for h in matching]):
        return
    target.add("wrong_device", finding(
        "route.wrong_device", "critical", "L3", target.subject,
        "%s (pods of %s) leaves by %s instead of %s" % (
            target.cidr_text, target.node, ", ".join(str(h[1]) for h in hops), device),
        target.evidence,
        "Replace it: `ip route replace %s`." % target.expected,
    ))


def _unresolved(entry):
    """The states of neighbor ``entry`` that say its last resolution failed or is under way (none: no entry)."""
    return [state for state in (entry or {}).get("state", []) if state in NEXT_HOP_BAD]


def _check_next_hop(target, checked_hops, neigh):
    """Direct mode: the gateway's neighbor entry on the uplink resolves (each (gateway, device) checked once)."""
    gateway, device = target.gateway, target.device
    if target.mode != "direct" or not gateway or not device or (gateway, device) in checked_hops:
        return
    checked_hops.add((gateway, device))
    entry = neigh.get((gateway, device))
    if not _unresolved(entry):
        return
    node = target.node
    target.add("next_hop_unresolved", finding(
        "route.next_hop_unresolved", "critical", "L2", "%s %s" % (node, gateway),
        "the next hop %s (node %s) on %s does not resolve: neighbor entry %s" % (
            gateway, node, device, "/".join(entry["state"])),
        {"peer": node, "gateway": gateway, "dev": device, "state": entry["state"], "mac": entry.get("mac"),
         "cidrs": [str(c) for c in target.peer["pod_cidrs"]]},
        "Check that node %s is up and answers ARP/ND on %s (`arping -I %s %s`); "
        "k8snet.triage.arp_check tells a stale or conflicting entry apart." % (node, device, device, gateway),
    ))


def nudge(gateway):
    """Make the kernel resolve ``gateway`` again, as a packet for it would: one empty UDP datagram to its discard
    port (no privilege needed; the kernel's own ARP / ND does the asking, through whatever filters the node has).
    Returns None, or why it could not be sent."""
    sock = socket.socket(socket.AF_INET6 if ":" in gateway else socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.sendto(b"", (gateway, DISCARD_PORT))
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        sock.close()


def _wait_resolved(keys, read, seconds, clock, sleep):
    """Re-read each (address, interface) of ``keys`` until every one resolves or ``seconds`` pass.  Returns
    ``(seen, resolved, waited)``: the last entry read per key, the seconds each resolved key took, the time spent."""
    started = clock()
    seen, resolved = {}, {}
    while True:
        for key in keys:
            if key not in resolved:
                seen[key] = read(*key)
                if seen[key] and not _unresolved(seen[key]):
                    resolved[key] = round(clock() - started, 3)
        if len(resolved) == len(keys) or clock() - started >= seconds:
            return seen, resolved, round(clock() - started, 3)
        sleep(CONFIRM_POLL)


def _confirmed(item, entry, error, seconds, resolved):
    """The finding ``item`` (a ``route.next_hop_unresolved``) once confirmed: ``route.next_hop_recovered`` (info)
    when it ``resolved``, else the same finding with what the confirmation saw."""
    entry = entry or {}
    evidence = dict(item["evidence"], confirm={"sent": error or "a UDP datagram to port %d" % DISCARD_PORT,
                                               "seconds": seconds, "state": entry.get("state", []),
                                               "mac": entry.get("mac")})
    if resolved:
        return finding(
            "route.next_hop_recovered", "info", "L2", item["subject"],
            "the next hop %s (node %s) on %s read %s, then resolved in %g s when a packet asked for it (%s): a past "
            "resolution had failed (the peer busy or away for a moment); if it recurs, look at the peer's load and "
            "the link" % (evidence["gateway"], evidence["peer"], evidence["dev"], "/".join(item["evidence"]["state"]),
                          seconds, "/".join(entry["state"])),
            evidence)
    return finding(
        item["check"], item["severity"], item["layer"], item["subject"],
        "%s, and %s %g s after a packet asked for it again%s" % (
            item["summary"], "/".join(entry.get("state", [])) or "no entry", seconds,
            " (could not send it: %s)" % error if error else ""),
        evidence, item["remediation"])


def confirm_next_hops(findings, results, read, send=nudge, seconds=CONFIRM_SECONDS, clock=time.monotonic,
                      sleep=time.sleep):
    """Confirm each ``route.next_hop_unresolved`` before it is called critical: the entry read FAILED or INCOMPLETE
    may be a past resolution that failed (the peer was busy or away for a moment) or one in progress.  A packet is
    sent to each such next hop (``send``) and its entry re-read (``read(address, interface)``) until it resolves or
    ``seconds`` pass.  A next hop that resolved becomes ``route.next_hop_recovered`` (info) and its results rows lose
    the status; one that did not stays critical with what the confirmation saw.  Returns the findings."""
    pending = dict(((f["evidence"]["gateway"], f["evidence"]["dev"]), f) for f in findings
                   if f["check"] == "route.next_hop_unresolved")
    if not pending:
        return findings
    errors = dict((key, send(key[0])) for key in pending)
    seen, resolved, waited = _wait_resolved(list(pending), read, seconds, clock, sleep)
    replaced = dict((id(item), _confirmed(item, seen[key], errors[key], resolved.get(key, waited), key in resolved))
                    for key, item in pending.items())
    recovered = set(item["evidence"]["peer"] for key, item in pending.items() if key in resolved)
    for row in results:
        if row["node"] in recovered and "next_hop_unresolved" in row["status"]:
            row["status"] = [s for s in row["status"] if s != "next_hop_unresolved"] or ["ok"]
    return [replaced.get(id(f), f) for f in findings]


def _check_whole_cidr(target, checked_hops, neigh):
    """The route that covers all of the CIDR: a drop route, none, or the exact one checked hop by hop."""
    found = target.found
    if found is not None and found.get("type", "unicast") in BAD_TYPES:
        _check_unreachable_all(target)
    elif target.route is None:
        _check_missing(target)
    else:
        hops = _hops(target.route)
        _check_gateway(target, hops)
        _check_device(target, hops)
        _check_next_hop(target, checked_hops, neigh)


def _split_inside(index, target):
    """The more specific routes inside the CIDR as (drops, elsewhere): drop routes, and (direct mode)
    unicast routes that do not go via the peer."""
    drops, elsewhere = [], []
    gateway = target.gateway
    for part in index.inside(target.cidr):
        if part.get("type", "unicast") in BAD_TYPES:
            drops.append(part)
        elif part.get("type", "unicast") == "unicast" and target.mode == "direct" and gateway and \
                gateway not in [h[0] for h in _hops(part)]:
            elsewhere.append(part)
    return drops, elsewhere


def _check_parts(index, target):
    """The parts of the CIDR that go somewhere else (more specific routes inside it)."""
    drops, elsewhere = _split_inside(index, target)
    if drops:
        target.add("unreachable", finding(
            "route.unreachable", "critical", "L3", target.subject,
            "%d more specific %s route(s) inside %s (pods of %s) drop part of it" % (
                len(drops), "/".join(sorted(set(r["type"] for r in drops))), target.cidr_text, target.node),
            dict(target.evidence, covers="part", routes=[describe(r) for r in sample(drops)], count=len(drops)),
            "Delete the more specific route(s), e.g. `ip route del %s %s`, unless that range is meant "
            "to be dropped (longest prefix wins over `%s`)." % (drops[0]["type"], drops[0]["dst"], target.expected),
        ))
    if elsewhere:
        target.add("wrong_gateway", finding(
            "route.wrong_gateway", "critical", "L3", target.subject,
            "%d more specific route(s) send part of %s (pods of %s) elsewhere than %s" % (
                len(elsewhere), target.cidr_text, target.node, target.gateway),
            dict(target.evidence, covers="part", routes=[describe(r) for r in sample(elsewhere)],
                 count=len(elsewhere)),
            "Delete the more specific route(s), e.g. `ip route del %s`." % elsewhere[0]["dst"],
        ))


def check_peer_routes(index, remote, node, mode="direct", tunnel_device=None, neighbors=()):
    """Every peer's pod CIDR routed via that peer (direct) or the tunnel device (overlay).

    Returns ``(findings, results)``: ``results`` has one row per peer CIDR
    (node, cidr, status, found, expected).
    """
    out, results = [], []
    neigh = _neighbor_table(neighbors)
    checked_hops = set()
    for peer in remote:
        for cidr in peer["pod_cidrs"]:
            target = _PeerCidr(index, peer, cidr, mode, tunnel_device)
            _check_whole_cidr(target, checked_hops, neigh)
            _check_parts(index, target)
            out.extend(target.findings)
            results.append(target.result())
    return out, results


def check_local_cidrs(index, local, node):
    """This host's own pod CIDR must not be routed away via a gateway (to another host)."""
    out = []
    if not local:
        return out
    for cidr in local["pod_cidrs"]:
        away = []
        exact = index.exact.get(str(cidr))
        for route in ([exact] if exact else []) + index.inside(cidr):
            if route.get("type", "unicast") == "unicast" and any(h[0] for h in _hops(route)):
                away.append(route)
        if away:
            out.append(finding(
                "route.overlap", "critical", "L3", "%s %s" % (node, cidr),
                "%d route(s) send (part of) this node's own pod CIDR %s to another host" % (len(away), cidr),
                {"cidr": str(cidr), "routes": [describe(r) for r in sample(away)], "count": len(away)},
                "Delete the route(s) (e.g. `ip route del %s`): local pods are reached through their own "
                "cali*/lxc* device, never via a gateway; a peer announcing this CIDR has a duplicate." % away[0]["dst"],
            ))
    return out


def _is_host_route(route):
    """A unicast /32 (IPv4) or /128 (IPv6) route."""
    dst = route["dst"]
    if not (dst.endswith("/32") and route["family"] == 4) and not (dst.endswith("/128") and route["family"] == 6):
        return False
    return route.get("type", "unicast") == "unicast"


def _is_link_down(link, route):
    """The route's device is administratively or operationally down (or the route is linkdown)."""
    return not link.get("up") or link.get("operstate") in LINK_DOWN_STATES or "linkdown" in (route.get("flags") or [])


def _check_pod_route(route, by_name, local_cidrs):
    """``(status, row)`` for one host route: status None when it is no local pod route, else "ok",
    "missing" or "down" (row None when ok)."""
    dev = route.get("dev")
    if is_pod_device(dev) or (dev and dev not in by_name):
        link = by_name.get(dev)
        if link is None:
            return "missing", {"route": describe(route), "dev": dev}
        if _is_link_down(link, route):
            return "down", {"route": describe(route), "dev": dev, "operstate": link.get("operstate"),
                            "up": link.get("up")}
        return "ok", None
    if local_cidrs and not route.get("gateway") and not route.get("nexthops") and dev != "lo":
        address = ipaddress.ip_network(route["dst"]).network_address
        if any(address in cidr for cidr in local_cidrs if cidr.version == route["family"]):
            return "missing", {"route": describe(route), "dev": dev, "note": "not a cali*/lxc* pod device"}
    return None, None


def _pod_device_findings(node, missing, down):
    """The pod_device_missing and pod_device_down findings (each only when it has routes)."""
    out = []
    if missing:
        out.append(finding(
            "route.pod_device_missing", "critical", "L3", node,
            "%d local pod route(s) point at no pod device: %s" % (
                len(missing), ", ".join(m["route"] for m in missing[:3])),
            {"count": len(missing), "routes": sample(missing)},
            "The pod's veth is gone or was never made: delete the stale route (`ip route del %s`) and let the "
            "CNI recreate the pod's interface (delete the pod so it is rescheduled)." % missing[0]["route"].split()[0],
        ))
    if down:
        out.append(finding(
            "route.pod_device_down", "critical", "L3", node,
            "%d local pod route(s) point at a device that is down: %s" % (
                len(down), ", ".join(d["dev"] for d in down[:3])),
            {"count": len(down), "routes": sample(down)},
            "Bring the device up (`ip link set %s up`) or delete the pod so the CNI recreates it; check the "
            "CNI agent's log for the pod." % down[0]["dev"],
        ))
    return out


def check_pod_routes(routes, links, node, local=None):
    """Every /32 and /128 route to a cali*/lxc* device has the device present and up; a host route
    inside this node's pod CIDR that reaches no pod device (and no gateway) has lost its device."""
    by_name = dict((link["ifname"], link) for link in links)
    local_cidrs = (local or {}).get("pod_cidrs") or []
    rows = {"missing": [], "down": []}
    checked = 0
    for route in routes:
        if not _is_host_route(route):
            continue
        status, row = _check_pod_route(route, by_name, local_cidrs)
        if status is None:
            continue
        checked += 1
        if row is not None:
            rows[status].append(row)
    return _pod_device_findings(node, rows["missing"], rows["down"]), checked


def summary(findings_list, results, node, pod_routes_checked=None):
    """One ``ok`` finding when nothing is wrong (info findings aside), so the report shows what was checked."""
    if [f for f in findings_list if f["severity"] != "info"]:
        return []
    evidence = {"peer_cidrs": len(results)}
    if pod_routes_checked is not None:
        evidence["pod_routes"] = pod_routes_checked
    if not results and not pod_routes_checked:
        return [finding("route.nothing_checked", "info", "L3", node,
                        "no route was checked: peers names no other node with a pod CIDR and no local pod "
                        "route was found", evidence,
                        "give peers (every node with its node_ip and pod_cidrs) to check the pod network routes")]
    return [finding("route.mesh", "ok", "L3", node,
                    "%d peer pod CIDR(s) routed as expected" % len(results), evidence)]


def validate_tunnel(tunnel_device, links):
    names = sorted(link["ifname"] for link in links)
    if tunnel_device not in names:
        raise InputError(
            "tunnel_device %r is not a device on this host (devices: %s); give the overlay's device, "
            "e.g. vxlan.calico, tunl0 or cilium_vxlan, or use mode=direct"
            % (tunnel_device, ", ".join(names[:EVIDENCE_SAMPLE]) + (" ..." if len(names) > EVIDENCE_SAMPLE else "")),
            value=tunnel_device)


def validate_destinations(destinations):
    return [str(_address(d, "destination")) for d in destinations or []]
