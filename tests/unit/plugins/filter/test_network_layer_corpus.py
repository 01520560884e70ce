# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""network_layer on error texts copied from public issues and docs (network_layer_corpus.yml, each line with
its thread or page): the layer returned is one an operator would accept; a text that names no layer comes
back ``unknown`` and still says which component wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.filter.network_layer import network_layer

CORPUS = yaml.safe_load((Path(__file__).parent / "network_layer_corpus.yml").read_text())
LAYERS = {"L2", "L3", "L4", "L7", "DNS", "control-plane", "unknown"}


def _id(i, case):
    return "%03d-%s" % (i, case["source"].replace("https://github.com/", "").replace("/", "_")[:60])


def test_corpus_is_large_sourced_and_well_formed():
    assert len(CORPUS) >= 100
    for case in CORPUS:
        assert case["source"].startswith("https://"), case
        assert case["date"] and case["why"] and case["text"], case
        assert set(case["layers"]) <= LAYERS, case
        assert ("unknown" in case["layers"]) == bool(case.get("component")), case
    assert len({c["text"] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[_id(i, c) for i, c in enumerate(CORPUS)])
def test_corpus_text(case):
    got = network_layer(case["text"])
    assert got["layer"] in case["layers"], (case["why"], got)
    if case["layers"] == ["unknown"]:
        assert case["component"] in got["components"], got
        assert case["component"] in got["meaning"], got
    else:
        assert got["matched"] and got["matched"].lower() in case["text"].lower()


def test_known_misses_of_issue_35():
    got = network_layer("neighbour: arp_cache: neighbor table overflow!")
    assert (got["layer"], got["category"]) == ("L2", "neighbour_table_full")
    assert "gc_thresh" in got["next_check"]
    got = network_layer('failed to set bridge addr: "cni0" already has an IP address different from 10.244.0.1/24')
    assert (got["layer"], got["category"]) == ("L3", "pod_network_not_ready")
    assert "flannel" in got["components"] or "bridge" in got["components"]


def test_firewall_log_line_names_its_prefix():
    text = [c["text"] for c in CORPUS if "DROP by policy" in c["text"]][0]
    got = network_layer(text)
    assert got["category"] == "firewall_log" and got["log_prefix"] == "DROP by policy default/test-network-policy"


def test_unplaceable_text_says_what_was_recognised():
    got = network_layer("flannel restarted")
    assert got["layer"] == "unknown" and got["components"] == ["flannel"]
    assert "recognised: flannel" in got["meaning"]
    assert network_layer("something odd")["components"] == []


@pytest.mark.parametrize("unit", ["IN= OUT= ", "dial tcp ", "failed to connect to ", "500 ", "lookup a on b: "])
def test_long_repetitive_text_is_read_in_linear_time(unit):
    """A pasted log of 40k repeated fragments: a pattern with an unbounded ``.*`` after a repeated prefix took
    minutes here (quadratic backtracking); every rule is bounded now."""
    import time

    def cpu(count):
        # this process's CPU time, not the wall clock: other jobs on the machine do not count
        start = time.process_time()
        network_layer(unit * count)
        return time.process_time() - start

    small, large = cpu(10000), cpu(40000)
    # four times the text: about four times the work when linear, sixteen when quadratic
    assert large < 20.0 and large < 8 * max(small, 0.01), (small, large)
