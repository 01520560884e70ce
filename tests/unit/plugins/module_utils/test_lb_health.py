from __future__ import annotations

import json

from ansible_collections.k8snet.triage.plugins.module_utils.lb import health as lb_health
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_checks as lb_health_checks
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_probes as lb_health_probes
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_remediation as lb_health_remediation

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
    count, error = lb_health_probes.parse_health(status, body)
    return {"url": "http://x:31910/", "status": status, "local_endpoints": count, "error": error}


def test_local_endpoints_from_slices():
    assert lb_health_checks.local_endpoints(SLICES) == {"node1": 1, "node2": 1}
    unready = {"endpoints": [{"addresses": ["1.1.1.1"], "nodeName": "node3", "conditions": {"ready": False}},
                             {"addresses": ["1.1.1.2"], "nodeName": "node3"}]}
    assert lb_health_checks.local_endpoints([unready]) == {"node3": 1}


def test_nodes_without_endpoints_and_trade_off():
    found = lb_health_checks.check_service(ROUTER, NODES, lb_health_checks.local_endpoints(SLICES), {})
    assert [(f["check"], f["severity"]) for f in found] == [("lb.nodes_without_endpoints", "warning")]
    ev = found[0]["evidence"]
    assert ev["nodes_without"] == ["node3"] and ev["replicas"] == 2 and ev["health_check_node_port"] == 31910
    assert "source IP is lost" in ev["trade_off"]
    none = lb_health_checks.check_service(ROUTER, NODES, {}, {})
    assert none[0]["severity"] == "critical"


def test_probe_agreeing_and_disagreeing():
    eps = lb_health_checks.local_endpoints(SLICES)
    probes = {"node1": probe(200, OK_BODY), "node2": probe(503, NONE_BODY), "node3": probe(503, NONE_BODY)}
    found = lb_health_checks.check_service(ROUTER, NODES, eps, probes)
    mismatches = [f for f in found if f["check"] == "lb.health_probe_mismatch"]
    assert [f["subject"] for f in mismatches] == ["openshift-ingress/router-default@node2"]
    assert mismatches[0]["evidence"]["probe_local_endpoints"] == 0 and mismatches[0]["evidence"]["api_local_endpoints"] == 1


def test_parse_health_errors():
    assert lb_health_probes.parse_health(200, "ok")[1].startswith("HTTP 200 with a body that is not JSON")
    assert lb_health_probes.parse_health(200, NONE_BODY) == (0, "HTTP 200 with localEndpoints 0 (kube-proxy answers 503)")
    assert lb_health_probes.parse_health(503, "{}")[1].startswith("HTTP 503 without localEndpoints")
    # Cilium's answer has no serviceProxyHealthy
    assert lb_health_probes.parse_health(200, json.dumps({"service": {"namespace": "a", "name": "b"}, "localEndpoints": 2})) == (2, None)


def test_kube_proxy_unhealthy_fails_a_node_with_endpoints_and_says_so():
    """kube-proxy answers 503 with localEndpoints > 0 when its own rules are out of date (serviceProxyHealthy false,
    pkg/proxy/healthcheck/service_health.go): the probe is a failure named as such, not 'kube-proxy answers 200'."""
    stale = json.dumps({"service": {"namespace": "openshift-ingress", "name": "router-default"}, "localEndpoints": 1,
                        "serviceProxyHealthy": False})
    count, error = lb_health_probes.parse_health(503, stale)
    assert count == 1 and "kube-proxy reports itself unhealthy (serviceProxyHealthy false" in error
    assert "answers 200" not in error
    assert lb_health_probes.parse_health(200, stale) == (1, "HTTP 200 with localEndpoints 1 and serviceProxyHealthy "
                                                            "false (kube-proxy answers 503)")
    found = lb_health_checks.check_service(
        ROUTER, NODES, lb_health_checks.local_endpoints(SLICES),
        {"node1": probe(200, OK_BODY), "node2": probe(503, stale), "node3": probe(503, NONE_BODY)})
    [mismatch] = [f for f in found if f["check"] == "lb.health_probe_mismatch"]
    assert mismatch["subject"] == "openshift-ingress/router-default@node2" and "unhealthy" in mismatch["summary"]
    assert found[0]["evidence"]["pool"]["node2"]["health_check"] == "fail"


def test_unreachable_probe_is_a_mismatch():
    probes = {"node3": {"url": "http://x:31910/", "status": None, "local_endpoints": None, "error": "no answer: timed out"}}
    found = lb_health_checks.check_service(ROUTER, NODES, lb_health_checks.local_endpoints(SLICES), probes)
    assert [f["subject"] for f in found if f["check"] == "lb.health_probe_mismatch"] == ["openshift-ingress/router-default@node3"]


def test_only_local_load_balancers_and_pool_nodes():
    assert [s["metadata"]["name"] for s in of_kind(OBJS, "Service") if lb_health_checks.is_local_lb(s)] == ["router-default"]
    excluded = dict(NODES[0], metadata=dict(NODES[0]["metadata"], labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}))
    assert [n["metadata"]["name"] for n in lb_health_checks.pool_nodes([excluded] + NODES[1:])] == ["node2", "node3"]
    assert lb_health.node_ips(NODES)["node2"] == "198.18.0.12"


