"""calico_bgp_status and the calico role over real SSH against real BIRD 2 daemons in the lab.

Set-up (tests/lab/faults/bgp.py ``bgp_mesh``, 3 nodes): node1<->node2 and node1<->node3
Established, node2<->node3 ``Bad peer AS``, and on every node a Mesh peer for 198.18.x.10,
a node that no longer exists (``No route to host``).  Every assertion about BIRD's state is
checked against ``birdc -s /var/run/calico/bird.ctl show protocols`` run inside the node,
never only against our module.  node2 has no pyroute2, node3 runs Python 3.9.
"""

from __future__ import annotations

import socket

import pytest

from tests.lab.faults import bgp

ROLE = "k8snet.triage.calico"


def _ips(lab):
    return [n.ip for n in lab.nodes]


def _refused(state, info):
    return "Connection refused" in info


@pytest.fixture(scope="module")
def mesh(lab):
    info = bgp.bgp_mesh(lab)
    n1, n2, n3 = (n.name for n in lab.nodes[:3])
    stale = bgp.protocol_name(info["stale"])
    try:
        for node, peer in ((n1, lab.nodes[1].ip), (n1, lab.nodes[2].ip), (n2, lab.nodes[0].ip), (n3, lab.nodes[0].ip)):
            bgp.wait_for(lab, node, bgp.protocol_name(peer), lambda state, info: info.startswith("Established"))
        bgp.wait_for(lab, n2, bgp.protocol_name(lab.nodes[2].ip), lambda state, info: "Bad peer AS" in info)
        bgp.wait_for(lab, n3, bgp.protocol_name(lab.nodes[1].ip), lambda state, info: "Bad peer AS" in info)
        for node in (n1, n2, n3):
            bgp.wait_for(lab, node, stale, lambda state, info: "No route to host" in info)
        yield info
    finally:
        bgp.bgp_down(lab)


@pytest.fixture
def node1_bird_stopped(lab, mesh):
    """node1's BIRD killed: node2 and node3 (string-greater addresses, so the active side) get refused."""
    node1 = lab.nodes[0]
    bgp.bird_stop(lab, node1)
    try:
        for node in lab.nodes[1:3]:
            bgp.wait_for(lab, node, bgp.protocol_name(node1.ip), _refused)
        yield node1
    finally:
        leftover = bgp._paths(lab, node1)["socket_on_host"]
        if leftover.exists():
            leftover.unlink()
        bgp.bird_start(lab, node1)
        for node in lab.nodes[1:3]:
            bgp.wait_for(lab, node, bgp.protocol_name(node1.ip), lambda state, info: info.startswith("Established"))


def test_sessions_on_every_node_match_birdc(lab, ansible, mesh):
    results = ansible.module("k8s_nodes", "calico_bgp_status", {"expected_peers": _ips(lab)})
    n1, n2, n3 = lab.nodes[:3]
    stale_ip = mesh["stale"]
    for node in (n1, n2, n3):
        result = results[node.name]
        assert result.get("failed") is not True, result
        assert result["changed"] is False
        birdc = bgp.protocols(lab, node)  # independent reader
        peers = {p["name"]: p for p in result["peers"]}
        assert sorted(peers) == sorted(birdc), node.name
        for name, (state, info) in birdc.items():
            if info.startswith("Established"):
                assert (peers[name]["state"], peers[name]["bgp_state"]) == ("up", "Established"), (node.name, name)
        assert result["established"] == sum(1 for row in birdc.values() if row[1].startswith("Established"))
        assert result["sockets"][0] == {"path": bgp.SOCKET, "status": "ok", "version": "2.0.12", "down": False}
        stale = [f for f in result["findings"] if f["check"] == "bgp.stale_peer"]
        assert [(f["severity"], f["evidence"]["address"], f["evidence"]["cause"]) for f in stale] == [
            ("critical", stale_ip, "no route to host")]
        assert "No route to host" in birdc[bgp.protocol_name(stale_ip)][1]
    # node1: everything else Established
    assert results[n1.name]["established"] == 2
    assert sorted(f["check"] for f in results[n1.name]["findings"]) == ["bgp.stale_peer"]
    # node2 and node3: the AS mismatch, seen from both sides, critical at once
    for node, peer in ((n2, n3), (n3, n2)):
        broken = [f for f in results[node.name]["findings"] if f["check"] == "bgp.not_established"]
        assert [(f["severity"], f["evidence"]["address"], f["evidence"]["cause"]) for f in broken] == [
            ("critical", peer.ip, "bad peer AS")], node.name
        assert "Bad peer AS" in bgp.protocols(lab, node)[bgp.protocol_name(peer.ip)][1]
    assert {p["neighbor_as"] for p in results[n2.name]["peers"] if p["address"] == n3.ip} == {bgp.WRONG_AS}


def test_without_expected_peers_the_stale_peer_is_only_not_established(lab, ansible, mesh):
    node1 = lab.nodes[0]
    result = ansible.module(node1.name, "calico_bgp_status", {"stuck_after": 86400}, check=True)[node1.name]
    assert result["changed"] is False
    checks = [(f["check"], f["evidence"]["address"], f["evidence"]["cause"]) for f in result["findings"]]
    assert checks == [("bgp.not_established", mesh["stale"], "no route to host")]


