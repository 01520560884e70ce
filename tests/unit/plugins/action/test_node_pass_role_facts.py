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


def inputs(args, task_vars):
    fake = SimpleNamespace(_templar=Templar())
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
