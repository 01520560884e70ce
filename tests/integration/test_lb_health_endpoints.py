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
    """node2 holds a ready router but its health check answers 503: the load balancer drops a node that
    can serve, a reason to switch (node3 without a router alone would not be one)."""
    kc = cluster.kubeconfig()
    # no post-check here: nothing serves the traffic nodePort in this lab (test_lb_health_vpc verifies a switch)
    args = {"kubeconfig": str(kc), "remediate": "cluster", "remediate_services": [SVC], "verify": False}
    try:
        dry = ansible.module("localhost", "lb_health", args, check=True, diff=True)["localhost"]
        assert dry["changed"] is True and dry["patched"] == [SVC] and dry["failures"] == dry["not_attempted"] == []
        assert "externalTrafficPolicy: Cluster" in dry["diff"]["after"]
        assert kubectl(kc, "get", "svc", "-n", "openshift-ingress", "router-default")["spec"]["externalTrafficPolicy"] == "Local"
        before = len(cluster.requests)
        real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
        assert real["changed"] is True and real["patched"] == [SVC]
        # the patch went right after a re-read of the Service
        calls = [(r["method"], r["path"]) for r in cluster.requests[before:]]
        path = "/api/v1/namespaces/openshift-ingress/services/router-default"
        assert calls[-2:] == [("GET", path), ("PATCH", path)]
        spec = kubectl(kc, "get", "svc", "-n", "openshift-ingress", "router-default")["spec"]
        assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
        again = ansible.module("localhost", "lb_health", args)["localhost"]
        assert again["changed"] is False and again["findings"] == [] and again["patched"] == []
        assert again["not_attempted"][0]["reason"].startswith("not a LoadBalancer Service with externalTrafficPolicy Local")
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
    ({"remediate": "cluster"}, "remediate: cluster needs remediate_services"),
    ({"remediate": "cluster", "remediate_services": [SVC], "max_patch": 0}, "max_patch must be between 1 and 100"),
    ({"remediate": "cluster", "remediate_services": [SVC], "services": ["web/web-cluster"]},
     "remediate_services openshift-ingress/router-default are not among services"),
    ({"namespaces": ["../../x"]}, "namespaces[0]='../../x' is invalid: a Kubernetes name is 1..63 lowercase letters"),
    ({"services": ["../../x/y"]}, "services[0] namespace='..' is invalid: a Kubernetes name"),
    ({"remediate": "cluster", "remediate_services": ["../x"]}, "remediate_services[0] namespace='..' is invalid"),
])
def test_bad_input(ansible, cluster, args, message):
    before = len(cluster.requests)
    result = ansible.module("localhost", "lb_health", dict(args, kubeconfig=str(cluster.kubeconfig())))["localhost"]
    assert message in result["msg"] and "findings" not in result
    assert not [r for r in cluster.requests[before:] if r["method"] != "GET" or ".." in r["path"]]
    svc = kubectl(cluster.kubeconfig(), "get", "svc", "-n", "openshift-ingress", "router-default")
    assert svc["spec"]["externalTrafficPolicy"] == "Local"


# ------------------------------------------------------------------ remediation scope (four Local Services)
EXCLUDED = "node.kubernetes.io/exclude-from-external-load-balancers"
LIMITED = "patch-denied-on-b"


@pytest.fixture
def local4(lab):
    """A fresh API per test: a/web, b/web, c/web serve only from node3 (excluded from the LB pool,
    a reason to patch); d/web has nodes without a local endpoint (expected, no reason)."""
    server = start(lab, "cluster.yaml", "lb_local.yaml", label="kube-api-lb4",
                   tokens={"k8snet-lab-token": {"user": "lab-admin"},
                           LIMITED: {"user": "system:serviceaccount:ops:lb", "deny": ["patch services b/web"]}})
    node = server.store.get("nodes", None, "node3")
    node["metadata"].setdefault("labels", {})[EXCLUDED] = ""
    server.store.put(node)
    yield server
    server.stop()


def policies(server):
    """namespace -> externalTrafficPolicy of its web Service, read with kubectl."""
    items = kubectl(server.kubeconfig(), "get", "svc", "-A", "-l", "app=web")["items"]
    return {s["metadata"]["namespace"]: s["spec"]["externalTrafficPolicy"] for s in items}


def patches(server, since=0):
    return [r["path"] for r in server.requests[since:] if r["method"] == "PATCH"]


