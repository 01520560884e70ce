"""A node that cannot finish or cannot start its pass still ends in the report, with why.

A command that blocks on a node (here its ``ip``, as under a stalled rtnl lock; a bind-mounted script inside that
node's mount namespace, which starts a child and waits, as a real command's helper would) is killed with its
process group when its time limit or the pass's deadline runs out: the triage ends, the report names the command in a
``triage.check_failed`` of that scenario on that node, the node's other scenario and the other nodes still report,
and no process the command started is left (read from /proc, not from our module).

A node whose Python is older than 3.9 (the real pyenv-built 2.7, 3.6, 3.7 and 3.8 of this machine) is reported as
without usable Python, with the version found, instead of ansible's "Module result deserialization failed"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.module_utils.core.deadline import KILL_GRACE
from tests.integration.conftest import BIN, ROOT
from tests.lab.faults import nodes, undone

PYENV = "/root/.pyenv/versions/%s/bin/python%s"


@pytest.fixture
def inject(lab):
    with undone(lab, nodes.command_hangs_undo) as inject_:
        yield inject_
    assert not nodes.hung_processes()


def _triage(ansible, tmp_path, name, inventory=None, rc=0, **extra):
    out = tmp_path / name
    extra_vars = {"triage_scenarios": ["pod_network", "sysctl"], "triage_api_scenarios": [],
                  "report_output_dir": str(out), "report_fail_on_critical": False}
    extra_vars.update(extra)
    started = time.monotonic()
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars=extra_vars, inventory=inventory)
    seconds = time.monotonic() - started
    assert run.rc == rc, run
    return json.loads((out / "triage-report.json").read_text()), seconds, run


def _pass_seconds(run, host):
    """The wall time of ``host``'s pass on the node, as node_pass's task returned it."""
    [result] = [r["result"] for r in run.results(host=host, action="node_pass")]
    return result["timing"]["seconds"]


def _failed(report, host, scenario):
    [found] = [f for f in report["findings"] if f["check"] == "triage.check_failed" and f.get("host") == host
               and f["evidence"].get("scenario") == scenario]
    return found


def test_a_command_that_blocks_is_killed_at_its_time_limit_and_named_in_the_report(lab, ansible, inject, tmp_path):
    # node2's Python has no pyroute2: its routes are read with `ip -json`
    inject(nodes.command_hangs, node="node2", tool="ip")
    report, seconds, run = _triage(ansible, tmp_path, "limit", triage_command_timeout=3)
    assert not nodes.hung_processes()  # the blocked `ip` and the child it started were killed
    node2 = report["hosts"]["node2"]
    assert node2["status"] == "reached", node2
    assert node2["scenarios"]["pod_network"]["status"] == "failed", node2["scenarios"]["pod_network"]
    assert node2["scenarios"]["sysctl"]["status"] == "ran"
    error = _failed(report, "node2", "pod_network")["evidence"]["error"]
    assert error.startswith("`ip -json") and "did not finish within 3 s" in error and "killed" in error, error
    for host in ("node1", "node3"):
        assert report["hosts"][host]["scenarios"]["pod_network"]["status"] == "ran", report["hosts"][host]
    assert seconds < 90, seconds  # not an hour
    assert 3 < _pass_seconds(run, "node2") < 3 + KILL_GRACE + 1  # the first `ip` failed the check


def test_the_pass_deadline_bounds_a_node_whose_commands_all_block(lab, ansible, inject, tmp_path):
    inject(nodes.command_hangs, node="node2", tool="ip")
    report, _seconds, run = _triage(ansible, tmp_path, "deadline", triage_node_deadline=6)
    assert not nodes.hung_processes()
    error = _failed(report, "node2", "pod_network")["evidence"]["error"]
    assert error.startswith("`ip -json") and "(what was left of the module run's deadline of 6 s) and was killed" in error
    assert report["hosts"]["node2"]["scenarios"]["sysctl"]["status"] == "ran"
    assert 5 < _pass_seconds(run, "node2") < 6 + KILL_GRACE + 1


def _until(predicate, seconds):
    """Whether ``predicate()`` held within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_a_pass_whose_controller_is_killed_stops_its_commands(lab, ansible, inject, tmp_path):
    """ansible killed while the node's `ip` blocks (its time limit 100 s): the SSH connection closes (no master
    connection outlives ansible here), the pass sees nobody reads its result, and kills the command at once. (Through
    a ControlPersist master, which outlives ansible, the node cannot tell: its deadline bounds it then.)"""
    inject(nodes.command_hangs, node="node2", tool="ip")
    env = ansible._env(str(tmp_path / "record.jsonl"))  # pylint: disable=protected-access
    env["ANSIBLE_SSH_ARGS"] = "-o ControlMaster=no"
    args = {"scenarios": ["pod_network"], "command_timeout": 100, "deadline": 200,
            "pod_network": {"peers": [{"node": "node1", "node_ip": lab.node("node1").ip, "pod_cidrs": ["198.19.0.0/24"]}]}}
    argv = [str(BIN / "ansible"), "node2", "-i", str(lab.inventory_path), "-m", "k8snet.triage.node_triage",
            "-a", json.dumps(args)]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert _until(nodes.hung_processes, 60), "the node's ip never blocked"
    finally:
        # ansible, its worker and their ssh (the worker leads a process group of its own), as a cancelled job's are
        for pid in [proc.pid] + nodes.descendants(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    killed = time.monotonic()
    assert _until(lambda: not nodes.hung_processes(), 10), "the blocked ip outlived its controller"
    assert time.monotonic() - killed < 10


def test_a_deadline_shorter_than_a_window_is_refused_with_the_fix(lab, ansible, tmp_path):
    # every host refused: a run that checked nothing ends non-zero, its report written
    report, _seconds, _run = _triage(ansible, tmp_path, "window", rc=2, triage_scenarios=["firewall_drops"],
                                     triage_node_deadline=10, firewall_drops_interval=5)
    node1 = report["hosts"]["node1"]
    assert node1["status"] == "failed", node1
    assert "deadline=10 s is too short for firewall_drops.interval=5 s" in node1["reason"], node1["reason"]


def _inventory(lab, tmp_path, pythons):
    inventory = yaml.safe_load(lab.inventory_path.read_text())
    for host, python in pythons.items():
        inventory["all"]["children"]["k8s_nodes"]["hosts"][host]["ansible_python_interpreter"] = python
    path = tmp_path / "inventory.yml"
    path.write_text(json.dumps(inventory))
    return path


@pytest.mark.parametrize("pythons", [
    {"node1": ("2.7.18", "2.7"), "node2": ("3.6.15", "3.6"), "node3": ("3.7.16", "3.7")},
    {"node1": ("3.8.18", "3.8"), "node2": ("3.9.18", "3.9")},
], ids=["2.7-3.6-3.7", "3.8-3.9"])
def test_a_python_older_than_3_9_is_reported_with_its_version(lab, ansible, tmp_path, pythons):
    paths = dict((host, PYENV % version) for host, version in pythons.items())
    # a run where no node could run its checks ends non-zero (and still writes its report)
    usable = any(short == "3.9" for _version, short in pythons.values())
    report, _seconds, _run = _triage(ansible, tmp_path, "pythons", inventory=_inventory(lab, tmp_path, paths),
                                     rc=0 if usable else 2, triage_scenarios=["sysctl"])
    for host, (version, short) in pythons.items():
        state = report["hosts"][host]
        if short == "3.9":
            assert state["status"] == "reached" and state["scenarios"]["sysctl"]["status"] == "ran", state
            continue
        assert state["status"] == "no usable Python", (host, state)
        assert "needs Python 3.9 or later on the node, found %s (%s)" % (version, paths[host]) in state["reason"], state
        [finding] = [f for f in report["findings"] if f["check"] == "triage.no_python" and f.get("host") == host]
        assert finding["severity"] == "critical" and version in finding["summary"], finding
