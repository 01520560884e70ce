# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The terminal summary of a fleet report (the triage_summary_lines filter).

What changed since the previous run first, then the counts, the coverage (hosts not checked, scenarios
that did not run), the silenced problems, and the problems grouped by check, critical first; every line
passed through ``terminal_text`` (what the report holds is shown, never obeyed).
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import first_names
from ansible_collections.k8snet.triage.plugins.plugin_utils.terminal import terminal_text


def _count_line(title, counter):
    return "%s: %s" % (title, ", ".join("%d %s" % (n, name) for name, n in sorted(counter.items())))


def triage_summary_lines(report, limit=40):
    """A concise terminal summary: coverage and counts, then problems grouped by check, critical first;
    every line passed through ``terminal_text`` (what the report holds is shown, never obeyed)."""
    return [terminal_text(line) for line in _summary_lines(report, limit)]


def _where(item):
    return "%s  %s" % (item.get("host") or "fleet", item.get("subject"))


def _since_lines(report):
    """What changed since the previous run, first: the new problems (not silenced), what was resolved."""
    since = report.get("since")
    if not isinstance(since, dict):
        return []
    resolved, unverified = since.get("resolved") or [], since.get("unverified") or []
    silenced = report["counts"].get("silenced", 0)
    lines = ["since the last run (%s): %d new, %d ongoing, %d resolved, %d not checked again%s" % (
        since.get("previous") or "none before", since.get("new", 0), since.get("ongoing", 0),
        since.get("resolved_total", len(resolved)),
        since.get("unverified_total", len(unverified)), ("; %d silenced" % silenced) if silenced else "")]
    fresh = [f for f in report["findings"] if (f.get("state") == "new" or f.get("escalated")) and not f.get("silenced")
             and f.get("severity") in ("critical", "warning")]
    for item in fresh[:10]:
        lines.append("NEW %s %s  %s%s" % (item["severity"].upper(), item["check"], _where(item),
                                          " (was %s)" % item.get("previous_severity") if item.get("escalated") else ""))
    if len(fresh) > 10:
        lines.append("    ... and %d more new" % (len(fresh) - 10))
    for item in resolved[:5]:
        lines.append("RESOLVED %s  %s (since %s)" % (item.get("check"), _where(item), item.get("first_seen")))
    if since.get("resolved_total", len(resolved)) > 5:
        lines.append("    ... and %d more resolved" % (since.get("resolved_total", len(resolved)) - 5))
    return lines


def _coverage_lines(coverage, hosts):
    """The coverage: hosts and host x scenario pairs by status, the hosts not checked, and the scenarios
    that did not run on reached hosts."""
    lines = []
    if coverage.get("hosts"):
        lines.append(_count_line("hosts", coverage["hosts"]))
    if coverage.get("scenarios"):
        lines.append(_count_line("scenarios (host x scenario)", coverage["scenarios"]))
    nodes = coverage.get("nodes") or {}
    if nodes and not nodes.get("checked"):
        lines.append("NO NODE CHECKED: %s (the Kubernetes API's side only)" % nodes.get("reason"))
    for host in sorted(hosts):
        info = hosts[host]
        if info.get("status", "reached") not in ("reached", "controller"):
            reason = (" (%s)" % info["reason"]) if info.get("reason") else ""
            lines.append("NOT CHECKED %s: %s%s" % (host, info.get("status"), reason))
    retried = coverage.get("ssh_retries") or {}
    if retried:
        lines.append("SSH RETRIED on %d host%s (a connection got no answer in time and was tried again; retries): %s"
                     % (len(retried), "" if len(retried) == 1 else "s",
                        first_names(["%s (%s)" % (h, n) for h, n in sorted(retried.items())])))
    # scenarios that did not run on reached hosts, grouped by scenario, status and reason
    for gap in coverage.get("gaps") or []:
        names = gap["hosts"]
        lines.append("%s %s on %s: %s" % (gap["scenario"], gap["status"], first_names(names), gap["reason"]))
    return lines


def _grouped(findings):
    """``({(severity, check): [finding]}, [silenced finding])`` of the critical and warning findings."""
    groups, silenced = {}, []
    for item in findings:
        if item["severity"] not in ("critical", "warning"):
            continue
        if item.get("silenced"):
            silenced.append(item)
            continue
        groups.setdefault((item["severity"], item["check"]), []).append(item)
    return groups, silenced


def _silenced_lines(silenced):
    """The first five silenced problems, with who silenced them, why and until when."""
    lines = []
    for item in silenced[:5]:
        mark = item["silenced"] if isinstance(item["silenced"], dict) else {}
        lines.append("SILENCED %s %s  %s: %s (%s, until %s)" % (item["severity"], item["check"], _where(item),
                                                                mark.get("reason"), mark.get("created_by"),
                                                                mark.get("expires")))
    if len(silenced) > 5:
        lines.append("    ... and %d more silenced" % (len(silenced) - 5))
    return lines


def _placed(item):
    """Where a problem is: its host, or for a fleet finding the hosts it concerns."""
    if item.get("scope") == "fleet":
        return "fleet (%s)" % first_names([str(h) for h in item.get("hosts") or []])
    return item["host"]


def _group_lines(severity, check, items):
    """One check's problems: the check and its first summary, up to five places, and the next step."""
    lines = ["%s %s (%d): %s" % (severity.upper(), check, len(items), items[0]["summary"])]
    for item in items[:5]:
        lines.append("    %s  %s" % (_placed(item), item["subject"]))
    if len(items) > 5:
        lines.append("    ... and %d more" % (len(items) - 5))
    if items[0].get("remediation"):
        lines.append("    next: %s" % items[0]["remediation"])
    return lines


def _problem_lines(groups, limit):
    """The problems grouped by check, critical first, at most ``limit`` checks (always the first)."""
    lines = []
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0] != "critical", kv[0][1]))
    for shown, ((severity, check), items) in enumerate(ordered, 1):
        lines.extend(_group_lines(severity, check, items))
        if shown >= limit:
            break
    return lines


def _summary_lines(report, limit):
    """The summary's lines, not yet made safe for a terminal."""
    counts = report["counts"]["severity"]
    hosts = report["hosts"]
    lines = _since_lines(report)
    lines.append("%d critical, %d warning, %d info, %d ok on %d hosts" % (
        counts.get("critical", 0), counts.get("warning", 0), counts.get("info", 0), counts.get("ok", 0), len(hosts)))
    lines.extend(_coverage_lines(report.get("coverage") or {}, hosts))
    if report["counts"]["layer"]:
        lines.append("by layer: " + ", ".join("%s %d" % kv for kv in sorted(report["counts"]["layer"].items())))
    groups, silenced = _grouped(report["findings"])
    lines.extend(_silenced_lines(silenced))
    lines.extend(_problem_lines(groups, limit))
    return lines
