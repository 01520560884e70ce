"""The report files are written atomically, never through a planted symlink, and the artifacts keep
the shape AWX jobs read."""

from __future__ import annotations

import os
import stat

import pytest
from ansible.errors import AnsibleError

from ansible_collections.k8snet.triage.plugins.plugin_utils import report


def test_a_symlink_in_place_of_the_report_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "triage-report.json"
    path.symlink_to(victim)
    assert report.write_file(str(path), "{}\n") is True
    assert victim.read_text() == "keep me"
    assert not path.is_symlink() and path.read_text() == "{}\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_same_content_is_not_a_change_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "triage-report.html"
    assert report.write_file(str(path), "<p>x</p>") is True
    inode = os.stat(path).st_ino
    assert report.write_file(str(path), "<p>x</p>") is False
    assert os.stat(path).st_ino == inode
    assert sorted(os.listdir(tmp_path)) == ["triage-report.html"]


@pytest.mark.parametrize("kind", ["directory", "missing parent"])
def test_what_cannot_be_written_is_said(tmp_path, kind):
    if kind == "directory":
        path = tmp_path / "triage-report.json"
        path.mkdir()
        message = "not a regular file"
    else:
        path = tmp_path / "nowhere" / "triage-report.json"
        message = "does not exist"
    with pytest.raises(AnsibleError, match=message):
        report.write_file(str(path), "{}")
    assert sorted(os.listdir(tmp_path)) == (["triage-report.json"] if kind == "directory" else [])


def test_artifacts_carry_the_listed_problems_only_up_to_the_limit():
    data = report.triage_report({"n1": {"triage_host": {"status": "reached", "reason": ""},
                                        "triage_results": {"dns": {"status": "ran", "findings": [
                                            {"check": "dns.ok", "severity": "ok", "layer": "DNS", "subject": "a",
                                             "summary": "fine", "evidence": {}, "remediation": ""},
                                            {"check": "dns.timeout", "severity": "critical", "layer": "DNS",
                                             "subject": "b", "summary": "x" * 10, "evidence": {}, "remediation": ""},
                                            {"check": "dns.slow", "severity": "warning", "layer": "DNS",
                                             "subject": "c", "summary": "y", "evidence": {}, "remediation": ""}]}}},
                                 "n2": {"triage_host": {"status": "unreachable", "reason": "r" * 400}}},
                                ["n1", "n2"])
    out = report.artifacts(data, data["findings"], 2, "/srv/r.html")
    assert [f["check"] for f in out["findings"]] == ["dns.timeout", "triage.host_unreachable"]
    assert out["worst"] == "critical" and out["report"] == "/srv/r.html"
    assert len(out["hosts"]["n2"]["reason"]) == 200 and out["hosts"]["n2"]["status"] == "unreachable"
    assert report.artifacts(data, data["findings"], 0)["findings"] == []


def test_the_json_text_refuses_nan():
    with pytest.raises(AnsibleError, match="cannot be written as JSON"):
        report.report_json({"x": float("nan")})
