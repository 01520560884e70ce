# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which peers each node probes, and what the fleet's probes say together (controller side, pure).

``sample_peers`` and ``connectivity_peers`` choose a node's peers (a ring, so the fleet costs n x k
probes and every node is probed by about k others); ``matrix`` reads every node's probe results as one
cross-node matrix (an isolated node, a path between node groups)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import NodeListError, inventory_nodes
from ansible_collections.k8snet.triage.plugins.plugin_utils.survey import bounded_int


def matrix(results):
    """{prober: reachability result} -> {"pairs", "silent_pairs", "findings"} for the fleet (pure).

    A node that answered no prober that tried it is isolated (critical); a node answered by some
    probers and not by others points at the path between those node groups (warning).
    """
    pairs = []
    for prober, result in sorted(results.items()):
        for row in (result or {}).get("targets") or []:
            pairs.append({"from": prober, "to": row["name"], "ok": bool(row.get("reachable"))})
    by_target = {}
    for pair in pairs:
        by_target.setdefault(pair["to"], []).append(pair)
    findings = []
    for target, seen_by in sorted(by_target.items()):
        failed = sorted(p["from"] for p in seen_by if not p["ok"])
        answered = sorted(p["from"] for p in seen_by if p["ok"])
        if failed and not answered:
            findings.append(finding("connectivity.node_isolated", "critical", "L3", target,
                                    "%s answered none of the %d nodes that probed it" % (target, len(failed)),
                                    {"probed_by": sample(failed)},
                                    "check the node itself first (link, address, firewall), then its switch port"))
        elif failed:
            findings.append(finding("connectivity.partial", "warning", "L3", target,
                                    "%s answers %s but not %s" % (target, ", ".join(sample(answered, 5)), ", ".join(
                                        sample(failed, 5))),
                                    {"failed_from": sample(failed), "answered": len(answered)},
                                    "compare the routes and firewall rules of the failing nodes toward it "
                                    "(k8snet.triage.route_check, k8snet.triage.iptables_drops)"))
    if not findings and not pairs:
        findings.append(finding("connectivity.not_checked", "warning", "L3", "fleet",
                                "no node pair was probed (%d results, none with probe rows): nothing was checked"
                                % len(results), {"pairs": 0, "nodes": len(results)},
                                "run the probes on the nodes (role k8snet.triage.connectivity) and check that they ran"))
    elif not findings:
        findings.append(finding("connectivity.ok", "ok", "L3", "fleet", "all %d probed node pairs answered" % len(pairs),
                                {"pairs": len(pairs), "nodes": len(results)}))
    return {"pairs": pairs, "silent_pairs": [p for p in pairs if not p["ok"]], "findings": findings}


def sample_peers(nodes, me, limit):
    """The peers ``me`` probes: the other nodes in sorted ring order after ``me``, every stride-th of
    them, at most ``limit`` (all when there are fewer).  Every node is probed by about ``limit``
    others, and the fleet costs ``len(nodes) * limit`` probes instead of n squared (pure)."""
    ring = sorted(set(nodes))
    if me not in ring:
        raise InputError("%s is not one of the nodes to sample among (%s)" % (me, ", ".join(ring[:10])))
    i = ring.index(me)
    others = ring[i + 1:] + ring[:i]
    if limit <= 0 or not others:
        return []
    k = min(len(others), limit)
    stride = max(1, len(others) // k)
    return others[stride - 1::stride][:k]


def connectivity_peers(nodes, node, limit, hostvars, option="limit"):
    """The sample of ``nodes`` that ``node`` probes (``sample_peers``), at most ``limit``, as reachability targets;
    ``option`` names ``limit`` in an error (the filter's argument, or the variable it came from)."""
    try:
        # a whole number or its text; anything else gets params.number's message (which also takes 8.0 as 8)
        given = bounded_int(limit, 0, params.MAX_LIST * 64)
        limit = given if given is not None else params.number(option, limit, 0, params.MAX_LIST * 64, integer=True)
        peers = sample_peers(list(nodes), node, limit)
    except InputError as exc:
        raise AnsibleFilterError(exc.message)
    try:
        # each peer's address by the inventory-node contract; the name stays the inventory name
        return [{"address": peer["address"], "name": peer["host"]} for peer in inventory_nodes(peers, hostvars)]
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))
