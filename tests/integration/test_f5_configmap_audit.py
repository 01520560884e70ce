"""f5_configmap_audit across two stand-in clusters (partition kubernetes used by both)."""

from __future__ import annotations

import pytest

from tests.kube_api.helpers import checks, kubectl, start


@pytest.fixture(scope="module")
def clusters(lab):
    a = start(lab, "cluster.yaml", "f5.yaml", label="kube-api-f5a")
    b = start(lab, "f5_cluster_b/f5.yaml", label="kube-api-f5b")
    yield a, b
    a.stop()
    b.stop()


EXPECTED_A = [
    ("f5.controller_not_running", "a:kube-system/load-balancer-f5"),
    ("f5.duplicate_configmap", "a:web/web-e:80"),
    ("f5.invalid_configmap", "a:web/web-b-8080"),
    ("f5.missing_configmap", "a:web/web-d:80"),
    ("f5.orphan_configmap", "a:web/gone-80"),
    ("f5.port_mismatch", "a:web/web-c-9000"),
    ("f5.shared_partition", "partition kubernetes"),
    ("f5.vip_mismatch", "a:web/web-a-443"),
]


def test_playbook_over_two_clusters(ansible, clusters):
    a, b = clusters
    f5_clusters = [{"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "b", "kubeconfig": str(b.kubeconfig())}]
    run = ansible.playbook("k8snet.triage.f5", extra_vars={"f5_clusters": f5_clusters})
    assert run.rc == 0, run
    result = run.results(host="localhost", action="f5_configmap_audit")[-1]["result"]
    assert checks(result["findings"]) == EXPECTED_A
    # what the audit counted is what kubectl sees
    cms = kubectl(a.kubeconfig(), "get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0]["configmaps"] == len(cms) == 7
    assert result["clusters"][1] == {"name": "b", "server": b.url, "reached": True, "load_balancer_ports": 1,
                                     "configmaps": 1, "partitions": ["kubernetes"]}


def test_one_cluster_one_namespace_is_clean(ansible, clusters):
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(clusters[1].kubeconfig()),
                                                                "namespaces": ["web"]})["localhost"]
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")]


def test_one_unreachable_cluster_keeps_the_findings_of_the_others(ansible, lab, clusters):
    """Regression: one unreachable cluster made the audit throw away the findings of the clusters it did reach."""
    a = clusters[0]
    down = start(lab, "f5_cluster_b/f5.yaml", label="kube-api-f5-down")
    down_kc, down_url = down.kubeconfig(), down.url
    down.stop()
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "c", "kubeconfig": str(down_kc)}]})["localhost"]
    assert result["failed"] is False, result
    # a's findings (without the shared partition: c could not be compared) plus one finding for c, never ok
    expected = [x for x in EXPECTED_A if x[0] != "f5.shared_partition"] + [("f5.cluster_unreachable", "cluster c")]
    assert checks(result["findings"]) == sorted(expected)
    lost = [f for f in result["findings"] if f["check"] == "f5.cluster_unreachable"][0]
    assert lost["severity"] == "critical" and lost["evidence"]["server"] == down_url
    assert lost["evidence"]["error"].startswith("cannot reach the Kubernetes API at %s" % down_url)
    assert not [f for f in result["findings"] if f["severity"] == "ok"]
    cms = kubectl(a.kubeconfig(), "get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert [(c["name"], c["reached"], c.get("configmaps")) for c in result["clusters"]] == [("a", True, len(cms)), ("c", False, None)]


def test_awx_credential_does_not_redirect_every_cluster(ansible, clusters, monkeypatch):
    """With AWX's K8S_AUTH_HOST / K8S_AUTH_API_KEY in the environment (cluster b), the entry with its own
    kubeconfig (cluster a) is still audited on its own server, not b's under a's name."""
    a, b = clusters
    monkeypatch.setenv("K8S_AUTH_HOST", b.url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", b.token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(b.certs["ca"]))
    before_a, before_b = len(a.requests), len(b.requests)
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "b"}]})["localhost"]
    assert [(c["name"], c["server"]) for c in result["clusters"]] == [("a", a.url), ("b", b.url)]
    assert checks(result["findings"]) == EXPECTED_A
    assert len(a.requests) > before_a and len(b.requests) > before_b


