# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""packet_path: the ingress bisection on real packet_capture results taken in the lab on the
client, the LB node (node1) and the worker (node2) while each break was injected (the egress
checks are in test_egress)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.filter.ingress_bisect import ingress_bisect as bisect_filter
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import analysis as pp

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


def test_no_capture_from_any_hop_is_not_ok():
    """issue 11: no capture at all gave ingress.ok, 'the probes crossed every hop'."""
    result = pp.ingress_bisect({"client": None, "lb": [], "worker": None}, "198.18.160.200", 80, "198.19.161.3", 8080)
    [item] = result["findings"]
    assert item["check"] == "ingress.not_checked" and item["severity"] == "warning"


# ------------------------------------------------------------------ every backend
VIP, CLIENT, LB_IP = "198.18.0.2", "198.18.0.100", "198.18.0.11"
B1 = {"ip": "198.19.1.5", "port": 8080, "pod": "web-a", "node": "node2", "host": "node2"}
B2 = {"ip": "198.19.2.5", "port": 8080, "pod": "web-b", "node": "node3", "host": "node3"}


def flow(interface, direction, src, dst, sport, dport, packets=2):
    return {"interface": interface, "direction": direction, "proto": "tcp", "src": src, "dst": dst, "sport": sport,
            "dport": dport, "arp_op": None, "flags": "S", "packets": packets}


def backend_captures(hit=(B1, B2), routed=(B1, B2), reply=(B1, B2), translated=True):
    """Captures as packet_capture returns them: the LB node translates each probe to one backend of ``hit``."""
    client = {"host": "client", "flows": [flow("eth0", "out", CLIENT, VIP, 40000, 80, 2 * len(hit))]}
    lb = {"host": "node1", "flows": [flow("eth0", "in", CLIENT, VIP, 40000, 80, 2 * len(hit))]}
    workers = {}
    for b in (B1, B2):
        veth = "lxc" + b["pod"]
        workers[b["host"]] = {"host": b["host"], "flows": [], "routed": {b["ip"]: veth} if b in routed else {}}
    for b in hit:
        if translated:
            lb["flows"].append(flow("eth0", "out", LB_IP, b["ip"], 40000, b["port"]))
        w = workers[b["host"]]["flows"]
        w.append(flow("eth0", "in", LB_IP, b["ip"], 40000, b["port"]))
        if b in routed:
            w.append(flow("lxc" + b["pod"], "out", LB_IP, b["ip"], 40000, b["port"]))
            if b in reply:
                w.append(flow("lxc" + b["pod"], "in", b["ip"], LB_IP, b["port"], 40000))
    return {"client": client, "lb": [lb], "workers": workers}


def probe(ok):
    return {"targets": [{"name": "vip #1", "tcp": {"status": "open" if ok else "timeout"}}]}


def test_every_backend_hit_and_answering_is_ok():
    out = pp.ingress_bisect_backends(backend_captures(), VIP, 80, [B1, B2], probe(True))
    [f] = out["findings"]
    assert f["check"] == "ingress.ok" and "2 backends (web-a, web-b)" in f["summary"]
    assert [r["verdict"] for r in f["evidence"]["backends"]] == ["ok", "ok"]


def test_a_backend_without_its_route_is_named_and_the_other_is_not_nat():
    out = pp.ingress_bisect_backends(backend_captures(routed=(B1,)), VIP, 80, [B1, B2], probe(True))
    [f] = out["findings"]
    assert (f["check"], out["vanished_at"]) == ("ingress.pod_forwarding", "pod")
    assert out["backend"] == {"pod": "web-b", "ip": "198.19.2.5", "port": 8080, "node": "node3", "host": "node3"}
    assert "backend web-b (198.19.2.5 on node node3)" in f["summary"] and "the probes to web-a got through" in f["summary"]
    assert "node3 has no route to 198.19.2.5" in f["summary"]


