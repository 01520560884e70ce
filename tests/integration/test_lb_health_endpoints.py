"""lb_health on the real control plane (tests/lab/cluster.py) with the real kube-proxies answering the health checks.

OpenShift's router-default (tests/kube_api/fixtures/router.yaml, loaded through the real API server by
tests/lab/cluster_objects.py): a LoadBalancer Service with externalTrafficPolicy Local and healthCheckNodePort 31910,
its EndpointSlice holding a ready router on node1 and one on node2. kube-proxy on node1 answers 200 (localEndpoints
1), on node3 503 (localEndpoints 0); kube-proxy on node2 has crashed (``Cluster.stop_proxy``: its rules stay, its
health check server is gone), so the load balancer's probe of node2 fails although the API holds a ready router
there.

The remediation scope (lb_local.yaml: four Local Services a/web .. d/web): the real 403 is a ServiceAccount whose
RBAC grants ``patch services`` in a, c and d but not in b; the real 409 is kubectl annotating c/web between
lb_health's re-read of it and its patch.

Independent readers: urllib for the health checks (as a load balancer probes), kubectl for the Services and
EndpointSlices, the API server's audit log for what lb_health sent. Nothing here stays on the stand-in.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from tests.kube_api.helpers import checks
from tests.lab.cluster_objects import RealApi

PORT = 31910
SVC = "openshift-ingress/router-default"


def health(address, port=PORT):
    """The independent probe: plain urllib, as a load balancer would; (status, JSON body) or (None, why)."""
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, port), timeout=3) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError as exc:
        return None, str(exc)


def router_local(kube_cluster, lab):
    """router-default back to policy Local on its healthCheckNodePort, kube-proxy on node1 answering it again."""
    kube_cluster.kubectl("patch", "svc", "-n", "openshift-ingress", "router-default", "--type", "merge", "-p",
                         json.dumps({"spec": {"externalTrafficPolicy": "Local", "healthCheckNodePort": PORT}}))
    kube_cluster.wait_for("kube-proxy's health check of router-default on node1",
                          lambda: health(lab.node("node1").ip)[0] == 200, timeout=90)


@pytest.fixture(scope="module")
def cluster(lab, kube_cluster):
    """router.yaml on the real API server; kube-proxy of node2 crashed for the module."""
    api = RealApi(kube_cluster, "cluster.yaml", "router.yaml")
    kube_cluster.wait_for("kube-proxy's health checks of router-default (node1 200, node3 503)",
                          lambda: (health(lab.node("node1").ip)[0], health(lab.node("node3").ip)[0]) == (200, 503),
                          timeout=90)
    kube_cluster.stop_proxy("node2")
    yield api
    kube_cluster.start_proxy("node2")


def test_findings_match_probes_and_api(lab, ansible, kube_cluster, cluster):
    probes = [health(n.ip) for n in lab.nodes]
    assert [p[0] for p in probes] == [200, None, 503], probes
    assert probes[0][1]["localEndpoints"] == 1 and probes[2][1]["localEndpoints"] == 0
    # the API still holds a ready router on node2 (kubectl reads the EndpointSlices)
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", "openshift-ingress",
                                       "-l", "kubernetes.io/service-name=router-default")["items"]
    assert sorted(e["nodeName"] for s in slices for e in s.get("endpoints") or []
                  if (e.get("conditions") or {}).get("ready")) == ["node1", "node2"]
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(cluster.kubeconfig())})["localhost"]
    assert checks(result["findings"]) == [("lb.health_probe_mismatch", SVC + "@node2"),
                                          ("lb.nodes_without_endpoints", SVC)], result["findings"]
    without = [f for f in result["findings"] if f["check"] == "lb.nodes_without_endpoints"][0]
    assert without["evidence"]["nodes_without"] == ["node3"] and without["evidence"]["replicas"] == 2
    mismatch = [f for f in result["findings"] if f["check"] == "lb.health_probe_mismatch"][0]
    assert mismatch["evidence"]["api_local_endpoints"] == 1 and mismatch["evidence"]["status"] is None
    assert mismatch["evidence"]["error"].startswith("no answer"), mismatch
    svc = result["services"][0]
    assert svc["health_check_node_port"] == PORT
    assert svc["local_endpoints"] == {"node1": 1, "node2": 1}
    assert {n: p["status"] for n, p in svc["probes"].items()} == {"node1": 200, "node2": None, "node3": 503}
    assert result["changed"] is False and result["patched"] == []


def test_remediate_cluster_check_mode_then_real_then_idempotent(lab, ansible, kube_cluster, cluster):
    """node2 holds a ready router but its health check fails: the load balancer drops a node that can serve, a
    reason to switch (node3 without a router alone would not be one)."""
    kc = cluster.kubeconfig()
    # no post-check here: node2's kube-proxy is down (test_lb_health_vpc and test_real_cluster verify a switch)
    args = {"kubeconfig": str(kc), "remediate": "cluster", "remediate_services": [SVC], "verify": False}
    try:
        dry = ansible.module("localhost", "lb_health", args, check=True, diff=True)["localhost"]
        assert dry["changed"] is True and dry["patched"] == [SVC] and dry["failures"] == dry["not_attempted"] == []
        assert "externalTrafficPolicy: Cluster" in dry["diff"]["after"]
        assert kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
            "externalTrafficPolicy"] == "Local"
        before = len(cluster.requests)
        real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
        assert real["changed"] is True and real["patched"] == [SVC]
        # the patch went right after a re-read of the Service (the API server's audit log)
        calls = [(r["method"], r["path"], r["code"]) for r in cluster.requests[before:]]
        path = "/api/v1/namespaces/openshift-ingress/services/router-default"
        assert calls[-2:] == [("GET", path, 200), ("PATCH", path, 200)], calls
        spec = kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"]
        assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
        again = ansible.module("localhost", "lb_health", args)["localhost"]
        assert again["changed"] is False and again["findings"] == [] and again["patched"] == []
        assert again["not_attempted"][0]["reason"].startswith(
            "not a LoadBalancer Service with externalTrafficPolicy Local")
    finally:
        router_local(kube_cluster, lab)


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
def test_bad_input(ansible, kube_cluster, cluster, args, message):
    before = len(cluster.requests)
    result = ansible.module("localhost", "lb_health", dict(args, kubeconfig=str(cluster.kubeconfig())))["localhost"]
    assert message in result["msg"] and "findings" not in result
    assert not [r for r in cluster.requests[before:] if r["method"] != "GET" or ".." in r["path"]]
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")
    assert svc["spec"]["externalTrafficPolicy"] == "Local"


# ------------------------------------------------------------------ remediation scope (four Local Services)
EXCLUDED = "node.kubernetes.io/exclude-from-external-load-balancers"
LIMITED = "lb-limited"
HEALTH_PORTS = {"a": 32001, "b": 32002, "c": 32003, "d": 32004}


@pytest.fixture(scope="module")
def local4_api(kube_cluster):
    """lb_local.yaml on the real API server, and the limited credential: a ServiceAccount that may read what
    lb_health reads everywhere and patch Services in a, c and d, not in b (the real 403)."""
    api = RealApi(kube_cluster, "lb_local.yaml")
    kube_cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "lb-reader"},
         "rules": [{"apiGroups": [""], "resources": ["services", "nodes", "pods", "namespaces"],
                    "verbs": ["get", "list"]},
                   {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "lb-patcher"},
         "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["patch"]}]},
    ] + [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "lb-patcher", "namespace": ns},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lb-patcher"},
          "subjects": [{"kind": "ServiceAccount", "name": LIMITED, "namespace": "k8snet-lab"}]}
         for ns in ("a", "c", "d")])
    api.limited = RealApi(kube_cluster, user=LIMITED, role="lb-reader")
    denied = kube_cluster.kubectl("auth", "can-i", "patch", "services", "-n", "b",
                                  "--as", api.limited.username, check=False)
    assert denied.stdout.strip() == "no", denied.stdout + denied.stderr
    return api


@pytest.fixture
def local4(kube_cluster, local4_api):
    """Per test: a/web, b/web, c/web serve only from node3 (excluded from the LB pool, a reason to patch); d/web has
    nodes without a local endpoint (expected, no reason). Every Service back to Local, node3's label removed after."""
    kube_cluster.kubectl("label", "node", "node3", EXCLUDED + "=", "--overwrite")
    yield local4_api
    for ns, port in HEALTH_PORTS.items():
        kube_cluster.kubectl("patch", "svc", "-n", ns, "web", "--type", "merge", "-p", json.dumps(
            {"spec": {"externalTrafficPolicy": "Local", "healthCheckNodePort": port}}))
    kube_cluster.kubectl("label", "node", "node3", EXCLUDED + "-")


