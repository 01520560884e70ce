"""f5_configmap_audit on the real control plane (tests/lab/cluster.py, the fixtures cluster.yaml and f5.yaml loaded
through the real API server by tests/lab/cluster_objects.py): GDC's integrated mode with the runbook's faults.

Two clusters: a second real control plane cannot share the lab slot's API address (one kube-apiserver, one etcd per
slot), so cluster b is the SAME real API server reached through a second kubeconfig, with a second ServiceAccount's
token (k8snet-lab/f5-b): the audit log tells the two entries' requests apart by credential, which is what the AWX
test needs (an entry with its own kubeconfig is not redirected to the K8S_AUTH_* cluster). Being one cluster, a
and b hold the same ConfigMaps; the shared-partition finding is asserted as the module judges two names it is told
are two clusters (what it would say of two clusters that share partition kubernetes). The "down" cluster is a
kubeconfig whose server is a lab address where nothing listens (a closed port on the controller's lab address):
connection refused, as a stopped API server gives.

The CIS-without-GDC tests that were here (clean, broken variants, deployments not readable) run on the real control
plane in test_f5_real_cluster.py, with F5's example ConfigMaps and real Deployments; nothing here uses the stand-in.
"""

from __future__ import annotations

import socket

import pytest
import yaml

from tests.kube_api.helpers import checks
from tests.lab.cluster_objects import RealApi


@pytest.fixture(scope="module")
def clusters(lab, kube_cluster):
    """(a, b): the fixtures on the real API server, and the same server through a second ServiceAccount."""
    a = RealApi(kube_cluster, "cluster.yaml", "f5.yaml")
    b = RealApi(kube_cluster, user="f5-b")
    return a, b


def down_kubeconfig(lab, api, path):
    """(a kubeconfig whose server is a closed port on the controller's lab address, its URL)."""
    with socket.socket() as probe:
        probe.bind((lab.controller_ip, 0))
        port = probe.getsockname()[1]
    url = "https://%s:%d" % (lab.controller_ip, port)
    data = yaml.safe_load(api.kubeconfig(path).read_text())
    data["clusters"][0]["cluster"]["server"] = url
    path.write_text(yaml.safe_dump(data))
    return path, url


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


def test_playbook_over_two_clusters(ansible, kube_cluster, clusters):
    a, b = clusters
    f5_clusters = [{"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "b", "kubeconfig": str(b.kubeconfig())}]
    run = ansible.playbook("k8snet.triage.f5", extra_vars={"f5_clusters": f5_clusters})
    assert run.rc == 0, run
    result = run.results(host="localhost", action="f5_configmap_audit")[-1]["result"]
    # b is the same API server: its findings are a's under its own name, and partition kubernetes is used by both
    mirrored = [(c, s.replace("a:", "b:", 1)) for c, s in EXPECTED_A if s.startswith("a:")]
    assert checks(result["findings"]) == sorted(EXPECTED_A + mirrored), result["findings"]
    [shared] = [f for f in result["findings"] if f["check"] == "f5.shared_partition"]
    assert shared["evidence"]["clusters"] == ["a", "b"]
    # what the audit counted is what kubectl sees
    cms = kube_cluster.kubectl_json("get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0]["configmaps"] == result["clusters"][1]["configmaps"] == len(cms) == 7
    lbs = [s for s in kube_cluster.kubectl_json("get", "services", "-A")["items"]
           if s["spec"]["type"] == "LoadBalancer"]
    assert result["clusters"][1] == {"name": "b", "server": b.url, "reached": True, "load_balancer_ports": sum(
        len(s["spec"]["ports"]) for s in lbs), "configmaps": 7, "partitions": ["kubernetes"]}
    # each entry read with its own credential (the API server's audit log)
    assert a.requests and b.requests


def test_one_cluster_one_namespace(ansible, clusters):
    """namespaces: only those namespaces' Services and ConfigMaps are judged (default has none); the controllers
    in kube-system still are."""
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(clusters[1].kubeconfig()),
                                                                "namespaces": ["default"]})["localhost"]
    assert checks(result["findings"]) == [("f5.controller_not_running", "kube-system/load-balancer-f5")], result
    assert result["clusters"][0]["configmaps"] == 0


def test_one_unreachable_cluster_keeps_the_findings_of_the_others(ansible, lab, kube_cluster, clusters, tmp_path):
    """Regression: one unreachable cluster made the audit throw away the findings of the clusters it did reach."""
    a = clusters[0]
    down_kc, down_url = down_kubeconfig(lab, a, tmp_path / "down.kubeconfig")
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "c", "kubeconfig": str(down_kc)}]})["localhost"]
    assert result["failed"] is False, result
    # a's findings (without the shared partition: c could not be compared) plus one finding for c, never ok
    expected = [x for x in EXPECTED_A if x[0] != "f5.shared_partition"] + [("f5.cluster_unreachable", "cluster c")]
    assert checks(result["findings"]) == sorted(expected)
    lost = [f for f in result["findings"] if f["check"] == "f5.cluster_unreachable"][0]
    assert lost["severity"] == "critical" and lost["evidence"]["server"] == down_url
    assert lost["evidence"]["error"].startswith("cannot reach the Kubernetes API at %s" % down_url), lost
    assert not [f for f in result["findings"] if f["severity"] == "ok"]
    cms = kube_cluster.kubectl_json("get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert [(c["name"], c["reached"], c.get("configmaps")) for c in result["clusters"]] == [
        ("a", True, len(cms)), ("c", False, None)]


