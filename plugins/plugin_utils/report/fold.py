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
  not routed on 97 nodes", "node7 is unreachable from 12 probers", "node7 is silent to path-MTU probes on 8 nodes");
- a prober that reports ``FOLD_MIN`` or more targets that other probers reach: one finding about the prober
  ("prober node3 reaches none of 11 targets that the others reach": its own network, or its load).

Each folded finding keeps the pairs in compact form (how many, the first observers and targets, the first
summaries) and is a fleet finding (``scope: fleet``, ``hosts``: the observers).  Fewer than ``FOLD_MIN`` pairs
stay as they are: a small lab reads as before.

Then one root cause across checks: a node that is down (``node_down``).  When no prober reached a node
(``connectivity.node_isolated``), what the other nodes saw of it - their probes to it, their next hop to it that
does not resolve, their BGP session with it - are symptoms of that one cause, and SSH to it failing (not refused:
a refusal proves the host up) is the same fact seen from the controller.  They become one finding about the node,
its SSH failure when there is one (or the isolation), with the symptoms counted in its evidence
(``corroborated_by``).
"""

from __future__ import annotations

from collections import OrderedDict

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, placed, sample, worst
from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import first_names

FOLD_MIN = 3
# check -> how to find its target: ("evidence", key) or ("subject", None)
PAIRWISE = {
    "route.missing": ("evidence", "peer"),
    "route.unreachable": ("evidence", "peer"),
    "route.wrong_gateway": ("evidence", "peer"),
    "route.wrong_device": ("evidence", "peer"),
    "route.next_hop_unresolved": ("evidence", "peer"),
    "reach.unreachable": ("subject", None),
    "bgp.not_established": ("evidence", "address"),
    "net.pmtu_unchecked": ("subject", None),
}
WHAT = {
    "route.missing": "not routed",
    "route.unreachable": "routed into a blackhole, unreachable or prohibit route",
    "route.wrong_gateway": "routed via the wrong gateway",
    "route.wrong_device": "routed out of the wrong device",
    "route.next_hop_unresolved": "a next hop that does not resolve (no ARP / ND answer)",
    "reach.unreachable": "unreachable",
    "bgp.not_established": "a BGP peer whose session is not Established",
    "net.pmtu_unchecked": "silent to path-MTU probes",
}
# what other nodes see of a node that is down: symptoms of it, about the node (see node_down)
DOWN_SYMPTOMS = ("reach.unreachable", "route.next_hop_unresolved", "bgp.not_established", "net.pmtu_unchecked")


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


def _pairwise(flat):
    """The pairwise findings of ``flat`` by check, in their order ({check: [finding]})."""
    groups = OrderedDict()
    for item in flat:
        target = _target(item)
        if target is not None:
            groups.setdefault(item["check"], []).append(item)
    return groups


def _fleet_head(check, what):
    """The start of the whole-fleet finding's summary of ``check``."""
    if check == "route.missing":
        return "no node routes any peer's pod CIDR"
    if check.startswith("route."):
        return "every node has every peer's pod CIDR %s" % what
    return "every node finds every peer %s" % what


def _fold_fleet(check, items, controller):
    """[(finding, members)]: one finding when every observer misses every other observer (at least FOLD_MIN)."""
    observers = set(i["host"] for i in items)
    targets = set(_target(i) for i in items)
    pairs = set((i["host"], _target(i)) for i in items)
    # the whole fleet: every observer misses every other observer
    fleet = sorted(observers & targets)
    if len(fleet) < FOLD_MIN or not all((o, t) in pairs for o in fleet for t in fleet if o != t):
        return []
    members = [i for i in items if i["host"] in fleet and _target(i) in fleet]
    head = _fleet_head(check, WHAT[check])
    return [(_folded(
        check, "fleet", "%s: %d nodes x %d peers (%s)" % (head, len(fleet), len(fleet) - 1,
                                                          first_names(sorted(fleet))),
        members,
        "one cause for the whole fleet: the CNI's routing is down everywhere (its agents, BGP), or the pods "
        "go through an overlay the check was not told about (pod_network_mode overlay and the tunnel device)"
        if check.startswith("route.") else
        "every node fails every peer: the probes themselves (a firewall on every node, the probe port), "
        "or the controller's load; run the connectivity scenario on a few nodes with -f 5",
        observers, {"pairs": len(members)}, controller), members)]