def policies(kube_cluster):
    """namespace -> externalTrafficPolicy of its web Service, read with kubectl."""
    items = kube_cluster.kubectl_json("get", "svc", "-A", "-l", "app=web")["items"]
    return {s["metadata"]["namespace"]: s["spec"]["externalTrafficPolicy"] for s in items}


def patches(api, since=0):
    return [r["path"] for r in api.requests[since:] if r["method"] == "PATCH"]


def test_check_mode_names_only_the_listed_services_up_to_the_cap(ansible, kube_cluster, local4):
    """Regression: remediate: cluster in check mode would have flipped 4 of 4 Local Services."""
    before = len(local4.requests)
    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "remediate_services": ["a/web", "b/web", "d/web"]}
    result = ansible.module("localhost", "lb_health", args, check=True)["localhost"]
    assert result["changed"] is True and result["patched"] == ["a/web"] and result["failures"] == []
    assert [(n["service"], n["reason"].split(":")[0]) for n in result["not_attempted"]] == [
        ("b/web", "max_patch (1) reached"), ("d/web", "expected with externalTrafficPolicy Local")]
    # all four were checked (the finding still reports d/web), nothing was sent but reads
    assert {f["subject"] for f in result["findings"]} == {"a/web", "b/web", "d/web"}
    assert patches(local4, before) == []
    assert policies(kube_cluster) == {"a": "Local", "b": "Local", "c": "Local", "d": "Local"}
    # without naming the Services nothing is patched at all, and the module says why
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(local4.kubeconfig()),
                                                       "remediate": "cluster"}, check=True)["localhost"]
    assert result["failed"] and "needs remediate_services" in result["msg"]