# ------------------------------------------------------------------ remediation
LOCAL4 = objects("cluster.yaml", "lb_local.yaml")
EXCLUDED = "node.kubernetes.io/exclude-from-external-load-balancers"


def _pool():
    nodes = []
    for node in of_kind(LOCAL4, "Node"):
        if node["metadata"]["name"] == "node3":
            node = dict(node, metadata=dict(node["metadata"], labels=dict(node["metadata"].get("labels") or {}, **{EXCLUDED: ""})))
        nodes.append(node)
    return lb_health_checks.pool_nodes(nodes)


def _reason(namespace, probes=None):
    svc = [s for s in of_kind(LOCAL4, "Service") if s["metadata"]["namespace"] == namespace][0]
    slices = [s for s in of_kind(LOCAL4, "EndpointSlice") if s["metadata"]["namespace"] == namespace]
    return lb_health_checks.patch_reason(svc, _pool(), lb_health_checks.local_endpoints(slices), probes or {})


def test_expected_condition_is_no_reason_to_patch():
    reason, why = _reason("d")
    assert reason is None and why.startswith("expected with externalTrafficPolicy Local: 1 of 2 nodes")
    # the finding itself says so
    svc = [s for s in of_kind(LOCAL4, "Service") if s["metadata"]["namespace"] == "d"][0]
    found = lb_health_checks.check_service(svc, _pool(), {"node1": 1}, {})
    assert found[0]["severity"] == "warning" and found[0]["evidence"]["expected"] is True
    assert "expected with policy Local: no impact unless" in found[0]["summary"]


def test_reasons_to_patch():
    reason, why = _reason("a")
    assert why is None and reason.startswith("its ready endpoints run only on nodes outside the load balancer pool")
    # serving nodes that fail the probe
    eps = lb_health_checks.local_endpoints(SLICES)
    probes = {"node1": probe(200, OK_BODY), "node2": probe(503, NONE_BODY), "node3": probe(503, NONE_BODY)}
    reason, why = lb_health_checks.patch_reason(ROUTER, NODES, eps, probes)
    assert reason.startswith("1 node(s) with a ready endpoint fail the health check (node2)")
    # no endpoint at all, or not Local: no reason
    assert lb_health_checks.patch_reason(ROUTER, NODES, {}, {})[1].startswith("no ready endpoint on any node")
    cluster = dict(ROUTER, spec=dict(ROUTER["spec"], externalTrafficPolicy="Cluster"))
    assert lb_health_checks.patch_reason(cluster, NODES, eps, {})[1].startswith("not a LoadBalancer Service with externalTrafficPolicy Local")


class FakeKube(object):
    """Services by namespace/name; ``deny`` maps a ref to the error its patch raises."""

    def __init__(self, deny=None):
        self.services = dict(("%s/web" % s["metadata"]["namespace"], json.loads(json.dumps(s)))
                             for s in of_kind(LOCAL4, "Service"))
        for number, svc in enumerate(self.services.values()):
            svc["metadata"]["resourceVersion"] = str(2001 + number)
        self.deny = deny or {}
        self.calls = []

    def get(self, plural, name, namespace):
        self.calls.append(("get", "%s/%s" % (namespace, name)))
        return self.services.get("%s/%s" % (namespace, name))

    def merge_patch(self, plural, name, namespace, patch, resource_version=None):
        ref = "%s/%s" % (namespace, name)
        self.calls.append(("patch", ref, resource_version))
        if ref in self.deny:
            raise self.deny[ref]
        self.services[ref]["spec"].update(patch["spec"])


def _targets(*namespaces):
    return [("%s/web" % ns,) + _reason(ns) for ns in namespaces]


def test_only_named_services_up_to_the_cap_in_check_mode():
    kube = FakeKube()
    out = lb_health_remediation.remediate(kube, _targets("a", "b", "d"), 1, check_mode=True)
    assert out["patched"] == ["a/web"] and out["failures"] == []
    assert out["not_attempted"] == [
        {"service": "b/web", "reason": "max_patch (1) reached: raise max_patch or run again to patch it"},
        {"service": "d/web", "reason": _reason("d")[1]}]
    assert [c for c in kube.calls if c[0] == "patch"] == []
    assert "resourceVersion: " in out["diffs"][0]["before"]


def test_partial_progress_is_returned_and_the_rest_listed():
    from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import http_error
    kube = FakeKube(deny={"b/web": http_error(403, '{"message": "services \\"web\\" is forbidden"}', "patch services b/web", "https://api")})
    out = lb_health_remediation.remediate(kube, _targets("a", "b", "c"), 3, check_mode=False)
    assert out["patched"] == ["a/web"]
    assert out["failures"] == [{"service": "b/web", "status": 403, "reason": kube.deny["b/web"].message}]
    assert out["not_attempted"] == [{"service": "c/web", "reason": "not attempted: the run stopped at the failure on b/web"}]
    # each patch carried the resourceVersion read right before it
    assert kube.calls == [("get", "a/web"), ("patch", "a/web", "2001"), ("get", "b/web"), ("patch", "b/web", "2002")]
    assert kube.services["a/web"]["spec"]["externalTrafficPolicy"] == "Cluster"
    assert kube.services["c/web"]["spec"]["externalTrafficPolicy"] == "Local"
