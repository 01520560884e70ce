"""The report files are written atomically, never through a planted symlink, and the artifacts keep
the shape AWX jobs read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from ansible.errors import AnsibleError

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import files as report_files


def test_a_symlink_in_place_of_the_report_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "triage-report.json"
    path.symlink_to(victim)
    assert report_files.write_file(str(path), "{}\n") is True
    assert victim.read_text() == "keep me"
    assert not path.is_symlink() and path.read_text() == "{}\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_same_content_is_not_a_change_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "triage-report.html"
    assert report_files.write_file(str(path), "<p>x</p>") is True
    inode = os.stat(path).st_ino
    assert report_files.write_file(str(path), "<p>x</p>") is False
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
        report_files.write_file(str(path), "{}")
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
        report_files.report_json({"x": float("nan")})


# ------------------------------------------------------------------ the pair, the directory
PAIR = ("triage-report.json", "triage-report.html")


def old_pair(directory):
    for name in PAIR:
        (directory / name).write_text("old " + name)


def test_a_missing_directory_is_created_0700_and_holds_the_pair(tmp_path):
    target = tmp_path / "new" / "reports"
    directory = report_files.output_directory(str(target))
    assert directory == str(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700 and stat.S_IMODE(os.stat(target.parent).st_mode) == 0o700
    assert report_files.write_pair(directory, dict((name, "new " + name) for name in PAIR)) is True
    assert sorted(os.listdir(target)) == sorted(PAIR)
    assert (target / "triage-report.json").read_text() == "new triage-report.json"
    assert report_files.write_pair(directory, dict((name, "new " + name) for name in PAIR)) is False


def test_an_existing_directory_keeps_its_mode(tmp_path):
    os.chmod(tmp_path, 0o755)
    assert report_files.output_directory(str(tmp_path)) == str(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o755


NOBODY = 65534


@pytest.mark.parametrize("attack", ["symlink of another user", "another user's world-writable directory",
                                    "world-writable without the sticky bit"])
def test_a_directory_another_user_controls_is_refused(tmp_path, attack):
    """A shared /tmp: another user plants the report directory (a symlink to a place of theirs, or a
    directory of theirs anyone may write); the report is not written there."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    planted = tmp_path / "report"
    if attack == "symlink of another user":
        planted.symlink_to(theirs)
        os.lchown(planted, NOBODY, NOBODY)
        message = "is a symlink owned by uid 65534"
    elif attack == "another user's world-writable directory":
        planted.mkdir()
        os.chown(planted, NOBODY, NOBODY)
        os.chmod(planted, 0o1777)
        message = "belongs to uid 65534, another user, and others may write in it"
    else:
        planted.mkdir()
        os.chmod(planted, 0o777)
        message = "anyone may write in .* and it has no sticky bit"
    with pytest.raises(AnsibleError, match=message):
        report_files.output_directory(str(planted))
    assert os.listdir(theirs) == [] and (not planted.is_dir() or planted.is_symlink() or os.listdir(planted) == [])


def test_my_own_symlink_to_my_directory_is_followed(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (tmp_path / "link").symlink_to(mine)
    assert report_files.output_directory(str(tmp_path / "link")) == str(mine)


def in_namespace(tmp_path, mount, code):
    """Run ``code`` (python, with ``report`` imported and ``d`` the directory) in a private mount namespace
    where the directory is ``mount`` (a shell command over $D): a full tmpfs, a read-only bind mount."""
    import subprocess
    import sys
    script = ("import os, sys; sys.path.insert(0, %r)\n"
              "from ansible_collections.k8snet.triage.plugins.plugin_utils.report import files as report_files\n"
              "d = sys.argv[1]\n%s" % (str(Path(report_files.__file__).resolve().parents[3] / "build"), code))
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                           'D="$1"; shift; %s && exec "$@"' % mount, "sh", str(tmp_path), sys.executable, "-c", script,
                           str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)


WRITE_BIG = ("try:\n    report_files.write_pair(d, {'triage-report.json': 'j' * 200000, 'triage-report.html': 'h' * 200000})\n"
             "except Exception as exc:\n    print('REFUSED', exc)\n"
             "print(sorted(os.listdir(d)), [open(os.path.join(d, n)).read() for n in ('triage-report.json', "
             "'triage-report.html')])\n")


def test_a_full_disk_keeps_the_old_pair(tmp_path):
    """A real full filesystem (a 256 KiB tmpfs): the new JSON fits, the HTML does not; the old pair stays,
    and no temporary file is left behind."""
    proc = in_namespace(tmp_path, 'mount -t tmpfs -o size=256k k8snet-full "$D" && echo "old j" > "$D/triage-report.json" '
                        '&& echo "old h" > "$D/triage-report.html"', WRITE_BIG)
    assert proc.returncode == 0, proc.stderr
    refused, listing = proc.stdout.splitlines()
    assert refused.startswith("REFUSED cannot write the report in") and "No space left on device" in refused, refused
    assert "the previous triage-report.json and triage-report.html are left as they were" in refused
    assert listing == "['triage-report.html', 'triage-report.json'] ['old j\\n', 'old h\\n']", listing


def test_a_read_only_directory_keeps_the_old_pair(tmp_path):
    old_pair(tmp_path)
    proc = in_namespace(tmp_path, 'mount --bind "$D" "$D" && mount -o remount,bind,ro "$D"', WRITE_BIG)
    assert proc.returncode == 0, proc.stderr
    refused, listing = proc.stdout.splitlines()
    assert "Read-only file system" in refused, refused
    assert listing == "['triage-report.html', 'triage-report.json'] ['old triage-report.json', 'old triage-report.html']"


def test_a_failed_second_rename_puts_the_first_file_back(tmp_path, monkeypatch):
    """The JSON is renamed into place, then the HTML's rename fails: the old JSON comes back, so the
    pair on disk is the old one (this ordering cannot be forced on a real filesystem, hence the patch)."""
    old_pair(tmp_path)
    real = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        if str(dst).endswith("triage-report.html") and ".old." not in str(src):
            raise OSError(5, "Input/output error", str(dst))
        return real(src, dst)

    monkeypatch.setattr(report_files.os, "replace", replace)
    with pytest.raises(AnsibleError, match="Input/output error"):
        report_files.write_pair(str(tmp_path), dict((name, "new " + name) for name in PAIR))
    assert sorted(os.listdir(tmp_path)) == sorted(PAIR)
    assert [(tmp_path / n).read_text() for n in PAIR] == ["old " + n for n in PAIR]


def test_a_directory_planted_while_it_is_created_is_refused(tmp_path, monkeypatch):
    """Another user wins the race between 'missing' and mkdir: the directory that appeared is theirs."""
    target = tmp_path / "race"
    real = os.mkdir

    def planted(path, mode=0o777):
        real(path, 0o755)
        os.chown(path, NOBODY, NOBODY)
        real(path, mode)  # raises FileExistsError, as the real race would

    monkeypatch.setattr(report_files.os, "mkdir", planted)
    with pytest.raises(AnsibleError, match="appeared while it was being created, owned by uid 65534"):
        report_files.output_directory(str(target))


@pytest.mark.parametrize("given", ["", "  ", None])
def test_an_empty_report_dir_is_refused_naming_the_variable_not_taken_as_the_working_directory(tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AnsibleError, match=r"report_output_dir is empty.*give the directory.*-e report_output_dir="):
        report_files.output_directory(given)
    assert list(tmp_path.iterdir()) == []  # no directory "  " made in the working directory