def test_probes_to_one_backend_only_are_not_nat_and_the_unhit_one_is_said():
    out = pp.ingress_bisect_backends(backend_captures(hit=(B1,)), VIP, 80, [B1, B2], probe(True))
    [f] = out["findings"]
    assert f["check"] == "ingress.ok"
    assert [(r["pod"], r["verdict"]) for r in f["evidence"]["backends"]] == [("web-a", "ok"), ("web-b", "not hit")]
    # the old single-backend walk, told only of web-b, blames NAT for probes that went to web-a
    old = pp.ingress_bisect(dict(backend_captures(hit=(B1,)), worker=backend_captures()["workers"]["node3"]),
                            VIP, 80, B2["ip"], 8080, probe(True))
    assert old["findings"][0]["check"] == "ingress.nat"


def test_nothing_translated_is_nat_and_a_backend_not_answering_is_named():
    out = pp.ingress_bisect_backends(backend_captures(translated=False), VIP, 80, [B1, B2], probe(False))
    assert out["findings"][0]["check"] == "ingress.nat" and "translated to no backend" in out["findings"][0]["summary"]
    out = pp.ingress_bisect_backends(backend_captures(reply=(B2,)), VIP, 80, [B1, B2], probe(True))
    assert (out["findings"][0]["check"], out["backend"]["pod"]) == ("ingress.backend", "web-a")


def test_only_uncaptured_backends_hit_is_not_checked_never_ok():
    caps = backend_captures(hit=(B2,))
    del caps["workers"]["node3"]
    out = pp.ingress_bisect_backends(caps, VIP, 80, [B1, B2], probe(True))
    assert out["findings"][0]["check"] == "ingress.not_checked"


def test_filter_takes_backends_and_workers():
    caps = backend_captures(routed=(B1,))
    caps["workers"] = dict((h, dict(r)) for h, r in caps["workers"].items())
    out = bisect_filter(caps, VIP, "80", B1["ip"], 8080, probe(True), backends=[dict(B1, port="8080"), B2])
    assert out["findings"][0]["check"] == "ingress.pod_forwarding" and out["backend"]["pod"] == "web-b"


# ------------------------------------------------------------------ nodeIP:nodePort
def _flow(interface, direction, src, dst, sport, dport, packets=2):
    return {"interface": interface, "direction": direction, "proto": "tcp", "src": src, "dst": dst, "sport": sport,
            "dport": dport, "packets": packets}


CLIENT, N1, N2, N3, POD = "198.18.160.100", "198.18.160.11", "198.18.160.12", "198.18.160.13", "198.19.161.3"
NP_BACKENDS = [{"ip": POD, "port": 8080, "pod": "web", "node": "node2", "host": "node2"}]
NP_ENTRIES = [{"host": "node1", "ip": N1}, {"host": "node3", "ip": N3}]


def np_probe(*answered):
    return {"targets": [{"address": ip, "tcp": {"status": "open" if ip in answered else "timeout"}} for ip in (N1, N3)]}


def np_captures(node3_translates):
    """node1 DNATs its nodePort to the pod on node2 and masquerades to its own IP; node3 does the same when
    ``node3_translates`` (else it receives the probes and translates nothing); node2 sees what arrives."""
    node1 = [_flow("eth0", "in", CLIENT, N1, 40000, 30080), _flow("eth0", "out", N1, POD, 40000, 8080),
             _flow("eth0", "in", POD, N1, 8080, 40000), _flow("eth0", "out", N1, CLIENT, 30080, 40000)]
    node3 = [_flow("eth0", "in", CLIENT, N3, 40001, 30080)]
    node2 = [_flow("eth0", "in", N1, POD, 40000, 8080), _flow("lxc1", "out", N1, POD, 40000, 8080),
             _flow("lxc1", "in", POD, N1, 8080, 40000)]
    if node3_translates:
        node3 += [_flow("eth0", "out", N3, POD, 40001, 8080), _flow("eth0", "in", POD, N3, 8080, 40001)]
    client = [_flow("eth0", "out", CLIENT, N1, 40000, 30080), _flow("eth0", "out", CLIENT, N3, 40001, 30080)]
    return {"client": {"flows": client, "host": "client"},
            "lb": [{"flows": node1, "host": "node1"}, {"flows": node3, "host": "node3"}],
            "workers": {"node2": {"flows": node2, "host": "node2", "routed": {POD: "lxc1"}}}}


