# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Calico's BIRD, the checks: pure functions from the parsed peers to findings (bgp.not_established, bgp.stale_peer,
bgp.missing_peer, bgp.bird_down, bgp.sessions).
"""

from __future__ import annotations

import ipaddress

from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.calico.parsers import cause_of, since_age
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample

# Causes that are configuration errors: they do not heal by waiting.
PERSISTENT_CAUSES = ("bad peer AS", "bad BGP identifier", "authentication failure", "unacceptable hold time")


# ------------------------------------------------------------------- checks
def validate_addresses(values, option="expected_peers"):
    """Normalise a list of IP addresses (``10.0.0.5/24`` as in the Node annotation is accepted)."""
    result = []
    for value in values or []:
        try:
            address = host_address(value)
        except ValueError:
            raise InputError("%s: %r is not an IP address (give addresses such as 10.0.0.5 or 10.0.0.5/24)"
                             % (option, value), value=value)
        result.append(address)
    return result


def check_sessions(peers, now, stuck_after):
    """``bgp.not_established`` for every session that is not Established (stale peers excepted by the caller)."""
    found = []
    for peer in peers:
        if peer["bgp_state"] == "Established":
            continue
        age = since_age(peer["since"], now)
        cause, hint = cause_of(peer)
        # A configuration error never heals, and BIRD restarts the protocol after it (so
        # ``since`` keeps moving): critical at once.  Others become critical with time.
        persistent = cause in PERSISTENT_CAUSES
        severity = "warning" if age is not None and age < stuck_after and not persistent else "critical"
        found.append(finding(
            "bgp.not_established", severity, "control-plane", "%s (%s)" % (peer["address"] or "?", peer["name"]),
            "BGP session with %s is %s since %s: %s" % (peer["address"] or peer["name"], peer["bgp_state"] or peer["state"],
                                                        peer["since"] or "?", cause),
            evidence={"address": peer["address"], "protocol": peer["name"], "type": peer["type"], "state": peer["state"],
                      "bgp_state": peer["bgp_state"], "since": peer["since"], "down_for": age,
                      "last_error": peer["last_error"], "cause": cause},
            remediation=hint,
        ))
    return found


def _stale_peers(peers, expected_set, mesh):
    """The ``Mesh_`` peers whose address is not expected, in the address families the expected list covers."""
    # Only judge a peer whose address family the expected list covers: an IPv4-only list
    # says nothing about the IPv6 mesh of a dual-stack cluster.
    families = {ipaddress.ip_address(a).version for a in expected_set}
    if not (mesh and expected_set):
        return []
    return [p for p in peers if p["type"] == "mesh" and p["address"] and p["address"] not in expected_set
            and ipaddress.ip_address(p["address"]).version in families]


def _stale_finding(peer):
    """``bgp.stale_peer`` for one stale mesh peer (its ``stale_cause`` is set on the peer)."""
    established = peer["bgp_state"] == "Established"
    cause = cause_of(peer)[0]
    peer["stale_cause"] = cause
    return finding(
        "bgp.stale_peer", "warning" if established else "critical", "control-plane",
        "%s (%s)" % (peer["address"], peer["name"]),
        ("mesh peer %s belongs to no expected node%s" % (
            peer["address"], " but answers BGP: the expected peer list may be incomplete" if established
            else " and is %s (%s): a leftover Node resource of a decommissioned host" % (
                peer["bgp_state"] or peer["state"], cause))),
        evidence={"address": peer["address"], "protocol": peer["name"], "state": peer["state"],
                  "bgp_state": peer["bgp_state"], "since": peer["since"], "last_error": peer["last_error"],
                  "cause": cause},
        remediation=_stale_remediation(peer["address"], established),
    )


def _missing_finding(peers, expected_set):
    """``bgp.missing_peer`` for the expected addresses without a session, or None."""
    have = {p["address"] for p in peers if p["address"]}
    missing = sorted(expected_set - have, key=_address_key)
    if not missing:
        return None
    return finding(
        "bgp.missing_peer", "critical", "control-plane",
        ", ".join(sample(missing, 3)) + (" ..." if len(missing) > 3 else ""),
        "%d expected node(s) have no BGP session on this node" % len(missing),
        evidence={"missing": sample(missing), "missing_count": len(missing), "peers": len(peers)},
        remediation=("BIRD on this node has no protocol for these nodes: check that their Node resources carry "
                     "projectcalico.org/IPv4Address, and calico-node's confd logs on this node"),
    )


def check_peers(peers, expected, own, now, stuck_after, mesh=True):
    """Sessions, stale peers and missing peers of one node.

    ``expected``: addresses of the nodes that should be peers (this node's own addresses,
    ``own``, are left out).  With ``mesh`` (Calico's node-to-node mesh), every ``Mesh_`` peer
    whose address is not expected is stale (for the address families the expected list
    covers), and every expected address without a session is missing.  Global and node-specific
    peers (BGPPeer resources: routers, reflectors) are not nodes and are never called stale.
    Without ``expected`` only the sessions are checked.
    """
    expected_set = set(expected) - set(own)
    stale = _stale_peers(peers, expected_set, mesh)
    stale_names = {p["name"] for p in stale}
    found = check_sessions([p for p in peers if p["name"] not in stale_names], now, stuck_after)
    for peer in peers:
        # data as data: the fleet's stale-node list reads these flags, not the findings' evidence
        peer["stale"] = peer["name"] in stale_names
    found.extend(_stale_finding(peer) for peer in stale)
    if mesh and expected_set:
        missing = _missing_finding(peers, expected_set)
        if missing is not None:
            found.append(missing)
    return found


def _stale_remediation(address, established):
    if established:
        return "add the node at %s to the inventory (k8s_nodes) or to expected_peers" % address
    return ("find the Node resource whose projectcalico.org/IPv4Address is %s (kubectl get nodes -o wide; "
            "calicoctl get nodes -o wide) and decommission it (kubectl delete node NAME, then calicoctl "
            "delete node NAME if it remains)" % address)


def bird_down_finding(exc):
    """``bgp.bird_down`` from a BirdDown error (Calico: "BIRD is not ready: Error querying BIRD")."""
    return finding(
        "bgp.bird_down", "critical", "control-plane", exc.path,
        "BIRD is not answering on %s (%s): no BGP session can be read on this node" % (exc.path, exc.reason),
        evidence={"socket": exc.path, "reason": exc.reason},
        remediation=("check the calico-node pod of this node (kubectl -n calico-system get pods -o wide; "
                     "kubectl logs POD -c calico-node): BIRD is started by calico-node; a config error shows in its confd/bird logs"),
    )


def summary_finding(peers):
    """One ``ok`` finding when every session is Established."""
    return finding(
        "bgp.sessions", "ok", "control-plane", "bird",
        "%d of %d BGP sessions Established" % (sum(1 for p in peers if p["bgp_state"] == "Established"), len(peers)),
        evidence={"established": sum(1 for p in peers if p["bgp_state"] == "Established"), "peers": len(peers)},
    )


def _address_key(address):
    parsed = ipaddress.ip_address(address)
    return (parsed.version, parsed)
