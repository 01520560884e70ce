"""The report over time: each finding's stable identity, new / ongoing / resolved / unverified against
the previous report, the history kept (atomically, bounded), and report_fail_on's shorthands."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from datetime import datetime, timedelta, timezone

import pytest
from ansible.errors import AnsibleError

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report, history as report_history
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.query import report_fail_on

from .report_samples import build, item

T0, T1 = "2026-01-01T00:00:00+00:00", "2026-01-01T00:15:00+00:00"


def annotated(records, previous=None, now=T1):
    data = report_history.compare(build(records), previous, now)
    data["generated"] = now
    return report.recount(data)


def by_check(data):
    return dict((f["check"], f) for f in data["findings"])


def test_identity_is_the_documented_hash_of_check_host_and_subject():
    finding = dict(item("arp.stale_entry", "critical", "10.0.0.5"), host="node3")
    expected = hashlib.sha256(json.dumps(["arp.stale_entry", "node3", "10.0.0.5"], separators=(",", ":"))
                              .encode()).hexdigest()[:16]
    assert report_history.finding_id(finding) == expected
    # the summary, the evidence and the severity are not part of it; check, host and subject are
    assert report_history.finding_id(dict(finding, summary="other", severity="warning", evidence={"n": 2})) == expected
    for key, value in (("check", "arp.other"), ("host", "node2"), ("subject", "10.0.0.6")):
        assert report_history.finding_id(dict(finding, **{key: value})) != expected
    # a structured subject has one identity whatever its keys' order
    assert (report_history.finding_id(dict(finding, subject={"a": 1, "b": 2}))
            == report_history.finding_id(dict(finding, subject={"b": 2, "a": 1})))


def test_first_run_every_problem_is_new_and_ok_findings_have_no_state():
    data = annotated({"n1": {"dns": [item("dns.timeout", "critical", "10.96.0.10"), item("dns.ok", "ok", "a")]}})
    found = by_check(data)
    assert found["dns.timeout"]["state"] == "new" and found["dns.timeout"]["first_seen"] == T1
    assert "state" not in found["dns.ok"] and found["dns.ok"]["id"]
    assert data["since"]["previous"] is None
    assert data["counts"]["state"] == {"new": 1, "ongoing": 0, "resolved": 0, "unverified": 0}


def test_second_run_ongoing_keeps_first_seen_resolved_and_escalated():
    first = annotated({"n1": {"dns": [item("dns.timeout", "critical", "10.96.0.10"), item("dns.slow", "warning", "b"),
                                      item("dns.gone", "warning", "c")]}}, now=T0)
    first = report_history.history_entry(first)
    second = annotated({"n1": {"dns": [item("dns.timeout", "critical", "10.96.0.10", summary="other numbers"),
                                       item("dns.slow", "critical", "b"), item("dns.fresh", "warning", "d")]}}, first)
    found = by_check(second)
    assert found["dns.timeout"]["state"] == "ongoing" and found["dns.timeout"]["first_seen"] == T0
    assert "escalated" not in found["dns.timeout"]
    assert found["dns.slow"]["state"] == "ongoing" and found["dns.slow"]["escalated"] is True
    assert found["dns.slow"]["previous_severity"] == "warning"
    assert found["dns.fresh"]["state"] == "new" and found["dns.fresh"]["first_seen"] == T1
    assert [(r["check"], r["first_seen"], r["last_seen"]) for r in second["since"]["resolved"]] == [("dns.gone", T0, T0)]
    assert second["since"]["unverified"] == [] and second["since"]["previous"] == T0
    assert second["counts"]["state"] == {"new": 1, "ongoing": 2, "resolved": 1, "unverified": 0}


def test_a_problem_turned_ok_is_resolved_not_ongoing():
    first = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x")]}}, now=T0)
    second = annotated({"n1": {"dns": [item("dns.timeout", "ok", "x")]}}, first)
    assert [r["check"] for r in second["since"]["resolved"]] == ["dns.timeout"]
    assert "state" not in second["findings"][0]


def test_what_was_not_checked_again_is_unverified_not_resolved():
    first = annotated({"n1": {"stale_arp": [item("arp.stale_entry", "critical", "10.0.0.5")]},
                       "n2": {"dns": [item("dns.timeout", "critical", "x")]}}, now=T0)
    # n1 down now; on n2 the dns scenario did not run (another scenario did)
    second = annotated({"n1": "unreachable", "n2": {"cni": []}}, first)
    assert second["since"]["resolved"] == []
    why = dict((u["check"], u["why"]) for u in second["since"]["unverified"])
    assert why == {"arp.stale_entry": "its host was unreachable this time",
                   "dns.timeout": "scenario dns was not run on n2 this time"}


def test_history_is_written_atomically_bounded_and_the_newest_is_compared_with(tmp_path):
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for n in range(5):
        data = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x%d" % n)]}}, now=(start + timedelta(minutes=n)).isoformat())
        path = report_history.keep_history(str(tmp_path), data, start + timedelta(minutes=n), 3)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    names = sorted(os.listdir(tmp_path / "history"))
    assert names == ["triage-report-20260101T00%02d00.000000Z.json" % n for n in (2, 3, 4)]  # no temporary file left
    previous, source, newest = report_history.previous_report(str(tmp_path))
    assert source.endswith(names[-1]) and previous["findings"][0]["subject"] == "x4" and newest is previous
    # a file that is not ours in the history directory is neither read nor removed
    (tmp_path / "history" / "notes.json").write_text("{}")
    report_history.keep_history(str(tmp_path), data, start + timedelta(minutes=9), 1)
    assert sorted(os.listdir(tmp_path / "history")) == ["notes.json", "triage-report-20260101T000900.000000Z.json"]


def test_history_entries_stay_small():
    long_text = "y" * 5000
    data = annotated({"n1": {"dns": [dict(item("dns.timeout", "critical", "x", summary=long_text), evidence={"big": long_text})]}})
    entry = report_history.history_entry(data)
    assert len(json.dumps(entry)) < 3000 and entry["findings"][0]["summary"].endswith("...")


def test_without_history_the_report_json_left_before_is_the_previous(tmp_path):
    assert report_history.previous_report(str(tmp_path)) == (None, None, None)
    (tmp_path / "triage-report.json").write_text(json.dumps({"generated": T0, "findings": []}))
    previous, source, _newest = report_history.previous_report(str(tmp_path))
    assert previous["generated"] == T0 and source == str(tmp_path / "triage-report.json")


# ------------------------------------------------------------------ a switch put back (lb_health, S003-12)
T2 = "2026-01-01T00:30:00+00:00"
SVC = "openshift-ingress/router-default"


def lb_run(*found):
    return {"localhost": {"lb_health": list(found)}}


def test_a_switched_service_found_back_at_local_is_reverted_not_expected(tmp_path):
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    # a triage before: the expected-with-Local warning
    before = annotated(lb_run(item("lb.nodes_without_endpoints", "warning", SVC, layer="L4")), now=T0)
    report_history.keep_history(str(tmp_path), before, start, 20)
    # the lb_health playbook switches it and records only its run in the history (its own kind of entry)
    prev, _source, newest = report_history.previous_report(str(tmp_path), scenario="lb_health")
    assert prev is None and newest["generated"] == T0
    switch = report_history.compare(build(lb_run(item("lb.policy_switched", "ok", SVC, layer="L4"))), prev, T1,
                                    switches=newest)
    assert switch["since"]["lb_switches"] == {SVC: {"at": T1, "host": "localhost"}}
    report_history.keep_history(str(tmp_path), switch, start + timedelta(minutes=15), 20, scenario="lb_health")
    # a later triage compares with the triage's own entry, and carries the switch from the newest entry
    prev, source, newest = report_history.previous_report(str(tmp_path))
    assert prev["generated"] == T0 and newest["scenario"] == "lb_health"
    again = report_history.compare(build(lb_run(item("lb.nodes_without_endpoints", "warning", SVC, layer="L4",
                                                     summary="2 of 3 nodes (n2, n3) have no ready local endpoint"))),
                                   prev, T2, source, switches=newest)
    [reverted] = again["findings"]
    assert (reverted["check"], reverted["severity"], reverted["subject"]) == ("lb.policy_reverted", "warning", SVC)
    assert "switched it to Cluster on %s" % T1 in reverted["summary"] and "2 of 3 nodes (n2, n3)" in reverted["summary"]
    assert reverted["evidence"]["switched_at"] == T1 and reverted["host"] == "localhost"
    assert "remediate_services: [%s]" % SVC in reverted["remediation"]
    assert reverted["state"] == "new" and again["since"]["lb_switches"] == {SVC: {"at": T1, "host": "localhost"}}
    # the triage's entry carries the switch on: the run after says it again (ongoing)
    report_history.keep_history(str(tmp_path), report.recount(dict(again, generated=T2)), start + timedelta(minutes=30), 20)
    prev, source, newest = report_history.previous_report(str(tmp_path))
    later = report_history.compare(build(lb_run(item("lb.nodes_without_endpoints", "warning", SVC, layer="L4"))),
                                   prev, "2026-01-01T00:45:00+00:00", source, switches=newest)
    assert [(f["check"], f["state"]) for f in later["findings"]] == [("lb.policy_reverted", "ongoing")]


def test_without_a_switch_the_expected_warning_stays_and_a_failed_switch_is_not_carried():
    found = annotated(lb_run(item("lb.nodes_without_endpoints", "warning", SVC, layer="L4"),
                             item("lb.policy_switched", "critical", "other/svc", layer="L4")))
    assert [f["check"] for f in found["findings"]] == ["lb.policy_switched", "lb.nodes_without_endpoints"]
    assert found["since"]["lb_switches"] == {}
    # another Service switched before is no reason to rename this one's finding; a critical one stays critical
    previous = {"generated": T0, "findings": [], "lb_switches": {"other/svc": {"at": T0}, "bad": "x"}}
    found = annotated(lb_run(item("lb.nodes_without_endpoints", "critical", SVC, layer="L4"),
                             item("lb.nodes_without_endpoints", "critical", "other/svc", layer="L4")), previous)
    checks = sorted((f["check"], f["subject"], f["severity"]) for f in found["findings"])
    assert checks == [("lb.nodes_without_endpoints", SVC, "critical"), ("lb.policy_reverted", "other/svc", "critical")]


@pytest.mark.parametrize("text,message", [("{not json", "is not JSON"), ('{"findings": 3}', "not a triage report")])
def test_an_unreadable_previous_report_is_said(tmp_path, text, message):
    path = tmp_path / "old.json"
    path.write_text(text)
    with pytest.raises(AnsibleError, match=message):
        report_history.previous_report(None, str(path))


@pytest.mark.parametrize("value,expected", [("20", 20), (0, 0), (1000, 1000), (" 7 ", 7)])
def test_history_count_accepts_numbers_and_survey_text(value, expected):
    assert report_history.validate_keep(value) == expected


@pytest.mark.parametrize("value", [-1, 1001, "ten", True, None, "2.5"])
def test_history_count_refuses_what_is_not_0_to_1000(value):
    with pytest.raises(AnsibleError, match="report_history must be a whole number from 0"):
        report_history.validate_keep(value)


def test_fail_on_new_critical_ignores_ongoing_and_silenced_but_not_escalated():
    first = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x"), item("dns.slow", "warning", "y")]}}, now=T0)
    assert report_fail_on(first, "new_critical") is True
    same = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x"), item("dns.slow", "warning", "y")]}}, first)
    assert report_fail_on(same, "new_critical") is False and report_fail_on(same, "critical") is True
    escalated = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x"), item("dns.slow", "critical", "y")]}}, first)
    assert report_fail_on(escalated, "new_critical") is True
    fresh = annotated({"n1": {"dns": [item("dns.other", "critical", "z")]}}, first)
    fresh["findings"][0]["silenced"] = {"silence": 1}
    assert report_fail_on(fresh, "new_critical") is False and report_fail_on(fresh, "critical") is False
    warn = annotated({"n1": {"dns": [item("dns.new_warn", "warning", "w")]}}, first)
    assert report_fail_on(warn, "new_warning") is True and report_fail_on(warn, "new_critical") is False


def test_the_terminal_summary_leads_with_what_is_new_then_resolved_and_lists_silenced_apart():
    from ansible_collections.k8snet.triage.plugins.filter.triage_summary_lines import triage_summary_lines
    first = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x"), item("dns.gone", "warning", "g")]}}, now=T0)
    second = annotated({"n1": {"dns": [item("dns.timeout", "critical", "x"), item("dns.fresh", "critical", "f\x1b[2J"),
                                       item("dns.known", "critical", "k")]}}, first)
    known = [f for f in second["findings"] if f["check"] == "dns.known"][0]
    known["silenced"] = {"silence": 1, "reason": "migration", "created_by": "bob", "expires": "2026-01-02T00:00:00Z"}
    lines = triage_summary_lines(report.recount(second))
    assert lines[0] == "since the last run (%s): 2 new, 1 ongoing, 1 resolved, 0 not checked again; 1 silenced" % T0
    assert lines[1] == "NEW CRITICAL dns.fresh  n1  f\\x1b[2J"  # shown, not obeyed
    assert lines[2] == "RESOLVED dns.gone  n1  g (since %s)" % T0
    assert lines[3].startswith("1 critical") is False and "3 critical" in lines[3]
    assert "SILENCED critical dns.known  n1  k: migration (bob, until 2026-01-02T00:00:00Z)" in lines
    assert not any(line.startswith("CRITICAL dns.known") for line in lines)
    assert any(line.startswith("CRITICAL dns.timeout (1)") for line in lines)
