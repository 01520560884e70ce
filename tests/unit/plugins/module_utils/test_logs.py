# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""logs / log_signatures: every signature on a real or upstream-sourced line, masking, the bounded readers."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs, options as logs_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import LAYERS, SEVERITIES
from ansible_collections.k8snet.triage.plugins.module_utils.logs.signatures import SIGNATURES

HERE = Path(__file__).resolve().parent
LINES = yaml.safe_load((HERE / "fixtures" / "logs" / "signature_lines.yml").read_text())


@pytest.mark.parametrize("case", LINES, ids=["%s-%d" % (c["check"], i) for i, c in enumerate(LINES)])
def test_real_lines_match_their_signature(case):
    sig, found = logs.classify(case["text"])
    assert (sig and sig["check"]) == case["check"], case["text"]
    if case.get("target"):
        assert found.group("target").strip() == case["target"]


def test_every_signature_has_a_real_line_and_complete_data():
    assert {c["check"] for c in LINES if c["check"]} == {s["check"] for s in SIGNATURES}
    for sig in SIGNATURES:
        assert sig["check"].startswith("log.") and sig["severity"] in SEVERITIES and sig["layer"] in LAYERS
        assert sig["meaning"] and sig["remediation"] and sig["explains"]
        assert sig["sources"] and all(s.startswith("https://") for s in sig["sources"])


def test_the_ibm_line_is_control_plane_and_explains_the_cni_findings():
    line = [c for c in LINES if "Client.Timeout" in c["text"]][0]["text"]
    sig, _found = logs.classify(line)
    assert sig["layer"] == "control-plane" and sig["severity"] == "critical"
    assert {"node.network_unavailable", "node.cni_pod_crashloop", "webhook.cni_deadlock"} <= set(sig["explains"])


@pytest.mark.parametrize("text, secret", [
    ("GET /api Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", "eyJ"),
    ('request headers: {"Authorization":"Basic dXNlcjpwYXNz"}', "dXNlcjpwYXNz"),
    ("bearer abcdef0123456789 used", "abcdef0123456789"),
    ("token=s3cr3tvalue&x=1", "s3cr3tvalue"),
    ('{"password": "hunter22"}', "hunter22"),
    ("dial https://admin:pa55word@10.0.0.1:6443/api", "pa55word"),
])
def test_secrets_are_masked(text, secret):
    out = logs.excerpt(text)
    assert secret not in out and "***" in out


def test_match_groups_keeps_first_and_latest_lines_with_timestamps():
    line = "2026-11-30T10:00:%02d.000Z calico/node is not ready: BIRD is not ready: BGP not established with 198.18.0.%d"
    entries = [{"text": line % (i, i), "time": logs.line_time(line % (i, i))[0], "subject": "node1", "origin": "f"}
               for i in range(9)]
    entries.append({"text": "unrelated", "time": None, "subject": "node1", "origin": "f"})
    groups = logs.match(entries)
    assert len(groups) == 1
    group = groups[0]
    assert group["count"] == 9 and group["first"] == "2026-11-30T10:00:00.000Z" and group["last"] == "2026-11-30T10:00:08.000Z"
    assert [ln["time"][-7:-5] for ln in group["lines"]] == ["00", "01", "02", "03", "08"]
    assert group["targets"][0] == "198.18.0.0"
    finding = logs.findings(groups)[0]
    assert finding["check"] == "log.calico_bgp_not_established" and finding["subject"] == "node1"
    assert finding["evidence"]["count"] == 9 and len(finding["evidence"]["lines"]) == 5
    assert "9 log lines" in finding["summary"]


@pytest.mark.parametrize("text, stamp", [
    ("2021-07-07 09:12:39.724 [WARNING][9] x", "2021-07-07 09:12:39.724"),
    ("E0416 22:26:30.150357   10125 kubelet.go:2373] x", "0416 22:26:30.150357"),
    ("Apr 16 22:26:30 host kubelet[1]: x", "Apr 16 22:26:30"),
    ('{"caller":"main.go:229","ts":"2019-06-26T06:36:35.677084247Z"}', "2019-06-26T06:36:35.677084247Z"),
    ("no time here", None),
])
def test_line_time(text, stamp):
    assert logs.line_time(text, now=time.mktime((2026, 6, 1, 0, 0, 0, 0, 0, -1)))[0] == stamp


