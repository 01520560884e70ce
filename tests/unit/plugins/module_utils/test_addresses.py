"""One normaliser of IP address text for the inventory, Node annotations and BIRD."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core import addresses, inventory
from ansible_collections.k8snet.triage.plugins.module_utils.calico import checks as bird_checks
from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts as kube_facts
from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


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
    assert bird_checks.validate_addresses([value]) == [host_address(value)]
    node = {"metadata": {"name": "n1", "annotations": {kube_facts.CALICO_IPV4_ANNOTATION: value}}, "status": {}}
    assert kube_facts.node_facts(node)["calico_ipv4_address"] == host_address(value)
    assert inventory.inventory_nodes(["n1"], {"n1": {"k8s_node_ip": value}})[0]["address"] == host_address(value)
    with pytest.raises(InputError, match="is not an IP address"):
        bird_checks.validate_addresses(["node1"])


@pytest.mark.parametrize("value, kind", [
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("0.1.2.3", "this network"), ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"), ("224.0.0.5", "multicast"),
    ("ff02::1", "multicast"), ("255.255.255.255", "broadcast"), ("240.0.0.1", "reserved"),
    ("169.254.1.1", "link-local"), ("fe80::1", "link-local"),
    ("198.18.0.200", None), ("10.0.0.1", None), ("100.64.0.1", None), ("2001:db8::10", None), ("fd00::5", None),
    (" 192.168.1.255 ", None),
])
def test_special_tells_what_no_one_host_can_hold(value, kind):
    assert addresses.special(value) == kind
    assert kind is None or kind in dict(addresses.SPECIAL)


@pytest.mark.parametrize("value", ["", "node1", "198.18.0.0/24", None])
def test_special_refuses_what_is_not_an_address(value):
    with pytest.raises(ValueError):
        addresses.special(value)
