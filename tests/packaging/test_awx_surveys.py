"""AWX survey specs (extensions/awx/surveys/<playbook>.json, one per job template): importable as AWX
validates them, asking only for variables the playbook or its roles read, and answered the way AWX
answers (a textarea is one string, a multiselect a list, a multiple choice a string) they pass the
roles' argument specs and the k8snet.triage.as_list normalisation."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.k8snet.triage.plugins.filter.as_list import as_list
from tests.packaging.conftest import ROOT

SURVEYS = sorted((ROOT / "extensions/awx/surveys").glob("*.json"))
ALLOWED_TYPES = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
                 "integer": int, "float": float}
ALL_ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta/argument_specs.yml").is_file())


def awx_errors(survey):
    """The checks AWX's survey_spec endpoint makes before it stores a survey (empty: accepted)."""
    errors = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if not isinstance(survey.get(field), kind):
            errors.append("%s must be a %s" % (field, kind.__name__))
    if errors:
        return errors
    if not survey["spec"]:
        errors.append("spec has no questions")
    seen = set()
    for idx, item in enumerate(survey["spec"]):
        if not isinstance(item, dict):
            errors.append("question %d is not an object" % idx)
            continue
        for field, kind in (("type", str), ("question_name", str), ("variable", str), ("required", bool)):
            if not isinstance(item.get(field), kind):
                errors.append("question %d: %s must be a %s" % (idx, field, kind.__name__))
        if item.get("variable") in seen:
            errors.append("question %d: variable %s twice" % (idx, item.get("variable")))
        seen.add(item.get("variable"))
        qtype = item.get("type")
        if qtype not in ALLOWED_TYPES:
            errors.append("question %d: type %r is not an AWX question type" % (idx, qtype))
            continue
        default = item.get("default", "")
        if default != "" and not isinstance(default, ALLOWED_TYPES[qtype]):
            errors.append("question %d: default %r is not a %s" % (idx, default, ALLOWED_TYPES[qtype].__name__))
        for key in ("min", "max"):
            if item.get(key) is not None and not isinstance(item[key], int):
                errors.append("question %d: %s must be an integer" % (idx, key))
        if qtype in ("multiplechoice", "multiselect"):
            choices = item.get("choices")
            if isinstance(choices, str):
                choices = [c for c in choices.splitlines() if c.strip()]
            if not choices:
                errors.append("question %d: %s needs choices" % (idx, qtype))
                continue
            defaults = [d for d in default.splitlines() if d.strip()] if isinstance(default, str) else default
            if qtype == "multiplechoice" and len(defaults) > 1:
                errors.append("question %d: one default only" % idx)
            if any(d not in choices for d in defaults):
                errors.append("question %d: default %r not among the choices" % (idx, default))
    return errors


def awx_answer(item):
    """The extra variable AWX passes for a question answered with its default."""
    default = item.get("default", "")
    if item["type"] == "multiselect":
        return [d for d in default.splitlines() if d.strip()] if isinstance(default, str) else list(default)
    return default


def playbook_text(name):
    """The playbook, the task files it imports, and the variables the node_pass action reads for them."""
    text = (ROOT / "playbooks" / ("%s.yml" % name)).read_text()
    for tasks in sorted(set(re.findall(r"tasks/(\w+)\.yml", text))):
        text += (ROOT / "playbooks" / "tasks" / ("%s.yml" % tasks)).read_text()
    if "k8snet.triage.node_pass:" in text:
        from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import VARIABLES
        text += "\n".join(VARIABLES)
    return text


def roles_of(name):
    if name == "triage":  # triage.yml reads the scenario roles' variables (node_pass) and runs the API roles, then the report
        return ALL_ROLES
    return sorted(set(re.findall(r"k8snet\.triage\.(\w+)", playbook_text(name))) & set(ALL_ROLES))


def role_options(role):
    spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
    # a role without a main entry point (node_pass: it reads the other roles' variables) takes none of its own
    return (spec["argument_specs"].get("main") or {}).get("options") or {}


