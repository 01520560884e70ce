# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters' hostile-input matrix: every positional argument of every filter, replaced in turn by
each hostile value of hostile_filters.yml.  A case passes only when the filter raises
AnsibleFilterError with a message, or when the YAML lists its result as harmless with a reason;
any other exception, or a call longer than 5 seconds, fails."""

from __future__ import annotations

import copy
import importlib
import signal
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
MATRIX = yaml.safe_load((HERE / "hostile_filters.yml").read_text())
FILTERS = sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.py") if p.stem != "__init__")
CALL_TIMEOUT = 5


class Hang(Exception):
    pass


def materialize(value):
    if isinstance(value, dict) and len(value) == 1:
        (key, arg), = value.items()
        if key == "repeat":
            return arg[0] * arg[1]
        if key == "list_of":
            return [arg[0]] * arg[1]
    return value


def harmless_reason(name, index, value_name):
    for entry in MATRIX["harmless"] or []:
        values = entry["values"]
        argument = entry["argument"]
        if entry["filter"] == name and (argument == "*" or index in (argument if isinstance(argument, list) else [argument])) \
                and (values == "*" or value_name in values):
            return entry["reason"]
    return None


def _alarm(_signum, _frame):
    raise Hang()


def test_every_filter_is_in_the_matrix():
    assert sorted(MATRIX["filters"]) == FILTERS


@pytest.mark.parametrize("name", FILTERS)
def test_hostile_filter_inputs(name):
    plugin = importlib.import_module("ansible_collections.k8snet.triage.plugins.filter." + name)
    func = plugin.FilterModule().filters()[name]
    base = MATRIX["filters"][name]
    bad, cases = [], 0
    signal.signal(signal.SIGALRM, _alarm)
    for index in range(len(base)):
        for value_name, value in MATRIX["values"].items():
            args = copy.deepcopy(base)
            args[index] = materialize(value)
            cases += 1
            signal.alarm(CALL_TIMEOUT)
            try:
                result = func(*args)
            except AnsibleFilterError as exc:
                if not str(exc).strip():
                    bad.append("%s arg %d=%s: AnsibleFilterError without a message" % (name, index, value_name))
                continue
            except Hang:
                bad.append("%s arg %d=%s: still running after %ds" % (name, index, value_name, CALL_TIMEOUT))
                continue
            except Exception as exc:  # noqa: BLE001 - any other exception is a traceback in a play
                bad.append("%s arg %d=%s: %s: %s" % (name, index, value_name, type(exc).__name__, str(exc)[:200]))
                continue
            finally:
                signal.alarm(0)
            if not harmless_reason(name, index, value_name):
                bad.append("%s arg %d=%s: returned %s" % (name, index, value_name, repr(result)[:160]))
    print("\n%s: %d arguments x %d values = %d cases, %d not accepted" % (
        name, len(base), len(MATRIX["values"]), cases, len(bad)))
    assert not bad, "\n".join(bad)
