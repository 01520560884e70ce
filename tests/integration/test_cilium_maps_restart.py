"""The cilium_maps repair's opt-in last step (cilium_maps_restart_agent): the runbook's "restart anetd" after a map
cleanup, against the lab's bpffs on node1 and the real control plane (tests/lab/cluster.py) holding anetd's pods
(anetd.yaml loaded through the real API server, tests/lab/cluster_objects.py).

The real API server deletes the agent pod gracefully: it stays Terminating until its kubelet confirms. The lab plays
that kubelet (the final DELETE, gracePeriodSeconds 0) and the DaemonSet controller (there is no scheduler: the new
agent pod on the same node is created by the test, owned by the real DaemonSet anetd, its status written ready as its
kubelet would). Independent readers: bpftool in node1's mount namespace, kubectl from the same release."""

from __future__ import annotations

import copy
import threading

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.lab.cluster import ApiError
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import bpf as lb

AGENT, NEW_AGENT = "anetd-5kx8w", "anetd-r4t6z"


def agent_pod(name):
    pod = copy.deepcopy(next(o for o in load_yaml([FIXTURES / "anetd.yaml"]) if o["kind"] == "Pod"))
    pod["metadata"]["name"] = name
    return pod


def pod_path(name):
    return "/api/v1/namespaces/kube-system/pods/" + name


def exists(kube_cluster, name):
    try:
        return kube_cluster.request("GET", pod_path(name))
    except ApiError as exc:
        if exc.status != 404:
            raise
        return None


def force_delete(kube_cluster, name):
    """The kubelet's final DELETE (gracePeriodSeconds 0) of a pod, or a force delete of a running one."""
    if exists(kube_cluster, name):
        kube_cluster.request("DELETE", pod_path(name), {"apiVersion": "v1", "kind": "DeleteOptions",
                                                        "gracePeriodSeconds": 0})
    kube_cluster.wait_for("pod kube-system/%s gone" % name, lambda: exists(kube_cluster, name) is None, timeout=60)


@pytest.fixture(scope="module")
def real(kube_cluster):
    return RealApi(kube_cluster)


@pytest.fixture
def api(real, kube_cluster):
    """anetd.yaml's ConfigMap and agent pod on node1; after the test, no anetd pod is left."""
    real.load("anetd.yaml")
    yield real
    for name in (AGENT, NEW_AGENT):
        force_delete(kube_cluster, name)
    kube_cluster.request("DELETE", "/api/v1/namespaces/kube-system/configmaps/cilium-config")


@pytest.fixture
def maps(lab):
    lb.remove_bpf_maps(lab, "node1")
    yield lb.cilium_lb_maps(lab, "node1", services=4, orphans=12)
    lb.remove_bpf_maps(lab, "node1")


def agents(kube_cluster):
    """{pod name: (node, uid, terminating)} of anetd's pods, as kubectl reads them."""
    items = kube_cluster.kubectl_json("get", "pods", "-n", "kube-system")["items"]
    return dict((p["metadata"]["name"], (p["spec"]["nodeName"], p["metadata"]["uid"],
                                         bool(p["metadata"].get("deletionTimestamp")))) for p in items)


def kubelet_and_daemonset_controller(api, kube_cluster, stop, seen):
    """Once the agent pod is deleted (Terminating), its kubelet confirms the deletion; once it is gone, its successor
    starts on the same node (ready), as the DaemonSet controller and the node's kubelet would."""
    while not stop.wait(0.2):
        pod = exists(kube_cluster, AGENT)
        if pod is not None and pod["metadata"].get("deletionTimestamp"):
            seen.append(pod["metadata"]["deletionTimestamp"])
            force_delete(kube_cluster, AGENT)
            api.loader.load([agent_pod(NEW_AGENT)])
            return


def run(ansible, api, check=False, **extra):
    extra = dict({"cilium_maps_cleanup": True, "cilium_maps_restart_agent": True,
                  "cilium_maps_kubeconfig": str(api.kubeconfig()), "cilium_maps_restart_wait": 60}, **extra)
    return ansible.playbook("playbooks/cilium_maps.yml", extra, check=check, limit="node1")


def result(play, name):
    [record] = [r for r in play.records if r["task"].endswith(name) and r["host"] == "node1"]
    return record


def test_dry_run_previews_then_the_cleanup_restarts_the_nodes_agent_once(lab, ansible, api, kube_cluster, maps):
    before = agents(kube_cluster)
    assert before[AGENT][0] == "node1" and NEW_AGENT not in before
    dry = run(ansible, api, check=True)
    assert dry.rc == 0, dry
    preview = result(dry, "Restart the agent, dry run first (its guards, and the pod it would delete)")["result"]
    assert "would delete the agent pod kube-system/%s on node1" % AGENT in preview["msg"]
    assert result(dry, "Restart the agent")["status"] == "skipped"
    assert agents(kube_cluster) == before  # nothing deleted by the dry run
    assert lb.bpftool_count(lab, "node1", maps["backends"]) == maps["backend_entries"]

    stop, seen = threading.Event(), []
    controller = threading.Thread(target=kubelet_and_daemonset_controller, args=(api, kube_cluster, stop, seen),
                                  daemon=True)
    controller.start()
    try:
        real = run(ansible, api)
    finally:
        stop.set()
        controller.join(90)
    assert real.rc == 0, real
    assert seen, "the agent pod was never deleted (no deletionTimestamp seen)"
    assert lb.bpftool_count(lab, "node1", maps["backends"]) == maps["live_backends"]  # the cleanup, then
    after = agents(kube_cluster)
    assert AGENT not in after and after[NEW_AGENT][0] == "node1"  # the one agent of node1 was restarted
    assert dict((k, v) for k, v in after.items() if k != NEW_AGENT) == dict(
        (k, v) for k, v in before.items() if k != AGENT)  # and no other pod
    facts = result(real, "Keep the restart in this host's findings and report")["result"]["ansible_facts"]
    [restarted] = [f for f in facts["cilium_maps_findings"] if f["check"] == "cilium.agent_restarted"]
    assert restarted["evidence"]["uid"] == before[AGENT][1]
    assert restarted["evidence"]["deletion"] == seen[0]  # the real server's deletionTimestamp
    assert facts["cilium_maps_report"]["agent_restart"]["done"] is True
    assert result(real, "Wait until the node's new agent pod is ready")["status"] == "ok"

    again = run(ansible, api)  # nothing left to clean: no restart
    assert again.rc == 0, again
    assert result(again, "Restart the agent on this node (the runbook's last step, opt-in)")["status"] == "skipped"
    assert agents(kube_cluster) == after


def test_no_agent_pod_on_the_node_fails_it_and_restarts_nothing(lab, ansible, api, kube_cluster, maps):
    force_delete(kube_cluster, AGENT)
    before = agents(kube_cluster)
    assert not [name for name in before if name.startswith("anetd-")]
    play = run(ansible, api)
    assert play.rc != 0
    failed = result(play, "Refuse the restart unless exactly one agent pod runs on this node")
    assert failed["status"] == "failed"
    assert "no agent pod of DaemonSet cilium or anetd on node node1; nothing was restarted" in failed["result"]["msg"]
    assert agents(kube_cluster) == before
