"""payload.py: a module's imports from its AnsiballZ zip compile each file once, and give the
same modules as plain zipimport (same __file__, same package paths, same errors)."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core import payload

FILES = {
    "__init__.py": "VALUE = 'package'\n",
    "mod.py": "from . import sub\nVALUE = 'mod:' + sub.leaf.VALUE\n",
    "sub/__init__.py": "from . import leaf\n",
    "sub/leaf.py": "VALUE = 'leaf'\n",
}
COMPILED = []


def _audit(event, args):  # an audit hook cannot be removed: it only records while a test wants it
    if event == "compile" and COMPILED and isinstance(args[1], str):
        COMPILED[0].append(args[1])


sys.addaudithook(_audit)


@pytest.fixture
def archives(tmp_path):
    """Two zips holding the same package under two names (plain, hooked); undone afterwards."""
    made = {}
    for name in ("zplain", "zonce"):
        path = str(tmp_path / ("%s.zip" % name))
        with zipfile.ZipFile(path, "w") as archive:
            for rel, text in FILES.items():
                archive.writestr("%s/%s" % (name, rel), text)
        made[name] = path
        sys.path.insert(0, path)
    hooks = list(sys.path_hooks)
    yield made
    sys.path_hooks[:] = hooks
    for path in made.values():
        sys.path.remove(path)
        for key in [k for k in sys.path_importer_cache if k.startswith(path)]:
            del sys.path_importer_cache[key]
    for name in [m for m in sys.modules if m.split(".")[0] in made]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _import(name):
    COMPILED[:] = [[]]
    try:
        module = importlib.import_module(name + ".mod")
        return module, COMPILED[0]
    finally:
        COMPILED[:] = []


def test_every_file_is_compiled_once_and_the_modules_are_those_of_zipimport(archives):
    payload.install(archives["zonce"])
    once, compiled = _import("zonce")
    assert once.VALUE == "mod:leaf"
    for rel in FILES:
        path = os.path.join(archives["zonce"], "zonce", rel)
        assert compiled.count(path) == 1, (rel, compiled)
    plain = _import("zplain")[0]
    for suffix in ("", ".sub", ".sub.leaf", ".mod"):
        hooked, stock = sys.modules["zonce" + suffix], sys.modules["zplain" + suffix]
        assert hooked.__file__.replace("zonce", "X") == stock.__file__.replace("zplain", "X")
        assert isinstance(hooked.__loader__, zipimport.zipimporter)
        assert [p.replace("zonce", "X") for p in getattr(hooked, "__path__", [])] == \
            [p.replace("zplain", "X") for p in getattr(stock, "__path__", [])]
    assert plain.VALUE == once.VALUE


def test_a_missing_module_still_fails_as_not_found(archives):
    payload.install(archives["zonce"])
    with pytest.raises(ModuleNotFoundError, match="zonce.absent"):
        importlib.import_module("zonce.absent")


def test_install_is_idempotent_and_leaves_other_paths_to_the_stock_importers(archives):
    before = len(sys.path_hooks)
    payload.install(archives["zonce"])
    payload.install(archives["zonce"])
    assert len(sys.path_hooks) == before + 1
    with pytest.raises(ImportError):
        sys.path_hooks[0](archives["zplain"])
    with pytest.raises(ImportError):
        sys.path_hooks[0](archives["zonce"] + "-other")


def test_compile_once_does_nothing_outside_a_zip(archives):
    """Unit tests, an exploded ANSIBLE_KEEP_REMOTE_FILES module, Mitogen: loaded from files."""
    hooks = list(sys.path_hooks)
    payload.compile_once()
    assert not isinstance(payload.__loader__, zipimport.zipimporter)
    assert sys.path_hooks == hooks


class _Failed(Exception):
    pass


class _Module(object):
    """AnsibleModule's part require_python uses: the options it was built with, the message it failed with."""

    made = []

    def __init__(self, argument_spec, supports_check_mode):
        self.made.append(argument_spec)

    def fail_json(self, msg):
        raise _Failed(msg)


def test_a_python_older_than_3_9_fails_the_module_naming_its_version(monkeypatch):
    from ansible.module_utils.testing import patch_module_args  # pylint: disable=import-outside-toplevel

    old = type(sys)("sys")
    old.version_info, old.version, old.executable = (3, 8, 18, "final", 0), "3.8.18 (default)", "/usr/bin/python3.8"
    monkeypatch.setattr(payload, "sys", old)
    with patch_module_args({"scenarios": ["sysctl"], "deadline": 60}):
        with pytest.raises(_Failed) as caught:
            payload.require_python(_Module)
    assert str(caught.value) == ("needs Python 3.9 or later on the node, found 3.8.18 (/usr/bin/python3.8): install "
                                 "Python 3.9+ there and point ansible_python_interpreter at it")
    assert set(_Module.made[-1]) == {"scenarios", "deadline"}  # the options given, accepted as they are


def test_python_3_9_and_later_pass_untouched():
    payload.require_python(None)  # this interpreter (3.9+) builds no module: nothing happens
