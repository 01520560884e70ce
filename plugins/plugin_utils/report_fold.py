# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pairwise findings folded into the finding an operator acts on (the report, controller side).

Some checks judge pairs: every node checks its route to every peer's pod CIDR (``route.*``, the peer in
``evidence.peer``), every prober its probes to every target (``reach.*``, the target as the subject).  At fleet
size one cause shows as many pairs: a peer whose pod CIDR nobody routes is ~n findings, a fleet that routes no
peer at all n x (n-1).  Folded here, from the findings alone:

- every observer has the finding for every other observer as peer (at least ``FOLD_MIN`` observers): one fleet
  finding, "no node routes any peer's pod CIDR" - the CNI's routing is down everywhere, or the pods go through an
  overlay the check was not told about;
- a target that ``FOLD_MIN`` or more observers report: one finding about the target ("the pod CIDR of node5 is
  not routed on 97 nodes", "node7 is unreachable from 12 probers");
- a prober that reports ``FOLD_MIN`` or more targets that other probers reach: one finding about the prober
  ("prober node3 reaches none of 11 targets that the others reach": its own network, or its load).

Each folded finding keeps the pairs in compact form (how many, the first observers and targets, the first
summaries) and is a fleet finding (``scope: fleet``, ``hosts``: the observers).  Fewer than ``FOLD_MIN`` pairs
stay as they are: a small lab reads as before.
"""

from __future__ import annotations

from collections import OrderedDict

from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, placed, sample, worst

FOLD_MIN = 3
# check -> how to find its target: ("evidence", key) or ("subject", None)
PAIRWISE = {
    "route.missing": ("evidence", "peer"),
    "route.unreachable": ("evidence", "peer"),
    "route.wrong_gateway": ("evidence", "peer"),
    "route.wrong_device": ("evidence", "peer"),
    "reach.unreachable": ("subject", None),
}
WHAT = {
    "route.missing": "not routed",
    "route.unreachable": "routed into a blackhole, unreachable or prohibit route",
    "route.wrong_gateway": "routed via the wrong gateway",
    "route.wrong_device": "routed out of the wrong device",
    "reach.unreachable": "unreachable",
}


def _target(item):
    how = PAIRWISE.get(item.get("check"))
    if how is None or item.get("scope") == "fleet" or not item.get("host"):
        return None
    if how[0] == "subject":
        return str(item.get("subject"))
    evidence = item.get("evidence") if isinstance(item.get("evidence"), dict) else {}
    value = evidence.get(how[1])
    return str(value) if value else None


def _folded(check, subject, summary, members, remediation, observers, extra=None, host=None):
    evidence = {"folded": len(members), "observers": len(observers), "hosts": sample(sorted(observers), 10),
                "targets": sample(sorted(set(_target(m) for m in members)), 10),
                "first": [m.get("summary") for m in members[:3]]}
    evidence.update(extra or {})
    layer = members[0].get("layer") or "L3"
    return placed(finding(check, worst(members), layer, subject, summary, evidence, remediation),
                  members[0].get("scenario", "triage"), "fleet", observers, host)


def _names(items, limit=5):
    items = sorted(items)
    return ", ".join(items[:limit]) + (" and %d more" % (len(items) - limit) if len(items) > limit else "")


def fold(flat, hosts):
    """The report's findings with the pairwise ones folded (see the module docstring); the others unchanged."""
    groups = OrderedDict()
    for item in flat:
        target = _target(item)
        if target is not None:
            groups.setdefault(item["check"], []).append(item)
    if not groups:
        return flat
    controller = "localhost" if "localhost" in hosts else None

    def where(name):
        return name if name in hosts else controller

    folded, drop = [], set()
    for check, items in groups.items():
        observers = set(i["host"] for i in items)
        targets = set(_target(i) for i in items)
        pairs = set((i["host"], _target(i)) for i in items)
        what = WHAT[check]
        # the whole fleet: every observer misses every other observer
        fleet = sorted(observers & targets)
        if len(fleet) >= FOLD_MIN and all((o, t) in pairs for o in fleet for t in fleet if o != t):
            members = [i for i in items if i["host"] in fleet and _target(i) in fleet]
            if check == "route.missing":
                head = "no node routes any peer's pod CIDR"
            elif check.startswith("route."):
                head = "every node has every peer's pod CIDR %s" % what
            else:
                head = "every node finds every peer %s" % what
            folded.append(_folded(
                check, "fleet", "%s: %d nodes x %d peers (%s)" % (head, len(fleet), len(fleet) - 1, _names(fleet)),
                members,
                "one cause for the whole fleet: the CNI's routing is down everywhere (its agents, BGP), or the pods "
                "go through an overlay the check was not told about (pod_network_mode overlay and the tunnel device)"
                if check.startswith("route.") else
                "every node fails every peer: the probes themselves (a firewall on every node, the probe port), "
                "or the controller's load; run the connectivity scenario on a few nodes with -f 5",
                observers, {"pairs": len(members)}, controller))
            drop.update(id(m) for m in members)
        rest = [i for i in items if id(i) not in drop]
        by_target = OrderedDict()
        for item in rest:
            by_target.setdefault(_target(item), []).append(item)
        for target, members in by_target.items():
            seen_by = set(m["host"] for m in members)
            if len(seen_by) < FOLD_MIN:
                continue
            cidr = (members[0].get("evidence") or {}).get("cidr") if check.startswith("route.") else None
            subject = "%s %s" % (target, cidr) if cidr else target
            folded.append(_folded(
                check, subject,
                "%s%s is %s on %d nodes: %s" % ("the pod CIDR of %s (%s)" % (target, cidr) if cidr else target,
                                                "" if cidr else " (the target)", what, len(seen_by), _names(seen_by)),
                members,
                "one cause about %s, seen from many nodes: look at %s first (its CNI agent, its announcement of its "
                "pod CIDR, its firewall), then at one of the observers; %s" % (target, target,
                                                                               members[0].get("remediation") or ""),
                seen_by, host=where(target)))
            drop.update(id(m) for m in members)
        rest = [i for i in rest if id(i) not in drop]
        if check == "reach.unreachable":
            # what is left: targets fewer than FOLD_MIN probers report, so the others reach them
            by_prober = OrderedDict()
            for item in rest:
                by_prober.setdefault(item["host"], []).append(item)
            for prober, members in by_prober.items():
                if len(members) < FOLD_MIN:
                    continue
                folded.append(_folded(
                    check, "prober %s" % prober,
                    "prober %s reaches none of %d targets (%s) that the other probers reach: its own network, "
                    "firewall or load" % (prober, len(members), _names(set(_target(m) for m in members))),
                    members,
                    "look at %s itself: its routes and firewall (k8snet.triage.route_check, iptables_drops), its "
                    "CPU and its socket buffers during the run" % prober,
                    {prober}, host=prober))
                drop.update(id(m) for m in members)
    return [i for i in flat if id(i) not in drop] + folded
