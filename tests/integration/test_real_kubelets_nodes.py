"""Real kubelets and containerds on several nodes of one lab at once (tests/lab/node_agent.py): each node its own
cgroups (``/k8t<slot>-<node>``), its own state under ``<lab>/kube/nodes/<node>``, its own kubelet port on its own
address (and its healthz on the loopback of its own network namespace), its own pod range.

Independent readers: kubectl from the same release (nodes, pods, logs), ``ctr`` of each node's containerd, the
kernel's cgroup v1 hierarchies and /proc after teardown.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from tests.lab.node_agent import BUSYBOX_IMAGE, NodeAgent
from tests.lab.node_cgroups import CGROUP_V1

NS = "real-nodes"
NODES = ("node1", "node2", "node3")


def pod(name, node, command):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", command]}]}}


def leftovers(lab, agents):
    """What the agents could leave behind on the shared kernel: cgroups by name, processes naming a node's dir."""
    cgroups = [str(p) for sub in (*CGROUP_V1, "systemd") for a in agents
               for p in [Path("/sys/fs/cgroup", sub, a.cgroup.lstrip("/"))] if p.exists()]
    dirs = [str(a.dir).encode() for a in agents]
    procs = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if any(d in cmdline for d in dirs):
                procs.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return cgroups, procs


@pytest.fixture(scope="module")
def agents(kube_cluster):
    started = []
    try:
        for node in NODES:
            started.append(NodeAgent(kube_cluster, node).start(timeout=300))
        yield started
    finally:
        for agent in started:
            agent.stop()


def test_three_nodes_run_their_own_kubelet_and_pods_at_once(agents, kube_cluster, lab):
    kube_cluster.ensure_namespace(NS)
    kube_cluster.kubectl("apply", "-f", "-", input="\n".join(
        json.dumps(pod(f"on-{a.node.name}", a.node.name, f"echo hello from {a.node.name}; exec sleep 3600"))
        for a in agents))
    ranges = set()
    for agent in agents:
        name = agent.node.name
        node = kube_cluster.kubectl_json("get", "node", name)
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
        assert node["status"]["addresses"][0]["address"] == agent.node.ip
        lease = kube_cluster.kubectl_json("-n", "kube-node-lease", "get", "lease", name)
        assert lease["spec"]["holderIdentity"] == name

        def up(pod_name=f"on-{name}"):
            status = kube_cluster.kubectl_json("-n", NS, "get", "pod", pod_name)["status"]
            return status.get("phase") == "Running" and status.get("podIP") and status
        status = kube_cluster.wait_for(f"on-{name} running", up, timeout=180)
        pod_range = agent.cni_config()["plugins"][0]["ipam"]["ranges"][0][0]["subnet"]
        ranges.add(pod_range)
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(pod_range)
        container_id = status["containerStatuses"][0]["containerID"].split("://", 1)[1]
        # each node's containerd has its own pod's container and not the others'
        listed = agent.ctr("containers", "list", "-q").stdout.split()
        assert container_id in listed
        assert lab.ping(name, status["podIP"]).returncode == 0
        assert kube_cluster.kubectl("-n", NS, "logs", f"on-{name}").stdout == f"hello from {name}\n"
    assert len(ranges) == len(agents)
    own = [set(a.ctr("containers", "list", "-q").stdout.split()) for a in agents]
    assert all(not (x & y) for i, x in enumerate(own) for y in own[i + 1:]), own


def test_stopping_the_agents_leaves_nothing(agents, kube_cluster, lab):
    assert all(any(leftovers(lab, [a])) for a in agents)  # the reader sees what is running
    for agent in agents:
        agent.stop()
    cgroups, procs = leftovers(lab, agents)
    assert cgroups == [] and procs == [], (cgroups, procs)
    real = kube_cluster.dir / "real-kubelets"
    assert not real.exists() or real.read_text().split() == []
