"""Role f5 (playbook k8snet.triage.f5) in GDC's integrated mode on a real control plane (tests/lab/cluster.py).

The objects are those of the stand-in's tests/kube_api/fixtures/f5.yaml (namespace web: one ConfigMap per
LoadBalancer Service port, with the runbook's faults), created through the real API server, less what a real one
refuses: the fixture gives its six Services fixed clusterIPs (five of them the same, 198.18.16.25), which the real
API server rejects ("failed to allocate IP ... not in the valid range", and a second Service could not have an IP
already allocated); here the API server allocates them. The Services' load-balancer addresses are written to their
status as a load-balancer controller would.

The controllers are real Deployments in kube-system (k8s-bigip-ctlr-deployment and GDC's load-balancer-f5), their
ReplicaSets and Pods made by the real deployment and ReplicaSet controllers. With no scheduler and no kubelet, the
lab binds each Pod to node1 (POST pods/<name>/binding, as kube-scheduler does) and writes its status as node1's
kubelet would: CIS Running and Ready; load-balancer-f5 crash-looping (phase Running, its container waiting in
CrashLoopBackOff after 23 restarts, not Ready). The Deployments' status is the controllers' own.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.kube_api.helpers import checks
from tests.lab.faults import pods

FIXTURE = Path(__file__).resolve().parents[1] / "kube_api" / "fixtures" / "f5.yaml"
NODE = "node1"
IMAGE = "f5networks/k8s-bigip-ctlr:2.18.1"
CONTROLLERS = {"k8s-bigip-ctlr-deployment": True, "load-balancer-f5": False}  # name: ready

EXPECTED = [
    ("f5.controller_not_running", "a:kube-system/load-balancer-f5"),
    ("f5.duplicate_configmap", "a:web/web-e:80"),
    ("f5.invalid_configmap", "a:web/web-b-8080"),
    ("f5.missing_configmap", "a:web/web-d:80"),
    ("f5.orphan_configmap", "a:web/gone-80"),
    ("f5.port_mismatch", "a:web/web-c-9000"),
    ("f5.vip_mismatch", "a:web/web-a-443"),
]


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def controller_deployment(name):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "ctlr", "image": IMAGE}]}}}}


def kubelet_status(node, ip, ready):
    """A pod's status as its kubelet writes it: running and ready, or crash-looping (phase Running, the container
    waiting in CrashLoopBackOff after its 23rd restart, not ready)."""
    now = _now()
    if ready:
        state, last = {"running": {"startedAt": now}}, {}
    else:
        state = {"waiting": {"reason": "CrashLoopBackOff",
                             "message": "back-off 5m0s restarting failed container=ctlr"}}
        last = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}
    cond = "True" if ready else "False"
    return {"phase": "Running", "hostIP": node.ip, "hostIPs": [{"ip": node.ip}], "podIP": ip, "podIPs": [{"ip": ip}],
            "startTime": now,
            "containerStatuses": [{"name": "ctlr", "image": IMAGE, "imageID": "", "ready": ready,
                                   "restartCount": 0 if ready else 23, "started": ready, "state": state,
                                   "lastState": last}],
            "conditions": [{"type": t, "status": s, "lastTransitionTime": now} for t, s in (
                ("PodScheduled", "True"), ("Initialized", "True"), ("ContainersReady", cond), ("Ready", cond))]}


def bind_and_run(lab, kube_cluster, name, ready):
    """The lab as scheduler (binding) and kubelet (status) for the pod the controllers made for Deployment
    ``name``; returns the pod's name once it is bound."""
    listed = kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", "-l", "app=" + name)["items"]
    for pod in listed:
        pod_name = pod["metadata"]["name"]
        if pod["spec"].get("nodeName"):
            return pod_name
        path = "/api/v1/namespaces/kube-system/pods/" + pod_name
        kube_cluster.request("POST", path + "/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod_name, "namespace": "kube-system"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}})
        netns = pods.pod(lab, NODE, "f5-" + pod_name.rsplit("-", 1)[-1], cni="calico")
        kube_cluster.patch_status(path, kubelet_status(lab.node(NODE), netns["ip"], ready))
        return pod_name
    return None


@pytest.fixture(scope="module")
def gdc(lab, kube_cluster):
    kube_cluster.ensure_namespace("web")
    items = [o for d in yaml.safe_load_all(FIXTURE.read_text()) for o in (d or {}).get("items", [])]
    sent = []
    for obj in items:
        if obj["kind"] == "Pod":
            continue
        obj = {k: v for k, v in obj.items() if k != "status"}
        if obj["kind"] == "Service":
            obj["spec"] = {k: v for k, v in obj["spec"].items() if k != "clusterIP"}
        sent.append(obj)
    kube_cluster.apply(sent + [controller_deployment(name) for name in CONTROLLERS])
    for obj in items:
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")
        if obj["kind"] == "Service" and ingress:
            kube_cluster.patch_status("/api/v1/namespaces/web/services/" + obj["metadata"]["name"],
                                      {"loadBalancer": {"ingress": ingress}})
    controller_pods = {}
    for name, ready in CONTROLLERS.items():
        controller_pods[name] = kube_cluster.wait_for(
            "the controllers' pod of Deployment %s, bound by the lab" % name,
            lambda name=name, ready=ready: bind_and_run(lab, kube_cluster, name, ready), timeout=60)

    def statuses():
        deps = {d["metadata"]["name"]: d.get("status") or {} for d in
                kube_cluster.kubectl_json("get", "deployments", "-n", "kube-system")["items"]}
        return [deps.get(n, {}).get("replicas") == 1 and (deps[n].get("readyReplicas") or 0) == int(ready)
                for n, ready in CONTROLLERS.items()] == [True, True]
    kube_cluster.wait_for("the Deployments' status as the deployment controller computes it", statuses, timeout=60)
    return controller_pods


def test_role_f5_in_gdc_mode(ansible, kube_cluster, gdc):
    """The runbook's faults, each found once; the mode is GDC's because load-balancer-f5's Deployment exists; the
    controller finding is load-balancer-f5's, whose pod kubectl shows crash-looping."""
    kc = kube_cluster.kubeconfig()
    run = ansible.playbook("k8snet.triage.f5", extra_vars={"f5_clusters": [{"name": "a", "kubeconfig": str(kc)}]})
    assert run.rc == 0, run
    result = run.results(host="localhost", action="f5_configmap_audit")[-1]["result"]
    assert checks(result["findings"]) == EXPECTED, result["findings"]
    [mode] = result["modes"]
    assert (mode["mode"], mode["why"]) == ("gdc", "Deployment kube-system/load-balancer-f5")
    # what kubectl says of the controllers the audit judged
    lb_pod = kube_cluster.kubectl_json("get", "pod", "-n", "kube-system", gdc["load-balancer-f5"])
    [status] = lb_pod["status"]["containerStatuses"]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff" and not status["ready"]
    found = dict(((f["check"], f["subject"]), f) for f in result["findings"])
    evidence = found[("f5.controller_not_running", "a:kube-system/load-balancer-f5")]["evidence"]
    assert evidence["pods"] == ["%s: CrashLoopBackOff (23 restarts)" % gdc["load-balancer-f5"]]
    deps = kube_cluster.kubectl_json("get", "deployments", "-n", "kube-system")["items"]
    ready = {d["metadata"]["name"]: d["status"].get("readyReplicas", 0) for d in deps}
    assert ready == {"k8s-bigip-ctlr-deployment": 1, "load-balancer-f5": 0}
    # the VIP finding compares against the load-balancer address kubectl shows in web-a's status
    web_a = kube_cluster.kubectl_json("get", "service", "-n", "web", "web-a")
    vip = web_a["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert found[("f5.vip_mismatch", "a:web/web-a-443")]["evidence"]["load_balancer_ip"] == vip == "198.18.0.200"
    services = kube_cluster.kubectl_json("get", "services", "-n", "web")["items"]
    lb_ports = sum(len(s["spec"]["ports"]) for s in services if s["spec"]["type"] == "LoadBalancer")
    cms = kube_cluster.kubectl_json("get", "configmaps", "-A", "-l", "f5type=virtual-server")["items"]
    assert result["clusters"][0] == {"name": "a", "server": kube_cluster.server, "reached": True,
                                     "load_balancer_ports": lb_ports, "configmaps": len(cms),
                                     "partitions": ["kubernetes"]}
    assert lb_ports == 6 and len(cms) == 7
    # the role keeps the findings and the modes as facts
    facts = run.results(host="localhost", action="set_fact")[-1]["result"]["ansible_facts"]
    assert checks(facts["f5_findings"]) == EXPECTED and facts["f5_modes"] == result["modes"]
