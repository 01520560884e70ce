# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Importing the module's payload: each of its Python files compiled once, not twice.

On the node a module runs from its AnsiballZ payload, a zip of Python sources imported with
the standard library's ``zipimport``. For every module it imports from a zip, ``zipimport``
compiles the source twice: once to answer ``get_filename`` while the import machinery builds
the module's spec, and once more to run it (CPython issue gh-141276, still open; seen with
Python 3.9 and 3.11). The one-pass module imports some thirty of this collection's files:
compiling them twice cost 0.03 to 0.05 s of CPU per node and run, 10 to 16 % of the module's
whole CPU on an idle lab node.

node_triage, which imports some thirty files, calls ``compile_once()`` right after importing
``AnsibleModule`` (which the AnsiballZ loader imported before the module runs, so that import
still compiles twice). The later imports from the payload go through a ``zipimport`` importer
whose ``get_filename`` names the file without compiling it. Nothing else changes: the same
archive, the same source, the same code objects, the same ``__file__``. It does nothing when
the module does not run from a zip (``ANSIBLE_KEEP_REMOTE_FILES`` exploded, unit tests,
Mitogen), and it never writes anything (no bytecode cache on the node).
"""

from __future__ import annotations

import os
import sys
import zipimport


class _CompileOnceImporter(zipimport.zipimporter):
    """zipimporter whose get_filename does not compile the module (see the file's docstring)."""

    def get_filename(self, fullname):
        # the name zipimport itself gives a source module or package; is_package reads only
        # the archive's directory and raises ZipImportError for a module that is not there
        tail = os.sep + "__init__.py" if self.is_package(fullname) else ".py"
        return self.archive + os.sep + self.prefix + fullname.rpartition(".")[2] + tail


class _Hook(object):
    """A sys.path_hooks entry: _CompileOnceImporter for the archive and its packages, else not us."""

    def __init__(self, archive):
        self.archive = archive

    def __call__(self, path):
        if path == self.archive or path.startswith(self.archive + os.sep):
            return _CompileOnceImporter(path)
        raise ImportError("not in %s" % self.archive)


def install(archive):
    """Route the later imports from ``archive`` (a zip on sys.path) through _CompileOnceImporter.

    Idempotent: a second call for the same archive changes nothing."""
    if any(isinstance(hook, _Hook) and hook.archive == archive for hook in sys.path_hooks):
        return
    sys.path_hooks.insert(0, _Hook(archive))
    # the importers already made for the archive and its packages are made again, by the hook
    for path in [p for p in sys.path_importer_cache if p == archive or p.startswith(archive + os.sep)]:
        del sys.path_importer_cache[path]


# the oldest Python a node module runs on (ansible-core's own module code starts on 3.8, ours needs 3.9)
MINIMUM_PYTHON = (3, 9)


def too_old(version, interpreter):
    """The message of a node whose Python ``version`` (text, e.g. "3.8.18") at ``interpreter`` is too old."""
    minimum = ".".join(map(str, MINIMUM_PYTHON))
    return ("needs Python %s or later on the node, found %s (%s): install Python %s+ there and point "
            "ansible_python_interpreter at it" % (minimum, version, interpreter, minimum))


def require_python(module_class):
    """Fail the module at once on a Python older than MINIMUM_PYTHON, naming the version found, before any of
    the collection's code that needs a newer one is imported.  (Pythons older than 3.8 do not get this far:
    ansible-core's module wrapper does not start on them; the node_pass action names their version.)"""
    if sys.version_info[:2] >= MINIMUM_PYTHON:
        return
    from ansible.module_utils.basic import _load_params  # pylint: disable=import-outside-toplevel

    spec = dict((name, dict(type="raw")) for name in _load_params() if not name.startswith("_ansible_"))
    module = module_class(argument_spec=spec, supports_check_mode=True)
    module.fail_json(msg=too_old(sys.version.split()[0], sys.executable))


def compile_once():
    """Call before a module's other imports of this collection: see the file's docstring."""
    loader = globals().get("__loader__")
    if isinstance(loader, zipimport.zipimporter) and getattr(loader, "archive", None):
        install(loader.archive)
