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


def _check_fragments(module):
    """The doc fragments of ours that document a scenario module's check options (not the shared attributes, pacing
    or netlink reader ones)."""
    doc = _module_doc(module)
    return [f.split(".")[2] for f in doc.get("extends_documentation_fragment") or []
            if f.startswith("k8snet.triage.") and f.split(".")[2] not in ("attributes", "pacing", "netlink")]


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
    fragments = _check_fragments(declared.MODULE)
    assert fragments, name
    assert all((ROOT / "plugins/doc_fragments" / (f + ".py")).is_file() for f in fragments), (name, fragments)


# --- the fleet half: the reads it needs, its variables, its conclusion ------------------------------------------------

TASKS = ROOT / "roles/node_pass/tasks"
# the lookup's reads= in the role's tasks: reads='name' or reads=['name', ...]
READS_ASKED = re.compile(r"reads=(\[[^\]]*\]|'[^']*')")


def _reads_in_the_role():
    """{read: [task file, ...]}: the reads the node_pass role's tasks ask the lookup about."""
    out = {}
    for path in sorted(TASKS.glob("*.yml")):
        for found in READS_ASKED.findall(path.read_text()):
            for name in re.findall(r"'([^']*)'", found):
                out.setdefault(name, []).append(path.name)
    return out


def test_every_read_a_scenario_needs_is_made_by_the_role_and_every_read_the_role_makes_is_needed():
    """A read named in API_READS that no task of the role asks about would never be made; a task asking about a read
    no scenario declares would never run (the lookup refuses such a name, so the role would fail at once)."""
    declared = set(node_triage.READS)
    assert declared == {"kube_network_info", "node_network_status", "webhook_deadlock", "kube_logs", "dns_pod",
                        "vip_owners"}
    assert set(_reads_in_the_role()) == declared
    for read, needers in node_triage.READS.items():
        assert needers and all(read in _declared(name).API_READS for name in needers), read


def test_the_reads_each_scenario_needs_are_those_the_role_made_for_it_before_the_registry():
    """The role's conditions before they came from the registry, kept here as the behaviour to hold."""
    needs = dict((read, set(names)) for read, names in node_triage.READS.items())
    first = needs["kube_network_info"] | needs["node_network_status"] | needs["webhook_deadlock"] | needs["kube_logs"]
    assert first == {"cni", "calico", "cilium_maps", "dns", "logs"}
    assert needs["node_network_status"] == needs["webhook_deadlock"] == {"cni"}
    assert needs["kube_logs"] == {"logs"} and needs["dns_pod"] == {"dns"} and needs["vip_owners"] == {"stale_arp"}


def _is_variables(node):
    return (isinstance(node, ast.Name) and node.id == "variables") or (
        isinstance(node, ast.Attribute) and node.attr == "variables")


