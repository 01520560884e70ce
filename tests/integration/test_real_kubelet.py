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
from pathlib import Path

import pytest
import yaml

from tests.kube_api.helpers import checks
from tests.lab.node_agent import BUSYBOX_IMAGE, NodeAgent
from tests.lab.oci_image import layer, write_image

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


def running(cluster, name, namespace=NS):
    def check():
        status = cluster.kubectl_json("-n", namespace, "get", "pod", name)["status"]
        ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
        return status.get("phase") == "Running" and ready and ready[0]["status"] == "True" and status
    return cluster.wait_for(f"pod {namespace}/{name} Running and Ready", check, timeout=120)


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


# calico-node's startup lines when it cannot clear NetworkUnavailable, and CoreDNS's errors plugin timing out, as the
# stand-in's log fixture holds them (tests/kube_api/logs/ibm_cycle.yaml, which cites calico's startup.go): here the
# real containers print them, and kube_logs reads them through the API server from the kubelet.
CYCLE_LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"
CRASH_ONCE = ('if [ -e /state/ran ]; then echo "$1"; exec sleep 3600; fi; '
              'touch /state/ran; shift; printf "%s\\n" "$@"; exit 1')


def fixture_lines(pod_name, node):
    item = [i for i in yaml.safe_load(CYCLE_LOGS.read_text()) if i["pod"] == pod_name][0]
    return [text.replace("node2", node) for _stamp, text in item["lines"]]


def agent_pod(name, labels, container, command, args, volumes=False):
    obj = pod(name, "", **({"volumes": [{"name": "state", "emptyDir": {}}]} if volumes else {}))
    obj["metadata"].update(namespace="kube-system", labels=labels)
    main = obj["spec"]["containers"][0]
    main.update(name=container, command=command, args=args)
    if volumes:
        main["volumeMounts"] = [{"name": "state", "mountPath": "/state"}]
    return obj


def test_kube_logs_reads_a_crashed_calico_nodes_previous_log_from_the_kubelet(agent, kube_cluster, ansible):
    calico = fixture_lines("calico-node-m4q8z", "node1")
    coredns = fixture_lines("coredns-5d78c9869d-h2x7q", "node1")
    kube_cluster.kubectl("apply", "-f", "-", input="\n".join(json.dumps(o) for o in (
        agent_pod("calico-node-real", {"k8s-app": "calico-node"}, "calico-node", ["sh", "-c", CRASH_ONCE, "sh"],
                  [calico[0], *calico], volumes=True),
        agent_pod("coredns-real", {"k8s-app": "kube-dns"}, "coredns", ["sh", "-c", 'printf "%s\\n" "$@"; '
                                                                       "exec sleep 3600", "sh"], coredns))))

    def restarted():
        status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "calico-node-real")["status"]
        main = (status.get("containerStatuses") or [{}])[0]
        return main.get("restartCount", 0) >= 1 and "running" in main.get("state", {}) and main
    main = kube_cluster.wait_for("calico-node-real restarted once and running", restarted, timeout=120)
    assert main["lastState"]["terminated"]["exitCode"] == 1
    running(kube_cluster, "coredns-real", namespace="kube-system")
    # independent reader: kubectl logs --previous, through the same API server -> kubelet path
    previous = kube_cluster.kubectl("-n", "kube-system", "logs", "--previous", "calico-node-real", "-c",
                                    "calico-node").stdout
    assert previous.splitlines() == calico and previous.count("Failed to set NetworkUnavailable") == 2

    result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                       "nodes": ["node1"]})["localhost"]
    assert not result["failed"], result
    assert checks(result["findings"]) == [
        ("log.calico_network_unavailable_update_failed", "node1/calico-node-real"),
        ("log.coredns_upstream_timeout", "node1/coredns-real"),
    ], result["findings"]
    found = result["findings"][0]
    assert found["evidence"]["count"] == 3
    assert found["evidence"]["origins"] == ["kube-system/calico-node-real calico-node previous"]
    # the times are the kubelet's (timestamps=true), of the container's run minutes ago, not the text's 2026-01-01
    assert all(line["time"].endswith("Z") and not line["time"].startswith("2026-01-01")
               for line in found["evidence"]["lines"])
    assert "eyJhbGci" not in str(result) and "token=***" in str(found["evidence"]["lines"])


