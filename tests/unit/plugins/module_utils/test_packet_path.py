# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""packet_path: the ingress bisection on real packet_capture results taken in the lab on the
client, the LB node (node1) and the worker (node2) while each break was injected, and the
egress SNAT check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.filter.ingress_bisect import ingress_bisect as bisect_filter
from ansible_collections.k8snet.triage.plugins.module_utils import packet_path as pp

FIX = Path(__file__).parent / "fixtures" / "packet_path"
EXPECTED = {
    "none": (None, "ingress.ok", "ok"),
    "break_arp": ("arp", "ingress.arp", "critical"),
    "break_dnat": ("nat", "ingress.nat", "critical"),
    "break_between_nodes": ("between_nodes", "ingress.between_nodes", "critical"),
    "break_pod_route": ("pod", "ingress.pod_forwarding", "critical"),
}


def load(name):
    case = json.loads((FIX / (name + ".json")).read_text())
    v = case["vars"]
    caps = dict((host, dict(result, host=host)) for host, result in case["captures"].items())
    captures = {"client": caps["client"], "lb": [caps["node1"]], "worker": caps["node2"]}
    return case, v, captures


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bisection_on_real_captures(name):
    case, v, captures = load(name)
    got = pp.ingress_bisect(captures, v["ingress_path_vip"], v["ingress_path_port"], v["ingress_path_pod_ip"],
                            v["ingress_path_pod_port"], case["probe"])
    vanished, check, severity = EXPECTED[name]
    assert got["vanished_at"] == vanished
    [f] = got["findings"]
    assert (f["check"], f["severity"]) == (check, severity)
    if vanished:
        assert f["remediation"] == pp.STEPS[vanished][2]


def test_the_summaries_name_the_evidence():
    case, v, captures = load("break_arp")
    f = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, case["probe"])["findings"][0]
    assert "ARP requests for 198.18.160.202 got no reply" in f["summary"]
    assert f["evidence"]["client_arp"]["replies"] == 0
    case, v, captures = load("break_pod_route")
    f = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, case["probe"])["findings"][0]
    assert "the worker has no route to 198.19.161.3" in f["summary"]
    assert [h["hop"] for h in f["evidence"]["hops"]] == ["client_out", "lb_in", "lb_translated", "worker_in", "pod_veth"]


def test_reply_missing_and_return_path():
    case, v, captures = load("none")
    worker = dict(captures["worker"], flows=[fl for fl in captures["worker"]["flows"] if fl["src"] != v["ingress_path_pod_ip"]])
    got = pp.ingress_bisect(dict(captures, worker=worker), v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080)
    assert got["vanished_at"] == "backend" and got["findings"][0]["layer"] == "L7"
    failed_probe = {"targets": [{"tcp": {"status": "timeout"}}]}
    got = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, failed_probe)
    assert got["vanished_at"] == "return"


def test_without_client_capture_and_lb_on_the_worker():
    case, v, captures = load("break_dnat")
    got = pp.ingress_bisect({"lb": captures["lb"], "worker": captures["worker"]}, v["ingress_path_vip"], 80,
                            v["ingress_path_pod_ip"], 8080)
    assert got["vanished_at"] == "nat" and got["hops"][0]["hop"] == "lb_in"
    case, v, captures = load("none")
    same = dict(captures["worker"], host="node1")
    got = pp.ingress_bisect({"lb": captures["lb"], "worker": same}, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080)
    assert "worker_in" not in [h["hop"] for h in got["hops"]] and got["vanished_at"] is None


def test_filter_accepts_results_keyed_by_host():
    case, v = load("break_between_nodes")[:2]
    keyed = {"client": {"client": case["captures"]["client"]}, "lb": {"node1": case["captures"]["node1"]},
             "worker": {"node2": case["captures"]["node2"]}}
    got = bisect_filter(keyed, v["ingress_path_vip"], "80", v["ingress_path_pod_ip"], "8080", case["probe"])
    assert got["vanished_at"] == "between_nodes" and got["hops"][-1]["host"] == "node2"


def flows(*sources):
    return {"flows": [{"direction": "out", "dst": "198.18.160.100", "proto": "tcp", "src": s, "packets": 2} for s in sources]}


@pytest.mark.parametrize("sources, check, severity", [
    (("198.18.160.12",), "egress.ok", "ok"),
    (("198.19.161.3",), "egress.no_snat", "critical"),
    (("198.18.160.12", "198.19.161.3"), "egress.no_snat", "critical"),
    (("198.18.160.250",), "egress.unexpected_source", "warning"),
    ((), "egress.not_leaving", "warning"),
])
def test_egress_snat(sources, check, severity):
    [f] = pp.egress_snat(flows(*sources), "198.18.160.12", "198.19.161.3", "198.18.160.100")
    assert (f["check"], f["severity"]) == (check, severity)


def test_no_capture_from_any_hop_is_not_ok():
    """issue 11: no capture at all gave ingress.ok, 'the probes crossed every hop'."""
    result = pp.ingress_bisect({"client": None, "lb": [], "worker": None}, "198.18.160.200", 80, "198.19.161.3", 8080)
    [item] = result["findings"]
    assert item["check"] == "ingress.not_checked" and item["severity"] == "warning"
