"""Silences, as Alertmanager's: globs over check, host and subject, a reason, who and an expiry;
an expired, malformed or unreadable one silences nothing and is itself a finding."""

from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report, silences as report_silences

from .report_samples import build, item

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
GOOD = """
silences:
  - check: arp.stale_entry
    host: "node[12]"
    subject: "10.0.0.*"
    reason: VIP moved (CHG-1)
    created_by: alice
    expires: 2026-03-05T00:00:00Z
  - check: "dns.*"
    reason: resolver migration
    created_by: bob
    expires: 2026-03-02
"""


def load(tmp_path, text, name="silences.yml", max_days=90):
    path = tmp_path / name
    path.write_text(text)
    return report_silences.load(str(path), NOW, max_days)


def test_valid_silences_match_by_glob_and_mark_the_findings(tmp_path):
    active, problems, summary = load(tmp_path, GOOD)
    assert problems == [] and [s["index"] for s in active] == [1, 2]
    assert active[1]["host"] == "*" and active[1]["subject"] == "*"
    assert active[1]["expires"] == "2026-03-02T23:59:59Z"  # a date: the end of that day, UTC
    data = build({"node1": {"stale_arp": [item("arp.stale_entry", "critical", "10.0.0.5"),
                                          item("arp.stale_entry", "critical", "192.168.0.5")]},
                  "node3": {"stale_arp": [item("arp.stale_entry", "critical", "10.0.0.5")],
                            "dns": [item("dns.timeout", "warning", "10.96.0.10"), item("dns.ok", "ok", "x")]}})
    assert report_silences.apply(data["findings"], active, summary) == 2
    marks = dict(((f["host"], f["check"], f["subject"]), f.get("silenced")) for f in data["findings"])
    assert marks[("node1", "arp.stale_entry", "10.0.0.5")] == {"silence": 1, "reason": "VIP moved (CHG-1)",
                                                               "created_by": "alice", "expires": "2026-03-05T00:00:00Z"}
    assert marks[("node1", "arp.stale_entry", "192.168.0.5")] is None  # subject does not match
    assert marks[("node3", "arp.stale_entry", "10.0.0.5")] is None  # host does not match node[12]
    assert marks[("node3", "dns.timeout", "10.96.0.10")]["silence"] == 2
    assert marks[("node3", "dns.ok", "x")] is None  # ok findings are never silenced
    assert [(s["index"], s["state"], s["matched"]) for s in summary] == [(1, "active", 1), (2, "active", 1)]
    report.recount(data)
    assert data["counts"]["severity"]["critical"] == 3 and data["counts"]["active"]["critical"] == 2
    assert data["counts"]["silenced"] == 2


def test_globs_are_case_sensitive_fnmatch():
    silence = {"check": "ARP.*", "host": "*", "subject": "*"}
    assert not report_silences.matches(silence, dict(item("arp.stale_entry", "critical", "x"), host="n1"))
    silence = {"check": "arp.stale_entr?", "host": "n[!2]", "subject": "*"}
    assert report_silences.matches(silence, dict(item("arp.stale_entry", "critical", "x"), host="n1"))
    assert not report_silences.matches(silence, dict(item("arp.stale_entry", "critical", "x"), host="n2"))


@pytest.mark.parametrize("entry,why", [
    ("{check: a.b, reason: r, created_by: c}", "it has no expires"),
    ("{check: a.b, reason: r, created_by: c, expiry: 2026-03-02}", "it has 1 unknown key(s) at line 2; the keys are"),
    ("{check: a.b, created_by: c, expires: 2026-03-02}", "it has no reason"),
    ("{check: a.b, reason: r, created_by: c, expires: '2026-03-02T10:00:00'}", "its expires (line 2) has no timezone; add Z"),
    ("{check: a.b, reason: r, created_by: c, expires: next week}", "its expires (line 2) is not a date or time; write it in ISO 8601"),
    ("{check: a.b, reason: r, created_by: c, expires: 2027-03-02T00:00:00Z}", "it expires 2027-03-02T00:00:00Z, more than 90 days ahead"),
    ("{check: 5, reason: r, created_by: c, expires: 2026-03-02}", "its check (line 2) must be non-empty text (quote it), not an integer"),
    ("just text", "it is text, not a mapping"),
])
def test_a_malformed_silence_silences_nothing_and_is_a_finding_naming_it(tmp_path, entry, why):
    active, problems, summary = load(tmp_path, "- {check: dns.ok2, reason: r, created_by: c, expires: 2026-03-02}\n- %s\n" % entry)
    assert [s["index"] for s in active] == [1]
    assert len(problems) == 1 and problems[0]["check"] == "triage.silence_invalid"
    assert problems[0]["severity"] == "warning" and problems[0]["subject"].startswith("silence #2")
    assert why in problems[0]["summary"] and "silence #2" in problems[0]["remediation"]
    assert "(line 2) silences nothing" in problems[0]["summary"] and problems[0]["evidence"]["line"] == 2
    assert summary[1]["state"] == "invalid"


