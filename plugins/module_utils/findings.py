# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The findings contract (docs/developing.md, "Findings in roles"), shared by every module.

A finding is a plain dict with the same keys everywhere:
``check``, ``severity``, ``layer``, ``subject``, ``summary``, ``evidence``, ``remediation``.
"""

from __future__ import annotations

SEVERITIES = ("ok", "info", "warning", "critical")
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


def sample(items, limit=EVIDENCE_SAMPLE):
    """The first ``limit`` items of a list, for evidence that must stay small."""
    items = list(items)
    return items[:limit]


def worst(findings):
    """The highest severity among findings ('ok' for none)."""
    rank = {name: i for i, name in enumerate(SEVERITIES)}
    return max((f["severity"] for f in findings), key=rank.get, default="ok")


def sort_findings(findings):
    """Most severe first, then by check and subject, for stable reports."""
    rank = {name: i for i, name in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (-rank[f["severity"]], f["check"], str(f["subject"])))
