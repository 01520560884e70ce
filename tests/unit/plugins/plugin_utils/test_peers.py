"""The peers each node probes (plugin_utils/peers.sample_peers): the budget the connectivity and pmtu scenarios
spend on a fleet. What the docs promise is checked for every fleet size up to 300 nodes and every k up to 16:
each node is probed by exactly min(k, n - 1) others, never by itself, the fleet costs n x k probes, and the
sample is the same on every run (it depends on the names only)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import sample_peers


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 13, 16])
def test_every_node_is_probed_by_exactly_k_others_at_every_fleet_size(k):
    for n in range(1, 301):
        nodes = ["node%03d" % i for i in range(n)]
        probed = Counter()
        for me in nodes:
            peers = sample_peers(nodes, me, k)
            assert me not in peers and len(peers) == len(set(peers)) == min(k, n - 1), (n, k, me)
            probed.update(peers)
        assert sum(probed.values()) == n * min(k, n - 1)
        assert all(probed[node] == min(k, n - 1) for node in nodes), (n, k)


def test_the_sample_depends_on_the_names_only_not_on_their_order():
    nodes = ["w-%d" % i for i in range(57)]
    shuffled = list(nodes)
    random.Random(7).shuffle(shuffled)
    assert all(sample_peers(nodes, me, 8) == sample_peers(shuffled, me, 8) for me in nodes)
