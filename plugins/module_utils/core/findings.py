# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The findings contract (docs/developing.md, "Findings in roles"), shared by every module.

A finding is a plain dict with the same keys everywhere:
``check``, ``severity``, ``layer``, ``subject``, ``summary``, ``evidence``, ``remediation``.
The controller adds where it stands, only through ``fleet`` and ``placed``: ``scope`` (``host``, or
``fleet`` for a conclusion about several hosts, counted once by the report) with ``hosts``, the hosts it
concerns, and in the report ``scenario`` and ``host``.
"""

from __future__ import annotations

SEVERITIES = ("ok", "info", "warning", "critical")
SCOPES = ("host", "fleet")
LAYERS = ("L2", "L3", "L4", "L7", "DNS", "control-plane")

# Top-N cap for lists inside evidence: AWX stores every task result.
EVIDENCE_SAMPLE = 10


def finding(check, severity, layer, subject, summary, evidence=None, remediation=""):
    """Build one finding, refusing values outside the contract (a programming error)."""
    if severity not in SEVERITIES:
        raise ValueError("severity %r is not one of %s" % (severity, ", ".join(SEVERITIES)))
    if layer not in LAYERS:
        raise ValueError("layer %r is not one of %s" % (layer, ", ".join(LAYERS)))
    return {
        "check": check,
        "severity": severity,
        "layer": layer,
        "subject": subject,
        "summary": summary,
        "evidence": evidence or {},
        "remediation": remediation,
    }


def fleet(item, hosts):
    """A copy of finding ``item`` as a fleet conclusion: ``scope`` fleet, ``hosts`` the hosts it concerns
    (sorted, unique)."""
    return dict(item, scope="fleet", hosts=sorted(set(str(h) for h in hosts)))


_UNSET = object()


def placed(item, scenario, scope=None, hosts=None, host=_UNSET):
    """A copy of finding ``item`` as the report holds it: the ``scenario`` that found it, its ``scope``
    (given, else its own when it is one of SCOPES, else host), the ``hosts`` it concerns when given, the ``host`` that holds it when given."""
    if scope is not None and scope not in SCOPES:
        raise ValueError("scope %r is not one of %s" % (scope, ", ".join(SCOPES)))
    out = dict(item, scenario=scenario, scope=scope or (item.get("scope") if item.get("scope") in SCOPES else "host"))
    if hosts is not None:
        out["hosts"] = sorted(set(str(h) for h in hosts))
    if host is not _UNSET:
        out["host"] = host
    return out


def check_failed(scenario, subject, error):
    """The finding of a scenario that could not run on ``subject`` (a node, the Kubernetes API, a pod)."""
    return finding("triage.check_failed", "warning", "control-plane", subject,
                   "the %s check could not run on %s: %s" % (scenario, subject, error),
                   {"scenario": scenario, "error": error},
                   "Run playbook k8snet.triage.%s alone with -v on this host to see why." % scenario)


def sample(items, limit=EVIDENCE_SAMPLE):
    """The first ``limit`` items of a list, for evidence that must stay small."""
    items = list(items)
    return items[:limit]


def collapse(found, over, unit):
    """``found`` (findings of one check each about one subject: a node, a Service) with each check found on more than
    ``over`` subjects said once: its count of ``unit`` (``nodes``, ``Services``), the worst severity, the first
    subjects and the first findings' summaries and evidence; the others as they are, in their order. 3,000 NotReady
    nodes are one problem to read, not 3,000."""
    by_check = {}
    for item in found:
        by_check.setdefault(item["check"], []).append(item)
    out = []
    for check, items in by_check.items():
        if len(items) <= over:
            out.extend(items)
            continue
        subjects = [item["subject"] for item in items]
        severity = max((item["severity"] for item in items), key=SEVERITIES.index)
        out.append(finding(
            check, severity, items[0]["layer"], "%d %s" % (len(items), unit),
            "%s on %d %s (%s, ...); the first: %s" % (
                check, len(items), unit, ", ".join(subjects[:5]), items[0]["summary"]),
            {"count": len(items), unit.lower(): sample(subjects), "first": [item["evidence"] for item in items[:3]],
             "summaries": [item["summary"] for item in items[:5]]},
            items[0]["remediation"]))
    return out


def worst(findings):
    """The highest severity among findings ('ok' for none)."""
    rank = {name: i for i, name in enumerate(SEVERITIES)}
    return max((f["severity"] for f in findings), key=rank.get, default="ok")


def sort_findings(findings):
    """Most severe first, then by check and subject, for stable reports."""
    rank = {name: i for i, name in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (-rank[f["severity"]], f["check"], str(f["subject"])))
