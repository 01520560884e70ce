from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils import node_network as nn

from tests.kube_api import fixture_objects as objects, of_kind

OBJS = objects("cluster.yaml", "cni.yaml", "node4.yaml")
NOW = nn.parse_time("2026-01-01T12:00:00Z")


def run(now=NOW, nodes=None, pods=None, **kw):
    return nn.check_nodes(of_kind(OBJS, "Node") if nodes is None else nodes,
                          of_kind(OBJS, "Pod") if pods is None else pods, nn.DEFAULT_CNI_DAEMONSETS, now, **kw)


def test_every_node_finding():
    models, found = run()
    got = {(f["check"], f["subject"]): f["severity"] for f in found}
    assert got == {
        ("node.network_unavailable", "node2"): "critical",          # 600 s > stuck_after 300
        ("node.cni_pod_crashloop", "node2/calico-node-m4q8z"): "critical",
        ("node.cni_not_ready", "node3"): "critical",
        ("node.cni_pod_pending", "node3/calico-node-z9t5r"): "warning",
        ("node.cni_pod_missing", "node4"): "critical",
    }
    node2 = [m for m in models if m["name"] == "node2"][0]
    assert node2["network_unavailable"]["seconds"] == 600
    assert node2["taints"] == ["node.kubernetes.io/network-unavailable:NoSchedule"]
    assert node2["cni_pods"][0] == {"name": "calico-node-m4q8z", "namespace": "kube-system", "daemonset": "calico-node",
                                    "phase": "Running", "ready": False, "restarts": 14, "waiting": "CrashLoopBackOff"}


def test_network_unavailable_is_a_warning_while_young():
    dummy, found = run(now=NOW, stuck_after=900)
    nu = [f for f in found if f["check"] == "node.network_unavailable"][0]
    assert nu["severity"] == "warning"
    assert "normal for a few seconds" in nu["summary"]


def test_restarts_without_crashloop_reason():
    pod = of_kind(OBJS, "Pod")[1]
    pod = dict(pod, status=dict(pod["status"], containerStatuses=[dict(pod["status"]["containerStatuses"][0], state={"running": {}})]))
    model = nn.cni_pod_model(pod)
    assert model["waiting"] is None and model["restarts"] == 14
    dummy, found = run(pods=[pod], restart_threshold=20)
    assert not [f for f in found if f["check"] == "node.cni_pod_crashloop"]


def test_no_cni_pods_at_all_is_one_cluster_finding():
    dummy, found = run(pods=[])
    missing = [f for f in found if f["check"] == "node.cni_pod_missing"]
    assert [f["subject"] for f in missing] == ["cluster"]


def test_healthy_cluster_gives_one_ok():
    node1 = [n for n in of_kind(OBJS, "Node") if n["metadata"]["name"] == "node1"]
    dummy, found = run(nodes=node1)
    assert [(f["check"], f["severity"]) for f in found] == [("node.network_ok", "ok")]


def test_parse_time():
    assert nn.parse_time("2026-01-01T00:00:00Z") == 1767225600
    assert nn.parse_time(None) is None and nn.parse_time("yesterday") is None


def test_network_plugin_not_installed_in_the_ready_message_is_cni_not_ready():
    """The GDC runbook's kubelet text (cloud.google.com/kubernetes-engine/distributed-cloud/bare-metal/docs/
    troubleshooting/networking): "Network plugin not installed"."""
    import copy
    node3 = copy.deepcopy([n for n in of_kind(OBJS, "Node") if n["metadata"]["name"] == "node3"][0])
    for condition in node3["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["message"] = "container runtime network not ready: Network plugin not installed"
    dummy, found = run(nodes=[node3])
    [ready] = [f for f in found if f["check"] == "node.cni_not_ready"]
    assert "Network plugin not installed" in ready["summary"]
