"""The NodePort walk under externalTrafficPolicy Local (issue 29): an entry node without a local endpoint
does not forward by design - expected, not ingress.nat.  Flows as packet_capture reports them."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import analysis as pp

CLIENT, N1, N2, N3 = "198.18.64.100", "198.18.64.11", "198.18.64.12", "198.18.64.13"
POD1, POD2 = "198.19.64.5", "198.19.65.5"
BACKENDS = [{"ip": POD1, "port": 8080, "pod": "router-default-a", "node": "node1", "host": "node1"},
            {"ip": POD2, "port": 8080, "pod": "router-default-b", "node": "node2", "host": "node2"}]
ENTRIES = [{"host": "node1", "ip": N1}, {"host": "node2", "ip": N2}, {"host": "node3", "ip": N3}]


def flow(interface, direction, src, dst, sport, dport, packets=2):
    return {"interface": interface, "direction": direction, "proto": "tcp", "src": src, "dst": dst, "sport": sport,
            "dport": dport, "packets": packets}


def local_node(ip, pod, device, sport):
    """A node with a router pod: DNAT of its nodePort to its own pod, no SNAT (policy Local)."""
    return [flow("eth0", "in", CLIENT, ip, sport, 30180), flow(device, "out", CLIENT, pod, sport, 8080),
            flow(device, "in", pod, CLIENT, 8080, sport), flow("eth0", "out", ip, CLIENT, 30180, sport)]


def captures():
    node1 = {"flows": local_node(N1, POD1, "lxca", 41001), "host": "node1", "routed": {POD1: "lxca"}}
    node2 = {"flows": local_node(N2, POD2, "lxcb", 41002), "host": "node2", "routed": {POD2: "lxcb"}}
    # node3 receives the SYNs (the capture sees them before netfilter) and translates nothing
    node3 = {"flows": [flow("eth0", "in", CLIENT, N3, 41003, 30180)], "host": "node3"}
    client = {"flows": [flow("eth0", "out", CLIENT, ip, 41000 + n, 30180) for n, ip in enumerate((N1, N2, N3), 1)],
              "host": "client"}
    return {"client": client, "lb": [node1, node2, node3], "workers": {"node1": node1, "node2": node2}}


PROBE = {"targets": [{"address": ip, "tcp": {"status": "open" if ip != N3 else "timeout"}} for ip in (N1, N2, N3)]}


def by_entry(result):
    return dict((f["evidence"]["entry_node"], f) for f in result["findings"])


def test_local_policy_node_without_endpoint_is_expected_not_nat():
    result = pp.nodeport_bisect(captures(), ENTRIES, 30180, BACKENDS, PROBE, policy="Local")
    found = by_entry(result)
    assert {n: (f["check"], f["severity"]) for n, f in found.items()} == {
        "node1": ("ingress.ok", "ok"), "node2": ("ingress.ok", "ok"),
        "node3": ("ingress.nodeport_no_local_endpoint", "info")}
    node3 = found["node3"]
    assert node3["summary"].startswith("via node node3: expected with externalTrafficPolicy Local: node3 has no local "
                                       "endpoint of the Service (they run on node1, node2)")
    assert node3["evidence"]["serving_nodes"] == ["node1", "node2"] and node3["evidence"]["policy"] == "Local"
    assert [(e["host"], e["expected"]) for e in result["entries"]] == [
        ("node1", False), ("node2", False), ("node3", True)]


def test_without_the_policy_the_same_walk_blames_nat():
    """What the walk said before it knew the policy (and still says for Cluster)."""
    for policy in (None, "Cluster"):
        found = by_entry(pp.nodeport_bisect(captures(), ENTRIES, 30180, BACKENDS, PROBE, policy=policy))
        assert found["node3"]["check"] == "ingress.nat" and found["node3"]["severity"] == "critical"


def test_local_policy_node_with_an_endpoint_that_does_not_translate_is_still_nat():
    broken = captures()
    broken["lb"][0]["flows"] = [flow("eth0", "in", CLIENT, N1, 41001, 30180)]  # node1 lost its DNAT
    found = by_entry(pp.nodeport_bisect(broken, ENTRIES, 30180, BACKENDS, PROBE, policy="Local"))
    assert found["node1"]["check"] == "ingress.nat" and found["node3"]["check"] == "ingress.nodeport_no_local_endpoint"
