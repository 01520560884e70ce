"""node_pass with read_role_facts (what the node_pass role sets): the fleet-sized inputs are read from the role's
facts as they are, not templated for each host; an argument given wins, and a value still a template is rendered."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.k8snet.triage.plugins.action import node_pass as action


class Templar:
    """Records what it was asked to template."""

    def __init__(self):
        self.asked = []

    def template(self, value):
        self.asked.append(value)
        return {"rendered": value}


def inputs(args, task_vars, templar=None):
    fake = SimpleNamespace(_templar=templar or Templar())
    return action.ActionModule._fleet_inputs(fake, args, task_vars), fake._templar.asked


FACTS = {"__node_pass_owners": {"expected": {"198.18.0.200": "02:18:00:00:00:01"}},
         "__node_pass_kube": {"nodes": [{"name": "node%d" % n} for n in range(300)]},
         "__node_pass_dns_pod": {"skipped": True},
         "__node_pass_inventory": {"node1": {"k8s_node_name": "node1"}}}


def test_the_role_facts_are_read_as_they_are_not_templated_per_host():
    got, asked = inputs({"read_role_facts": True}, dict(FACTS, inventory_hostname="node1"))
    assert asked == []
    assert got["kube"] is FACTS["__node_pass_kube"] and got["owners"] is FACTS["__node_pass_owners"]
    assert got["pod"] is FACTS["__node_pass_dns_pod"] and got["inventory"] is FACTS["__node_pass_inventory"]


def test_an_argument_given_wins_and_a_missing_fact_stays_left_out():
    facts = dict(FACTS)
    del facts["__node_pass_dns_pod"]
    got, _asked = inputs({"read_role_facts": True, "owners": {"expected": {}}}, facts)
    assert got["owners"] == {"expected": {}} and "pod" not in got


def test_a_fact_still_a_template_is_rendered_and_without_the_flag_nothing_is_read():
    got, asked = inputs({"read_role_facts": True}, {"__node_pass_kube": "{{ kube_read }}"})
    assert asked == ["{{ kube_read }}"] and got["kube"] == {"rendered": "{{ kube_read }}"}
    got, asked = inputs({}, FACTS)
    assert got == {} and asked == []


class Plain(Templar):
    """Templates text to itself (a variable that is already a value)."""

    def template(self, value):
        self.asked.append(value)
        return value


def narrowing(args, task_vars):
    got, _asked = inputs(args, task_vars, Plain())
    return got, action.ActionModule._narrowed(got)


HOSTS = {"ansible_play_hosts_all": ["node1", "node2"]}


def test_a_scenario_role_narrows_the_pass_through_node_pass_scenario():
    # what the task's arguments said as templates before: [node_pass_scenario] on ansible_play_hosts_all
    _got, (narrowed, problem) = narrowing({"read_role_facts": True}, dict(HOSTS, node_pass_scenario="dns"))
    assert problem is None and narrowed == {"scenarios": ["dns"], "nodes": ["node1", "node2"]}


def test_the_triage_pass_is_not_narrowed():
    for unset in ({}, {"node_pass_scenario": ""}, {"node_pass_scenario": None}):
        got, (narrowed, problem) = narrowing({"read_role_facts": True}, dict(HOSTS, **unset))
        assert narrowed is None and problem is None and "scenarios" not in got


def test_a_narrowing_given_as_arguments_wins_and_a_wrong_scenario_is_refused():
    args = {"read_role_facts": True, "scenarios": ["calico"], "nodes": ["node2"]}
    _got, (narrowed, _problem) = narrowing(args, dict(HOSTS, node_pass_scenario="dns"))
    assert narrowed == {"scenarios": ["calico"], "nodes": ["node2"]}
    _got, (narrowed, problem) = narrowing({"read_role_facts": True}, dict(HOSTS, node_pass_scenario="f5"))
    assert narrowed is None and "scenarios must be a non-empty list of node scenarios" in problem
