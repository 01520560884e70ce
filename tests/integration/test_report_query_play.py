"""report_fail_on and report_select through a real playbook run of roles/report (controller only,
no lab needed): the run's exit status and the published set_stats artifacts (json callback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def finding(check, severity, layer, subject):
    return {"check": check, "severity": severity, "layer": layer, "subject": subject, "summary": check,
            "evidence": {}, "remediation": ""}


def run_report(tmp_path, facts, extra):
    inventory = {"all": {"children": {
        "k8s_nodes": {"hosts": {"cp1": None, "w1": None}},
        "control_plane": {"hosts": {"cp1": None}}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    plays = [
        {"name": "Findings as the triage records them (triage_host, triage_results)", "hosts": "k8s_nodes",
         "gather_facts": False, "connection": "local", "tasks": [{"name": "Set findings", "ansible.builtin.set_fact": {
             "triage_host": {"status": "reached", "reason": ""},
             "triage_results": {"stale_arp": {"status": "ran", "reason": "",
                                              "findings": "{{ __facts[inventory_hostname] | default([]) }}"}}}}],
         "vars": {"__facts": facts}},
        {"name": "Report", "hosts": "localhost", "gather_facts": False, "connection": "local",
         "roles": [{"role": "k8snet.triage.report"}]},
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays))
    record = tmp_path / "record.jsonl"
    if record.exists():
        record.unlink()
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "tests/integration/callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="record",
               K8SNET_RECORD=str(record), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    extra = dict(extra, report_output_dir=str(tmp_path), report_hosts=["cp1", "w1"],
                 ansible_python_interpreter=sys.executable)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml"),
                           "-e", json.dumps(extra)], cwd=str(ROOT), env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    records = [json.loads(line) for line in record.read_text().splitlines() if line.strip()] if record.exists() else []
    assert records, proc.stdout + proc.stderr
    failed = [(r["task"].split(" : ")[-1], r["result"].get("msg")) for r in records if r["status"] == "failed"]
    stats = [r["result"]["ansible_stats"]["data"]["k8snet_triage"] for r in records
             if "ansible_stats" in r["result"] and r["status"] == "ok"]
    return proc.returncode, failed, stats[-1] if stats else None


CP_L2 = "findings[?severity=='critical' && layer=='L2' && contains(groups, 'control_plane')]"


def test_fail_on_ignores_a_worker_critical_and_fails_on_the_control_plane(tmp_path):
    worker_only = {"w1": [finding("arp.stale_entry", "critical", "L2", "w1 vip")],
                   "cp1": [finding("arp.ok", "ok", "L2", "cp1 vip")]}
    rc, failed, stats = run_report(tmp_path, worker_only, {"report_fail_on": CP_L2})
    assert rc == 0 and failed == [], failed          # report_fail_on replaces report_fail_on_critical
    assert stats["worst"] == "critical"

    rc, failed = run_report(tmp_path, worker_only, {})[:2]
    assert rc == 2 and [task for task, msg in failed] == ["Fail when critical findings exist"]

    on_cp = {"cp1": [finding("arp.stale_entry", "critical", "L2", "cp1 vip")]}
    rc, failed = run_report(tmp_path, on_cp, {"report_fail_on": CP_L2})[:2]
    assert rc == 2 and failed[0][0] == "Fail when the report_fail_on condition holds"
    assert CP_L2 in failed[0][1]


def test_select_narrows_the_published_findings_not_the_counts(tmp_path):
    facts = {"w1": [finding("arp.stale_entry", "critical", "L2", "w1 vip"),
                    finding("dns.some_servers_fail", "warning", "DNS", "w1")]}
    rc, failed, stats = run_report(tmp_path, facts, {"report_select": "[?layer=='DNS']", "report_fail_on_critical": "false"})
    assert rc == 0, failed
    assert [f["check"] for f in stats["findings"]] == ["dns.some_servers_fail"]
    assert stats["counts"]["severity"]["critical"] == 1 and stats["worst"] == "critical"
    assert stats["report"] == str(tmp_path / "triage-report.html")
    written = json.loads((tmp_path / "triage-report.json").read_text())
    assert {f["check"] for f in written["findings"]} == {"arp.stale_entry", "dns.some_servers_fail"}


@pytest.mark.parametrize("extra, message", [
    ({"report_fail_on": "findings[?severity=="}, "report_fail_on is not a valid JMESPath expression"),
    ({"report_select": "[].check"}, "report_select must select findings"),
])
def test_bad_expressions_fail_the_run_clearly(tmp_path, extra, message):
    rc, failed = run_report(tmp_path, {"w1": [finding("dns.upstream", "warning", "DNS", "w1")]}, extra)[:2]
    assert rc == 2 and any(message in (msg or "") for task, msg in failed), failed
