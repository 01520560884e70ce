"""The registry of node scenarios (module_utils/scenarios/<name>.py, node_triage.REGISTRY): each scenario is
declared once, and what is declared agrees with the code, the role and the module it names."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.module_utils import node_triage
from ansible_collections.k8snet.triage.plugins.plugin_utils import node_pass as controller

ROOT = Path(__file__).resolve().parents[4]
NAMES = [declared.NAME for declared in node_triage.REGISTRY]
# what a scenario module may import at its top: its options, the rules, the shared scenario helpers (by their path
# below module_utils)
TOP_LEVEL = re.compile(r"^(\w+\.(\w+_)?options|core\.params|core\.scenario)$")


def _declared(name):
    return node_triage.BY_NAME[name]


def test_each_scenario_is_registered_once_under_its_own_name():
    assert len(set(NAMES)) == len(NAMES)
    for declared in node_triage.REGISTRY:
        assert declared.__name__.rsplit(".", 1)[1] == declared.NAME
    files = sorted(p.stem for p in (ROOT / "plugins/module_utils/scenarios").glob("*.py") if p.stem != "__init__")
    assert files == sorted(NAMES), "a scenario module that is not in node_triage.REGISTRY, or the reverse"


def test_the_node_triage_tables_are_the_registrys():
    assert list(node_triage.SCENARIOS) == NAMES
    assert set(node_triage.ARGUMENT_SPEC) == {"node_name", "scenarios", "deadline", "command_timeout"} | set(NAMES)
    assert set(node_triage.RULES) == {"node_name", "scenarios", "deadline", "command_timeout"} | set(NAMES)
    assert set(node_triage.SAMPLED) == {"firewall_drops", "conntrack", "cilium_agent"}
    assert controller.ROLE_VARIABLES == dict((d.NAME, d.ROLE_VARIABLES) for d in node_triage.REGISTRY)


@pytest.mark.parametrize("name", NAMES)
def test_a_scenario_module_imports_only_options_at_its_top(name):
    tree = ast.parse(inspect.getsource(_declared(name)))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and "plugins.module_utils" in node.module:
            below = node.module.split("plugins.module_utils", 1)[1].lstrip(".")
            for alias in node.names:
                imported = "%s.%s" % (below, alias.name) if below else alias.name
                assert TOP_LEVEL.match(imported), "%s imports %s at its top: the node pass would load it first" % (
                    name, imported)


@pytest.mark.parametrize("name", NAMES)
def test_the_scenario_names_its_module_and_its_check_ids(name):
    declared = _declared(name)
    assert (ROOT / "plugins/modules" / (declared.MODULE + ".py")).is_file(), declared.MODULE
    domain = inspect.getmodule(declared.load())
    # a domain is a package of module_utils: its check and the parts beside it (parsers.py, checks.py, ...); in a
    # package of several checks (several *_options.py), a check's parts are named after it (agent_reader.py)
    path = Path(domain.__file__)
    shared = len(list(path.parent.glob("*_options.py"))) > 1
    parts = [path] + sorted(p for p in path.parent.glob("*.py") if p not in (path, path.parent / "__init__.py")
                            and (not shared or p.stem.startswith(path.stem)))
    source = "".join(part.read_text() for part in parts)
    ids = set(re.findall(r"finding\(\s*\"([a-z_]+)\.[a-z_]+\"", source))
    assert ids, "%s: no finding id read from %s" % (name, domain.__name__)
    assert ids <= set(declared.PREFIXES), "%s finds %s, declares %s" % (name, sorted(ids), declared.PREFIXES)


def _role_options():
    options = {}
    for spec in (ROOT / "roles").glob("*/meta/argument_specs.yml"):
        for entry in yaml.safe_load(spec.read_text())["argument_specs"].values():
            options.update(entry.get("options") or {})
    return options


@pytest.mark.parametrize("name", NAMES)
def test_every_role_variable_is_a_documented_role_option_of_a_node_triage_option(name):
    declared, roles = _declared(name), _role_options()
    for option, variable in declared.ROLE_VARIABLES:
        assert option in declared.OPTIONS["options"], (name, option)
        # node_log_files is the inventory's own name (a host variable), not a role option
        assert variable in roles or variable == "node_log_files", "%s: %s is in no role's argument spec" % (name, variable)


def _names_table():
    text = (ROOT / "docs/developing.md").read_text()
    section = text.split("## Names: one per thing", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| `")]
    return [tuple(cell.strip() for cell in row) for row in rows]


def test_the_names_table_in_the_developers_guide_is_the_registrys():
    expected = []
    for declared in node_triage.REGISTRY:
        domain = inspect.getmodule(declared.load()).__name__.split(".module_utils.", 1)[1].replace(".", "/")
        expected.append(("`%s`" % declared.NAME, "`%s`" % declared.MODULE, "`module_utils/%s.py`" % domain,
                         ", ".join("`%s.*`" % prefix for prefix in declared.PREFIXES)))
    assert _names_table() == expected


@pytest.mark.parametrize("name", NAMES)
def test_one_scenario_name_for_its_role_playbook_and_variables_one_domain_name_for_its_files(name):
    declared = _declared(name)
    assert (ROOT / "roles" / name / "meta/argument_specs.yml").is_file()
    assert (ROOT / "playbooks" / (name + ".yml")).is_file()
    for _option, variable in declared.ROLE_VARIABLES:
        # its own, or a variable another scenario owns and it shares (cni_conf_dir); node_log_files: the inventory's
        owner = [other for other in NAMES if variable.startswith(other + "_")]
        assert owner or variable == "node_log_files", (name, variable)
    # its options sit in its domain's package, beside its check; its module's documentation is a fragment of ours
    check = inspect.getmodule(declared.load()).__name__
    options = [n.module for n in ast.parse(inspect.getsource(declared)).body if isinstance(n, ast.ImportFrom)
               and any(a.name.endswith("options") for a in n.names) and n.module.endswith(check.split(".")[-2])]
    assert options, "%s: its options are not imported from its domain's package %s" % (name, check.rsplit(".", 1)[0])
    doc = yaml.safe_load(getattr(__import__("importlib").import_module(
        "ansible_collections.k8snet.triage.plugins.modules." + declared.MODULE), "DOCUMENTATION"))
    fragments = [f.split(".")[2] for f in doc.get("extends_documentation_fragment") or []
                 if f.startswith("k8snet.triage.") and f.split(".")[2] not in ("attributes", "pacing", "netlink")]
    assert fragments, name
    assert all((ROOT / "plugins/doc_fragments" / (f + ".py")).is_file() for f in fragments), (name, fragments)