def node_ready(cluster, node="node1"):
    conditions = cluster.kubectl_json("get", "node", node)["status"]["conditions"]
    return [c for c in conditions if c["type"] == "Ready"][0]


def test_cni_config_removed_the_kubelet_says_not_ready_and_node_network_status_names_it(
        agent, kube_cluster, ansible):
    """The runbook's first transition on a real node: the CNI configuration gone, containerd's CRI reports the
    network not ready, the kubelet turns Ready False with its own message, and node_network_status reports it."""
    agent.remove_cni_config()
    try:
        def not_ready():
            condition = node_ready(kube_cluster)
            return condition["status"] != "True" and condition

        ready = kube_cluster.wait_for("node1 NotReady", not_ready, timeout=120)
        # the kubelet's words (v1.37.2 on containerd 2.4.2), as kubectl shows them
        assert ready["reason"] == "KubeletNotReady", ready
        assert ready["message"].startswith("container runtime network not ready: NetworkReady=false "
                                           "reason:NetworkPluginNotReady message:Network plugin returns error: "
                                           "cni plugin not initialized"), ready
        result = ansible.module("localhost", "node_network_status",
                                {"kubeconfig": str(kube_cluster.kubeconfig())})["localhost"]
        assert not result["failed"], result
        found = [f for f in result["findings"] if f["check"] == "node.cni_not_ready"]
        assert [f["subject"] for f in found] == ["node1"], result["findings"]
        assert found[0]["severity"] == "critical" and ready["message"] in found[0]["summary"]
        assert found[0]["evidence"]["reason"] == "KubeletNotReady"
    finally:
        agent.write_cni_config()
    kube_cluster.wait_for("node1 Ready again", lambda: node_ready(kube_cluster)["status"] == "True", timeout=120)


def test_a_missing_cni_plugin_leaves_a_pod_containercreating_with_its_real_events(agent, kube_cluster, ansible):
    """A CNI configuration naming a plugin the node does not have (calico's, before its install copied the binary):
    the node stays Ready, the pod's sandbox fails in containerd's words (FailedCreatePodSandBox) and kube_logs
    names it from the real Events; node_network_status says the application pod that waits for its sandbox, from
    the kubelet's own PodReadyToStartContainers and its Event, apart from the system pod it judges node by node."""
    config = agent.cni_config()
    config["plugins"][0]["type"] = "calico"
    (agent.cni_dir / "10-lab-bridge.conflist").write_text(json.dumps(config))
    kube_cluster.ensure_namespace(NS)
    try:
        # CoreDNS's pod, as the runbook meets it: stuck ContainerCreating on the node; and an application's
        kube_cluster.kubectl("apply", "-f", "-", input="\n".join(json.dumps(o) for o in (
            agent_pod("coredns-stuck", {"k8s-app": "kube-dns"}, "coredns", ["sleep", "3600"], []),
            pod("web-stuck", "sleep 3600"))))

        def failed_events():
            return kube_cluster.kubectl_json("-n", "kube-system", "get", "events", "--field-selector",
                                             "involvedObject.name=coredns-stuck,reason=FailedCreatePodSandBox")["items"]
        events = kube_cluster.wait_for("FailedCreatePodSandBox of coredns-stuck", failed_events, timeout=120)
        message = events[0]["message"]
        assert events[0]["source"]["component"] == "kubelet" and events[0]["type"] == "Warning"
        assert 'failed to find plugin "calico" in path [/usr/lib/cni]' in message, message
        assert node_ready(kube_cluster)["status"] == "True"

        def creating():  # the kubelet writes the status on its own beat, the event may come first
            status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "coredns-stuck")["status"]
            waiting = (status.get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {})
            return waiting.get("reason") == "ContainerCreating" and status
        assert kube_cluster.wait_for("coredns-stuck ContainerCreating", creating, timeout=60)["phase"] == "Pending"
        result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                           "nodes": ["node1"]})["localhost"]
        assert not result["failed"], result
        found = [f for f in result["findings"] if f["check"] == "log.pod_sandbox_failed"]
        assert [f["subject"] for f in found] == ["node1/coredns-stuck"], result["findings"]

        def web_waits():  # the kubelet's condition, then its Event for web-stuck too
            status = kube_cluster.kubectl_json("-n", NS, "get", "pod", "web-stuck")["status"]
            cond = [c for c in status.get("conditions", []) if c["type"] == "PodReadyToStartContainers"]
            return cond and cond[0]["status"] == "False" and kube_cluster.kubectl_json(
                "-n", NS, "get", "events", "--field-selector",
                "involvedObject.name=web-stuck,reason=FailedCreatePodSandBox")["items"]
        kube_cluster.wait_for("web-stuck without its sandbox, and its event", web_waits, timeout=120)
        result = ansible.module("localhost", "node_network_status", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                                     "stuck_after": 0})["localhost"]
        assert not result["failed"], result
        sandbox = [f for f in result["findings"] if f["check"] == "node.pods_waiting_for_sandbox"]
        assert len(sandbox) == 1, result["findings"]
        evidence = sandbox[0]["evidence"]
        # the node is Ready (its CNI config is there, naming a plugin it lacks): nothing else says the system pod
        assert sorted(evidence["pods"]) == ["kube-system/coredns-stuck", NS + "/web-stuck"], evidence
        assert evidence["nodes"] == [{"name": "node1", "pods": 2}] and evidence["events_read"]
        assert sandbox[0]["severity"] == "critical"
        assert 'failed to find plugin "calico" in path [/usr/lib/cni]' in evidence["errors"][0]["error"]
        assert evidence["errors"][0]["pods"] == 2, evidence["errors"]  # one error, whatever the sandbox ids
        assert result["pending_pods"] == {"read": True, "waiting_for_sandbox": 2, "events_read": True}
        assert not [f for f in result["findings"] if f["check"] == "node.pods_waiting_for_network"]
    finally:
        agent.write_cni_config()
        kube_cluster.kubectl("-n", "kube-system", "delete", "pod", "coredns-stuck", "--wait=false", check=False)
        kube_cluster.kubectl("-n", NS, "delete", "pod", "web-stuck", "--wait=false", check=False)


