"""The inventory-node contract, and the filters of the roles that take their nodes from it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter import calico_inventory_nodes as calico_filter
from ansible_collections.k8snet.triage.plugins.filter import pod_network_peers as peers_filter
from ansible_collections.k8snet.triage.plugins.filter.connectivity_peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.module_utils.core import inventory

calico_inventory_nodes = calico_filter.FilterModule().filters()["calico_inventory_nodes"]
pod_network_peers = peers_filter.FilterModule().filters()["pod_network_peers"]

HOSTVARS = {
    "a": {"ansible_host": "198.18.96.11", "k8s_pod_cidr": "198.19.1.0/24"},
    "b": {"ansible_host": "b.example", "k8s_node_ip": "198.18.96.12", "k8s_node_name": "worker-b",
          "k8s_pod_cidr": ["198.19.2.0/24", "fd00:2::/64"]},
    "c": {"ansible_host": "198.18.96.13/24"},
}


def test_inventory_nodes_use_the_inventory_contract():
    assert inventory.inventory_nodes(["a", "b", "c"], HOSTVARS) == [
        {"host": "a", "name": "a", "address": "198.18.96.11"},
        {"host": "b", "name": "worker-b", "address": "198.18.96.12"},
        {"host": "c", "name": "c", "address": "198.18.96.13"},
    ]
    # the host name itself is the last fallback
    assert inventory.inventory_nodes(["198.18.96.14"], {"198.18.96.14": {}})[0]["address"] == "198.18.96.14"


def test_inventory_nodes_name_the_host_with_a_bad_address():
    with pytest.raises(inventory.NodeListError, match="host b: 'b.example' is not an IP address; set k8s_node_ip"):
        inventory.inventory_nodes(["b"], {"b": {"ansible_host": "b.example"}})


def test_pod_cidr_peers_are_route_check_peers_of_the_hosts_with_a_pod_cidr():
    assert inventory.pod_cidr_peers(["a", "b", "c"], HOSTVARS) == [
        {"node": "a", "node_ip": "198.18.96.11", "pod_cidrs": ["198.19.1.0/24"]},
        {"node": "worker-b", "node_ip": "198.18.96.12", "pod_cidrs": ["198.19.2.0/24", "fd00:2::/64"]},
    ]
    assert pod_network_peers(["a", "b", "c"], HOSTVARS) == inventory.pod_cidr_peers(["a", "b", "c"], HOSTVARS)


def test_every_role_filter_reads_the_same_addresses():
    """Regression: connectivity_peers read k8s_node_ip/ansible_host itself and kept a prefix length
    ('198.18.96.13/24'), which reachability then refused; route peers were built in Jinja."""
    hosts = ["a", "b", "c"]
    contract = {n["host"]: n["address"] for n in inventory.inventory_nodes(hosts, HOSTVARS)}
    assert {n["host"]: n["address"] for n in calico_inventory_nodes(hosts, HOSTVARS)} == contract
    targets = connectivity_peers(hosts, "a", 8, HOSTVARS)
    assert targets == [{"address": contract[h], "name": h} for h in ("b", "c")]
    assert {p["node_ip"] for p in pod_network_peers(hosts, HOSTVARS)} == {contract["a"], contract["b"]}


def test_role_filters_name_the_host_with_a_bad_address():
    hostvars = {"a": {"ansible_host": "198.18.96.11"}, "x": {"ansible_host": "x.example", "k8s_pod_cidr": "198.19.9.0/24"}}
    for call in (lambda: connectivity_peers(["a", "x"], "a", 8, hostvars), lambda: pod_network_peers(["a", "x"], hostvars)):
        with pytest.raises(AnsibleFilterError, match="host x: 'x.example' is not an IP address"):
            call()


# ------------------------------------------------------------------ one host's contract


@pytest.mark.parametrize("variables, variable, shown", [
    ({"k8s_pod_cidr": "198.19.98.0/33"}, "k8s_pod_cidr", "k8s_pod_cidr='198.19.98.0/33' is invalid"),
    ({"k8s_pod_cidr": ["198.19.98.0/24", "x"]}, "k8s_pod_cidr", "k8s_pod_cidr[1]='x' is invalid"),
    ({"k8s_pod_cidr": 5}, "k8s_pod_cidr", "k8s_pod_cidr=5 is invalid"),
    ({"k8s_node_name": "n1\nkube-system"}, "k8s_node_name", "k8s_node_name='n1\\nkube-system' is invalid"),
    ({"k8s_node_name": "n\x1b[31m"}, "k8s_node_name", "k8s_node_name='n\\x1b[31m' is invalid"),
    ({"k8s_node_name": "a" * 300}, "k8s_node_name", "k8s_node_name='aaaa"),
    ({"k8s_node_ip": "198.18.96.300"}, "k8s_node_ip", "k8s_node_ip='198.18.96.300' is invalid"),
])
def test_each_bad_contract_variable_is_named_with_its_value_escaped_and_the_fix(variables, variable, shown):
    [problem] = inventory.contract_problems("n1", variables)
    assert problem["variable"] == variable and shown in problem["message"], problem
    assert "set %s" % variable in problem["message"]
    assert "\n" not in problem["message"] and "\x1b" not in problem["message"]


def test_a_good_contract_has_no_problem_and_an_address_is_only_needed_where_used():
    good = {"k8s_node_name": "worker-1", "k8s_node_ip": "198.18.96.11/24", "k8s_pod_cidr": ["198.19.96.0/24"]}
    assert inventory.contract_problems("n1", good) == []
    # ansible_host a DNS name: no bad variable of the host, but no address for the lists that need one
    hostvars = {"n1": good, "n2": {"ansible_host": "n2.example"}, "n3": {"k8s_pod_cidr": "bad"}}
    usable, left_out = inventory.usable_hosts(["n1", "n2", "n3"], hostvars, inventory.ADDRESS)
    assert usable == ["n1"] and "ansible_host='n2.example' is invalid" in left_out["n2"]
    assert "inventory name='n3' is invalid" in left_out["n3"]
    usable, left_out = inventory.usable_hosts(["n1", "n2", "n3"], hostvars, ("k8s_pod_cidr",))
    assert usable == ["n1", "n2"] and list(left_out) == ["n3"]
    assert inventory.usable_hosts(["n1"], hostvars, inventory.EVERY_VARIABLE) == (["n1"], {})


def test_the_scenario_roles_filters_name_a_bad_variable_and_its_host():
    """The scenario roles' filters (calico_inventory_nodes, pod_network_peers) refuse a bad contract
    variable naming the host, the variable, the value and the fix, instead of handing it to every node's
    module (whose error named neither the host nor the inventory variable)."""
    bad = dict(HOSTVARS, a=dict(HOSTVARS["a"], k8s_pod_cidr="198.19.98.0/33"))
    with pytest.raises(AnsibleFilterError, match=r"host a: k8s_pod_cidr='198.19.98.0/33' is invalid.*set k8s_pod_cidr"):
        pod_network_peers(["a", "b"], bad)
    bad = dict(HOSTVARS, b=dict(HOSTVARS["b"], k8s_node_name="worker-b\n"))
    with pytest.raises(AnsibleFilterError, match=r"host b: k8s_node_name='worker-b\\n' is invalid"):
        pod_network_peers(["a", "b"], bad)
    # the calico role uses only the addresses: a bad name is not its business, a bad address is
    assert [n["address"] for n in calico_inventory_nodes(["a", "b"], bad)] == ["198.18.96.11", "198.18.96.12"]
    # connectivity_peers names peers by their inventory name: a bad k8s_node_name is not used there
    assert [p["name"] for p in connectivity_peers(["a", "b"], "a", 8, bad)] == ["b"]
    bad = dict(HOSTVARS, b=dict(HOSTVARS["b"], k8s_node_ip="198.18.96.300"))
    with pytest.raises(AnsibleFilterError, match=r"host b: k8s_node_ip='198.18.96.300' is invalid.*set k8s_node_ip"):
        calico_inventory_nodes(["a", "b"], bad)
