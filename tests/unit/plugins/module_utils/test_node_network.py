from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network as nn

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


def _between_back_offs(pod, restarts, exit_code, ready="False"):
    """A CNI pod as the real kubelet v1.37 shows a crash loop between two back-offs (seen in the lab with a crashing
    container on containerd 2.4.2): the container terminated, no waiting reason, not ready."""
    container = dict(pod["status"]["containerStatuses"][0], restartCount=restarts, ready=False,
                     state={"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}})
    conditions = [dict(c, status=ready) if c["type"] == "Ready" else c for c in pod["status"].get("conditions", [])]
    return dict(pod, status=dict(pod["status"], containerStatuses=[container], conditions=conditions))


def test_a_crash_loop_read_between_two_back_offs_is_still_a_crash_loop():
    """Regression (a real kubelet, issue 50): between back-offs the container shows ``terminated`` for a moment and
    no CrashLoopBackOff; with fewer restarts than restart_threshold the loop was missed."""
    pod = _between_back_offs(of_kind(OBJS, "Pod")[1], restarts=2, exit_code=1)
    model = nn.cni_pod_model(pod)
    assert model["waiting"] is None and model["exit_code"] == 1 and not model["ready"]
    dummy, found = run(pods=[pod])
    loop = [f for f in found if f["check"] == "node.cni_pod_crashloop"]
    assert len(loop) == 1 and "exited with code 1 after a restart" in loop[0]["summary"], found
    assert loop[0]["evidence"]["exit_code"] == 1


def test_a_clean_exit_or_a_first_failure_is_not_a_crash_loop():
    pod = of_kind(OBJS, "Pod")[1]
    for restarts, code in ((2, 0), (0, 1)):
        dummy, found = run(pods=[_between_back_offs(pod, restarts=restarts, exit_code=code)])
        assert not [f for f in found if f["check"] == "node.cni_pod_crashloop"], (restarts, code)
    assert "exit_code" not in nn.cni_pod_model(_between_back_offs(pod, restarts=0, exit_code=1))


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


def test_system_pods_waiting_on_a_node_without_network_are_named():
    """The source runbook's step: the VPN client pod moved to the updated worker and cannot start there, because
    calico-node is not up.  It is not a CNI pod, so only this finding names it; host-network pods (kube-proxy) and
    the pods of healthy nodes are not listed."""
    objs = objects("cluster.yaml", "cni.yaml", "webhooks_tunnel.yaml")
    models, found = nn.check_nodes(of_kind(objs, "Node"), of_kind(objs, "Pod"), nn.DEFAULT_CNI_DAEMONSETS, NOW)
    [f] = [f for f in found if f["check"] == "node.pods_waiting_for_network"]
    assert (f["subject"], f["severity"]) == ("node2", "warning")
    assert f["summary"] == "1 system pod on node2 waits for the pod network: kube-system/vpn-6b8f9d7c5-x2k4n (ContainerCreating)"
    assert f["evidence"]["owners"] == {"kube-system/vpn-6b8f9d7c5-x2k4n": "ReplicaSet/vpn-6b8f9d7c5"}
    assert "webhook.cni_deadlock" in f["remediation"]
    # the same pod on a node with network, or running on node2 on the host network, is not waiting for it
    node2 = [m for m in models if m["name"] == "node2"][0]
    assert [p["name"] for p in node2["waiting_pods"]] == ["vpn-6b8f9d7c5-x2k4n"]
    pods = of_kind(objs, "Pod")
    vpn = [p for p in pods if p["metadata"]["name"] == "vpn-6b8f9d7c5-x2k4n"][0]
    moved = dict(vpn, spec=dict(vpn["spec"], nodeName="node1"))
    host = dict(vpn, spec=dict(vpn["spec"], hostNetwork=True))
    for pod in (moved, host):
        rest = [p for p in pods if p is not vpn] + [pod]
        found = nn.check_nodes(of_kind(objs, "Node"), rest, nn.DEFAULT_CNI_DAEMONSETS, NOW)[1]
        assert "node.pods_waiting_for_network" not in [f["check"] for f in found]


# cilium-config as Cilium's Helm chart renders it (cilium/cilium install/kubernetes/cilium/templates/
# cilium-configmap.yaml): custom-cni-conf "false", with the chart's comment "Users who wish to specify their own
# custom CNI configuration file must set custom-cni-conf to "true", otherwise Cilium may overwrite the configuration."
CILIUM_CONFIG = {"enable-ipv4": "true", "enable-ipv6": "false", "custom-cni-conf": "false",
                 "enable-bpf-clock-probe": "true"}


def test_the_agent_config_that_writes_no_cni_conf_is_named():
    """The runbook's step: a Running agent and no CNI files, because the agent's install is switched off."""
    assert nn.check_agent_configs({"kube-system/cilium-config": CILIUM_CONFIG}) == []
    [f] = nn.check_agent_configs({"kube-system/cilium-config": dict(CILIUM_CONFIG, **{"custom-cni-conf": "true"})})
    assert (f["check"], f["severity"], f["subject"]) == ("node.cni_conf_by_agent_config", "info", "cluster")
    assert "custom-cni-conf: true" in f["summary"] and "node.cni_config_missing" in f["summary"]
    assert f["evidence"] == {"configmap": "kube-system/cilium-config", "custom-cni-conf": "true"}
    assert "kubectl -n kube-system rollout restart" in f["remediation"]
    [f] = nn.check_agent_configs({"kube-system/cilium-config": {"write-cni-conf-when-ready": "/host/etc/cni/net.d/05-cilium.conflist"}})
    assert "only once it is ready" in f["summary"]


def test_the_agent_config_is_read_only_where_a_cilium_agent_runs():
    calls = []

    class Kube:
        def get(self, plural, name, namespace=None):
            calls.append((plural, name, namespace))
            return {"data": dict(CILIUM_CONFIG, **{"custom-cni-conf": "true"})}

    def agent(namespace, daemonset):
        return {"metadata": {"name": daemonset + "-x", "namespace": namespace,
                             "ownerReferences": [{"kind": "DaemonSet", "name": daemonset}]}}

    configs, skipped = nn.agent_configs(Kube(), [agent("kube-system", "calico-node")], nn.DEFAULT_CNI_DAEMONSETS)
    assert (configs, skipped, calls) == ({}, [], [])  # a Calico cluster: nothing read
    configs, skipped = nn.agent_configs(Kube(), [agent("kube-system", "anetd")], nn.DEFAULT_CNI_DAEMONSETS)
    assert calls == [("configmaps", "cilium-config", "kube-system")] and list(configs) == ["kube-system/cilium-config"]


def _copies(node, count):
    """``count`` copies of the fixture Node ``node``, named node-000 ..."""
    base = [n for n in of_kind(OBJS, "Node") if n["metadata"]["name"] == node][0]
    return [dict(base, metadata=dict(base["metadata"], name="node-%03d" % i)) for i in range(count)]


def test_a_finding_on_many_nodes_is_said_once_with_the_count_and_the_first():
    node1 = [n for n in of_kind(OBJS, "Node") if n["metadata"]["name"] == "node1"]
    many = _copies("node3", nn.COLLAPSE_OVER + 5)  # NotReady: cni plugin not initialized, no agent pod
    dummy, found = run(nodes=node1 + many)
    got = sorted((f["check"], f["subject"]) for f in found)
    count = nn.COLLAPSE_OVER + 5
    assert got == [("node.cni_not_ready", "%d nodes" % count), ("node.cni_pod_missing", "%d nodes" % count)]
    not_ready = [f for f in found if f["check"] == "node.cni_not_ready"][0]
    assert not_ready["severity"] == "critical" and not_ready["evidence"]["count"] == count
    assert not_ready["evidence"]["nodes"][:3] == ["node-000", "node-001", "node-002"]
    assert len(not_ready["evidence"]["nodes"]) == 10 and len(not_ready["evidence"]["first"]) == 3
    assert not_ready["summary"].startswith("node.cni_not_ready on %d nodes (node-000, node-001, node-002, node-003, "
                                           "node-004, ...); the first: " % count)


def test_up_to_the_limit_each_node_keeps_its_own_finding():
    dummy, found = run(nodes=_copies("node3", nn.COLLAPSE_OVER))
    assert len([f for f in found if f["check"] == "node.cni_not_ready"]) == nn.COLLAPSE_OVER
