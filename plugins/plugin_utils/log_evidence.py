# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Log lines as the evidence of the findings they explain (the log_evidence filter, the node_pass
record of a host and the fleet's records)."""

from __future__ import annotations

import copy

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind

LINES_SHOWN = 3
# subjects about the cluster, not one node (webhook.cni_deadlock is about a webhook): explained from any node
CLUSTER_PREFIXES = ("webhook:",)
MAX_ITEMS = 100000


def node_of(subject):
    """The node a subject names: ``node2`` of ``node2``, ``node2/calico-node-x``, ``node2:/opt/cni/bin`` and
    ``node2 198.19.2.0/24`` (a route finding's)."""
    return str(subject).split("/", 1)[0].split(":", 1)[0].split(" ", 1)[0]


def _checked_list(value, what):
    if not isinstance(value, list):
        raise AnsibleFilterError("log_evidence expects %s as a list, got %s" % (what, kind(value)))
    if len(value) > MAX_ITEMS:
        raise AnsibleFilterError("log_evidence: %s holds %d items, more than %d" % (what, len(value), MAX_ITEMS))
    for item in value:
        if not isinstance(item, dict):
            raise AnsibleFilterError("log_evidence expects %s to hold dicts, got %s" % (what, kind(item)))
    return value


def _explains(match, found):
    if found.get("check") not in (match.get("explains") or []):
        return False
    subject = str(found.get("subject"))
    if subject == "cluster" or subject.startswith(CLUSTER_PREFIXES):
        return True
    return node_of(subject) == node_of(match.get("subject"))


def log_evidence(findings, matches):
    findings = _checked_list(findings, "the findings")
    matches = _checked_list(matches, "matches")
    used, out = set(), []
    for found in findings:
        if str(found.get("check", "")).startswith("log."):
            out.append(found)
            continue
        explaining = [m for m in matches if _explains(m, found)]
        if not explaining:
            out.append(found)
            continue
        found = copy.deepcopy(found)
        evidence = found.get("evidence") if isinstance(found.get("evidence"), dict) else {}
        evidence = dict(evidence, logs=[{
            "check": m.get("check"), "subject": m.get("subject"), "count": m.get("count"),
            "first": m.get("first"), "last": m.get("last"), "lines": list(m.get("lines") or [])[:LINES_SHOWN]}
            for m in explaining])
        found["evidence"] = evidence
        used.update((m.get("check"), m.get("subject")) for m in explaining)
        out.append(found)
    return [f for f in out if (f.get("check"), f.get("subject")) not in used]


def with_log_evidence(entries, matches):
    """The log lines of ``matches`` under the findings of ``entries`` ({scenario: {findings...}}, a
    host's or the fleet's) they explain (log_evidence); the log findings used so are not repeated on
    their own.  Changes ``entries`` in place."""
    tagged = [dict(f, _scenario=name) for name, entry in sorted(entries.items()) for f in entry["findings"]]
    kept = log_evidence(tagged, matches)
    for name, entry in entries.items():
        entry["findings"] = [dict((k, v) for k, v in f.items() if k != "_scenario") for f in kept
                             if f["_scenario"] == name]