def test_nodeport_each_entry_node_walked_on_its_own():
    result = pp.nodeport_bisect(np_captures(False), NP_ENTRIES, 30080, NP_BACKENDS, np_probe(N1))
    by = dict((f["evidence"]["entry_node"], f) for f in result["findings"])
    assert {n: f["check"] for n, f in by.items()} == {"node1": "ingress.ok", "node3": "ingress.nat"}
    assert by["node3"]["subject"] == "%s:30080" % N3 and by["node3"]["summary"].startswith("via node node3: ")
    assert [(e["host"], e["vanished_at"]) for e in result["entries"]] == [("node1", None), ("node3", "nat")]


def test_nodeport_packets_of_another_entry_node_do_not_hide_a_break():
    """node3 translates (SNAT to its own IP) but its packets never reach node2: node1's packets on node2 must
    not count for node3 (they carry node1's address)."""
    result = pp.nodeport_bisect(np_captures(True), NP_ENTRIES, 30080, NP_BACKENDS, np_probe(N1))
    by = dict((f["evidence"]["entry_node"], f["check"]) for f in result["findings"])
    assert by == {"node1": "ingress.ok", "node3": "ingress.between_nodes"}


def test_nodeport_without_entries_is_not_checked():
    [f] = pp.nodeport_bisect(np_captures(False), [], 30080, NP_BACKENDS)["findings"]
    assert (f["check"], f["severity"]) == ("ingress.not_checked", "warning")


def test_a_backend_on_the_host_network_has_no_veth_to_cross():
    """A hostNetwork backend has its node's address: the kernel routes it to lo; its answer leaves eth0.  Walked as
    a pod it was ingress.pod_forwarding, a false critical (measured on the lab: tests/integration/
    test_ingress_path_hostnet.py)."""
    node = "198.18.160.12"
    worker = {"host": "node2", "routed": {node: "lo"}, "flows": [
        _flow("eth0", "in", "198.18.160.11", node, 40000, 8090), _flow("eth0", "out", node, "198.18.160.11", 8090, 40000)]}
    lb = {"host": "node1", "flows": [_flow("eth0", "in", "198.18.160.100", "198.18.160.203", 40000, 80),
                                     _flow("eth0", "out", "198.18.160.11", node, 40000, 8090)]}
    got = pp.ingress_bisect({"lb": [lb], "worker": worker}, "198.18.160.203", 80, node, 8090)
    assert got["vanished_at"] is None and [h["hop"] for h in got["hops"]] == [
        "lb_in", "lb_translated", "worker_in", "host_socket"]
    assert got["findings"][0]["evidence"]["backend_on_host_network"] is True
    silent = dict(worker, flows=worker["flows"][:1])
    got = pp.ingress_bisect({"lb": [lb], "worker": silent}, "198.18.160.203", 80, node, 8090)
    assert got["vanished_at"] == "backend" and "on the host network" in got["findings"][0]["summary"]
    backends = [{"ip": node, "port": 8090, "pod": "kube-system/hostnet-x", "node": "node2", "host": "node2"}]
    got = pp.ingress_bisect_backends({"lb": [lb], "workers": {"node2": worker}}, "198.18.160.203", 80, backends)
    assert got["vanished_at"] is None and "host_socket" in [h["hop"] for h in got["hops"]]
    # silent on the host network: no pod and no veth, so the summary must not say "in the pod"
    got = pp.ingress_bisect_backends({"lb": [lb], "workers": {"node2": silent}}, "198.18.160.203", 80, backends)
    summary = got["findings"][0]["summary"]
    assert got["vanished_at"] == "backend" and "in the pod" not in summary
    assert "on the node's own network (host network" in summary


def test_no_backend_given_is_not_checked_never_ok():
    """Without a ready backend nothing beyond the LB node was followed: not "ok ... 0 backends ()"."""
    caps = backend_captures()
    out = pp.ingress_bisect_backends(dict(caps, lb=[], workers={}), VIP, 80, [], probe(True))
    [f] = out["findings"]
    assert (f["check"], f["severity"]) == ("ingress.not_checked", "warning")
    assert "no ready backend" in f["summary"] and "0 backends" not in f["summary"]


