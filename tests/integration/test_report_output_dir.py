"""An empty report_output_dir (or an environment without PWD, where its default comes from) is said
plainly: the report role still prints the summary and publishes the artifacts, then fails naming the
variable and the fix; the triage's validation refuses it before any host is touched. Real
ansible-runner runs on the controller, their events and artifacts read back as AWX reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integration.conftest import BIN, ROOT

RUNNER = """
import json, sys
import ansible_runner
private, playbook = sys.argv[1], sys.argv[2]
result = ansible_runner.run(private_data_dir=private, playbook=playbook, quiet=True, inventory="localhost,",
                            extravars=json.loads(sys.argv[3]), envvars={"ANSIBLE_CONFIG": sys.argv[4]})
stats = [e for e in result.events if e.get("event") == "playbook_on_stats"]
print(json.dumps({"rc": result.rc, "stdout": result.stdout.read(),
                  "artifacts": stats[-1]["event_data"].get("artifact_data", {}) if stats else None}))
"""
FEED = """
- name: Feed the report as the triage records a scenario
  hosts: localhost
  gather_facts: false
  connection: local
  tasks:
    - name: Publish coverage and findings
      ansible.builtin.set_fact:
        triage_host: {status: controller, reason: ""}
        triage_results:
          cni: {status: ran, reason: "", findings: []}
"""
REPORT = FEED + """
- name: Report
  hosts: localhost
  gather_facts: false
  connection: local
  roles:
    - role: k8snet.triage.report
      vars:
        report_hosts: [localhost]
"""
VALIDATE = """
- name: The triage's first play checks the report's options
  hosts: localhost
  gather_facts: false
  connection: local
  tasks:
    - name: Check the report's options
      ansible.builtin.include_role:
        name: k8snet.triage.report
        tasks_from: validate

    - name: Reached only when the options were accepted
      ansible.builtin.debug:
        msg: AFTER-VALIDATION
"""
WHY = "report_output_dir is empty, so the report has nowhere to go"


def run(tmp_path, play, extravars, without_pwd):
    """``play`` through ansible-runner from ``tmp_path`` (its own process, PWD unset when ``without_pwd``)."""
    (tmp_path / "play.yml").write_text(play)
    private = tmp_path / "runner"
    private.mkdir()
    env = dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    env.pop("PWD", None)
    if not without_pwd:
        env["PWD"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(private), str(tmp_path / "play.yml"), json.dumps(extravars),
                           str(ROOT / "ansible.cfg")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case, extravars, without_pwd", [
    ("given empty", {"report_output_dir": ""}, False),
    ("given blank", {"report_output_dir": "  "}, False),
    ("no PWD for the default", {}, True),
])
def test_an_empty_report_dir_still_publishes_then_fails_naming_it(tmp_path, case, extravars, without_pwd):
    result = run(tmp_path, REPORT, extravars, without_pwd)
    stdout = " ".join(result["stdout"].split())  # the callback wraps long messages
    assert result["rc"] == 2, (case, stdout[-3000:])
    # the summary, then the reason with the fix; no internal template error
    assert "0 critical, " in stdout and "report NOT written: " + WHY in stdout, stdout[-3000:]
    assert "the report was not written: " + WHY in stdout and "-e report_output_dir=" in stdout
    assert "has no attribute" not in stdout and "Finalization of task args" not in stdout, stdout[-3000:]
    # the artifacts, as AWX stores them, say it too
    artifact = result["artifacts"]["k8snet_triage"]
    assert artifact["report"] is None and artifact["report_error"].startswith(WHY), artifact
    assert artifact["hosts"]["localhost"]["status"] == "controller"
    # nothing written anywhere the run could reach, its working directory included
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play.yml", "runner"]


def test_the_triage_validation_refuses_an_empty_report_dir_before_anything_runs(tmp_path):
    refused = run(tmp_path, VALIDATE, {"report_output_dir": ""}, False)
    stdout = " ".join(refused["stdout"].split())
    assert refused["rc"] == 2 and WHY in stdout and "AFTER-VALIDATION" not in stdout, stdout[-3000:]
    second = tmp_path / "second"
    second.mkdir()
    accepted = run(second, VALIDATE, {"report_output_dir": str(tmp_path / "reports")}, False)
    assert accepted["rc"] == 0 and "AFTER-VALIDATION" in accepted["stdout"], accepted["stdout"][-3000:]
    assert not (tmp_path / "reports").exists()  # validation creates nothing
