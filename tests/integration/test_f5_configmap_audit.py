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
    assert result["clusters"][1] == {"name": "b", "server": b.url, "load_balancer_ports": 1, "configmaps": 1,
                                     "partitions": ["kubernetes"]}


def test_one_cluster_one_namespace_is_clean(ansible, clusters):
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(clusters[1].kubeconfig()),
                                                                "namespaces": ["web"]})["localhost"]
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")]


def test_bad_input(ansible, clusters):
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [{"kubeconfig": "/x"}]})["localhost"]
    assert "missing required arguments: name" in result["msg"]
    result = ansible.module("localhost", "f5_configmap_audit",
                            {"clusters": [{"name": "z", "kubeconfig": "/nonexistent"}]})["localhost"]
    assert result["msg"] == "kubeconfig /nonexistent does not exist: give the path of a kubeconfig file"
