"""lb_health against the stand-in API and real HTTP health endpoints served inside the node
namespaces on healthCheckNodePort: node1 has a router (200), node2 has one per the API but its
"kube-proxy" answers 503 (stale), node3 has none (503)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.kube_api.helpers import checks, kubectl, start
from tests.lab.faults import kube as kube_faults

PORT = 31910
SVC = "openshift-ingress/router-default"


@pytest.fixture(scope="module")
def cluster(lab):
    server = start(lab, "cluster.yaml", "router.yaml", label="kube-api-lb")
    endpoints = [kube_faults.health_endpoint(lab, "node1", PORT, 1),
                 kube_faults.health_endpoint(lab, "node2", PORT, 0),
                 kube_faults.health_endpoint(lab, "node3", PORT, 0)]
    yield server
    kube_faults.stop_health_endpoints(lab, endpoints)
    server.stop()


def http(address):
    """The independent probe: plain urllib, as a load balancer would."""
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, PORT), timeout=3) as response:
            return response.status, json.loads(response.read())
    except urllib.request.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_findings_match_probes_and_api(lab, ansible, cluster):
    assert [http(n.ip)[0] for n in lab.nodes] == [200, 503, 503]
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(cluster.kubeconfig())})["localhost"]
    assert checks(result["findings"]) == [("lb.health_probe_mismatch", SVC + "@node2"), ("lb.nodes_without_endpoints", SVC)]
    without = [f for f in result["findings"] if f["check"] == "lb.nodes_without_endpoints"][0]
    assert without["evidence"]["nodes_without"] == ["node3"] and without["evidence"]["replicas"] == 2
    svc = result["services"][0]
    assert svc["local_endpoints"] == {"node1": 1, "node2": 1}
    assert {n: p["status"] for n, p in svc["probes"].items()} == {"node1": 200, "node2": 503, "node3": 503}
    assert result["changed"] is False and result["patched"] == []


def test_remediate_cluster_check_mode_then_real_then_idempotent(lab, ansible, cluster):
    kc = cluster.kubeconfig()
    args = {"kubeconfig": str(kc), "services": [SVC], "remediate": "cluster", "probe": False}
    try:
        dry = ansible.module("localhost", "lb_health", args, check=True, diff=True)["localhost"]
        assert dry["changed"] is True and dry["patched"] == [SVC]
        assert "externalTrafficPolicy: Cluster" in dry["diff"]["after"]
        assert kubectl(kc, "get", "svc", "-n", "openshift-ingress", "router-default")["spec"]["externalTrafficPolicy"] == "Local"
        real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
        assert real["changed"] is True
        spec = kubectl(kc, "get", "svc", "-n", "openshift-ingress", "router-default")["spec"]
        assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
        again = ansible.module("localhost", "lb_health", args)["localhost"]
        assert again["changed"] is False and again["findings"] == []
    finally:
        svc = cluster.store.get("services", "openshift-ingress", "router-default")
        svc["spec"].update(externalTrafficPolicy="Local", healthCheckNodePort=PORT)
        cluster.store.put(svc)


def test_role_playbook(lab, ansible, cluster):
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={"lb_health_kubeconfig": str(cluster.kubeconfig())})
    assert run.rc == 0, run
    facts = run.results(host="localhost", action="lb_health")[0]["result"]["findings"]
    assert checks(facts) == [("lb.health_probe_mismatch", SVC + "@node2"), ("lb.nodes_without_endpoints", SVC)]


@pytest.mark.parametrize("args, message", [
    ({"services": ["router-default"]}, "services[0]='router-default' is invalid: give namespace/name"),
    ({"services": ["web/nope"]}, "Service web/nope does not exist"),
    ({"probe_timeout": 0}, "probe_timeout=0.0 is invalid: give a number more than 0 and at most 60 seconds"),
])
def test_bad_input(ansible, cluster, args, message):
    result = ansible.module("localhost", "lb_health", dict(args, kubeconfig=str(cluster.kubeconfig())))["localhost"]
    assert message in result["msg"] and "findings" not in result
