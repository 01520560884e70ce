# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""JMESPath over the fleet report (controller side): which findings to list (report_select) and
when the run fails (report_fail_on). The jmespath import is guarded: without the library both
fail with a message that says how to install it."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError:  # pragma: no cover - exercised by the unit test that hides the library
    jmespath = None
    JMESPathError = Exception

FINDING_KEYS = ("check", "severity")
# report_fail_on's shorthand values: each is the JMESPath expression it stands for (a bare word is
# never a useful condition of its own - it would name a field the report does not have).
SHORTHANDS = {
    "critical": "findings[?severity=='critical' && !silenced]",
    "new_critical": "findings[?severity=='critical' && !silenced && (state=='new' || escalated)]",
    "new_warning": "findings[?(severity=='critical' || severity=='warning') && !silenced && (state=='new' || escalated)]",
}


def _require(option):
    if jmespath is None:
        raise AnsibleFilterError(
            "%s needs the Python library jmespath on the controller (the Python that runs ansible-playbook, "
            "or the execution environment): pip install jmespath" % option)


def _host_groups(groups):
    """host -> sorted group names (without all and ungrouped), from the inventory's groups."""
    if groups is None:
        return {}
    if not isinstance(groups, dict):
        raise AnsibleFilterError("groups must be the inventory's groups (a dict of group name to hosts)")
    out = {}
    for name, hosts in groups.items():
        if name in ("all", "ungrouped") or not isinstance(hosts, (list, tuple)):
            continue
        for host in hosts:
            out.setdefault(host, []).append(name)
    return dict((host, sorted(names)) for host, names in out.items())


def _findings_with_groups(report, groups, option):
    if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
        raise AnsibleFilterError("%s works on a report from k8snet.triage.triage_report (a dict with findings)" % option)
    by_host = _host_groups(groups)
    return [dict(item, groups=by_host.get(item.get("host"), [])) for item in report["findings"] if isinstance(item, dict)]


def _search(expression, data, option):
    if not isinstance(expression, str) or not expression.strip():
        raise AnsibleFilterError("%s must be a JMESPath expression (a non-empty string)" % option)
    try:
        return jmespath.search(expression, data)
    except JMESPathError as exc:
        raise AnsibleFilterError("%s is not a valid JMESPath expression (%s): %s" % (option, expression, exc))


def _is_finding(item):
    return isinstance(item, dict) and all(key in item for key in FINDING_KEYS)


def _truthy(value):
    """JMESPath's truth: false, null, empty list, empty object and empty string are false."""
    return not (value is None or value is False or value == [] or value == {} or value == "")


def report_select(report, expression, groups=None):
    _require("report_select")
    findings = _findings_with_groups(report, groups, "report_select")
    if expression is None or (isinstance(expression, str) and not expression.strip()):
        selected = findings
    else:
        selected = _search(expression, findings, "report_select")
    if selected is None:
        raise AnsibleFilterError(
            "report_select %r selected nothing at all (null, not an empty list): it names a field the findings "
            "do not have; findings have check, severity, layer, subject, summary, evidence, remediation, host, "
            "groups and scope" % (expression,))
    if not isinstance(selected, list) or not all(_is_finding(item) for item in selected):
        raise AnsibleFilterError(
            "report_select must select findings, e.g. [?severity=='critical'], not reshape them; %r gave %r"
            % (expression, selected if not isinstance(selected, list) else selected[:3]))
    return [dict((k, v) for k, v in f.items() if k != "groups") for f in selected]


def report_fail_on(report, expression, groups=None):
    _require("report_fail_on")
    findings = _findings_with_groups(report, groups, "report_fail_on")
    data = dict(report, findings=findings)
    if isinstance(expression, str) and expression.strip() in SHORTHANDS:
        expression = SHORTHANDS[expression.strip()]
    found = _search(expression, data, "report_fail_on")
    if found is None:
        # a misspelt field gives null, which would never fail the run: a false green, so refuse it
        raise AnsibleFilterError(
            "report_fail_on %r evaluated to null: it names a field the report does not have (the report has "
            "findings, counts, hosts, since and worst; findings have check, severity, layer, subject, host, groups, "
            "state, first_seen, escalated and silenced); "
            "an expression that selects nothing must give [] or false, e.g. findings[?severity=='critical']"
            % (expression,))
    return _truthy(found)
