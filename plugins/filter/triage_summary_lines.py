# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The terminal summary of a fleet report."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.terminal import terminal_text

DOCUMENTATION = """
name: triage_summary_lines
short_description: a concise terminal summary of a triage report
version_added: 0.1.0
description:
  - Turns the output of P(k8snet.triage.triage_report#filter) into lines for a terminal. When the report was
    compared with the previous run (the C(report_write) action does), it leads with what changed - the new
    problems (and those escalated) not silenced, then the resolved ones; silenced problems are listed apart,
    with who silenced them, why and until when, and left out of the groups below.
  - Then counts by severity,
    the coverage (hosts not checked, scenarios skipped or failed with the reason) and layer first, then the
    problems grouped by check (critical first) with up to five hosts each and the
    next step to run.
  - Control characters (ESC, CR, newlines, other C0 and C1 controls), bidirectional overrides and other
    invisible format characters in the report are shown as visible escapes such as C(\\x1b), so one line stays
    one line and nothing in a finding can drive the terminal.
options:
  _input:
    description: The report built by P(k8snet.triage.triage_report#filter).
    type: dict
    required: true
  limit:
    description: The most checks to list.
    type: int
    default: 40
"""

EXAMPLES = """
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ report | k8snet.triage.triage_summary_lines }}"
"""

RETURN = """
_value:
  description: The summary lines.
  type: list
  elements: str
"""


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
        since.get("previous") or "none before", since.get("new", 0), since.get("ongoing", 0), len(resolved),
        len(unverified), ("; %d silenced" % silenced) if silenced else "")]
    fresh = [f for f in report["findings"] if (f.get("state") == "new" or f.get("escalated")) and not f.get("silenced")
             and f.get("severity") in ("critical", "warning")]
    for item in fresh[:10]:
        lines.append("NEW %s %s  %s%s" % (item["severity"].upper(), item["check"], _where(item),
                                          " (was %s)" % item.get("previous_severity") if item.get("escalated") else ""))
    if len(fresh) > 10:
        lines.append("    ... and %d more new" % (len(fresh) - 10))
    for item in resolved[:5]:
        lines.append("RESOLVED %s  %s (since %s)" % (item.get("check"), _where(item), item.get("first_seen")))
    if len(resolved) > 5:
        lines.append("    ... and %d more resolved" % (len(resolved) - 5))
    return lines


def _summary_lines(report, limit):
    counts = report["counts"]["severity"]
    hosts = report["hosts"]
    lines = _since_lines(report)
    lines.append("%d critical, %d warning, %d info, %d ok on %d hosts" % (
        counts.get("critical", 0), counts.get("warning", 0), counts.get("info", 0), counts.get("ok", 0), len(hosts)))
    coverage = report.get("coverage") or {}
    if coverage.get("hosts"):
        lines.append(_count_line("hosts", coverage["hosts"]))
    if coverage.get("scenarios"):
        lines.append(_count_line("scenarios (host x scenario)", coverage["scenarios"]))
    for host in sorted(hosts):
        info = hosts[host]
        if info.get("status", "reached") not in ("reached", "controller"):
            lines.append("NOT CHECKED %s: %s%s" % (host, info.get("status"), (" (%s)" % info["reason"]) if info.get("reason") else ""))
    # scenarios that did not run on reached hosts, grouped by scenario, status and reason
    for gap in coverage.get("gaps") or []:
        names = gap["hosts"]
        lines.append("%s %s on %s: %s" % (gap["scenario"], gap["status"], ", ".join(names[:5]) + (
            " and %d more" % (len(names) - 5) if len(names) > 5 else ""), gap["reason"]))
    if report["counts"]["layer"]:
        lines.append("by layer: " + ", ".join("%s %d" % kv for kv in sorted(report["counts"]["layer"].items())))
    groups, silenced = {}, []
    for item in report["findings"]:
        if item["severity"] in ("critical", "warning"):
            if item.get("silenced"):
                silenced.append(item)
                continue
            groups.setdefault((item["severity"], item["check"]), []).append(item)
    for item in silenced[:5]:
        mark = item["silenced"] if isinstance(item["silenced"], dict) else {}
        lines.append("SILENCED %s %s  %s: %s (%s, until %s)" % (item["severity"], item["check"], _where(item),
                                                                mark.get("reason"), mark.get("created_by"), mark.get("expires")))
    if len(silenced) > 5:
        lines.append("    ... and %d more silenced" % (len(silenced) - 5))
    shown = 0
    for (severity, check), items in sorted(groups.items(), key=lambda kv: (kv[0][0] != "critical", kv[0][1])):
        lines.append("%s %s (%d): %s" % (severity.upper(), check, len(items), items[0]["summary"]))
        for item in items[:5]:
            if item.get("scope") == "fleet":
                hosts = [str(h) for h in item.get("hosts") or []]
                where = "fleet (%s)" % (", ".join(hosts[:5]) + (" and %d more" % (len(hosts) - 5) if len(hosts) > 5 else ""))
            else:
                where = item["host"]
            lines.append("    %s  %s" % (where, item["subject"]))
        if len(items) > 5:
            lines.append("    ... and %d more" % (len(items) - 5))
        if items[0].get("remediation"):
            lines.append("    next: %s" % items[0]["remediation"])
        shown += 1
        if shown >= limit:
            break
    return lines


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_summary_lines": triage_summary_lines})
