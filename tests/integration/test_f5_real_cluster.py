"""f5_configmap_audit on a plain F5 CIS cluster that is a real control plane (tests/lab/cluster.py), not the stand-in.

The objects are those of the stand-in's fixtures (tests/kube_api/fixtures/f5_cis/), F5's own example ConfigMaps
among them, created through the real API server (which validates them) without the status the fixtures carry:
status is the controllers' or the kubelet's to write.

How "CIS running" is produced: the Deployment of f5_cis/cis.yaml is created as it is; the real deployment controller
creates its ReplicaSet and the ReplicaSet controller its Pod. There is no scheduler and no kubelet, so the lab plays
both, and nothing more: it binds the Pod to node1 with the pods' binding subresource (POST pods/<name>/binding, as
kube-scheduler does), gives it an address from a lab pod namespace and writes its status as node1's kubelet would
(Running, Ready); the Deployment's readyReplicas / availableReplicas are then the real controllers' own. Scaled to
zero, the ReplicaSet controller deletes the Pod (gracefully); the lab, as the kubelet, confirms the deletion
(DELETE with gracePeriodSeconds 0, what a kubelet sends once the containers stopped).

The tests run in order: the clean cluster first, then the broken variants (f5_cis/broken.yaml added, CIS scaled
to 0) on the same cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.kube_api.helpers import checks
from tests.lab.faults import pods

FIXTURES = Path(__file__).resolve().parents[1] / "kube_api" / "fixtures" / "f5_cis"
CIS = "k8s-bigip-ctlr-deployment"
CIS_REF = "kube-system/" + CIS
NODE = "node1"


def fixture_items(name):
    """The objects of a fixture file (every YAML document's List items), as a client would send them: no status."""
    items = []
    for doc in yaml.safe_load_all((FIXTURES / name).read_text()):
        for obj in (doc or {}).get("items", []):
            items.append(obj)
    return items


def create(kube_cluster, items):
    """Create the fixture's objects through the real API server (kubectl apply); the kinds a kubelet or a
    controller makes (Pods) are left out, and a Service's load-balancer status is written as its load-balancer
    controller would write it. Returns {(kind, namespace, name): fixture object}."""
    made = {}
    for obj in items:
        if obj["kind"] == "Pod":
            continue
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] in ("default", "kube-system"):
            continue
        sent = {k: v for k, v in obj.items() if k != "status"}
        kube_cluster.apply([sent])
        made[(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")
        if obj["kind"] == "Service" and ingress:
            path = "/api/v1/namespaces/%s/services/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
            kube_cluster.patch_status(path, {"loadBalancer": {"ingress": ingress}})
    return made


def cis_pods(kube_cluster):
    return kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", "-l", "app=" + CIS)["items"]


def play_scheduler_and_kubelet(lab, kube_cluster):
    """Bind every unbound CIS pod to NODE (binding subresource), write its status as NODE's kubelet, and confirm the
    deletion of every CIS pod the controllers deleted. Returns the pods bound."""
    bound = []
    for pod in cis_pods(kube_cluster):
        name = pod["metadata"]["name"]
        path = "/api/v1/namespaces/kube-system/pods/" + name
        if pod["metadata"].get("deletionTimestamp"):
            kube_cluster.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            continue
        if not pod["spec"].get("nodeName"):
            kube_cluster.request("POST", path + "/binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "kube-system"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}})
            netns = pods.pod(lab, NODE, "cis-" + name.rsplit("-", 1)[-1], cni="calico")
            kube_cluster.write_pod_status("kube-system", name, NODE, netns["ip"])
            bound.append(name)
    return bound


def deployment(kube_cluster):
    return kube_cluster.kubectl_json("get", "deployment", "-n", "kube-system", CIS)


@pytest.fixture(scope="module")
def cis(lab, kube_cluster):
    """The plain CIS cluster of f5_cis/cluster.yaml + cis.yaml, its CIS Deployment run as the docstring says."""
    made = create(kube_cluster, fixture_items("cluster.yaml") + fixture_items("cis.yaml"))
    bound = kube_cluster.wait_for("the deployment controller's CIS pod, bound by the lab",
                                  lambda: play_scheduler_and_kubelet(lab, kube_cluster), timeout=60)
    kube_cluster.wait_for("the CIS Deployment's readyReplicas 1, as the deployment controller computes it",
                          lambda: (deployment(kube_cluster).get("status") or {}).get("readyReplicas") == 1,
                          timeout=60)
    return {"made": made, "bound": bound}


def audit(ansible, kubeconfig, **args):
    return ansible.module("localhost", "f5_configmap_audit", dict(args, kubeconfig=str(kubeconfig)))["localhost"]


def test_f5_examples_are_accepted_verbatim_by_the_api_server(kube_cluster, cis):
    """F5's own example ConfigMaps (v0.1.6, v0.1.7, iApp, AS3) pass the real API server's validation and are
    stored byte for byte: what CIS (and the audit) reads is what F5 published."""
    examples = [k for k in cis["made"] if k[0] == "ConfigMap"]
    assert sorted(key[2] for key in examples) == ["as3cm", "example-udp-vs", "example-vs", "example-vs-iapp"]
    for kind, namespace, name in examples:
        stored = kube_cluster.kubectl_json("get", "configmap", "-n", namespace, name)
        assert stored["data"] == cis["made"][(kind, namespace, name)]["data"], name
        assert stored["metadata"]["labels"]["f5type"] == "virtual-server"


def test_plain_cis_cluster_with_f5_examples_is_clean(ansible, kube_cluster, cis):
    """CIS alone, running as the real controllers report it: nothing to report, and the controller judged is the
    Deployment kubectl sees, with the ready replica the deployment controller counted."""
    dep = deployment(kube_cluster)
    assert dep["status"]["readyReplicas"] == dep["status"]["availableReplicas"] == 1
    available = [c for c in dep["status"]["conditions"] if c["type"] == "Available"]
    assert available and available[0]["status"] == "True"
    # the pod is the ReplicaSet's, the ReplicaSet the Deployment's: made by the controllers, not by the lab
    [pod] = cis_pods(kube_cluster)
    assert pod["metadata"]["name"] == cis["bound"][0] and pod["spec"]["nodeName"] == NODE
    [rs_owner] = pod["metadata"]["ownerReferences"]
    rs = kube_cluster.kubectl_json("get", "replicaset", "-n", "kube-system", rs_owner["name"])
    assert rs_owner["kind"] == "ReplicaSet" and rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]

    result = audit(ansible, kube_cluster.kubeconfig())
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")], result["findings"]
    assert "F5 CIS without GDC" in result["findings"][0]["summary"]
    [mode] = result["modes"]
    assert (mode["mode"], mode["deployments_read"], mode["configmaps"], mode["schema_versions"]) == (
        "cis", True, {"virtual-server": 3, "as3": 1}, ["v0.1.6", "v0.1.7"])
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=default" in args and "--pool-member-type=nodeport" in args
    assert mode["cis_controllers"] == [{
        "ref": CIS_REF, "replicas": dep["spec"]["replicas"], "ready": dep["status"]["readyReplicas"],
        "watch": "namespaces default", "pool_member_type": "nodeport", "partitions": ["kubernetes"]}]
    cms = kube_cluster.kubectl_json("get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0]["configmaps"] == len(cms) == 4
    assert result["clusters"][0]["server"] == kube_cluster.server
    # the two LoadBalancer Services (MetalLB's annotation, a loadBalancerClass) owe F5 nothing
    services = kube_cluster.kubectl_json("get", "services", "-A")["items"]
    lbs = [s for s in services if s["spec"]["type"] == "LoadBalancer"]
    assert result["clusters"][0]["load_balancer_ports"] == len(lbs) == 2


def test_deployments_not_readable_falls_back_to_the_cis_pod(ansible, kube_cluster, cis):
    """A ServiceAccount whose ClusterRole reads Services, ConfigMaps, Pods and Namespaces but not Deployments: the
    API server's own 403 on deployments, and CIS judged by its pod (the one the controllers made) instead."""
    kube_cluster.ensure_namespace("ops")
    kube_cluster.apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "f5-audit", "namespace": "ops"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "f5-audit"},
         "rules": [{"apiGroups": [""], "resources": ["services", "configmaps", "pods", "namespaces"],
                    "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "f5-audit"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "f5-audit"},
         "subjects": [{"kind": "ServiceAccount", "name": "f5-audit", "namespace": "ops"}]},
    ])
    kube_cluster.token_kubeconfig("f5-audit", kube_cluster.token("ops", "f5-audit"))
    denied = kube_cluster.kubectl("get", "deployments", "-A", user="f5-audit", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), denied.stderr
    result = audit(ansible, kube_cluster.kubeconfig("f5-audit"))
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("f5.audit_clean", "ok")], result["findings"]
    [mode] = result["modes"]
    assert (mode["mode"], mode["deployments_read"], mode["cis_controllers"]) == ("cis", False, [])
    [pod] = kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", user="f5-audit")["items"]
    assert pod["metadata"]["name"] == cis["bound"][0] and pod["status"]["phase"] == "Running"


