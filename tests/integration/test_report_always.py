"""The report is always written, and nothing checked is never green (issue 27), through real runs of
triage.yml against the lab: as AWX runs it (ansible-runner, its artifacts read back from its event
files) and as a user runs it (ansible-playbook).

- a report_output_dir that does not exist is created 0700 and holds the JSON and the HTML;
- a full disk (a real tmpfs of 256 KiB, filled, in a private mount namespace) keeps the old pair and
  still publishes the summary and the artifacts, and the run fails saying why;
- a triage in which no host was checked (an empty nodes group, every scenario filtered out, only
  unreachable hosts) ends non-zero with triage.nothing_checked, its reasons, and a written report.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import BIN, ROOT

RUNNER = """
import json, os, sys
import ansible_runner
private, playbook, extravars = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
result = ansible_runner.run(private_data_dir=private, playbook=playbook, quiet=True, extravars=extravars,
                            inventory=sys.argv[4],
                            envvars={"ANSIBLE_CONFIG": sys.argv[5], "ANSIBLE_SSH_ARGS": "-o ConnectTimeout=3"})
stats = [e for e in result.events if e.get("event") == "playbook_on_stats"]
# read in this process: a tmpfs of a private mount namespace is gone with it
out = extravars["report_output_dir"]
files = dict((name, open(os.path.join(out, name), "rb").read(200).decode("utf-8", "replace")) for name in sorted(os.listdir(out))
             if name != "filler" and os.path.isfile(os.path.join(out, name))) if os.path.isdir(out) else None
print(json.dumps({"rc": result.rc, "status": result.status, "stdout": result.stdout.read(), "files": files,
                  "artifacts": stats[-1]["event_data"].get("artifact_data", {}) if stats else None}))
