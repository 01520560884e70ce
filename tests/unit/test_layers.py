"""The packages of plugins/module_utils are layers (docs/developing.md, "The packages of module_utils"): core imports
nothing of the collection's, kernel and kube import only core, a domain package never imports the scenarios or the
pass, and nothing in module_utils imports plugin_utils (the controller's side, absent from a module's payload) but a
scenario's ``fleet``, its conclusion over the fleet, which only the controller calls (test_scenarios holds that the
AnsiballZ payload leaves it out)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MODULE_UTILS = Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
PREFIX = "ansible_collections.k8snet.triage.plugins."
# what each package may import of module_utils (its own package always)
ALLOWED = {"core": set(), "kernel": {"core"}, "kube": {"core"}}
ABOVE_DOMAINS = {"scenarios", "node_triage"}


def _controller_only(tree):
    """The nodes inside a scenario's ``fleet`` function (controller side only)."""
    return set(id(inner) for function in tree.body if isinstance(function, ast.FunctionDef) and function.name == "fleet"
               for inner in ast.walk(function))


def imports(path):
    """(line, the collection's module path imported below plugins/, e.g. 'module_utils.core.params'), but in a
    scenario's ``fleet``."""
    out = []
    tree = ast.parse(path.read_text())
    skip = _controller_only(tree) if path.parent.name == "scenarios" else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            below = node.module[len(PREFIX):]
            out.extend((node.lineno, below + "." + alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name[len(PREFIX):]) for a in node.names if a.name.startswith(PREFIX))
    return out


def package_of(imported):
    parts = imported.split(".")
    return parts[1] if parts[0] == "module_utils" and len(parts) > 1 else parts[0]


def packages():
    return sorted(p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


@pytest.mark.parametrize("package", packages())
def test_a_package_imports_only_what_its_layer_may(package):
    wrong = []
    for path in sorted((MODULE_UTILS / package).rglob("*.py")):
        for line, imported in imports(path):
            target = package_of(imported)
            if imported.startswith("plugin_utils") or not imported.startswith("module_utils"):
                wrong.append("%s:%d imports %s (outside module_utils)" % (path.name, line, imported))
            elif target == package:
                continue
            elif package in ALLOWED and target not in ALLOWED[package]:
                wrong.append("%s:%d imports %s (%s may import only %s)" % (
                    path.name, line, imported, package, sorted(ALLOWED[package]) or "nothing of the collection's"))
            elif package not in ABOVE_DOMAINS and target in ABOVE_DOMAINS:
                wrong.append("%s:%d imports %s (a layer above it)" % (path.name, line, imported))
    assert not wrong, "\n".join(wrong)


def test_the_layers_are_the_folders():
    """Every file of module_utils sits in a package but the pass itself; each package says it is internal."""
    loose = sorted(p.name for p in MODULE_UTILS.glob("*.py") if p.name not in ("node_triage.py", "__init__.py"))
    assert loose == []
    for package in packages():
        doc = ast.get_docstring(ast.parse((MODULE_UTILS / package / "__init__.py").read_text())) or ""
        assert "Internal to k8snet.triage" in doc, package
    assert {"core", "kernel", "kube", "scenarios"} <= set(packages())


def test_the_check_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text("from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb\n"
                   "from ansible_collections.k8snet.triage.plugins.plugin_utils import report\n")
    assert [package_of(imported) for _line, imported in imports(bad)] == ["cilium", "plugin_utils"]