def test_awx_credential_does_not_redirect_every_cluster(ansible, lab, kube_cluster, clusters, monkeypatch, tmp_path):
    """With AWX's K8S_AUTH_HOST / K8S_AUTH_API_KEY in the environment (cluster b: b's token, a server that is down),
    the entry with its own kubeconfig (cluster a) is still audited on its own server with its own credential, not
    b's under a's name; the entry without one takes the environment's."""
    a, b = clusters
    down_url = down_kubeconfig(lab, b, tmp_path / "down.kubeconfig")[1]
    monkeypatch.setenv("K8S_AUTH_HOST", down_url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", b.token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(kube_cluster.ca_file))
    before_a, before_b = len(a.requests), len(b.requests)
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(a.kubeconfig())}, {"name": "b"}]})["localhost"]
    assert [(c["name"], c["server"], c["reached"]) for c in result["clusters"]] == [
        ("a", a.url, True), ("b", down_url, False)]
    expected = [x for x in EXPECTED_A if x[0] != "f5.shared_partition"] + [("f5.cluster_unreachable", "cluster b")]
    assert checks(result["findings"]) == sorted(expected)
    # the API server's audit log: a's requests with a's token; none with b's (b's server was not this one)
    assert len(a.requests) > before_a and len(b.requests) == before_b


def test_bad_input(ansible, clusters):
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [{"kubeconfig": "/x"}]})["localhost"]
    assert "missing required arguments: name" in result["msg"]
    result = ansible.module("localhost", "f5_configmap_audit",
                            {"clusters": [{"name": "z", "kubeconfig": "/nonexistent"}]})["localhost"]
    assert result["msg"] == "kubeconfig /nonexistent does not exist: give the path of a kubeconfig file"
    # a wrong option on the second cluster fails before the first one is read
    before = len(clusters[0].requests)
    result = ansible.module("localhost", "f5_configmap_audit", {"clusters": [
        {"name": "a", "kubeconfig": str(clusters[0].kubeconfig())},
        {"name": "z", "kubeconfig": "/etc/passwd"}]})["localhost"]
    assert result["failed"] and result["msg"].startswith("kubeconfig /etc/passwd is not a kubeconfig")
    assert len(clusters[0].requests) == before


def test_gdc_cluster_is_judged_in_gdc_mode(ansible, kube_cluster, clusters):
    """The runbook's cluster: load-balancer-f5 (as kubectl lists it) makes it GDC's integrated mode."""
    a = clusters[0]
    result = ansible.module("localhost", "f5_configmap_audit", {"kubeconfig": str(a.kubeconfig())})["localhost"]
    [mode] = result["modes"]
    pods = [p["metadata"]["name"] for p in kube_cluster.kubectl_json("get", "pods", "-n", "kube-system")["items"]]
    [gdc_pod] = [p for p in pods if p.startswith("load-balancer-f5")]
    assert (mode["mode"], mode["why"]) == ("gdc", "pod kube-system/%s" % gdc_pod)
    assert {f["evidence"].get("mode") for f in result["findings"] if f["check"] != "f5.vip_mismatch"} == {"gdc"}