def _dsr_flow(direction, src, dst, sport, dport, packets=3, interface="eth0"):
    return {"direction": direction, "proto": "tcp", "src": src, "dst": dst, "sport": sport, "dport": dport,
            "packets": packets, "interface": interface}


def _dsr_captures(forwarded=3):
    """A direct-server-return path (Seesaw): the LB node forwards the VIP's packets unchanged; the worker
    translates the VIP to the pod and answers the client itself."""
    vip, pod, client = "198.18.0.202", "198.19.1.5", "198.18.0.100"
    return {"client": {"host": "client", "flows": [_dsr_flow("out", client, vip, 40000, 80)]},
            "lb": [{"host": "node1", "flows": [_dsr_flow("in", client, vip, 40000, 80),
                                               _dsr_flow("out", client, vip, 40000, 80, forwarded)]}],
            "worker": {"host": "node2", "routed": {pod: "veth-web"},
                       "flows": [_dsr_flow("in", client, vip, 40000, 80),
                                 _dsr_flow("out", client, pod, 40000, 8080, interface="veth-web"),
                                 _dsr_flow("in", pod, client, 8080, 40000, interface="veth-web")]}}


def test_a_direct_server_return_lb_forwards_and_the_worker_translates():
    got = pp.ingress_bisect(_dsr_captures(), "198.18.0.202", 80, "198.19.1.5", 8080, lb_mode="dsr")
    assert got["vanished_at"] is None and got["findings"][0]["check"] == "ingress.ok"
    assert [h["hop"] for h in got["hops"]] == ["client_out", "lb_in", "lb_forwarded", "worker_in", "pod_veth", "pod_reply"]
    assert got["findings"][0]["evidence"]["lb_mode"] == "dsr"
    # the same captures read as a NAT load balancer: nothing left the LB node to the pod, a false ingress.nat
    assert pp.ingress_bisect(_dsr_captures(), "198.18.0.202", 80, "198.19.1.5", 8080)["vanished_at"] == "nat"


def test_a_direct_server_return_lb_that_does_not_forward_is_not_a_nat_failure():
    got = pp.ingress_bisect(_dsr_captures(forwarded=0), "198.18.0.202", 80, "198.19.1.5", 8080, lb_mode="dsr")
    [f] = got["findings"]
    assert got["vanished_at"] == "forward" and f["check"] == "ingress.lb_forward"
    assert "not forwarded to a backend node" in f["summary"] and f["remediation"] == pp.STEPS["forward"][2]


def test_the_filter_refuses_dsr_with_several_backends_and_an_unknown_mode():
    from ansible.errors import AnsibleFilterError  # pylint: disable=import-outside-toplevel

    backends = [{"ip": "198.19.1.5", "port": 8080, "host": "node2"}, {"ip": "198.19.2.5", "port": 8080, "host": "node3"}]
    with pytest.raises(AnsibleFilterError, match="lb_mode=dsr walks one backend"):
        bisect_filter(_dsr_captures(), "198.18.0.202", 80, "198.19.1.5", 8080, backends=backends, lb_mode="dsr")
    with pytest.raises(AnsibleFilterError, match="give one of nat, dsr"):
        bisect_filter(_dsr_captures(), "198.18.0.202", 80, "198.19.1.5", 8080, lb_mode="ipvs")
    assert bisect_filter(_dsr_captures(), "198.18.0.202", 80, "198.19.1.5", 8080, lb_mode="dsr")["vanished_at"] is None


# ------------------------------------------------------------------ ARP right, packets lost in the fabric (S004-11)
def fabric_case():
    """break_between_nodes' real client capture (its ARP for the VIP answered, its probes leaving it) beside the LB
    node's capture without the probes arriving: what a switch or SDN dropping them leaves on each side."""
    case, v, captures = load("break_between_nodes")
    vip = v["ingress_path_vip"]
    lb = dict(captures["lb"][0], flows=[f for f in captures["lb"][0]["flows"] if f["dst"] != vip])
    return case, v, dict(captures, lb=[lb])