def test_the_expiry_limit_is_the_one_given(tmp_path):
    text = "- {check: a.b, reason: r, created_by: c, expires: 2026-03-20T00:00:00+02:00}\n"
    assert load(tmp_path, text, max_days=30)[1] == []
    assert "more than 7 days ahead" in load(tmp_path, text, max_days=7)[1][0]["summary"]


def test_an_expired_silence_is_reported_and_silences_nothing(tmp_path):
    active, problems, summary = load(tmp_path, "- {check: 'arp.*', reason: old change, created_by: alice, "
                                               "expires: 2026-02-01T00:00:00Z}\n")
    assert active == [] and summary[0]["state"] == "expired"
    assert problems[0]["check"] == "triage.silence_expired" and "expired at 2026-02-01T00:00:00Z" in problems[0]["summary"]
    assert "alice" in problems[0]["summary"]


@pytest.mark.parametrize("text,name,why", [
    ("silences: [unclosed", "s.yml", "is not valid YAML"),
    ("{\"silences\": 3}", "s.json", "must hold a list of silences"),
    ("other: []", "s.yml", "must hold a list of silences"),
])
def test_a_file_that_is_not_a_list_of_silences_is_reported(tmp_path, text, name, why):
    active, problems, _summary = load(tmp_path, text, name=name)
    assert active == [] and problems[0]["check"] == "triage.silences_unreadable" and why in problems[0]["summary"]


def test_a_missing_file_is_reported(tmp_path):
    active, problems, _summary = report_silences.load(str(tmp_path / "nope.yml"), NOW)
    assert active == [] and "No such file" in problems[0]["summary"]


def test_the_silence_findings_are_never_silenced_themselves(tmp_path):
    active, _problems, _summary = load(tmp_path, "- {check: '*', reason: all, created_by: c, expires: 2026-03-02}\n")
    for check in report_silences.CHECKS:
        assert not report_silences.matches(active[0], dict(item(check, "warning", "silence #1"), host="localhost"))


@pytest.mark.parametrize("value", ["30", 1, 3650])
def test_max_days_accepts_1_to_3650(value):
    assert report_silences.validate_max_days(value) == int(value)


@pytest.mark.parametrize("value", [0, 3651, "x", True])
def test_max_days_refuses_the_rest(value):
    with pytest.raises(ValueError, match="report_silence_max_days"):
        report_silences.validate_max_days(value)


TOKEN = "ghp_k8snetTESTtoken0123456789abcdefABCDEF"


@pytest.mark.parametrize("name, text, said", [
    # the token alone on a line: not YAML
    ("s.yml", "- check: arp.stale_entry\n  reason: r\n  created_by: c\n  expires: 2026-03-02\n  %s\n" % TOKEN,
     "is not valid YAML: could not find expected ':' at line 6, column 1"),
    ("s.yml", "- check: a.b\n  reason: \"%s\n" % TOKEN, "is not valid YAML: found unexpected end of stream at line 3"),
    ("s.json", '[{"check": "a.b", "reason": "r", "created_by": "c", "expires": "2026-03-02"},\n %s]' % TOKEN,
     "is not valid JSON: Expecting value at line 2, column 2"),
    # the token as a key, as a value, as the check, as an entry
    ("s.yml", "- check: arp.stale_entry\n  reason: r\n  created_by: c\n  expires: 2026-03-02\n  %s: yes\n" % TOKEN,
     "silence #1 (check arp.stale_entry) in {path} (line 1) silences nothing: it has 1 unknown key(s) at line 5"),
    ("s.yml", "- check: a.b\n  reason: r\n  created_by: c\n  expires: %s\n" % TOKEN,
     "its expires (line 4) is not a date or time"),
    ("s.yml", "- check: %s\n  reason: r\n  created_by: c\n  expires: 2026-03-02T10:00:00\n" % TOKEN,
     "silence #1 in {path} (line 1) silences nothing: its expires (line 4) has no timezone"),
    ("s.yml", "silences:\n  - {check: a.b, reason: r, created_by: c, expires: 2026-03-02}\n  - %s\n" % TOKEN,
     "silence #2 in {path} (line 3) silences nothing: it is text, not a mapping"),
    ("s.json", '[{"check": "a.b", "reason": "r", "created_by": "c", "expires": "2026-03-02"},\n {"check": "a.b", "%s": 1}]' % TOKEN,
     "silence #2 (check a.b) in {path} (line 2) silences nothing: it has 1 unknown key(s) at line 2"),
])
def test_a_bad_line_is_named_by_its_number_never_copied(tmp_path, name, text, said):
    """A secret pasted into the silences file by mistake stays out of the findings and the summary, which go
    into the report and the AWX artifacts."""
    active, problems, summary = load(tmp_path, text, name=name)
    assert len(problems) == 1 and said.format(path=tmp_path / name) in problems[0]["summary"], problems
    assert TOKEN not in repr((active, problems, summary)) and TOKEN[4:] not in repr((active, problems, summary))