def test_iso_offset_is_converted():
    assert logs.line_time("2026-01-01T01:00:00+01:00 x")[1] == logs.line_time("2026-01-01T00:00:00Z x")[1]


# ------------------------------------------------------------------ journald
class FakeRunner(object):
    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    def run_command(self, argv, **kwargs):
        self.calls.append(argv)
        return 0, self.outputs.pop(0), ""


def _journal(*records):
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_journal_reader_bounds_and_matches():
    units = _journal(
        {"__REALTIME_TIMESTAMP": "1764547200000000", "_SYSTEMD_UNIT": "kubelet.service",
         "MESSAGE": 'E1201 00:00:00.000000 1 kubelet.go:2373] "Container runtime network not ready" '
                    'networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns '
                    'error: cni plugin not initialized"'},
        {"__REALTIME_TIMESTAMP": "1764547201000000", "_SYSTEMD_UNIT": "kubelet.service", "MESSAGE": "all fine"},
        {"__REALTIME_TIMESTAMP": "1764547202000000", "_SYSTEMD_UNIT": "kubelet.service",
         "MESSAGE": [104, 105]})  # non-UTF-8 messages come as byte lists
    kernel = _journal({"__REALTIME_TIMESTAMP": "1764547203000000", "SYSLOG_IDENTIFIER": "kernel",
                       "MESSAGE": "nf_conntrack: table full, dropping packet"})
    runner = FakeRunner([units, kernel])
    out = logs.node_check({"node_name": "n1", "since": 600, "max_lines": 50, "source": "journal"}, runner, journald=True)
    assert runner.calls[0][:10] == ["/usr/bin/journalctl", "-o", "json", "--no-pager", "-q", "--since", "-600s", "-n", "50",
                                    "-u"]
    assert runner.calls[1][-1] == "-k"
    assert out["data"]["source"] == "journal"
    assert sorted(f["check"] for f in out["findings"]) == ["log.cni_not_initialized", "log.conntrack_table_full"]
    cni = [f for f in out["findings"] if f["check"] == "log.cni_not_initialized"][0]
    assert cni["evidence"]["lines"][0]["time"] == "2025-12-01T00:00:00Z"
    assert cni["evidence"]["lines"][0]["origin"] == "journal:kubelet.service"
    assert [row["lines"] for row in out["data"]["read"]] == [3, 1]


def test_journal_output_over_the_byte_cap_keeps_the_latest_whole_records():
    records = [{"__REALTIME_TIMESTAMP": str(1764547200000000 + i), "MESSAGE": "line %d" % i} for i in range(200)]
    text = _journal(*records)
    runner = FakeRunner([text])
    entries, rows = logs.read_journal(runner, ["kubelet"], 60, 1000, 2048, "n1", kernel=False)
    assert rows[0]["truncated"] and rows[0]["bytes"] == 2048
    assert entries[-1]["text"] == "line 199" and len(entries) < 200
    assert all(e["text"].startswith("line ") for e in entries)


# ------------------------------------------------------------------ files
def test_file_reader_reads_only_the_tail_and_recent_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    path = tmp_path / "kubelet.log"
    now = time.time()
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 7200))
    new = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 10))
    body = "".join("%s filler %05d\n" % (old, i) for i in range(5000))
    body += "%s net/http: TLS handshake timeout (old)\n" % old
    body += ("%s E1 kubelet: Get \"https://198.18.0.100:6443/api/v1/nodes/n1?timeout=10s\": net/http: TLS handshake "
             "timeout Authorization: Bearer abcdefghijkl\n" % new)
    path.write_text(body)
    entries, rows = logs.read_files([str(path), str(tmp_path / "absent.log")], 600, 4096, 1000, "n1", now=now)
    assert rows[0]["status"] == "read" and rows[0]["truncated"] and rows[0]["bytes"] == 4096
    assert rows[1]["status"] == "missing"
    assert len(entries) == 1  # the old lines are outside the time bound
    groups = logs.match(entries)
    assert groups[0]["check"] == "log.apiserver_tls_handshake_timeout" and groups[0]["targets"] == ["198.18.0.100:6443"]
    assert "abcdefghijkl" not in groups[0]["lines"][0]["text"]