ANSWERED_BY_LB = [{"mac": "02:18:05:00:00:01", "hosts": ["node1"]}]


def test_arp_right_and_probes_lost_is_the_fabric_with_each_side():
    case, v, captures = fabric_case()
    got = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, case["probe"],
                            arp_answering=ANSWERED_BY_LB)
    assert got["vanished_at"] == "fabric"
    [f] = got["findings"]
    assert (f["check"], f["severity"], f["layer"]) == ("ingress.fabric", "critical", "L2")
    assert f["remediation"] == pp.STEPS["fabric"][2] and "SDN" in f["remediation"]
    sides = f["evidence"]["fabric"]
    assert sides["client"] == {"host": "client", "tcp_out": 3, "arp_requests": 1, "arp_replies": 1, "arp_cached": False}
    assert sides["lb_nodes"] == {"node1": {"tcp_in": 0}}
    assert sides["arp_answered_by"] == {"mac": "02:18:05:00:00:01", "hosts": ["node1"]}
    assert "in the network between the client and the LB node" in f["summary"]
    assert "node1 answers the client's ARP probe with 02:18:05:00:00:01" in f["summary"]
    assert "the client sent 3 probes, node1 received none" in f["summary"]


@pytest.mark.parametrize("answering", [
    None,  # who answered is unknown (LB nodes given by hand): no claim that ARP is right
    [{"mac": "02:18:05:00:00:03", "hosts": ["node3"]}],  # another node answers: its MAC gets the probes
    [{"mac": "02:18:05:00:00:03", "hosts": []}],  # a MAC of no node read
    ANSWERED_BY_LB + [{"mac": "02:18:05:00:00:03", "hosts": ["node3"]}],  # two MACs: a conflict, not the fabric
])
def test_without_proof_that_arp_is_right_it_stays_arp(answering):
    case, v, captures = fabric_case()
    got = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, case["probe"],
                            arp_answering=answering)
    assert got["vanished_at"] == "arp" and got["findings"][0]["check"] == "ingress.arp"
    assert "fabric" not in got["findings"][0]["evidence"]


def test_a_client_whose_own_arp_went_unanswered_is_arp_even_if_the_probe_was_answered():
    case, v, captures = load("break_arp")
    got = pp.ingress_bisect(captures, v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080, case["probe"],
                            arp_answering=ANSWERED_BY_LB)
    assert got["vanished_at"] == "arp"
    case, v, captures = fabric_case()
    client = dict(captures["client"], flows=[f for f in captures["client"]["flows"] if f["arp_op"] != "reply"])
    got = pp.ingress_bisect(dict(captures, client=client), v["ingress_path_vip"], 80, v["ingress_path_pod_ip"], 8080,
                            case["probe"], arp_answering=ANSWERED_BY_LB)
    assert got["vanished_at"] == "arp"


def test_every_backend_walk_names_the_fabric_and_a_cached_entry():
    caps = backend_captures()
    caps["lb"] = [dict(caps["lb"][0], flows=[])]
    out = pp.ingress_bisect_backends(caps, VIP, 80, [B1, B2], probe(False),
                                     arp_answering=[{"mac": "02:00:00:00:00:01", "hosts": ["node1"]}])
    [f] = out["findings"]
    assert (out["vanished_at"], f["check"]) == ("fabric", "ingress.fabric")
    assert f["evidence"]["fabric"]["client"]["arp_cached"] is True
    assert "it used its cached entry for the VIP" in f["summary"]
    out = bisect_filter(caps, VIP, 80, B1["ip"], 8080, probe(False), backends=[B1, B2],
                        arp_answering=[{"mac": "02:00:00:00:00:01", "hosts": ["node1"]}])
    assert out["findings"][0]["check"] == "ingress.fabric"


@pytest.mark.parametrize("bad", ["node1", [5], [{"mac": "x", "hosts": "node1"}], [{"hosts": ["a\nb"]}]])
def test_filter_refuses_a_malformed_arp_answering(bad):
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="arp_answering"):
        bisect_filter(backend_captures(), VIP, 80, B1["ip"], 8080, arp_answering=bad)