def test_real_run_patches_up_to_the_cap_and_never_the_expected_one(ansible, kube_cluster, local4):
    before = len(local4.requests)
    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "max_patch": 2, "remediate_services": ["d/web", "a/web", "b/web", "c/web"]}
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["patched"] == ["a/web", "b/web"]
    assert [n["service"] for n in result["not_attempted"]] == ["d/web", "c/web"]
    assert policies(kube_cluster) == {"a": "Cluster", "b": "Cluster", "c": "Local", "d": "Local"}
    assert patches(local4, before) == ["/api/v1/namespaces/a/services/web", "/api/v1/namespaces/b/services/web"]


def test_partial_progress_on_403_is_returned(ansible, kube_cluster, local4):
    """Regression: lb_health patched a/web, got a 403 on b/web, and returned patched: null. The 403 is the API
    server's own: the credential's RBAC has no patch on Services in b."""
    limited = local4.limited
    before = len(limited.requests)
    args = {"kubeconfig": str(limited.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "max_patch": 3, "remediate_services": ["a/web", "b/web", "c/web"]}
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["failed"] is True and result["changed"] is True
    assert result["msg"].startswith("lb_health patched 1 Service(s) (a/web), then failed on b/web: RBAC forbids us "
                                    "to patch services b/web"), result["msg"]
    # the API server's own words are passed on
    assert 'cannot patch resource \\"services\\"' in json.dumps(result["msg"]), result["msg"]
    assert result["patched"] == ["a/web"]
    assert [(f["service"], f["status"]) for f in result["failures"]] == [("b/web", 403)]
    assert result["not_attempted"] == [
        {"service": "c/web", "reason": "not attempted: the run stopped at the failure on b/web"}]
    assert policies(kube_cluster) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}
    sent = [(r["path"], r["code"]) for r in limited.requests[before:] if r["method"] == "PATCH"]
    assert sent == [("/api/v1/namespaces/a/services/web", 200), ("/api/v1/namespaces/b/services/web", 403)]


