"""report_select / report_fail_on: JMESPath over a report built by the real triage_report filter."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.triage_report import triage_report
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import query as report_query
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.query import report_fail_on, report_select

GROUPS = {
    "all": ["cp1", "cp2", "w1"],
    "ungrouped": [],
    "k8s_nodes": ["cp1", "cp2", "w1"],
    "control_plane": ["cp1", "cp2"],
}


def _ran(*findings):
    return {"status": "ran", "reason": "", "findings": list(findings)}


def build_report():
    reached = {"status": "reached", "reason": ""}
    hostvars = {
        "cp1": {"triage_host": reached, "triage_results": {"stale_arp": _ran(
            finding("arp.stale_entry", "critical", "L2", "cp1/eth0 10.0.0.100", "stale MAC for the VIP"),
            finding("arp.ok", "ok", "L2", "cp1/eth0 10.0.0.101", "fine"))}},
        "cp2": {"triage_host": reached, "triage_results": {"calico": _ran(
            finding("bgp.not_established", "critical", "L3", "cp2 -> 10.0.0.3", "BGP session down"))}},
        "w1": {"triage_host": reached, "triage_results": {
            "stale_arp": _ran(finding("arp.stale_entry", "critical", "L2", "w1/eth0 10.0.0.100", "stale MAC for the VIP")),
            "dns": _ran(finding("dns.some_servers_fail", "warning", "DNS", "w1", "one pod does not answer"))}},
    }
    return triage_report(hostvars, ["cp1", "cp2", "w1"])


CP_L2 = "[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]"


def test_select_critical_l2_findings_of_control_plane_nodes():
    report = build_report()
    before = copy.deepcopy(report)
    selected = report_select(report, CP_L2, GROUPS)
    assert [(f["host"], f["check"]) for f in selected] == [("cp1", "arp.stale_entry")]
    assert "groups" not in selected[0]                      # only there while the expression runs
    assert set(selected[0]) == set(report["findings"][0])  # the finding as the report has it
    assert report == before                                 # the report is not modified


def test_select_empty_expression_keeps_every_finding_and_null_is_refused():
    report = build_report()
    assert report_select(report, "", GROUPS) == report["findings"]
    assert report_select(report, "[?check=='no.such']", GROUPS) == []
    # null is not "nothing selected" but a misspelt field: refused, so a typo cannot hide findings
    with pytest.raises(AnsibleFilterError, match="selected nothing at all"):
        report_select(report, "[?check=='no.such'] | [0]", GROUPS)


def test_fail_on_refuses_a_null_result():
    """A misspelt field evaluates to null, which would never fail the run: a false green."""
    with pytest.raises(AnsibleFilterError, match="evaluated to null"):
        report_fail_on(build_report(), "hosts.nobody")
    with pytest.raises(AnsibleFilterError, match="evaluated to null"):
        report_fail_on(build_report(), "findngs[?severity=='critical']")
    assert report_fail_on(build_report(), "hosts.nobody.worst == 'critical'") is False


def test_select_without_groups_sees_no_groups():
    assert report_select(build_report(), CP_L2) == []
    assert len(report_select(build_report(), "[?layer=='L2' && severity=='critical']")) == 2


@pytest.mark.parametrize("expression", ["[].check", "length(@)", "[0].evidence"])
def test_select_refuses_an_expression_that_reshapes_the_findings(expression):
    with pytest.raises(AnsibleFilterError, match="report_select must select findings"):
        report_select(build_report(), expression, GROUPS)


@pytest.mark.parametrize("expression, expected", [
    ("counts.severity.critical > `0`", True),
    ("counts.severity.critical > `5`", False),
    ("worst == 'critical'", True),
    ("findings[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]", True),
    ("findings[?severity=='critical' && layer=='DNS']", False),      # an empty list is false
    ("length(findings[?severity!='ok' && layer=='DNS']) >= `1`", True),
    ("hosts.w1.worst", True),                                        # a non-empty string is true
])
def test_fail_on_uses_jmespath_truth(expression, expected):
    assert report_fail_on(build_report(), expression, GROUPS) is expected


def test_fail_on_only_on_control_plane_l2_ignores_workers():
    report = build_report()
    report["findings"] = [f for f in report["findings"] if f["host"] == "w1"]  # the worker's critical L2 only
    assert report_fail_on(report, "findings[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]",
                          GROUPS) is False
    assert report_fail_on(report, "findings[?severity=='critical' && layer=='L2']", GROUPS) is True


@pytest.mark.parametrize("function, expression, message", [
    (report_fail_on, "findings[?severity=='critical'", "report_fail_on is not a valid JMESPath expression"),
    (report_select, "[?severity=='critical'", "report_select is not a valid JMESPath expression"),
    (report_fail_on, "", "report_fail_on must be a JMESPath expression"),
    (report_fail_on, 5, "report_fail_on must be a JMESPath expression"),
])
def test_bad_expressions_fail_clearly(function, expression, message):
    with pytest.raises(AnsibleFilterError, match=message):
        function(build_report(), expression, GROUPS)


@pytest.mark.parametrize("function", [report_fail_on, report_select])
def test_input_must_be_a_report(function):
    with pytest.raises(AnsibleFilterError, match="works on a report from k8snet.triage.triage_report"):
        function([{"check": "x", "severity": "ok"}], "@")
    with pytest.raises(AnsibleFilterError, match="groups must be the inventory's groups"):
        function(build_report(), "@", ["control_plane"])


@pytest.mark.parametrize("function, option", [(report_fail_on, "report_fail_on"), (report_select, "report_select")])
def test_missing_jmespath_says_how_to_install_it(monkeypatch, function, option):
    monkeypatch.setattr(report_query, "jmespath", None)
    with pytest.raises(AnsibleFilterError) as err:
        function(build_report(), "worst", GROUPS)
    assert str(err.value).startswith("%s needs the Python library jmespath on the controller" % option)
    assert "pip install jmespath" in str(err.value)


def test_the_documented_examples_work():
    """The examples of roles/report/README.md and the argument spec, on a report with BGP and DNS findings."""
    report = build_report()
    assert report_fail_on(report, "length(findings[?layer=='DNS' && severity!='ok']) >= `3`", GROUPS) is False
    assert report_fail_on(report, "length(findings[?layer=='DNS' && severity!='ok']) >= `1`", GROUPS) is True
    assert [f["check"] for f in report_select(report, "[?starts_with(check, 'bgp.')]", GROUPS)] == ["bgp.not_established"]
    assert [f["check"] for f in report_select(report, "[?severity!='ok' && layer=='DNS']", GROUPS)] == ["dns.some_servers_fail"]