def test_bad_input(ansible, clusters):
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [{"kubeconfig": "/x"}]})["localhost"]
    assert "missing required arguments: name" in result["msg"]
    result = ansible.module("localhost", "f5_configmap_audit",
                            {"clusters": [{"name": "z", "kubeconfig": "/nonexistent"}]})["localhost"]
    assert result["msg"] == "kubeconfig /nonexistent does not exist: give the path of a kubeconfig file"
    # a wrong option on the second cluster fails before the first one is read
    before = len(clusters[0].requests)
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(clusters[0].kubeconfig())}, {"name": "z", "kubeconfig": "/etc/passwd"}]})["localhost"]
    assert result["failed"] and result["msg"].startswith("kubeconfig /etc/passwd is not a kubeconfig")
    assert len(clusters[0].requests) == before


# ---------------------------------------------------------------- F5 CIS without GDC (fixtures f5_cis/)
NO_DEPLOYMENTS = "f5-audit-without-deployments"


@pytest.fixture(scope="module")
def cis_clusters(lab):
    clean = start(lab, "f5_cis/cluster.yaml", "f5_cis/cis.yaml", label="kube-api-f5-cis",
                  tokens={"k8snet-lab-token": {"user": "lab-admin"},
                          NO_DEPLOYMENTS: {"user": "system:serviceaccount:ops:f5-audit", "deny": ["list deployments"]}})
    broken = start(lab, "f5_cis/cluster.yaml", "f5_cis/cis_scaled_to_zero.yaml", "f5_cis/broken.yaml",
                   label="kube-api-f5-cis-broken")
    yield clean, broken
    clean.stop()
    broken.stop()


