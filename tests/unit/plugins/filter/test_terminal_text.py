# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""findings_lines and triage_summary_lines show hostile text from findings as visible escapes (one shared
helper, plugin_utils/terminal.py): ESC, CR, newlines, C1 controls, bidi overrides never reach the terminal."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.filter.findings_lines import findings_lines
from ansible_collections.k8snet.triage.plugins.filter.triage_summary_lines import triage_summary_lines
from ansible_collections.k8snet.triage.plugins.plugin_utils.terminal import terminal_text

# What a log line, a pod name or an annotation can carry into a finding.
HOSTILE = [
    ("\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"),                 # clear screen, colour
    ("\x1b]0;owned\x07title", "\\x1b]0;owned\\x07title"),           # OSC window title, BEL
    ("\x1b]8;;http://evil/\x1b\\link", "\\x1b]8;;http://evil/\\x1b\\link"),  # OSC 8 hyperlink
    ("ok\rCRITICAL", "ok\\rCRITICAL"),                              # CR overwrites the line
    ("a\nCRITICAL forged line", "a\\nCRITICAL forged line"),        # a forged line of its own
    ("\x9b31m C1 CSI", "\\x9b31m C1 CSI"),                          # C1 control (8-bit CSI)
    ("\x85next line", "\\x85next line"),                            # C1 NEL
    ("x\x00\x7fy\x08", "x\\x00\\x7fy\\x08"),                        # NUL, DEL, backspace
    ("file\u202egnp.exe", "file\\u202egnp.exe"),                    # right-to-left override
    ("\u2066iso\u2069 \u200bzw", "\\u2066iso\\u2069 \\u200bzw"),   # bidi isolates, zero width space
    ("line\u2028sep", "line\\u2028sep"),                            # Unicode line separator
]
PLAIN = ["node-1 198.18.0.1:53 timed out", "café 日本 Ünïcode ok", "tab\tkept? no", "back\\slash"]


@pytest.mark.parametrize("raw,shown", HOSTILE)
def test_terminal_text_escapes_hostile_characters(raw, shown):
    assert terminal_text(raw) == shown
    assert all(c >= " " and c != "\x7f" and not ("\x80" <= c <= "\x9f") for c in terminal_text(raw))


@pytest.mark.parametrize("text", PLAIN)
def test_terminal_text_keeps_normal_text(text):
    expected = text.replace("\t", "\\t")
    assert terminal_text(text) == expected


def test_terminal_text_non_strings():
    assert terminal_text(42) == "42"
    assert terminal_text(None) == "None"


def _finding(summary, subject="node1", check="log.cni_failure", severity="critical"):
    return {"check": check, "severity": severity, "layer": "L3", "subject": subject, "summary": summary,
            "evidence": {}, "remediation": "restart\x1b[8m hidden"}


@pytest.mark.parametrize("raw,shown", HOSTILE)
def test_findings_lines_neutralises(raw, shown):
    lines = findings_lines([_finding("seen: " + raw, subject="pod-" + raw)])
    assert len(lines) == 1
    assert lines[0].endswith("pod-%s: seen: %s" % (shown, shown))
    assert "\x1b" not in lines[0] and "\n" not in lines[0] and "\r" not in lines[0]


def test_findings_lines_plain_text_intact():
    lines = findings_lines([_finding("café 日本: 3 lines about 198.18.0.5")])
    assert lines == ["CRITICAL log.cni_failure              node1: café 日本: 3 lines about 198.18.0.5"]


def test_triage_summary_lines_neutralises_every_field():
    evil = "x\x1b[1A\rCRITICAL\nforged\u202e"
    report = {
        "counts": {"severity": {"critical": 1}, "layer": {"L3": 1}},
        "hosts": {"node1": {"status": "reached"}, "node2": {"status": "unreachable", "reason": "ssh " + evil}},
        "coverage": {"gaps": [{"scenario": "dns", "status": "skipped", "hosts": ["node1"], "reason": evil}]},
        "findings": [dict(_finding(evil, subject=evil), host="node1", remediation="next " + evil)],
    }
    lines = triage_summary_lines(report)
    joined = "\n".join(lines)
    assert "\x1b" not in joined and "\r" not in joined and "\u202e" not in joined
    assert all("\n" not in line for line in lines)
    shown = "x\\x1b[1A\\rCRITICAL\\nforged\\u202e"
    assert "NOT CHECKED node2: unreachable (ssh %s)" % shown in lines
    assert "dns skipped on node1: %s" % shown in lines
    assert "CRITICAL log.cni_failure (1): %s" % shown in lines
    assert "    node1  %s" % shown in lines
    assert "    next: next %s" % shown in lines


def test_calico_fleet_table_neutralises_birds_text():
    from ansible_collections.k8snet.triage.plugins.filter.calico_fleet_table import calico_fleet_table
    # BIRD's "info" column (the cause) as a peer's misbehaving daemon could make it read
    peer = {"address": "198.18.96.11", "name": "Node_198_18_96_11", "type": "node-to-node mesh", "state": "start",
            "since": "2026-01-01", "bgp_state": "Connect", "cause": "Socket: \x1b[2K\rEstablished\nnode9 up"}
    status = {"peers": [peer], "findings": [], "sockets": [], "changed": False}
    lines = calico_fleet_table({"node1": status}, [{"name": "node1", "address": "198.18.96.11"}])
    assert len(lines) == 2 and lines[1].endswith("Socket: \\x1b[2K\\rEstablished\\nnode9 up")
    assert not any(c in "".join(lines) for c in "\x1b\r\n")
