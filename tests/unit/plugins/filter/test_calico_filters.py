"""The calico_* filters: thin wrappers that turn bad input into AnsibleFilterError."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.calico_fleet_table import FilterModule as FleetTable
from ansible_collections.k8snet.triage.plugins.filter.calico_inventory_nodes import FilterModule as InventoryNodes
from ansible_collections.k8snet.triage.plugins.filter.calico_stale_nodes import FilterModule as StaleNodes

inventory_nodes = InventoryNodes().filters()["calico_inventory_nodes"]
fleet_table = FleetTable().filters()["calico_fleet_table"]
stale_nodes = StaleNodes().filters()["calico_stale_nodes"]


def test_inventory_nodes_filter():
    assert inventory_nodes(["n1"], {"n1": {"ansible_host": "198.18.96.11"}}) == [
        {"host": "n1", "name": "n1", "address": "198.18.96.11"}]
    with pytest.raises(AnsibleFilterError, match="host n1: 'n1.example' is not an IP address"):
        inventory_nodes(["n1"], {"n1": {"ansible_host": "n1.example"}})


def test_fleet_table_filter():
    lines = fleet_table({"n1": None}, [{"name": "n1", "address": "198.18.96.11"}])
    assert len(lines) == 2 and lines[1].startswith("n1")
    with pytest.raises(AnsibleFilterError, match="expects a dict of results by host, got a list"):
        fleet_table([])
    with pytest.raises(AnsibleFilterError, match=r"nodes\[0\]: address 'x' is not an IP"):
        fleet_table({}, [{"address": "x"}])


def test_stale_nodes_filter():
    assert stale_nodes({"n1": {"findings": []}}) == []
    with pytest.raises(AnsibleFilterError, match="expects a dict"):
        stale_nodes("n1")