def test_plain_cis_cluster_with_f5_examples_is_clean(ansible, cis_clusters):
    """F5's own examples (v0.1.6, v0.1.7, iApp, AS3) behind NodePort Services, CIS alone: nothing to report."""
    clean = cis_clusters[0]
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(clean.kubeconfig())})["localhost"]
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")], result["findings"]
    assert "F5 CIS without GDC" in result["findings"][0]["summary"]
    [mode] = result["modes"]
    assert (mode["mode"], mode["deployments_read"], mode["configmaps"], mode["schema_versions"]) == (
        "cis", True, {"virtual-server": 3, "as3": 1}, ["v0.1.6", "v0.1.7"])
    # the CIS the audit judged is the Deployment kubectl sees, with the arguments it runs with
    [dep] = kubectl(clean.kubeconfig(), "get", "deployments", "-A")["items"]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert mode["cis_controllers"] == [{
        "ref": "kube-system/%s" % dep["metadata"]["name"], "replicas": dep["spec"]["replicas"], "ready": 1,
        "watch": "namespaces default", "pool_member_type": "nodeport", "partitions": ["kubernetes"]}]
    assert "--namespace=default" in args and "--pool-member-type=nodeport" in args
    # the ConfigMaps counted are those kubectl lists, and the LoadBalancer Services are MetalLB's / another class's
    cms = kubectl(clean.kubeconfig(), "get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0]["configmaps"] == len(cms) == 4
    lbs = [s for s in kubectl(clean.kubeconfig(), "get", "services", "-A")["items"] if s["spec"]["type"] == "LoadBalancer"]
    assert len(lbs) == 2 and all(s["spec"].get("loadBalancerClass") or s["metadata"].get("annotations") for s in lbs)


EXPECTED_BROKEN = [
    ("f5.controller_scaled_to_zero", "kube-system/k8s-bigip-ctlr-deployment"),
    ("f5.invalid_configmap", "default/bad-mode"),
    ("f5.pool_member_type_mismatch", "default/to-cluster-ip"),
    ("f5.port_mismatch", "default/wrong-port"),
    ("f5.schema_not_loadable", "default/example-vs-v0-1-0"),
    ("f5.unknown_schema_version", "default/future-schema"),
    ("f5.unwatched_namespace", "other-team/unwatched"),
]


def test_plain_cis_cluster_broken_variants(ansible, cis_clusters):
    broken = cis_clusters[1]
    kc = broken.kubeconfig()
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(kc)})["localhost"]
    assert checks(result["findings"]) == EXPECTED_BROKEN
    found = dict(((f["check"], f["subject"]), f) for f in result["findings"])
    assert all(f["evidence"]["mode"] == "cis" for f in result["findings"])
    # the port finding names the ports the Service has, as kubectl shows them
    svc = kubectl(kc, "get", "service", "-n", "default", "example-service")
    ports = [p["port"] for p in svc["spec"]["ports"]]
    assert found[("f5.port_mismatch", "default/wrong-port")]["evidence"]["service_ports"] == ports == [443, 4445]
    assert "8443" in found[("f5.port_mismatch", "default/wrong-port")]["summary"]
    # scaled to zero: what kubectl says of the Deployment
    [dep] = kubectl(kc, "get", "deployments", "-n", "kube-system")["items"]
    assert dep["spec"]["replicas"] == 0
    assert found[("f5.controller_scaled_to_zero", "kube-system/k8s-bigip-ctlr-deployment")]["severity"] == "critical"
    bad = found[("f5.invalid_configmap", "default/bad-mode")]
    assert "bigip-virtual-server_v0.1.7.json" in bad["summary"] and "https" in bad["summary"]
    internal = kubectl(kc, "get", "service", "-n", "default", "internal")
    assert internal["spec"]["type"] == "ClusterIP"
    assert "v0.1.8" in found[("f5.unknown_schema_version", "default/future-schema")]["summary"]
    assert "v0.1.9" in found[("f5.unknown_schema_version", "default/future-schema")]["summary"]
    # no load-balancer-f5 and no one-ConfigMap-per-LoadBalancer-port rule outside GDC's mode
    assert not [f for f in result["findings"] if f["check"] == "f5.missing_configmap" or "load-balancer-f5" in f["subject"]]
    assert result["modes"][0]["mode"] == "cis"


def test_gdc_cluster_is_judged_in_gdc_mode(ansible, clusters):
    """The runbook's cluster: load-balancer-f5 (as kubectl lists it) makes it GDC's integrated mode."""
    a = clusters[0]
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(a.kubeconfig())})["localhost"]
    [mode] = result["modes"]
    pods = [p["metadata"]["name"] for p in kubectl(a.kubeconfig(), "get", "pods", "-n", "kube-system")["items"]]
    [gdc_pod] = [p for p in pods if p.startswith("load-balancer-f5")]
    assert (mode["mode"], mode["why"]) == ("gdc", "pod kube-system/%s" % gdc_pod)
    assert {f["evidence"].get("mode") for f in result["findings"] if f["check"] != "f5.vip_mismatch"} == {"gdc"}


def test_deployments_not_readable_falls_back_to_the_cis_pod(ansible, cis_clusters):
    """RBAC without list deployments: CIS is judged by its pod in kube-system, and the result says so."""
    clean = cis_clusters[0]
    kc = clean.kubeconfig(clean.workdir / "kc-no-deployments", token=NO_DEPLOYMENTS)
    before = len(clean.requests)
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(kc)})["localhost"]
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")], result["findings"]
    [mode] = result["modes"]
    assert (mode["mode"], mode["deployments_read"], mode["cis_controllers"]) == ("cis", False, [])
    assert any("/apis/apps/v1/deployments" in str(r) for r in clean.requests[before:])
    # what the fallback judged: the one kube-system pod kubectl lists is CIS's, running and ready
    [pod] = kubectl(clean.kubeconfig(), "get", "pods", "-n", "kube-system")["items"]
    assert pod["metadata"]["name"].startswith("k8s-bigip-ctlr") and pod["status"]["phase"] == "Running"
