from __future__ import annotations

import json

from ansible_collections.k8snet.triage.plugins.module_utils import lb_health as lb

from tests.kube_api import fixture_objects as objects, of_kind

OBJS = objects("cluster.yaml", "router.yaml")
NODES = of_kind(OBJS, "Node")
ROUTER = [s for s in of_kind(OBJS, "Service") if s["metadata"]["name"] == "router-default"][0]
SLICES = of_kind(OBJS, "EndpointSlice")

# Bodies as kube-proxy writes them (pkg/proxy/healthcheck/service_health.go).
OK_BODY = json.dumps({"service": {"namespace": "openshift-ingress", "name": "router-default"}, "localEndpoints": 1,
                      "serviceProxyHealthy": True})
NONE_BODY = json.dumps({"service": {"namespace": "openshift-ingress", "name": "router-default"}, "localEndpoints": 0,
                        "serviceProxyHealthy": True})


def probe(status, body):
    count, error = lb.parse_health(status, body)
    return {"url": "http://x:31910/", "status": status, "local_endpoints": count, "error": error}


def test_local_endpoints_from_slices():
    assert lb.local_endpoints(SLICES) == {"node1": 1, "node2": 1}
    unready = {"endpoints": [{"addresses": ["1.1.1.1"], "nodeName": "node3", "conditions": {"ready": False}},
                             {"addresses": ["1.1.1.2"], "nodeName": "node3"}]}
    assert lb.local_endpoints([unready]) == {"node3": 1}


def test_nodes_without_endpoints_and_trade_off():
    found = lb.check_service(ROUTER, NODES, lb.local_endpoints(SLICES), {})
    assert [(f["check"], f["severity"]) for f in found] == [("lb.nodes_without_endpoints", "warning")]
    ev = found[0]["evidence"]
    assert ev["nodes_without"] == ["node3"] and ev["replicas"] == 2 and ev["health_check_node_port"] == 31910
    assert "source IP is lost" in ev["trade_off"]
    none = lb.check_service(ROUTER, NODES, {}, {})
    assert none[0]["severity"] == "critical"


def test_probe_agreeing_and_disagreeing():
    eps = lb.local_endpoints(SLICES)
    probes = {"node1": probe(200, OK_BODY), "node2": probe(503, NONE_BODY), "node3": probe(503, NONE_BODY)}
    found = lb.check_service(ROUTER, NODES, eps, probes)
    mismatches = [f for f in found if f["check"] == "lb.health_probe_mismatch"]
    assert [f["subject"] for f in mismatches] == ["openshift-ingress/router-default@node2"]
    assert mismatches[0]["evidence"]["probe_local_endpoints"] == 0 and mismatches[0]["evidence"]["api_local_endpoints"] == 1


def test_parse_health_errors():
    assert lb.parse_health(200, "ok")[1].startswith("HTTP 200 with a body that is not JSON")
    assert lb.parse_health(200, NONE_BODY) == (0, "HTTP 200 with localEndpoints 0 (kube-proxy answers 503)")
    assert lb.parse_health(503, "{}")[1].startswith("HTTP 503 without localEndpoints")
    # Cilium's answer has no serviceProxyHealthy
    assert lb.parse_health(200, json.dumps({"service": {"namespace": "a", "name": "b"}, "localEndpoints": 2})) == (2, None)


def test_unreachable_probe_is_a_mismatch():
    probes = {"node3": {"url": "http://x:31910/", "status": None, "local_endpoints": None, "error": "no answer: timed out"}}
    found = lb.check_service(ROUTER, NODES, lb.local_endpoints(SLICES), probes)
    assert [f["subject"] for f in found if f["check"] == "lb.health_probe_mismatch"] == ["openshift-ingress/router-default@node3"]


def test_only_local_load_balancers_and_pool_nodes():
    assert [s["metadata"]["name"] for s in of_kind(OBJS, "Service") if lb.is_local_lb(s)] == ["router-default"]
    excluded = dict(NODES[0], metadata=dict(NODES[0]["metadata"], labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}))
    assert [n["metadata"]["name"] for n in lb.pool_nodes([excluded] + NODES[1:])] == ["node2", "node3"]
    assert lb.node_ips(NODES)["node2"] == "198.18.0.12"
