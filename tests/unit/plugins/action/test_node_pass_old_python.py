"""node_pass names the version of a node's Python that is too old to start the module (2.7, 3.6 and 3.7 stop at a
SyntaxError in ansible-core's module wrapper: ansible only says "Module result deserialization failed"), asking the
interpreter it used only on that failure; the record then counts the host as without usable Python. The failed
results are ansible-core 2.19's, as the lab's pyenv-built interpreters produced them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.k8snet.triage.plugins.action import node_pass as action
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import record

PY36 = {"failed": True, "rc": 1, "module_stdout": "", "ssh_attempts": 1,
        "module_stderr": '  File "<stdin>", line 3\nSyntaxError: future feature annotations is not defined\n',
        "msg": "Module result deserialization failed: No start of json char found"}


def _old_python(raw, interpreter="/root/.pyenv/versions/3.6.15/bin/python3.6", answer=None):
    asked = []

    def execute(cmd, sudoable=True):
        asked.append(cmd)
        return answer if answer is not None else {"rc": 0, "stdout": "3.6.15\n", "stderr": ""}
    fake = SimpleNamespace(_used_interpreter="#!" + interpreter if interpreter else None,
                           _low_level_execute_command=execute)
    return action.ActionModule._old_python(fake, raw), asked


def test_a_python_too_old_for_the_wrapper_is_named_with_its_version():
    result, asked = _old_python(PY36)
    assert asked == ["/root/.pyenv/versions/3.6.15/bin/python3.6 -c 'import sys; print(sys.version.split()[0])'"]
    assert result == {"failed": True, "rc": 1, "ssh_attempts": 1, "msg": (
        "needs Python 3.9 or later on the node, found 3.6.15 (/root/.pyenv/versions/3.6.15/bin/python3.6): install "
        "Python 3.9+ there and point ansible_python_interpreter at it")}
    host = record(result, ["sysctl"])
    assert host["host"]["status"] == "no usable Python"
    assert host["results"]["sysctl"]["status"] == "not run"


@pytest.mark.parametrize("raw", [
    {"scenarios": {}, "timing": {}},  # a pass that ran
    {"unreachable": True, "msg": "ssh: connect to host 198.18.0.20 port 22: Connection refused"},
    {"failed": True, "rc": 1, "msg": "MODULE FAILURE", "module_stderr": "Killed\n"},  # not a start-up failure
])
def test_other_results_are_kept_and_cost_no_command(raw):
    result, asked = _old_python(dict(raw))
    assert result == raw and not asked


def test_a_python_new_enough_or_an_unanswered_question_keeps_the_failure_as_it_was():
    for answer in ({"rc": 0, "stdout": "3.11.7\n"}, {"rc": 127, "stdout": ""}, {"rc": 0, "stdout": "garbage"}):
        result, asked = _old_python(dict(PY36), answer=answer)
        assert result == PY36 and len(asked) == 1
    result, asked = _old_python(dict(PY36), interpreter=None)
    assert result == PY36 and not asked


def test_a_shebang_with_arguments_is_asked_as_an_argument_list():
    _result, asked = _old_python(dict(PY36), interpreter="/usr/bin/env python3")
    assert asked == ["/usr/bin/env python3 -c 'import sys; print(sys.version.split()[0])'"]