def test_missing_peer_of_an_expected_node(lab, ansible, mesh):
    node1 = lab.nodes[0]
    extra = str(lab.network[60])  # a node in the inventory that node1's BIRD has no protocol for
    result = ansible.module(node1.name, "calico_bgp_status", {"expected_peers": _ips(lab) + [extra]})[node1.name]
    missing = [f for f in result["findings"] if f["check"] == "bgp.missing_peer"]
    assert [f["evidence"]["missing"] for f in missing] == [[extra]]
    assert bgp.protocol_name(extra) not in bgp.protocols(lab, node1)


def test_refused_peer_and_bird_down(lab, ansible, node1_bird_stopped):
    node1 = node1_bird_stopped
    results = ansible.module("k8s_nodes", "calico_bgp_status", {"expected_peers": _ips(lab)})
    down = results[node1.name]
    assert down.get("failed") is not True, down
    assert down["peers"] == [] and down["established"] == 0
    assert [(f["check"], f["severity"], f["evidence"]["reason"]) for f in down["findings"]] == [
        ("bgp.bird_down", "critical", "absent")]
    assert bgp.birdc(lab, node1, "show protocols").returncode != 0  # birdc cannot connect either
    for node in lab.nodes[1:3]:
        assert _refused(*bgp.protocols(lab, node)[bgp.protocol_name(node1.ip)])
        refused = [f for f in results[node.name]["findings"]
                   if f["check"] == "bgp.not_established" and f["evidence"]["address"] == node1.ip]
        assert [f["evidence"]["cause"] for f in refused] == ["connection refused"], node.name


def test_stale_socket_of_a_killed_bird_is_refused(lab, ansible, node1_bird_stopped):
    """What `kill -9` of BIRD leaves: the socket file, nobody listening (Calico's `connect: connection refused`)."""
    node1 = node1_bird_stopped
    path = bgp._paths(lab, node1)["socket_on_host"]
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(path))
    leftover.close()
    result = ansible.module(node1.name, "calico_bgp_status", {"timeout": 5})[node1.name]
    assert "findings" in result, result
    assert [(f["check"], f["evidence"]["reason"]) for f in result["findings"]] == [("bgp.bird_down", "refused")]
    birdc = bgp.birdc(lab, node1, "show protocols")
    assert birdc.returncode != 0 and "Connection refused" in birdc.stdout + birdc.stderr


@pytest.mark.parametrize("args,message", [
    ({"expected_peers": ["198.18.96.11", "node-two"]}, "expected_peers[1]='node-two' is invalid: give an IPv4 or IPv6 address"),
    ({"sockets": ["bird.ctl"]}, "sockets[0]='bird.ctl' is invalid: give an absolute path"),
    ({"stuck_after": -5}, "stuck_after=-5 is invalid: give an integer from 0 to 86400 seconds"),
    ({"timeout": 0}, "timeout=0 is invalid: give an integer from 1 to 60 seconds"),
])
def test_bad_input_fails_clearly(lab, ansible, mesh, args, message):
    node2 = lab.nodes[1]  # the node without pyroute2
    before = bgp.protocols(lab, node2)
    result = ansible.module(node2.name, "calico_bgp_status", args)[node2.name]
    # the record callback keeps the failure in its status, not in the result: a failed
    # module returns its message and none of the read results
    assert message in result["msg"] and "peers" not in result, result
    assert sorted(bgp.protocols(lab, node2)) == sorted(before)  # BIRD untouched


def test_playbook_fleet_table_and_stale_nodes(lab, ansible, mesh):
    stale_ip = mesh["stale"]
    run = ansible.playbook("k8snet.triage.calico", extra_vars={
        "calico_node_resources": [{"name": "node0", "address": stale_ip + "/24"}]})
    assert run.rc == 0, run
    assert all(not r["result"].get("changed") for r in run.records), "the role changed something"
    table = [r for r in run.records if r["task"].endswith("Print the fleet table of BGP sessions (node x peer x state)")]
    assert len(table) == 1
    lines = table[0]["result"]["msg"].splitlines()
    rows = {(cells[0], cells[1]): cells for cells in (line.split() for line in lines[1:])}
    for node in lab.nodes:
        for name, (state, info) in bgp.protocols(lab, node).items():
            address = name[len("Mesh_"):].replace("_", ".")
            cells = rows[(node.name, address)]
            assert cells[4] == state, (node.name, name, cells)
            if info.startswith("Established"):
                assert cells[5] == "Established"
    names = {cells[1]: cells[2] for cells in rows.values()}
    assert names[stale_ip] == "node0" and names[lab.nodes[1].ip] == lab.nodes[1].name
    collect = [r for r in run.records if r["task"].endswith("Collect the sessions and the stale Node resources of the fleet")]
    stale = collect[0]["result"]["ansible_facts"]["calico_stale_nodes"]
    assert [(s["address"], s["name"], s["seen_by"]) for s in stale] == [(stale_ip, "node0", [n.name for n in lab.nodes])]
    assert stale[0]["action"].startswith("kubectl delete node node0")
    # every node kept its findings in calico_findings, as the triage report expects
    keep = [r for r in run.records if r["task"].endswith("Keep the findings of this host")]
    assert sorted(r["host"] for r in keep) == sorted(n.name for n in lab.nodes)
    for record in keep:
        assert any(f["check"] == "bgp.stale_peer" for f in record["result"]["ansible_facts"]["calico_findings"])
