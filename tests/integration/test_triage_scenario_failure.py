"""A scenario that fails inside the triage is recorded, never stops it: playbooks/tasks/triage_scenario.yml's
rescue gives status failed, the error as the reason, and one triage.check_failed finding built by the same
constructor as the modules' (the finding filter), with the error in its evidence."""

from __future__ import annotations

from tests.integration.conftest import ROOT


def test_a_failing_scenario_is_recorded_as_failed_with_its_finding(ansible, tmp_path):
    play = tmp_path / "one_scenario.yml"
    play.write_text(
        "- name: One API scenario that fails\n"
        "  hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - name: Run it as the triage does\n"
        "      ansible.builtin.include_tasks: %s\n"
        "      vars:\n"
        "        __triage_scenario: f5\n"
        "    - name: Show the record\n"
        "      ansible.builtin.debug:\n"
        "        var: triage_results\n" % (ROOT / "playbooks" / "tasks" / "triage_scenario.yml"))
    # f5_namespaces must be a list of namespace names: a mapping fails the role's own checks
    run = ansible.playbook(play, extra_vars={"f5_namespaces": {"not": "a list"}, "triage_host": {"status": "controller"}})
    assert run.rc == 0, run  # recorded, not fatal
    [shown] = run.results(task="Show the record")
    record = shown["result"]["triage_results"]["f5"]
    assert record["status"] == "failed" and record["reason"], record
    [found] = record["findings"]
    assert (found["check"], found["severity"], found["layer"], found["subject"]) == (
        "triage.check_failed", "warning", "control-plane", "localhost")
    assert found["summary"] == "the f5 check could not run on localhost: %s" % record["reason"]
    assert found["evidence"] == {"scenario": "f5", "error": record["reason"]}
    assert found["remediation"] == "Run playbook k8snet.triage.f5 alone with -v on this host to see why."
