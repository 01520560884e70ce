"""The ansible-playbook run an action belongs to: its start and identity, read from /proc and checked here against
this machine's own clocks and a child process forked from the test (as ansible-playbook forks its workers)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ansible_collections.k8snet.triage.plugins.plugin_utils import playbook_run


def _child(code):
    """Run ``code`` in a child of this process; its parent (this process) plays ansible-playbook."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout.split()


def test_a_started_process_is_dated_to_within_a_few_hundredths():
    before = time.time()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    try:
        time.sleep(1.2)
        start = playbook_run.started(proc.pid)
        # the process started between `before` and Popen's return: btime's whole seconds would allow a second early
        assert before - 0.05 <= start <= before + 0.5, (before, start)
    finally:
        proc.kill()
        proc.wait()


def test_every_worker_of_a_run_names_the_same_run_and_another_run_another_name():
    code = ("from ansible_collections.k8snet.triage.plugins.plugin_utils import playbook_run; "
            "print(playbook_run.identity())")
    first, second = _child(code), _child(code)
    assert first == second == [playbook_run.identity(os.getpid())]  # two workers of this "run" (this process)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    try:
        assert playbook_run.identity(other.pid) not in (None, first[0])
    finally:
        other.kill()
        other.wait()


def test_what_proc_does_not_say_is_none():
    assert playbook_run.identity(2 ** 22 + 12345) is None
    assert playbook_run.started(2 ** 22 + 12345) is None
