"""kube_credentials_info answers in the controller's process only for the Python running Ansible: the
same file in the same directory (a virtualenv's bin/python and bin/python3), never the interpreter a
virtualenv links to, whose packages differ."""

from __future__ import annotations

import sys

from ansible_collections.k8snet.triage.plugins.action.kube_credentials_info import _same_python


def test_the_same_python_in_the_same_directory(tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    (venv / "python3").symlink_to(sys.executable)
    assert _same_python(str(venv / "python"), str(venv / "python3"))
    assert _same_python(str(venv / "python3"), str(venv / "python3"))
    assert _same_python(str(venv / "." / "python"), str(venv / "python3"))


def test_another_python_is_not_the_same(tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "python").symlink_to(sys.executable)
    (venv / "python2").write_text("#!/bin/sh\n")
    # the binary a virtualenv links to, another virtualenv over the same binary, another file
    assert not _same_python(sys.executable, str(venv / "python"))
    assert not _same_python(str(other / "python"), str(venv / "python"))
    assert not _same_python(str(venv / "python2"), str(venv / "python"))


def test_a_discovered_or_missing_interpreter_is_not_the_same(tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    for interpreter in ("", "auto", "auto_silent", "python3", None, 3, str(venv / "missing")):
        assert not _same_python(interpreter, str(venv / "python")), interpreter