def test_one_survey_per_job_template_of_the_docs():
    assert SURVEYS, "no survey specs"
    docs = (ROOT / "docs/awx.md").read_text()
    for path in SURVEYS:
        assert (ROOT / "playbooks" / (path.stem + ".yml")).is_file(), "%s names no playbook" % path.name
        assert "extensions/awx/surveys/%s" % path.name in docs, "docs/awx.md does not name %s" % path.name
    for playbook in ("triage", "stale_arp", "cilium_maps", "lb_health"):
        assert (ROOT / "extensions/awx/surveys" / (playbook + ".json")).is_file()


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_survey_is_accepted_by_awx(path):
    assert awx_errors(json.loads(path.read_text())) == []


def test_awx_checks_catch_what_awx_refuses():
    good = {"name": "n", "description": "d", "spec": [
        {"question_name": "q", "variable": "v", "type": "multiplechoice", "required": True, "default": "a", "choices": ["a", "b"]}]}
    assert awx_errors(good) == []
    bad = json.loads(json.dumps(good))
    bad["spec"][0].update(default="c", min="1")
    bad["spec"].append({"question_name": "q", "variable": "v", "type": "checkbox", "required": "yes"})
    assert len(awx_errors(bad)) == 5


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_survey_asks_only_what_the_playbook_or_its_roles_read(path):
    survey = json.loads(path.read_text())
    options = {}
    for role in roles_of(path.stem):
        options.update(role_options(role))
    text = playbook_text(path.stem)
    unknown = [item["variable"] for item in survey["spec"]
               if item["variable"] not in options and not re.search(r"\b%s\b" % re.escape(item["variable"]), text)]
    assert not unknown, "%s asks for variables nothing reads: %s" % (path.name, unknown)


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_survey_answers_fit_the_role_argument_specs(path):
    survey = json.loads(path.read_text())
    options = {}
    for role in roles_of(path.stem):
        options.update(role_options(role))
    for item in survey["spec"]:
        spec = options.get(item["variable"])
        if spec is None:
            continue
        answer = awx_answer(item)
        kind = spec.get("type", "str")
        if kind == "bool":
            assert item["type"] == "multiplechoice" and sorted(item["choices"]) == ["false", "true"], item["variable"]
        if kind == "int":
            assert item["type"] == "integer", item["variable"]
        if kind == "float":
            assert item["type"] in ("float", "integer"), item["variable"]
        if spec.get("choices"):
            assert set(item["choices"]) <= set(spec["choices"]), item["variable"]
        if kind == "list":
            assert item["type"] in ("textarea", "text", "multiselect"), item["variable"]
            assert isinstance(as_list(answer, item["variable"]), list)
        if answer == "" and not item["required"]:
            continue  # AWX passes nothing for an empty optional answer
        result = ArgumentSpecValidator({item["variable"]: spec}).validate({item["variable"]: answer})
        assert not result.error_messages, (item["variable"], answer, result.error_messages)


def test_textarea_answers_become_the_items_the_roles_use():
    survey = json.loads((ROOT / "extensions/awx/surveys/cni.json").read_text())
    answers = dict((item["variable"], awx_answer(item)) for item in survey["spec"])
    assert answers["cni_daemonsets"] == "calico-node\ncilium\nanetd"   # what AWX passes: one string
    assert as_list(answers["cni_daemonsets"]) == ["calico-node", "cilium", "anetd"]
    assert role_options("cni")["cni_daemonsets"]["default"] == as_list(answers["cni_daemonsets"])


def survey_problems(survey, name):
    """What a survey asks that the playbook's roles would refuse: a variable nothing reads, or an answer
    (each choice, a two-line textarea, the default) that the role's argument spec rejects."""
    options = {}
    for role in roles_of(name):
        options.update(role_options(role))
    text = playbook_text(name)
    problems = []
    for item in survey["spec"]:
        variable = item["variable"]
        spec = options.get(variable)
        if spec is None:
            if not re.search(r"\b%s\b" % re.escape(variable), text):
                problems.append("%s: no role of %s accepts it" % (variable, name))
            continue
        # (the triage runs a scenario whose required variable is not given as skipped, with the reason)
        if spec.get("required") and not item["required"] and name != "triage":
            problems.append("%s: the role requires it, the survey does not" % variable)
        answers = [awx_answer(item)]
        if item["type"] == "multiplechoice":
            answers += list(item["choices"])
        if item["type"] == "textarea":
            answers.append("a\nb\n")  # what AWX passes for a two-line answer
        for answer in answers:
            if answer == "" and not item["required"]:
                continue
            result = ArgumentSpecValidator({variable: spec}).validate({variable: answer})
            if result.error_messages:
                problems.append("%s=%r: %s" % (variable, answer, "; ".join(result.error_messages)))
    return problems


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_every_answer_of_every_question_passes_the_role_spec(path):
    assert survey_problems(json.loads(path.read_text()), path.stem) == []