def test_patch_carries_the_resource_version_and_a_conflict_is_reported_not_retried(ansible, kube_cluster, local4):
    """Another client (kubectl) annotates c/web right after lb_health's re-read of it: the patch, sent with the
    version read, gets the API server's 409, reported and not retried. The other writer has to act between the
    module's read and its write, so this run is lb_health's own run (``lb_health.api_run``, the module's whole
    body) in the test's process with kubectl called after each read of c/web; then the module itself, via
    Ansible, once no one else writes."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
    from ansible_collections.k8snet.triage.plugins.module_utils.lb import health as lb_health
    from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_options as lb_health_options
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError
    from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import AUTH_ARG_SPEC

    class RacedKube(kube_client.Kube):
        def get(self, plural, name, namespace=None):
            obj = super().get(plural, name, namespace)
            if (plural, namespace, name) == ("services", "c", "web"):
                kube_cluster.kubectl("annotate", "svc", "-n", "c", "web", "--overwrite",
                                     "example.com/touched=%d" % time.time_ns())
            return obj

    args = {"kubeconfig": str(local4.kubeconfig()), "remediate": "cluster", "probe": False, "verify": False,
            "remediate_services": ["c/web"]}
    params = {k: v.get("default") for k, v in dict(AUTH_ARG_SPEC, **lb_health_options.CHECK_SPEC).items()}
    params.update(args)
    before = len(local4.requests)
    with pytest.raises(ChangeError) as raised:
        lb_health.api_run(params, RacedKube)
    result = raised.value.details
    assert result["patched"] == [] and result["failures"][0]["status"] == 409, result
    reason = result["failures"][0]["reason"]
    assert "conflict" in reason and "the object has been modified" in reason, reason
    sent = [(r["path"], r["code"]) for r in local4.requests[before:] if r["method"] == "PATCH"]
    assert sent == [("/api/v1/namespaces/c/services/web", 409)]  # once, not retried
    assert policies(kube_cluster)["c"] == "Local"
    result = ansible.module("localhost", "lb_health", args)["localhost"]
    assert result["patched"] == ["c/web"] and policies(kube_cluster)["c"] == "Cluster"


def test_role_repair_keeps_partial_progress_then_fails(ansible, kube_cluster, local4):
    kc = local4.limited.kubeconfig()
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(kc), "lb_health_remediate": "cluster", "lb_health_probe": False,
        "lb_health_verify": False, "lb_health_remediate_services": ["a/web", "b/web"], "lb_health_max_patch": 2})
    assert run.rc != 0, run
    kept = run.result("Keep the LB health findings and what the remediation did", "localhost")
    remediation = kept["ansible_facts"]["lb_health_remediation"]
    assert remediation["patched"] == ["a/web"] and [f["service"] for f in remediation["failures"]] == ["b/web"]
    assert run.results(task="Fail when the remediation failed (what it patched before is in lb_health_remediation)")
    assert policies(kube_cluster) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}
    # without naming Services the role patches nothing
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(local4.kubeconfig()), "lb_health_remediate": "cluster", "lb_health_probe": False})
    assert run.rc != 0 and "needs remediate_services" in run.stdout
    assert policies(kube_cluster) == {"a": "Cluster", "b": "Local", "c": "Local", "d": "Local"}