def test_a_crash_looping_cni_agent_pod_with_its_real_last_log_line(agent, kube_cluster, ansible):
    """calico-node (a pod of the DaemonSet, placed by the test: the lab runs no scheduler) exits 1 after calico's
    last startup lines, each run: the kubelet's own CrashLoopBackOff, node_network_status's node.cni_pod_crashloop,
    and the last line of the previous run read through the API server from the kubelet."""
    # a DaemonSet that places nothing (the lab runs no scheduler): the pod below is bound to node1 by the test
    ds = kube_cluster.placeholder_daemonset("kube-system", "calico-node")
    calico = fixture_lines("calico-node-m4q8z", "node1")
    obj = agent_pod("calico-node-loop", {"k8s-app": "calico-node"}, "calico-node",
                    ["sh", "-c", 'printf "%s\\n" "$@"; exit 1', "sh"], calico[-2:])
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "calico-node",
                                           "uid": ds["metadata"]["uid"], "controller": False}]
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def looping():
        status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "calico-node-loop")["status"]
        main = (status.get("containerStatuses") or [{}])[0]
        waiting = main.get("state", {}).get("waiting", {})
        return waiting.get("reason") == "CrashLoopBackOff" and main["restartCount"] >= 1 and main
    main = kube_cluster.wait_for("calico-node-loop in CrashLoopBackOff", looping, timeout=120)
    assert main["lastState"]["terminated"]["exitCode"] == 1
    assert kube_cluster.kubectl("-n", "kube-system", "logs", "--previous", "calico-node-loop").stdout.splitlines() \
        == calico[-2:]

    # between two back-offs the container runs for an instant (no readiness probe: ready then): a read that falls
    # there sees no crash loop, as it would on a node; the module is read again until one falls in a back-off or in
    # the moment the container lies dead (terminated, exit code 1) before it
    def module_finds(module, args, check):
        result = ansible.module("localhost", module, dict(args, kubeconfig=str(kube_cluster.kubeconfig())))
        result = result["localhost"]
        assert not result["failed"], result
        found = [f for f in result["findings"] if f["check"] == check and f["subject"].endswith("/calico-node-loop")]
        return found
    loop = kube_cluster.wait_for("node.cni_pod_crashloop", lambda: module_finds(
        "node_network_status", {}, "node.cni_pod_crashloop"), timeout=90, interval=2)
    assert [f["subject"] for f in loop] == ["node1/calico-node-loop"]
    evidence = loop[0]["evidence"]
    assert evidence["waiting"] == "CrashLoopBackOff" or evidence["exit_code"] == 1, evidence
    assert evidence["restarts"] >= 1
    calico_found = kube_cluster.wait_for("calico's signature in calico-node-loop's log", lambda: module_finds(
        "kube_logs", {"nodes": ["node1"]}, "log.calico_network_unavailable_update_failed"), timeout=90, interval=2)
    # in CrashLoopBackOff the kubelet serves the last terminated run as the current log too (the stand-in's fixture
    # had the lines only in the previous one): the lines are counted once, under whichever read held them first
    origins = calico_found[0]["evidence"]["origins"]
    assert origins and set(origins) <= {"kube-system/calico-node-loop calico-node",
                                        "kube-system/calico-node-loop calico-node previous"}, origins
    assert "Unable to set NetworkUnavailable to False" in str(calico_found[0]["evidence"]["lines"])