def test_survey_problems_catch_an_unknown_variable_and_a_rejected_answer():
    survey = json.loads((ROOT / "extensions/awx/surveys/lb_health.json").read_text())
    survey["spec"].append({"question_name": "q", "variable": "lb_health_remediat", "type": "text",
                           "required": False, "default": ""})
    survey["spec"].append({"question_name": "q", "variable": "lb_health_remediate", "type": "multiplechoice",
                           "required": True, "default": "none", "choices": ["none", "Cluster"]})
    problems = survey_problems(survey, "lb_health")
    assert any(p.startswith("lb_health_remediat: no role") for p in problems), problems
    assert any(p.startswith("lb_health_remediate='Cluster'") for p in problems), problems


def test_lb_health_survey_asks_which_services_a_remediation_may_patch():
    """lb_health_remediate=cluster refuses to patch without lb_health_remediate_services: a survey that
    offers the switch must ask for the Services."""
    spec = {item["variable"]: item for item in json.loads((ROOT / "extensions/awx/surveys/lb_health.json").read_text())["spec"]}
    assert "cluster" in spec["lb_health_remediate"]["choices"]
    assert spec["lb_health_remediate_services"]["type"] == "textarea"
    assert as_list("default/web\nshop/front\n", "lb_health_remediate_services") == ["default/web", "shop/front"]


def test_boolean_answers_are_strings_the_specs_accept():
    """A multiple choice answers "true"/"false" as text (dns_host_resolvers, dns_api)."""
    options = role_options("dns")
    for answer in ("true", "false"):
        for variable in ("dns_host_resolvers", "dns_api"):
            result = ArgumentSpecValidator({variable: options[variable]}).validate({variable: answer})
            assert not result.error_messages, (variable, answer)


# --- the repair, force and probe switches (issue 47 §1b) ---------------------------------------------------
# A role marks each switch in its argument spec: a description paragraph "<Kind> switch, off by default ...".
# Every survey of a playbook that runs the role asks for it, answered off by default, its help text saying the
# trade-off; the triage (read-only by construction) asks for its probe switches and never for a repair or force one.
SWITCH = re.compile(r"^(Repair|Force|Probe) switch, off by default\b")
# names that say a boolean changes or sends something: never unmarked, whatever its default
SWITCH_WORDS = re.compile(r"(flush|force|cleanup|remediate|repair|delete|patch|allow_empty|probe_traffic)")
OFF = ("false", "none")


def switch_kind(spec):
    """'repair', 'force' or 'probe' when the option's description marks it a switch, else None."""
    description = spec.get("description") or []
    for paragraph in [description] if isinstance(description, str) else description:
        found = SWITCH.match(paragraph)
        if found:
            return found.group(1).lower()
    return None


def off_by_default(spec):
    """An option whose default asks for nothing: a bool defaulting to false, a choice defaulting to none."""
    if spec.get("type") == "bool":
        return spec.get("default") is False
    return bool(spec.get("choices")) and spec.get("default") == "none"


def marking_problems(options):
    """Switches left unmarked, and marks on options that are not off-by-default switches: a bool that
    defaults to false or a choice that defaults to none is a switch (nothing else asks for nothing by
    default), and so is any boolean named like one (whatever its default)."""
    problems = []
    for name, spec in sorted(options.items()):
        kind = switch_kind(spec)
        looks = off_by_default(spec) or (spec.get("type") == "bool" and SWITCH_WORDS.search(name))
        if looks and not kind:
            problems.append("%s: an off-by-default switch without its mark (a description paragraph "
                            "'Repair|Force|Probe switch, off by default ...')" % name)
        if kind and not off_by_default(spec):
            problems.append("%s: marked a %s switch but not off by default (bool false, or choice none)" % (name, kind))
    return problems