def _target_folded(check, target, members, seen_by, host):
    """The finding about one ``target`` that the observers ``seen_by`` report (``members``), held by ``host``."""
    cidr = (members[0].get("evidence") or {}).get("cidr") if check.startswith("route.") else None
    subject = "%s %s" % (target, cidr) if cidr else target
    return _folded(
        check, subject,
        "%s%s is %s on %d nodes: %s" % ("the pod CIDR of %s (%s)" % (target, cidr) if cidr else target,
                                        "" if cidr else " (the target)", WHAT[check], len(seen_by), first_names(sorted(seen_by))),
        members,
        "one cause about %s, seen from many nodes: look at %s first (its CNI agent, its announcement of its "
        "pod CIDR, its firewall), then at one of the observers; %s" % (target, target,
                                                                       members[0].get("remediation") or ""),
        seen_by, host=host)


def _fold_targets(check, rest, hosts, controller):
    """[(finding, members)]: one finding per target that FOLD_MIN or more observers report, held by the target
    when it is in the report, else by the controller."""
    by_target = OrderedDict()
    for item in rest:
        by_target.setdefault(_target(item), []).append(item)
    out = []
    for target, members in by_target.items():
        seen_by = set(m["host"] for m in members)
        if len(seen_by) >= FOLD_MIN:
            out.append((_target_folded(check, target, members, seen_by, target if target in hosts else controller),
                        members))
    return out


def _fold_probers(check, rest):
    """[(finding, members)]: one finding per prober that reports FOLD_MIN or more targets (reach.unreachable)."""
    if check != "reach.unreachable":
        return []
    # what is left: targets fewer than FOLD_MIN probers report, so the others reach them
    by_prober = OrderedDict()
    for item in rest:
        by_prober.setdefault(item["host"], []).append(item)
    return [(_folded(
        check, "prober %s" % prober,
        "prober %s reaches none of %d targets (%s) that the other probers reach: its own network, "
        "firewall or load" % (prober, len(members), first_names(sorted(set(_target(m) for m in members)))),
        members,
        "look at %s itself: its routes and firewall (k8snet.triage.route_check, iptables_drops), its "
        "CPU and its socket buffers during the run" % prober,
        {prober}, host=prober), members) for prober, members in by_prober.items() if len(members) >= FOLD_MIN]


def _take(steps, folded, drop):
    """Add each folded finding of ``steps`` to ``folded`` and its members to ``drop`` (by id)."""
    for item, members in steps:
        folded.append(item)
        drop.update(id(m) for m in members)


def _about(item):
    """The node a symptom finding is about: the target of a pairwise finding, folded or not; else None."""
    if item.get("check") not in DOWN_SYMPTOMS:
        return None
    targets = (item.get("evidence") or {}).get("targets") if item.get("scope") == "fleet" else None
    if targets is not None:
        return str(targets[0]) if len(targets) == 1 else None
    return _target(item)


def _observers(item):
    """The nodes that saw a symptom finding: a folded one's ``hosts``, else its own host."""
    return set(item.get("hosts") or []) if item.get("scope") == "fleet" else set([item.get("host")])


def _down_root(node, isolated, ssh, symptoms):
    """The one finding of a node that is down: its SSH failure (or its isolation) with the symptoms counted."""
    root = dict(ssh or isolated)
    corroborated = [{"check": isolated["check"], "summary": isolated["summary"]}] if ssh else []
    seen = {}
    for item in symptoms:
        entry = seen.setdefault(item["check"], {"check": item["check"], "observers": set(), "summary": item["summary"]})
        entry["observers"] |= _observers(item)
    for entry in seen.values():
        corroborated.append({"check": entry["check"], "observers": len(entry["observers"]),
                             "hosts": sample(sorted(entry["observers"]), 10), "summary": entry["summary"]})
    said = ["%s (%d node%s)" % (WHAT[e["check"]] if e["check"] != "reach.unreachable" else "unreachable from probes",
                                e["observers"], "" if e["observers"] == 1 else "s")
            for e in corroborated if "observers" in e]
    root["summary"] = "%s%s%s" % (
        root["summary"], "; the fleet agrees the node is down or cut off: %s" % isolated["summary"] if ssh else "",
        "; the other nodes see it as %s" % ", ".join(said) if said else "")
    root["evidence"] = dict(root.get("evidence") or {}, corroborated_by=corroborated, node_down=node)
    root["remediation"] = (
        "one cause: %s itself (%s); what the other nodes report about it (listed in corroborated_by) follows "
        "from it and needs no action of its own. %s" % (
            node, "power, kernel, its link or switch port" if ssh else "its link, address, firewall, then its switch "
            "port", root.get("remediation") or ""))
    return root


