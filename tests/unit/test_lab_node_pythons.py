"""The lab's choice of interpreter per node (no lab is built: these read the choice, not the nodes)."""

from __future__ import annotations

import pytest

from tests.lab import __main__ as lab_cli
from tests.lab.core import SYSTEM_PYTHON, Lab, LabError


def test_system_gives_every_node_the_system_python():
    assert Lab(slot=7, nodes=5, node_pythons="system")._pythons() == [(SYSTEM_PYTHON, False)]


def test_mixed_keeps_the_tests_rotation():
    choices = Lab(slot=7, nodes=5)._pythons()
    assert (SYSTEM_PYTHON, False) in choices
    assert any(has_pyroute2 for _python, has_pyroute2 in choices)
    assert len(choices) >= 2


def test_an_unknown_choice_is_refused_with_the_choices():
    with pytest.raises(LabError, match="node_pythons='pyenv': use one of mixed, system"):
        Lab(slot=7, nodes=5, node_pythons="pyenv")


def test_the_cli_refuses_an_unknown_choice(capsys):
    with pytest.raises(SystemExit) as exited:
        lab_cli.main(["--slot", "7", "up", "--node-pythons", "pyenv"])
    assert exited.value.code == 2
    assert "invalid choice: 'pyenv'" in capsys.readouterr().err
