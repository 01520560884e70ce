"""The reachability module against the lab: a peer that lost one echo is asked again before it is called lossy,
and a peer that really loses echoes is (the loss made by nft on the peer, its counter read with ``nft -j``)."""

from __future__ import annotations

import re

import pytest

from tests.lab.faults import mtu, undone


@pytest.fixture
def inject(lab):
    with undone(lab, mtu.restore) as inject_:
        yield inject_
    for node in lab.nodes:  # everything restored (independent reader)
        assert mtu.NFT_TABLE not in lab.ns_run(node, ["nft", "list", "tables"]).stdout


def _drop_echoes(lab, node, source, rule):
    """``node`` drops echo requests from ``source`` as ``rule`` says (an nft statement before ``counter drop``)."""
    return mtu.nft_table(lab, node, {"input": "ip saddr %s icmp type echo-request %s counter drop"
                                              % (lab.node(source).ip, rule)})


def _probe(ansible, lab, peer):
    args = {"targets": [{"address": lab.node(peer).ip, "name": peer}], "probes": ["icmp"], "count": 3}
    result = ansible.module("node1", "reachability", args)["node1"]
    assert not result.get("failed"), result
    return result


def test_one_lost_echo_is_asked_again_and_is_not_a_lossy_path(lab, ansible, inject):
    inject(_drop_echoes, node="node2", source="node1", rule="quota until 41 bytes")  # one echo request: 20 + 8 + 13 bytes
    result = _probe(ansible, lab, "node2")
    assert [f["check"] for f in result["findings"]] == ["reach.ok"], result["findings"]
    [row] = result["targets"]
    assert (row["icmp"]["sent"], row["icmp"]["received"]) == (3, 2)
    assert (row["icmp_again"]["sent"], row["icmp_again"]["received"]) == (10, 10)
    assert mtu.dropped_by_table(lab, "node2") == 1  # nft's counter on node2: the one echo really was lost there


def test_a_peer_that_keeps_losing_echoes_is_lossy(lab, ansible, inject):
    inject(_drop_echoes, node="node3", source="node1", rule="numgen inc mod 2 0")  # every other one
    result = _probe(ansible, lab, "node3")
    [found] = result["findings"]
    assert (found["check"], found["severity"]) == ("reach.loss", "warning")
    # asked again until one was lost again: a lossy path, with at most one echo's timeout more
    lost = re.search(r"lost (\d+) of 3 ICMP echoes, then (\d+) of \d+ asked again$", found["summary"])
    assert lost, found["summary"]
    # nft's counter on node3: every echo the module counted lost was dropped there, and no other
    assert int(lost.group(2)) == 1 and int(lost.group(1)) + 1 == mtu.dropped_by_table(lab, "node3")