# The agent's CLI as the test's image carries it: coreutils' timeout (Debian's, with the libraries it links: the
# module counts on coreutils' 124 when the window ends, where busybox's timeout exits 143), and a cilium-dbg that
# prints drops.jsonl (Go's encoding/json of the drops the monitor socket test sends, with the json tags of Cilium's
# DropNotifyVerbose: tests/cilium_agent/monitor/gen_drops.go) and then waits, as `cilium-dbg monitor` does.
MONITOR = Path(__file__).resolve().parents[1] / "cilium_agent" / "monitor"
CILIUM_IMAGE = "lab.k8snet/cilium-cli:1"
CILIUM_DBG = b"#!/bin/sh\ncat /usr/share/k8snet/drops.jsonl\nexec sleep 3600\n"


def test_cilium_agent_drops_execs_through_the_api_server_the_kubelet_and_containerd(agent, kube_cluster, ansible,
                                                                                    tmp_path):
    files, links = agent.busybox_layer_files()
    files.update({"usr/bin/timeout": ("/usr/bin/timeout", 0o755),
                  "lib/x86_64-linux-gnu/libc.so.6": ("/lib/x86_64-linux-gnu/libc.so.6", 0o755),
                  "lib64/ld-linux-x86-64.so.2": ("/lib64/ld-linux-x86-64.so.2", 0o755),
                  "usr/bin/cilium-dbg": (CILIUM_DBG, 0o755),
                  "usr/share/k8snet/drops.jsonl": (str(MONITOR / "drops.jsonl"), 0o644)})
    links.pop("usr/bin/timeout", None)
    agent.import_image(write_image(tmp_path / "cilium-cli.tar", CILIUM_IMAGE, layer(files, links), cmd=["sh"]))
    ds = kube_cluster.placeholder_daemonset("kube-system", "cilium")
    obj = agent_pod("cilium-real", {"k8s-app": "cilium"}, "cilium-agent", ["sleep", "3600"], [])
    obj["spec"]["containers"][0]["image"] = CILIUM_IMAGE
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "cilium",
                                           "uid": ds["metadata"]["uid"], "controller": False}]
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))
    running(kube_cluster, "cilium-real", namespace="kube-system")
    # the independent reader: kubectl exec, the runbook's own command
    proc = kube_cluster.kubectl("-n", "kube-system", "exec", "cilium-real", "-c", "cilium-agent", "--", "timeout", "2",
                                "cilium-dbg", "monitor", "--type", "drop", "-j", check=False)
    assert proc.returncode == 124, proc.stderr
    assert proc.stdout.encode() == (MONITOR / "drops.jsonl").read_bytes()
    events = [json.loads(line) for line in proc.stdout.splitlines()]

    result = ansible.module("localhost", "cilium_agent_drops", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                                "nodes": ["node1"], "seconds": 2})["localhost"]
    assert not result["failed"], result
    node1 = result["nodes"]["node1"]
    assert len(events) == 9
    assert (node1["status"], node1["exit_code"], node1["drops"]) == ("ok", 124, 9), node1
    assert node1["command"].endswith("timeout 2 cilium-dbg monitor --type drop -j"), node1
    flows = [f for f in result["findings"] if f["check"] == "cilium.dropped_flows"][0]
    assert "9 packets of 3 flows" in flows["summary"], flows
    assert flows["evidence"]["source"].startswith("kubectl exec kube-system/cilium-real -- timeout 2 cilium-dbg")
