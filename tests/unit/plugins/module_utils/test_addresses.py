"""One normaliser of IP address text for the inventory, Node annotations and BIRD."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import bird, inventory, kube_facts
from ansible_collections.k8snet.triage.plugins.module_utils.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError


@pytest.mark.parametrize("value, expected", [
    ("198.18.0.5", "198.18.0.5"), (" 198.18.0.5/24 ", "198.18.0.5"), ("198.18.0.5/32", "198.18.0.5"),
    ("2001:DB8:0::1/64", "2001:db8::1"), ("fd00::0001", "fd00::1"),
])
def test_host_address(value, expected):
    assert host_address(value) == expected


@pytest.mark.parametrize("value", ["", "node1", "198.18.0.256", "198.18.0.5/33", "198.18.0.0/24x", None])
def test_host_address_refuses(value):
    with pytest.raises(ValueError):
        host_address(value)


def test_every_reader_of_addresses_agrees():
    value = "2001:DB8::7/64"
    assert bird.validate_addresses([value]) == [host_address(value)]
    node = {"metadata": {"name": "n1", "annotations": {kube_facts.CALICO_IPV4_ANNOTATION: value}}, "status": {}}
    assert kube_facts.node_facts(node)["calico_ipv4_address"] == host_address(value)
    assert inventory.inventory_nodes(["n1"], {"n1": {"k8s_node_ip": value}})[0]["address"] == host_address(value)
    with pytest.raises(InputError, match="is not an IP address"):
        bird.validate_addresses(["node1"])