def test_unreadable_files_are_skipped_with_a_note_and_the_rest_is_read(tmp_path, monkeypatch):
    root = tmp_path / "log"
    root.mkdir()
    monkeypatch.setattr(logs, "LOG_ROOT", str(root))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(root))
    (tmp_path / "secret").write_text("root:x:0:0\n")
    os.symlink(str(tmp_path / "secret"), str(root / "syslog"))  # a log relocated outside the directory
    os.mkfifo(str(root / "fifo"))  # nobody writes it: opening it for reading without O_NONBLOCK would block
    os.symlink("/dev/null", str(root / "null.log"))
    os.symlink(str(root), str(root / "dir.log"))
    (root / "real.log").write_text("Apr 16 22:26:30 h kubelet[1]: ok\n")
    os.symlink(str(root / "real.log"), str(root / "messages"))  # inside the log directory: followed
    os.symlink(str(root / "rotated-away.log"), str(root / "kubelet.log"))  # dangling, inside the directory
    paths = [str(root / n) for n in ("syslog", "fifo", "null.log", "dir.log", "messages", "kubelet.log")]
    entries, rows = logs.read_files(paths, 10 ** 9, 4096, 10, "n1")
    assert [r["status"] for r in rows] == ["skipped", "skipped", "skipped", "skipped", "read", "missing"]
    assert rows[0]["note"].startswith("resolves to %s, outside %s" % (tmp_path / "secret", root))
    assert rows[1]["note"].startswith("is a FIFO (named pipe), not a regular file")
    assert "outside" in rows[2]["note"]  # /dev/null is outside the log directory
    assert rows[3]["note"].startswith("is a directory")
    assert [e["origin"] for e in entries] == [str(root / "messages")]
    assert "root:x" not in str(entries)


def test_a_device_or_unreadable_file_inside_the_directory_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", "/dev")
    _entries, rows = logs.read_files(["/dev/null"], 60, 4096, 10, "n1")
    assert rows[0]["status"] == "skipped" and rows[0]["note"].startswith("is a character device")
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    locked = tmp_path / "locked.log"
    locked.write_text("x\n")

    def refuse(path, flags, *args):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(logs.os, "open", refuse)
    _entries, rows = logs.read_files([str(locked)], 60, 4096, 10, "n1")
    assert rows[0] == {"origin": str(locked), "status": "skipped", "lines": 0, "bytes": 0, "truncated": False,
                       "note": "cannot be opened: Permission denied (run as root)"}