"""


def runner(lab, tmp_path, extravars, mount=""):
    """triage.yml through ansible-runner (as AWX runs it), in a private mount namespace when ``mount``
    (a shell command over $R, the report directory) is given; returns what the runner's events and
    stdout say."""
    private = tmp_path / "runner"
    private.mkdir()
    argv = [sys.executable, "-c", RUNNER, str(private), str(ROOT / "playbooks" / "triage.yml"), json.dumps(extravars),
            str(lab.inventory_path), str(ROOT / "ansible.cfg")]
    env = dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    if mount:
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", 'R="$1"; shift; %s && exec "$@"' % mount,
                "sh", extravars["report_output_dir"]] + argv
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_missing_report_directory_is_created_0700_and_holds_the_pair(lab, tmp_path):
    out = tmp_path / "reports" / "today"
    run = runner(lab, tmp_path, {"report_output_dir": str(out), "triage_scenarios": ["cni"],
                                 "report_fail_on_critical": False})
    assert run["rc"] == 0, run["stdout"][-3000:]
    for directory in (out, out.parent):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700 and os.stat(directory).st_uid == os.geteuid()
    # the pair, and the history (report_history) with this run's entry
    assert sorted(os.listdir(out)) == ["history", "triage-report.html", "triage-report.json"]
    assert stat.S_IMODE(os.stat(out / "history").st_mode) == 0o700 and len(os.listdir(out / "history")) == 1
    report = json.loads((out / "triage-report.json").read_text())
    assert {h: report["hosts"][h]["scenarios"]["cni"]["status"] for h in ("node1", "node2", "node3")} == \
        dict.fromkeys(("node1", "node2", "node3"), "ran")
    assert "node1" in (out / "triage-report.html").read_text()
    artifact = run["artifacts"]["k8snet_triage"]
    assert artifact["report"] == str(out / "triage-report.html") and artifact["counts"] == report["counts"]


def test_a_full_disk_keeps_the_old_pair_and_still_publishes_the_summary_and_artifacts(lab, tmp_path):
    out = tmp_path / "full"
    out.mkdir()
    # the old pair, then every byte of the 256 KiB filesystem taken by a filler (dd stops at ENOSPC)
    fill = ('mount -t tmpfs -o size=256k k8snet-full "$R" && printf old-json > "$R/triage-report.json" && '
            'printf old-html > "$R/triage-report.html" && { dd if=/dev/zero of="$R/filler" bs=4k 2>/dev/null || true; } && '
            'test "$(stat -f -c %a "$R")" = 0')
    run = runner(lab, tmp_path, {"report_output_dir": str(out), "triage_scenarios": ["cni"],
                                 "report_fail_on_critical": False}, mount=fill)
    # the failure is said, after the summary
    assert (run["rc"], run["status"]) == (2, "failed"), (run["rc"], run["status"])
    # the old pair, read back inside the namespace after the run: both old, no temporary file left
    assert run["files"] == {"triage-report.html": "old-html", "triage-report.json": "old-json"}, run["files"]
    stdout = run["stdout"]
    assert "critical, " in stdout and " on 4 hosts" in stdout, stdout[-3000:]  # the summary's first line
    # (the callback wraps long messages: the words, not the line)
    assert "report NOT written: cannot write the report in %s" % out in stdout, stdout[-3000:]
    assert "No space left on device" in stdout.split("report NOT written", 1)[1].split("TASK", 1)[0]
    assert "the report was not written" in stdout
    artifact = run["artifacts"]["k8snet_triage"]
    assert artifact["report"] is None and "No space left on device" in artifact["report_error"], artifact
    assert set(artifact["hosts"]) == {"node1", "node2", "node3", "localhost"}
    assert artifact["hosts"]["node1"]["status"] == "reached"


def playbook(ansible, lab, tmp_path, extra, edit=None, limit=None):
    data = json.loads(Path(lab.inventory_path).read_text())
    if edit:
        edit(data)
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps(data))
    out = tmp_path / "report"
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", inventory=inventory, limit=limit,
                           extra_vars=dict(extra, report_output_dir=str(out), report_fail_on_critical=False))
    report = json.loads((out / "triage-report.json").read_text())
    assert (out / "triage-report.html").stat().st_size > 0
    return run, report


def only_unreachable(data):
    children = data["all"]["children"]
    common = data["all"]["vars"]["ansible_ssh_common_args"] + " -o ConnectTimeout=3"
    children["k8s_nodes"]["hosts"] = {"node99": {"ansible_host": "198.18.255.254", "ansible_ssh_common_args": common}}
    for group in ("control_plane", "admin_control_plane"):
        children[group]["hosts"] = {}


# An empty or misspelt group is refused before anything runs (test_entry_points.py); a --limit that leaves
# no node (an AWX job's limit, a typo in -l) reaches the plays with no host, as an empty group used to.
@pytest.mark.parametrize("case, extra, edit, limit, why", [
    ("a limit that leaves no node", {"triage_scenarios": ["cni", "dns"]}, None, "localhost",
     "cni: no host of the run has it"),
    ("every scenario filtered out", {"triage_scenarios": ["stale_arp"]}, None, None,
     "stale_arp: skipped (no VIPs given (stale_arp_vips)) on node2, node3 / skipped (not a client of the VIPs"),
    ("only unreachable hosts", {"triage_scenarios": ["cni"]}, only_unreachable, None,
     "cni: not run (host unreachable"),
])
def test_a_triage_that_checked_nothing_fails_and_says_why(ansible, lab, tmp_path, case, extra, edit, limit, why):
    """report_fail_on_critical is false: the run fails for having checked nothing, not for a finding."""
    run, report = playbook(ansible, lab, tmp_path, extra, edit, limit)
    assert run.rc != 0, run
    [item] = [f for f in report["findings"] if f["check"] == "triage.nothing_checked"]
    assert why in item["summary"], item
    assert item["severity"] == "critical" and report["worst"] == "critical"
    assert "nothing was checked: no scenario ran on any host" in run.stdout, run
    assert not any(s["status"] == "ran" for h in report["hosts"].values() for s in h["scenarios"].values())


def test_a_scenario_asked_for_that_ran_nowhere_fails_the_run(ansible, lab, tmp_path):
    """cni ran, stale_arp (no VIPs) ran nowhere: the run is not green although something was checked."""
    run, report = playbook(ansible, lab, tmp_path, {"triage_scenarios": ["cni", "stale_arp"]})
    assert run.rc != 0, run
    [item] = [f for f in report["findings"] if f["check"] == "triage.scenario_not_run"]
    assert item["subject"] == "scenario stale_arp" and "no VIPs given (stale_arp_vips)" in item["summary"], item
    assert report["hosts"]["node1"]["scenarios"]["cni"]["status"] == "ran"
    assert "scenario stale_arp was asked for but ran on no host" in run.stdout


def test_a_scenario_playbook_that_checked_no_host_fails(ansible, lab, tmp_path):
    """conntrack.yml with a limit that leaves no node: its play matches no host, and its artifacts step says
    nothing was checked and fails, instead of a green run."""
    run = ansible.playbook("k8snet.triage.conntrack", limit="localhost")
    assert run.rc != 0, run
    [failed] = [r for r in run.records if r["status"] == "failed"]
    assert failed["task"].endswith("Fail when no host checked the scenario"), failed
    assert "nothing was checked" in failed["result"]["msg"] and "conntrack: no host of the run has it" in failed["result"]["msg"]
    # the same inventory with its nodes: the scenario ran, the run is not failed for coverage
    run = ansible.playbook("k8snet.triage.conntrack", {"conntrack_interval": 0})
    assert not [r for r in run.records if r["task"].endswith("Fail when no host checked the scenario")
                and r["status"] != "skipped"], run