def _variables_read(declared):
    """The variables a scenario module reads from the fleet: ``variables.get("x")``, ``variables["x"]``, and the
    names it hands to ``fleet.group``, ``fleet.peer_sample`` and ``fleet.role_options``."""
    pattern = re.compile(r"^(?:%s)_[a-z0-9_]+$" % "|".join(sorted(NAMES, key=len, reverse=True)))
    found = []
    for node in ast.walk(ast.parse(inspect.getsource(declared))):
        if isinstance(node, ast.Subscript) and _is_variables(node.value):
            found.append(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and _is_variables(node.func.value):
                found.append(node.args[0])
            elif node.func.attr in ("group", "peer_sample", "role_options"):
                found.extend(arg for argument in node.args for arg in ast.walk(argument))
    return set(node.value for node in found if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and pattern.match(node.value))


@pytest.mark.parametrize("name", NAMES)
def test_a_scenario_declares_every_variable_its_controller_side_reads_and_owns_its_fleet_variables(name):
    declared = _declared(name)
    fleet_variables = getattr(declared, "FLEET_VARIABLES", ())
    role_variables = set(variable for _option, variable in declared.ROLE_VARIABLES)
    assert len(set(fleet_variables)) == len(fleet_variables) and not set(fleet_variables) & role_variables
    assert all(variable.startswith(name + "_") for variable in fleet_variables), fleet_variables
    assert set(getattr(declared, "FLEET_LISTS", ())) <= set(fleet_variables)
    # a variable named in its code but not declared would not be handed over by the node_pass action
    read = _variables_read(declared)
    assert read <= role_variables | set(fleet_variables), (name, read - role_variables - set(fleet_variables))
    # and none declared but never read (dns_servers, dns_pod and dns_repeat: node_pass.Fleet reads them for dns, as
    # fleet.dns_servers, fleet.pod_ip and fleet.repeat)
    assert set(fleet_variables) <= read | {"dns_servers", "dns_pod", "dns_repeat"}, name


def test_the_variables_the_action_hands_over_are_derived_from_the_registry():
    fleet_variables = [v for d in node_triage.REGISTRY for v in getattr(d, "FLEET_VARIABLES", ())]
    assert list(controller.FLEET_VARIABLES) == list(controller.TRIAGE_VARIABLES) + fleet_variables
    assert len(set(controller.VARIABLES)) == len(controller.VARIABLES) - 1  # node_log_files: cni's and logs' own pair
    assert set(controller.LIST_VARIABLES) == {"triage_scenarios", "stale_arp_vips", "dns_servers",
                                              "cilium_maps_live_frontends"}
    # what a scenario's fleet half reads beyond its role variables: 19 of the 25 names once written out in node_pass
    assert len(fleet_variables) == 19 and all(v.startswith("triage_") for v in controller.TRIAGE_VARIABLES)


@pytest.mark.parametrize("name", NAMES)
def test_a_scenario_imports_controller_code_only_inside_its_fleet_conclusion(name):
    """plugin_utils is not on the node: the AnsiballZ payload (ansible-core's own ModuleDepFinder) holds the
    scenario's module_utils only, and plugin_utils is imported inside ``fleet``, which the controller alone calls."""
    from ansible.executor.module_common import ModuleDepFinder

    declared = _declared(name)
    tree = ast.parse(inspect.getsource(declared))
    finder = ModuleDepFinder(declared.__name__, tree)
    assert finder.submodules and all("plugin_utils" not in module for module in finder.submodules), name
    for function in tree.body:
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and "plugin_utils" in node.module:
                assert isinstance(function, ast.FunctionDef) and function.name == "fleet", (name, node.module)


def test_the_fleets_conclusions_are_the_registrys_each_declared_once(monkeypatch):
    """node_pass_fleet calls every declared ``fleet(context)`` (none by name), and publishes what it returns under
    the scenario's name."""
    from ansible_collections.k8snet.triage.plugins.plugin_utils import fleet_results

    concluding = [d.NAME for d in node_triage.REGISTRY if callable(getattr(d, "fleet", None))]
    assert concluding == ["connectivity", "dns", "logs", "stale_arp"]
    source = inspect.getsource(fleet_results.node_pass_fleet)
    assert not [n for n in NAMES if '"%s"' % n in source], "node_pass_fleet names a scenario"
    calls = []
    for declared in node_triage.REGISTRY:
        def fleet(context, name=declared.NAME):
            calls.append(name)
            return {"status": "ran", "reason": "", "findings": [], "details": {}, "hosts": list(context.hosts)}
        monkeypatch.setattr(declared, "fleet", fleet, raising=False)
    out = fleet_results.node_pass_fleet({"n1": {}}, ["n1"])
    assert calls == NAMES and sorted(out) == sorted(NAMES) and out["cni"]["hosts"] == ["n1"]


# --- the scenario lists written out in documentation: each is the registry's ----------------------------------------


def _module_doc(module):
    text = (ROOT / "plugins/modules" / (module + ".py")).read_text()
    return yaml.safe_load(re.search(r'DOCUMENTATION = r?"""(.*?)"""', text, re.S).group(1))


def test_node_triages_documentation_lists_the_registrys_scenarios():
    doc = _module_doc("node_triage")
    assert doc["options"]["scenarios"]["choices"] == NAMES and doc["options"]["scenarios"]["default"] == NAMES
    assert set(NAMES) <= set(doc["options"]), "a scenario without its option documented"
    for declared in node_triage.REGISTRY:
        assert "M(k8snet.triage.%s)" % declared.MODULE in doc["options"][declared.NAME]["description"], declared.NAME
        for fragment in _check_fragments(declared.MODULE):
            assert "k8snet.triage.%s.node_triage" % fragment in doc["extends_documentation_fragment"], fragment
    # the description's list of scenarios, each with its module
    described = " ".join(doc["description"][0].split())
    pairs = re.findall(r"C\((\w+)\) \((?:as )?M\(k8snet\.triage\.(\w+)\)", described)
    assert sorted(pairs) == sorted((d.NAME, d.MODULE) for d in node_triage.REGISTRY)
    # the scenarios that name the node in their findings
    named = " ".join(doc["options"]["node_name"]["description"][0].split()).split("findings of ", 1)[1]
    named = re.findall(r"C\((\w+)\)", named.split(", and recognises", 1)[0])
    assert sorted(named) == sorted(node_triage.NODE_NAMED)


def test_the_roles_and_the_surveys_lists_of_node_scenarios_are_the_registrys():
    specs = yaml.safe_load((ROOT / "roles/node_pass/meta/argument_specs.yml").read_text())["argument_specs"]
    assert specs["scenario"]["options"]["node_pass_scenario"]["choices"] == NAMES
    survey = yaml.safe_load((ROOT / "extensions/awx/surveys/triage.json").read_text())
    question = [q for q in survey["spec"] if q["variable"] == "triage_scenarios"][0]
    assert question["default"].split("\n") == NAMES and question["choices"] == NAMES


def _lookup(reads=None):
    """The lookup's run with its option ``reads`` as Ansible hands it over (a list: its type; a playbook's
    ``reads='x'`` becomes ``['x']``); the collection's plugin loader is not set up in the unit tests."""
    from ansible_collections.k8snet.triage.plugins.lookup.node_scenarios import LookupModule

    lookup = LookupModule()
    lookup.set_options = lambda var_options=None, direct=None: None
    lookup.get_option = {"reads": reads}.get
    return lookup.run([], variables={})


def test_the_lookup_gives_the_scenarios_that_need_a_read_and_refuses_a_read_none_declares():
    from ansible.errors import AnsibleLookupError

    assert _lookup() == NAMES
    assert _lookup(["node_network_status"]) == ["cni"]
    assert _lookup(["kube_network_info", "kube_logs"]) == ["calico", "cilium_maps", "dns", "logs"]
    with pytest.raises(AnsibleLookupError, match=r"no scenario needs the read 'nodes'; the reads are dns_pod, "):
        _lookup(["nodes"])
