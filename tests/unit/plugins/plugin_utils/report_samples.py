"""Reports for the unit tests of the report's history, silences and metrics: built by the real
triage_report from host records, as the report_write action builds them."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report


def item(check, severity, subject, summary="s", layer="L3"):
    return {"check": check, "severity": severity, "layer": layer, "subject": subject, "summary": summary,
            "evidence": {}, "remediation": ""}


def build(records, hosts=None):
    """records: {host: {scenario: [findings]} or "unreachable"}."""
    hostvars = {}
    for host, scenarios in records.items():
        if scenarios == "unreachable":
            hostvars[host] = {"triage_host": {"status": "unreachable", "reason": "ssh timed out"},
                              "triage_results": {"stale_arp": {"status": "not finished", "findings": []}}}
            continue
        hostvars[host] = {"triage_host": {"status": "reached", "reason": ""},
                          "triage_results": dict((name, {"status": "ran", "reason": "", "findings": found})
                                                 for name, found in scenarios.items())}
    return report.triage_report(hostvars, hosts or sorted(records))