def test_node_check_keeps_kubelet_findings_when_another_default_file_is_a_fifo(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (tmp_path / "kubelet.log").write_text(
        '%s E1 kubelet "Container runtime network not ready" networkReady="NetworkReady=false '
        'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"\n' % now)
    os.mkfifo(str(tmp_path / "syslog"))
    os.symlink("/etc/hostname", str(tmp_path / "messages"))
    files = [str(tmp_path / n) for n in ("kubelet.log", "syslog", "messages")]
    result = logs.node_check({"node_log_files": files, "node_name": "n1"}, FakeRunner([]), journald=False)
    assert [f["check"] for f in result["findings"]] == ["log.cni_not_initialized", "log.file_skipped"]
    skipped = result["findings"][1]
    assert skipped["severity"] == "info" and [r["origin"] for r in skipped["evidence"]["skipped"]] == files[1:]
    assert "syslog is a FIFO" in skipped["summary"] and "messages resolves to /etc/hostname" in skipped["summary"]


def test_nothing_read_because_files_were_skipped_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    os.mkfifo(str(tmp_path / "kubelet.log"))
    result = logs.node_check({"node_log_files": [str(tmp_path / "kubelet.log")], "node_name": "n1"}, FakeRunner([]),
                             journald=False)
    assert [f["check"] for f in result["findings"]] == ["log.file_skipped", "log.nothing_read"]


def test_a_nul_hole_from_copytruncate_keeps_the_line_after_it(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = ('%s E1 kubelet "Container runtime network not ready" networkReady="NetworkReady=false '
            'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"' % now)
    path = tmp_path / "kubelet.log"
    # copytruncate: the file was truncated to 0 while kubelet kept its offset (1 MiB): its next write leaves a
    # sparse run of NUL bytes before the new line
    with open(str(path), "wb") as handle:
        handle.seek(1 << 20)
        handle.write(line.encode() + b"\n")
    for max_bytes in (4096, 2 << 20):  # the tail starts inside the hole; the whole file is read
        entries, rows = logs.read_files([str(path)], 600, max_bytes, 100, "n1")
        assert [e["text"] for e in entries] == [line], max_bytes
        assert rows[0]["status"] == "read" and rows[0]["lines"] == 1 and "NUL bytes skipped" in rows[0]["note"]
    result = logs.node_check({"node_log_files": [str(path)], "node_name": "n1"}, FakeRunner([]), journald=False)
    assert [f["check"] for f in result["findings"]] == ["log.cni_not_initialized"]
    # a hole between lines ends the line before it; a cut first line is still dropped
    path.write_bytes(b"partial old line\nwhole old\x00\x00\x00\x00" + line.encode() + b"\n")
    entries, _rows = logs.read_files([str(path)], 10 ** 9, len(line) + 20, 100, "n1")
    assert [e["text"] for e in entries] == ["whole old", line]
    assert logs.tail_lines(b"cut\nwhole\x00\x00next\n", cut=True) == (["whole", "next"], 2)
    assert logs.tail_lines(b"\x00\x00\x00next\n", cut=True) == (["next"], 3)
    assert logs.tail_lines(b"cut\nwhole\n", cut=True) == (["whole"], 0)
    assert logs.tail_lines(b"a\n\nb\n", cut=False) == (["a", "", "b"], 0)  # no hole: lines as they are


def test_the_same_file_given_twice_or_under_two_names_is_read_once(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = tmp_path / "kubelet.log"
    path.write_text("%s net/http: TLS handshake timeout\n" % now)
    os.symlink(str(path), str(tmp_path / "kubelet-current.log"))
    os.link(str(path), str(tmp_path / "kubelet.hard.log"))
    paths = [str(path), str(path), str(tmp_path / "kubelet-current.log"), str(tmp_path / "kubelet.hard.log")]
    entries, rows = logs.read_files(paths, 600, 4096, 100, "n1")
    assert len(entries) == 1
    assert [r["status"] for r in rows] == ["read", "duplicate", "duplicate", "duplicate"]
    assert all(r["same_as"] == str(path) and "same device and inode" in r["note"] for r in rows[1:])
    groups = logs.match(entries)
    assert groups[0]["count"] == 1


@pytest.mark.parametrize("option, value, message", [
    ("node_log_files", ["/etc/shadow"], "only under /var/log/"),
    ("node_log_files", ["/var/log/../../etc/shadow"], "'..' segments"),
    ("units", ["--all"], "systemd unit name"),
    ("since", 0, "from 1 to 604800"),
    ("max_bytes", 10, "from 1024"),
    ("source", "dmesg", "give one of auto, journal, files"),
])
def test_bad_options_are_refused(option, value, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        logs.node_check({option: value}, FakeRunner([]), journald=False)


def test_nothing_to_read_is_info_not_ok(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    out = logs.node_check({"node_name": "n1", "node_log_files": []}, FakeRunner([]), journald=False)
    assert [f["check"] for f in out["findings"]] == ["log.nothing_read"]
    assert out["findings"][0]["severity"] == "info"


def test_journal_asked_without_journald_is_a_clear_error():
    with pytest.raises(ReadError, match="journald is not running"):
        logs.node_check({"source": "journal"}, FakeRunner([]), journald=False)


@pytest.mark.parametrize("journald", [True, False])
def test_journal_asked_without_journalctl_names_the_fix(journald):
    """Before: source journal without journalctl failed with another message (or blamed journald), not the fix."""
    class NoJournalctl(FakeRunner):
        def get_bin_path(self, name, required=False, opt_dirs=None):
            return None

    with pytest.raises(ReadError) as failed:
        logs.node_check({"source": "journal"}, NoJournalctl([]), journald=journald)
    assert failed.value.message.startswith(
        "journalctl is not installed on this node: set source: files (logs_source: files) and list the log files")


def test_auto_reads_the_files_when_journald_runs_without_journalctl(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "LOG_ROOT", str(tmp_path))
    monkeypatch.setattr(logs_options, "LOG_ROOT", str(tmp_path))
    (tmp_path / "syslog").write_text("[Tue Nov 20 22:30:22 2018] nf_conntrack: table full, dropping packet\n")

    class NoJournalctl(FakeRunner):
        def get_bin_path(self, name, required=False, opt_dirs=None):
            return None

    out = logs.node_check({"node_name": "n1", "node_log_files": [str(tmp_path / "syslog")]}, NoJournalctl([]),
                          journald=True)
    assert out["data"]["source"] == "files"
    assert [f["check"] for f in out["findings"]] == ["log.conntrack_table_full"]