EXPECTED_BROKEN = [
    ("f5.controller_scaled_to_zero", CIS_REF),
    ("f5.invalid_configmap", "default/bad-mode"),
    ("f5.pool_member_type_mismatch", "default/to-cluster-ip"),
    ("f5.port_mismatch", "default/wrong-port"),
    ("f5.schema_not_loadable", "default/example-vs-v0-1-0"),
    ("f5.unknown_schema_version", "default/future-schema"),
    ("f5.unwatched_namespace", "other-team/unwatched"),
]


def test_broken_variants_and_cis_scaled_to_zero(lab, ansible, kube_cluster, cis):
    """f5_cis/broken.yaml added and CIS scaled to 0 with kubectl: the controllers delete its pod (the lab confirms
    the deletion as the kubelet), and each broken ConfigMap gives its finding."""
    create(kube_cluster, fixture_items("broken.yaml"))
    kube_cluster.kubectl("scale", "deployment", "-n", "kube-system", CIS, "--replicas=0")
    # until its kubelet confirms, the pod the ReplicaSet controller deleted is still listed: Terminating, its status
    # (Running, Ready) as it was. Judged by its pods (no right to list Deployments), CIS is not running.
    [pod] = kube_cluster.wait_for("the CIS pod Terminating (deleted by the ReplicaSet controller)", lambda: [
        p for p in cis_pods(kube_cluster) if p["metadata"].get("deletionTimestamp")], timeout=60)
    assert pod["status"]["phase"] == "Running" and pod["metadata"]["name"] == cis["bound"][0]
    result = audit(ansible, kube_cluster.kubeconfig("f5-audit"))
    found = dict(((f["check"], f["subject"]), f) for f in result["findings"])
    stopping = found.get(("f5.controller_not_running", "kube-system/k8s-bigip-ctlr"))
    assert stopping, result["findings"]
    assert stopping["evidence"]["pods"] == ["%s: Terminating" % pod["metadata"]["name"]]
    kube_cluster.wait_for("the CIS pod deleted by the ReplicaSet controller (deletion confirmed by the lab)",
                          lambda: play_scheduler_and_kubelet(lab, kube_cluster) == [] and not cis_pods(kube_cluster),
                          timeout=60)

    def scaled_down():
        dep = deployment(kube_cluster)
        seen = dep["status"].get("observedGeneration") == dep["metadata"]["generation"]
        return dep if seen and not dep["status"].get("replicas") else None
    dep = kube_cluster.wait_for("the Deployment's status at 0 replicas", scaled_down, timeout=60)
    assert dep["spec"]["replicas"] == 0 and not dep["status"].get("readyReplicas")

    kc = kube_cluster.kubeconfig()
    result = audit(ansible, kc)
    assert checks(result["findings"]) == EXPECTED_BROKEN, result["findings"]
    found = dict(((f["check"], f["subject"]), f) for f in result["findings"])
    assert all(f["evidence"]["mode"] == "cis" for f in result["findings"])
    svc = kube_cluster.kubectl_json("get", "service", "-n", "default", "example-service")
    ports = [p["port"] for p in svc["spec"]["ports"]]
    assert found[("f5.port_mismatch", "default/wrong-port")]["evidence"]["service_ports"] == ports == [443, 4445]
    assert found[("f5.controller_scaled_to_zero", CIS_REF)]["severity"] == "critical"
    internal = kube_cluster.kubectl_json("get", "service", "-n", "default", "internal")
    assert internal["spec"]["type"] == "ClusterIP"
    assert found[("f5.pool_member_type_mismatch", "default/to-cluster-ip")]["evidence"]["service_type"] == "ClusterIP"
    [mode] = result["modes"]
    assert mode["cis_controllers"][0]["replicas"] == 0 and mode["cis_controllers"][0]["ready"] == 0
    cms = kube_cluster.kubectl_json("get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0]["configmaps"] == len(cms) == 10
