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
