"""Every use of the API stand-in (tests/kube_api) says why it is not the lab's real control plane.

The stand-in is kept for what a real API server cannot be made to do on purpose and for what needs a kubelet
(tests.kube_api.WHY); everything else runs on the real one (tests/lab/cluster.py). This test reads the sources
(tests/ and scripts/) and finds every call that starts the stand-in: ``StandIn(...)``, ``start(...)`` of
tests.kube_api.helpers and ``start_api(...)`` of tests.lab.faults.kube. Each must pass ``why=`` a key of WHY,
written out (a string, not a variable), so that a reader sees the reason at the call.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.kube_api import WHY

ROOT = Path(__file__).resolve().parents[2]
# the stand-in itself and the functions that pass a caller's ``why`` on
DEFINING = {"tests/kube_api/server.py", "tests/kube_api/helpers.py", "tests/lab/faults/kube.py"}
STARTERS = {("tests.kube_api", "StandIn"), ("tests.kube_api.server", "StandIn"), ("tests.kube_api.helpers", "start"),
            ("tests.lab.faults.kube", "start_api")}
MODULES = {"tests.lab.faults.kube": "start_api", "tests.kube_api.helpers": "start"}


def _starter_names(tree):
    """The local names (and module aliases) under which a file imports a function that starts the stand-in."""
    names, modules = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (node.module, alias.name) in STARTERS:
                    names.add(alias.asname or alias.name)
                full = "%s.%s" % (node.module, alias.name)
                if full in MODULES:
                    modules[alias.asname or alias.name] = MODULES[full]
    return names, modules


def stand_in_calls(path):
    """[(line, why or None, the call's text)] for every call in ``path`` that starts the stand-in."""
    tree = ast.parse(path.read_text(), str(path))
    names, modules = _starter_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in names:
            pass
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and modules.get(func.value.id) == func.attr:
            pass
        else:
            continue
        why = [k.value for k in node.keywords if k.arg == "why"]
        value = why[0].value if why and isinstance(why[0], ast.Constant) else ("<not a string>" if why else None)
        found.append((node.lineno, value, ast.get_source_segment(path.read_text(), node).splitlines()[0]))
    return found


def sources():
    for top in ("tests", "scripts"):
        for path in sorted((ROOT / top).rglob("*")):
            script = top == "scripts" and path.is_file() and "python" in path.read_text(errors="replace")[:200]
            if path.suffix != ".py" and not script:
                continue
            if path.is_file() and str(path.relative_to(ROOT)) not in DEFINING:
                yield path


def all_calls():
    return {str(p.relative_to(ROOT)): calls for p in sources() for calls in [stand_in_calls(p)] if calls}


def test_every_use_of_the_stand_in_says_why_with_a_known_reason():
    calls = all_calls()
    assert calls, "no use of the stand-in found: the scan is broken (or the stand-in is gone: remove this test)"
    unsaid = ["%s:%d %s (why=%r)" % (path, line, text, why) for path, found in calls.items()
              for line, why, text in found if why not in WHY]
    reasons = ", ".join(sorted(WHY))
    assert not unsaid, ("a use of the API stand-in that does not say why (pass why= one of %s, or move the test to "
                        "the real control plane, tests/lab/cluster_objects.py):\n%s" % (reasons, "\n".join(unsaid)))


def test_every_reason_is_still_someones():
    """A reason no call gives any more (its tests moved to the real control plane) goes from WHY."""
    given = {why for found in all_calls().values() for _line, why, _text in found}
    # the Hostile server (tests/kube_api/hostile.py) gives its own reason to StandIn.__init__
    given |= {k.value.value for node in ast.walk(ast.parse((ROOT / "tests/kube_api/hostile.py").read_text()))
              if isinstance(node, ast.Call) for k in node.keywords
              if k.arg == "why" and isinstance(k.value, ast.Constant)}
    assert sorted(set(WHY) - given) == [], "reasons in tests.kube_api.WHY that no use of the stand-in gives"


@pytest.mark.parametrize("source, expected", [
    ("from tests.kube_api import StandIn\nStandIn([], 'w', 'b', why='parity').start()\n", [(2, "parity")]),
    ("from tests.kube_api.helpers import start as s\ns(lab, 'a.yaml')\n", [(2, None)]),
    ("from tests.lab.faults import kube as k\nk.start_api(lab, [], why=reason)\n", [(2, "<not a string>")]),
    ("from tests.lab.faults import bgp\nbgp.bird_start(lab, 'node1')\nstart(lab)\n", []),
])
def test_the_scan_finds_the_calls_it_must(tmp_path, source, expected):
    path = tmp_path / "t.py"
    path.write_text(source)
    assert [(line, why) for line, why, _text in stand_in_calls(path)] == expected
