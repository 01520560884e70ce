"""The fleet view of Calico BGP: the session table, stale Node resources."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.calico import fleet as calico

NODES = [{"name": "node1", "address": "198.18.96.11"}, {"name": "node2", "address": "198.18.96.12"}]


def _status(peers, findings=()):
    return {"peers": peers, "findings": list(findings), "sockets": [], "established": 0}


def _peer(address, bgp_state="Established", state="up", cause=""):
    return {"name": "Mesh_" + address.replace(".", "_"), "type": "mesh", "address": address, "state": state,
            "bgp_state": bgp_state, "since": "02:25:36.689", "cause": cause}


def _stale(address, bgp_state="Connect", cause="no route to host"):
    """A mesh peer read_status flagged as stale (no expected node has its address)."""
    return dict(_peer(address, bgp_state, "start"), stale=True, stale_cause=cause)


def test_normalise_nodes():
    assert calico.normalise_nodes([{"name": "n9", "address": "10.0.0.9/24"}]) == [{"name": "n9", "address": "10.0.0.9"}]
    with pytest.raises(calico.NodeListError, match=r"resources\[0\] must be a dict"):
        calico.normalise_nodes(["10.0.0.9"], "resources")
    with pytest.raises(calico.NodeListError, match="address 'x' is not an IP"):
        calico.normalise_nodes([{"address": "x"}])


def test_fleet_table_rows_names_and_missing_hosts():
    statuses = {
        "node2": _status([_peer("198.18.96.11"), _peer("198.18.96.10", "Connect", "start", "no route to host")]),
        "node1": dict(_status([]), sockets=[{"path": "/var/run/calico/bird.ctl", "status": "absent", "version": None,
                                             "down": True}]),
        "node3": None,
    }
    lines = calico.fleet_table(statuses, NODES, [{"name": "old-node", "address": "198.18.96.10"}])
    assert lines[0].split() == ["NODE", "PEER", "ADDRESS", "PEER", "NODE", "TYPE", "STATE", "BGP", "STATE", "SINCE", "CAUSE"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["node1", "-", "-"], ["node2", "198.18.96.11", "node1"], ["node2", "198.18.96.10", "old-node"], ["node3", "-", "-"]]
    assert "BIRD down" in lines[1] and "/var/run/calico/bird.ctl absent" in lines[1]
    assert lines[3].endswith("no route to host")
    assert "host failed or unreachable" in lines[4]
    # columns are aligned: every cell of a column starts at the same offset
    offset = lines[0].index("PEER ADDRESS")
    assert all(line[offset - 2:offset] == "  " for line in lines)


def test_stale_nodes_are_collected_across_the_fleet():
    statuses = {
        "node1": _status([_stale("198.18.96.10"), _stale("198.18.96.9", "Passive", "passive, waiting for the peer"),
                          _peer("198.18.96.12")]),
        "node2": _status([_stale("198.18.96.10", "Active")]),
        "node3": None,
    }
    stale = calico.stale_nodes(statuses, [{"name": "old-node", "address": "198.18.96.10"}])
    assert [s["address"] for s in stale] == ["198.18.96.9", "198.18.96.10"]
    known = stale[1]
    assert known["name"] == "old-node" and known["seen_by"] == ["node1", "node2"]
    assert known["bgp_states"] == ["Connect", "Active"] and known["causes"] == ["no route to host"]
    assert known["action"].startswith("kubectl delete node old-node")
    assert stale[0]["name"] is None and "projectcalico.org/IPv4Address is 198.18.96.9" in stale[0]["action"]


def test_no_stale_peer_no_entry():
    assert calico.stale_nodes({"node1": _status([_peer("198.18.96.12")])}) == []
