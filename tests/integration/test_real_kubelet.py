"""A real kubelet and containerd on a lab node (tests/lab/node_agent.py): kubelet built from the same
k8s.io/kubernetes module as the control plane, containerd from its own module, Debian's runc and CNI plugins, the
pause image from Kubernetes' pause.c. The pod's status is the kubelet's, not the lab's.

The independent readers: kubectl from the same release (the pod's status, its logs), ``ctr`` of the same containerd
release (the container and its task), ``ip -j`` in the node's namespace (the bridge the CNI plugin made) and in the
container's (its address).
"""

from __future__ import annotations

import ipaddress
import json

import pytest

from tests.lab.node_agent import BUSYBOX_IMAGE, NodeAgent

NS = "real"


@pytest.fixture(scope="module")
def agent(kube_cluster):
    agent = NodeAgent(kube_cluster, "node1").start()
    yield agent
    agent.stop()


def pod(name, command, node="node1", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", command]}], **spec}}


def running(cluster, name):
    def check():
        status = cluster.kubectl_json("-n", NS, "get", "pod", name)["status"]
        ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
        return status.get("phase") == "Running" and ready and ready[0]["status"] == "True" and status
    return cluster.wait_for(f"pod {NS}/{name} Running and Ready", check, timeout=120)


def test_the_node_is_the_kubelets(agent, kube_cluster):
    node = kube_cluster.kubectl_json("get", "node", "node1")
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.37.2"
    assert info["containerRuntimeVersion"] == "containerd://2.4.2"  # as nodes show it: the CRI drops the v
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    lease = kube_cluster.kubectl_json("-n", "kube-node-lease", "get", "lease", "node1")
    assert lease["spec"]["holderIdentity"] == "node1"


def test_a_pod_runs_with_its_status_written_by_the_kubelet(agent, kube_cluster, lab):
    kube_cluster.ensure_namespace(NS)
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(pod("hello", "echo hello from the pod; sleep 3600")))
    status = running(kube_cluster, "hello")
    ip = status["podIP"]
    pod_range = agent.cni_config()["plugins"][0]["ipam"]["ranges"][0][0]["subnet"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(pod_range)
    main = status["containerStatuses"][0]
    assert main["ready"] and main["state"]["running"]
    assert main["imageID"].startswith("sha256:")
    # containerd has the container, its task running
    container_id = main["containerID"].split("://", 1)[1]
    assert agent.ctr("containers", "info", container_id).returncode == 0
    tasks = agent.ctr("tasks", "list").stdout
    assert any(line.split()[:1] == [container_id] and "RUNNING" in line for line in tasks.splitlines()), tasks
    # the pod network in the node's namespace: the bridge the CNI plugin made holds the gateway of the pod's range
    bridge = lab.node_json("node1", ["ip", "-j", "addr", "show", "cni0"])[0]
    gateway = [a["local"] for a in bridge["addr_info"] if a["family"] == "inet"]
    assert gateway and ipaddress.ip_address(gateway[0]) in ipaddress.ip_network(pod_range)
    assert lab.ping("node1", ip).returncode == 0
    # the log line, read through the API server from the kubelet
    assert kube_cluster.kubectl("-n", NS, "logs", "hello").stdout == "hello from the pod\n"