def test_check_mode_names_only_the_listed_services_up_to_the_cap(ansible, local4):
    """Regression: remediate: cluster in check mode would have flipped 4 of 4 Local Services."""
    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "remediate_services": ["a/web", "b/web", "d/web"]}
    result = ansible.module("localhost", "lb_health", args, check=True)["localhost"]
    assert result["changed"] is True and result["patched"] == ["a/web"] and result["failures"] == []
    assert [(n["service"], n["reason"].split(":")[0]) for n in result["not_attempted"]] == [
        ("b/web", "max_patch (1) reached"), ("d/web", "expected with externalTrafficPolicy Local")]
    # all four were checked (the finding still reports d/web), nothing was sent but reads
    assert {f["subject"] for f in result["findings"]} == {"a/web", "b/web", "d/web"}
    assert patches(local4) == [] and policies(local4) == {"a": "Local", "b": "Local", "c": "Local", "d": "Local"}
    # without naming the Services nothing is patched at all, and the module says why
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster"},
                            check=True)["localhost"]
    assert result["failed"] and "needs remediate_services" in result["msg"]


def test_real_run_patches_up_to_the_cap_and_never_the_expected_one(ansible, local4):
    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False, "max_patch": 2,
            "remediate_services": ["d/web", "a/web", "b/web", "c/web"]}
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["patched"] == ["a/web", "b/web"]
    assert [n["service"] for n in result["not_attempted"]] == ["d/web", "c/web"]
    assert policies(local4) == {"a": "Cluster", "b": "Cluster", "c": "Local", "d": "Local"}
    assert patches(local4) == ["/api/v1/namespaces/a/services/web", "/api/v1/namespaces/b/services/web"]


def test_partial_progress_on_403_is_returned(ansible, local4):
    """Regression: lb_health patched a/web, got a 403 on b/web, and returned patched: null."""
    kc = local4.kubeconfig(local4.workdir / "kc-limited", token=LIMITED)
    args = {"kubeconfig": str(kc), "remediate": "cluster", "probe": False, "verify": False, "max_patch": 3,
            "remediate_services": ["a/web", "b/web", "c/web"]}
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["failed"] is True and result["changed"] is True
    assert result["msg"].startswith("lb_health patched 1 Service(s) (a/web), then failed on b/web: RBAC forbids us to "
                                    "patch services b/web")
    assert result["patched"] == ["a/web"]
    assert [(f["service"], f["status"]) for f in result["failures"]] == [("b/web", 403)]
    assert result["not_attempted"] == [{"service": "c/web", "reason": "not attempted: the run stopped at the failure on b/web"}]
    assert policies(local4) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}


def test_patch_carries_the_resource_version_and_a_conflict_is_reported_not_retried(ansible, local4):
    """Another client rewrites c/web right after every read: the patch, sent with the version read, gets 409."""
    local4.concurrent_writes.add(("services", "c", "web"))
    before = len(local4.requests)
    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "remediate_services": ["c/web"]}
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["failed"] is True and result["patched"] == []
    assert result["failed"] and result["failures"][0]["status"] == 409
    assert "conflict" in result["failures"][0]["reason"] and "the object has been modified" in result["failures"][0]["reason"]
    assert patches(local4, before) == ["/api/v1/namespaces/c/services/web"]  # once, not retried
    assert policies(local4)["c"] == "Local"
    local4.concurrent_writes.clear()
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["patched"] == ["c/web"] and policies(local4)["c"] == "Cluster"


def test_role_repair_keeps_partial_progress_then_fails(ansible, local4):
    kc = local4.kubeconfig(local4.workdir / "kc-limited", token=LIMITED)
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(kc), "lb_health_remediate": "cluster", "lb_health_probe": False, "lb_health_verify": False,
        "lb_health_remediate_services": ["a/web", "b/web"], "lb_health_max_patch": 2})
    assert run.rc != 0, run
    kept = run.result("Keep the LB health findings and what the remediation did", "localhost")
    remediation = kept["ansible_facts"]["lb_health_remediation"]
    assert remediation["patched"] == ["a/web"] and [f["service"] for f in remediation["failures"]] == ["b/web"]
    assert run.results(task="Fail when the remediation failed (what it patched before is in lb_health_remediation)")
    assert policies(local4) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}
    # without naming Services the role patches nothing
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(local4.kubeconfig()), "lb_health_remediate": "cluster", "lb_health_probe": False})
    assert run.rc != 0 and "needs remediate_services" in run.stdout
    assert policies(local4) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}