def switch_problems(survey, name, options):
    """What the survey ``survey`` of playbook ``name`` misses of the switches in ``options`` (its roles')."""
    asked = dict((item["variable"], item) for item in survey["spec"])
    problems = []
    for variable, spec in sorted(options.items()):
        kind = switch_kind(spec)
        if kind is None:
            continue
        if name == "triage" and kind != "probe":
            if variable in asked:
                problems.append("%s: a %s switch in the triage, which is read-only" % (variable, kind))
            continue
        item = asked.get(variable)
        if item is None:
            problems.append("%s: the %s switch is not asked" % (variable, kind))
            continue
        if item["type"] != "multiplechoice" or str(item.get("default")) not in OFF:
            problems.append("%s: asked with default %r, not off" % (variable, item.get("default")))
        if len((item.get("question_description") or "").split()) < 12:
            problems.append("%s: the help text does not say the trade-off" % variable)
    return problems


def all_options(role):
    """Every entry point's options of ``role`` (main, check, repair ... share them or add their own)."""
    spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
    options = {}
    for entry in spec["argument_specs"].values():
        options.update(entry.get("options") or {})
    return options


@pytest.mark.parametrize("role", ALL_ROLES)
def test_every_off_by_default_switch_of_a_role_is_marked(role):
    assert marking_problems(all_options(role)) == []


def test_the_roles_document_the_switches_the_surveys_must_ask():
    """What the marks find today (a new one adds itself to the surveys' test, not to this list)."""
    found = dict((name, switch_kind(spec)) for role in ALL_ROLES for name, spec in all_options(role).items()
                 if switch_kind(spec))
    assert found == {"stale_arp_flush": "repair", "stale_arp_force": "force", "cilium_maps_cleanup": "repair",
                     "cilium_maps_allow_empty_services": "force", "cilium_maps_allow_empty_live_frontends": "force",
                     "lb_health_remediate": "repair", "lb_health_force_policy_switch": "force",
                     "lb_health_probe_traffic": "probe", "cilium_maps_restart_agent": "repair"}


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_every_survey_asks_for_each_switch_of_its_roles_off_by_default(path):
    options = {}
    for role in roles_of(path.stem):
        options.update(all_options(role))
    assert switch_problems(json.loads(path.read_text()), path.stem, options) == []


def test_switch_checks_catch_a_missing_question_a_default_on_and_an_unmarked_switch():
    survey = json.loads((ROOT / "extensions/awx/surveys/stale_arp.json").read_text())
    options = all_options("stale_arp")
    assert switch_problems(survey, "stale_arp", options) == []
    # a new repair switch documented by the role, not asked by the survey
    options["stale_arp_purge"] = {"type": "bool", "default": False,
                                  "description": ["Purge.", "Repair switch, off by default (a survey asks for it)."]}
    assert switch_problems(survey, "stale_arp", options) == ["stale_arp_purge: the repair switch is not asked"]
    # asked, but answered on by default and with no trade-off said
    for item in survey["spec"]:
        if item["variable"] == "stale_arp_force":
            item.update(default="true", question_description="")
    problems = switch_problems(survey, "stale_arp", all_options("stale_arp"))
    assert problems == ["stale_arp_force: asked with default 'true', not off",
                        "stale_arp_force: the help text does not say the trade-off"], problems
    # the triage never asks for a repair switch
    assert switch_problems({"spec": [{"variable": "stale_arp_flush"}]}, "triage", all_options("stale_arp")) == \
        ["stale_arp_flush: a repair switch in the triage, which is read-only"]
    # a switch without its mark, whether found by its default or by its name, and a mark on an option on by default
    assert marking_problems({"x_wipe": {"type": "bool", "default": False, "description": "Wipe."},
                             "x_flush_all": {"type": "bool", "default": None, "description": "Flush."},
                             "x_mode": {"type": "str", "choices": ["none", "fix"], "default": "none"},
                             "x_probe": {"type": "bool", "default": True,
                                         "description": ["Probe.", "Probe switch, off by default."]}}) == [
        "x_flush_all: an off-by-default switch without its mark (a description paragraph 'Repair|Force|Probe switch, "
        "off by default ...')",
        "x_mode: an off-by-default switch without its mark (a description paragraph 'Repair|Force|Probe switch, "
        "off by default ...')",
        "x_probe: marked a probe switch but not off by default (bool false, or choice none)",
        "x_wipe: an off-by-default switch without its mark (a description paragraph 'Repair|Force|Probe switch, "
        "off by default ...')"]