# what ssh's own words say about the host, in the order they are looked for (a reused connection's broken pipe comes
# before the fresh connection's verdict in the same message, so the verdicts are matched, not the first line)
SSH_FAILURES = (
    ("connection refused", "refused", "the node answered but nothing listens for SSH: sshd is down or the port is closed"),
    ("no route to host", "no answer", "the node does not answer on its network (no ARP or ND reply): down or cut off"),
    ("timed out", "no answer", "the node does not answer (the connection timed out): down, cut off or filtered"),
    ("not responding", "no answer", "the node stopped answering an open SSH session: down or cut off"),
    ("permission denied", "refused credentials", "sshd refused the user or key: the node is up"),
    ("host key verification failed", "host key", "the node's host key does not match the known one: the node is up"),
    ("could not resolve hostname", "unresolved name", "the controller cannot resolve the node's name"),
    ("connection reset", "reset", "the connection was reset during SSH's start: sshd or a filter closed it"),
    ("connection closed", "closed", "the connection was closed during SSH's start: sshd or a filter closed it"),
)
# the kinds that prove the host up: its sshd (or its kernel, refusing) answered
ANSWERED = ("refused", "refused credentials", "host key")


def ssh_failure(reason):
    """(kind, plain words) for ssh's error text, or (None, None) when it says nothing known."""
    text = str(reason or "").lower()
    for needle, kind, words in SSH_FAILURES:
        if needle in text:
            return kind, words
    return None, None


def node_down(flat, addresses=None):
    """``flat`` with each node that no prober reached folded with its symptoms into one root cause finding.
    ``addresses``: {address: node} (the inventory's), for the symptoms that name the node by its address (a BGP
    peer)."""
    names = {}
    for address, node in (addresses or {}).items():
        names.setdefault(node, set()).add(address)
    isolated = OrderedDict((str(f["subject"]), f) for f in flat if f.get("check") == "connectivity.node_isolated")
    if not isolated:
        return flat
    # an SSH connection refused proves the host up (it answered): its isolation is then a cause of its own
    ssh = dict((f.get("host"), f) for f in flat if f.get("check") == "triage.host_unreachable"
               and ssh_failure((f.get("evidence") or {}).get("reason"))[0] not in ANSWERED)
    drop, roots = set(), []
    for node, item in isolated.items():
        known = names.get(node, set()) | set([node])
        symptoms = [f for f in flat if _about(f) in known]
        root = _down_root(node, item, ssh.get(node), symptoms)
        drop.update(id(f) for f in symptoms + [item] + ([ssh[node]] if node in ssh else []))
        roots.append(root)
    return [f for f in flat if id(f) not in drop] + roots


def fold(flat, hosts, addresses=None):
    """The report's findings with the pairwise ones folded and each node that is down made one root cause (see
    the module docstring); the others unchanged.  ``addresses``: {address: node} of the inventory."""
    return node_down(_fold_pairs(flat, hosts), addresses)


def _fold_pairs(flat, hosts):
    """The report's findings with the pairwise ones folded."""
    groups = _pairwise(flat)
    if not groups:
        return flat
    controller = "localhost" if "localhost" in hosts else None
    folded, drop = [], set()
    for check, items in groups.items():
        # each step folds what the steps before it left
        _take(_fold_fleet(check, items, controller), folded, drop)
        _take(_fold_targets(check, [i for i in items if id(i) not in drop], hosts, controller), folded, drop)
        _take(_fold_probers(check, [i for i in items if id(i) not in drop]), folded, drop)
    return [i for i in flat if id(i) not in drop] + folded
