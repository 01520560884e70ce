"""The pods of the whole cluster that wait for their sandbox (cni/sandboxes.py): what is kept of a Pending pod, the
kubelet's errors grouped, and one finding however many pods wait.

The kubelet messages are texts users pasted into public issues (each sourced where it is used): the grouping must
hold on the kubelet's and the CNIs' own words, not only on ours."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cni import sandboxes
from ansible_collections.k8snet.triage.plugins.module_utils.cni.node_network import parse_time

NOW = parse_time("2026-01-01T12:00:00Z")
CNI_NAMESPACES = {"kube-system", "calico-system"}

# flannel-io/flannel#2232 (2025-04-28), "(combined from similar events)" as kubectl describe showed it
FLANNEL_COMBINED = ('(combined from similar events): Failed to create pod sandbox: rpc error: code = Unknown desc = '
                    'failed to setup network for sandbox "c981dd6fab7e72250f444f4e41aaa1d9761c0be4f5e493b6a3dccc326c952ff3": '
                    'plugin type="flannel" failed (add): loadFlannelSubnetEnv failed: open /run/flannel/subnet.env: no '
                    'such file or directory')
# flannel-io/flannel#2253 (2025-06-25): the same error on another sandbox
FLANNEL = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox '
           '"3c05350cf5717b9bcf92a63ffafb7a3d27bd5ad1880de39272e72aa1661e637e": plugin type="flannel" failed (add): '
           'loadFlannelSubnetEnv failed: open /run/flannel/subnet.env: no such file or directory')
# kubermatic/dashboard#7816: Cilium's CNI plugin without its agent
CILIUM = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox '
          '"671a92300345bd0ed7f6ea920ff1b9f59aa4ae57bcdf62f379d6aaaff2757e42": plugin type="cilium-cni" failed (add): '
          'unable to connect to Cilium agent: failed to create cilium agent client after 30.000000 seconds timeout: '
          'Get "http://localhost/v1/config": dial unix /var/run/cilium/cilium.sock: connect: no such file or '
          'directory\nIs the agent running?')
# kubernetes/website#10377 (2018): dockershim's older words, the pod named twice in them
DOCKERSHIM = ('Failed create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox container '
              '"99e30671c80ab8fe5cedd54fb4edd2ce99ebc45ed120e912d2c7e51f2cab350a" network for pod "node1-6777d4468-d6tvq": '
              'NetworkPlugin cni failed to set up pod "node1-6777d4468-d6tvq_default" network: open '
              '/run/flannel/subnet.env: no such file or directory')
DOCKERSHIM_OTHER_POD = DOCKERSHIM.replace("99e30671c80ab8fe5cedd54fb4edd2ce99ebc45ed120e912d2c7e51f2cab350a",
                                          "0" * 64).replace("node1-6777d4468-d6tvq", "web-5f7c9d8b6-x2x4p")


def pod(name, namespace="shop", node="node1", phase="Pending", sandbox="False", since="2026-01-01T11:00:00Z",
        host_network=False, waiting="ContainerCreating", pod_ip=None):
    status = {"phase": phase, "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": waiting}}}],
              "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T10:00:00Z"}]}
    if sandbox is not None:
        status["conditions"].append({"type": "PodReadyToStartContainers", "status": sandbox,
                                     "lastTransitionTime": since})
    if pod_ip:
        status["podIP"] = pod_ip
    spec = {"containers": [{"name": "app"}], "hostNetwork": host_network}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-01-01T09:00:00Z"},
            "spec": spec, "status": status}


def event(name, message, namespace="shop", kind="Pod"):
    return {"involvedObject": {"kind": kind, "namespace": namespace, "name": name}, "message": message, "count": 3}


def kept(*pods, down=("node9",)):
    return [w for w in (sandboxes.waiting_pod(p, CNI_NAMESPACES, down) for p in pods) if w]


def test_a_pod_without_its_sandbox_is_kept_with_its_node_and_since():
    assert kept(pod("web-1")) == [{"ref": "shop/web-1", "node": "node1", "since": "2026-01-01T11:00:00Z"}]


def test_pods_that_do_not_wait_on_the_network_are_not_kept():
    assert kept(pod("pulling", sandbox="True"),            # sandbox up: pulling its image, a volume, ...
                pod("unscheduled", node=None),              # the scheduler's, not the CNI's
                pod("host", host_network=True),             # no sandbox network to set up
                pod("dns", namespace="kube-system", node="node9"),  # the node's network down: said by the node
                pod("done", phase="Running", sandbox="False")) == []


def test_a_system_pod_on_a_node_whose_network_is_up_is_kept():
    assert kept(pod("dns", namespace="kube-system"))[0]["ref"] == "kube-system/dns"


def test_a_kubelet_without_the_sandbox_condition_is_read_from_the_container_states():
    old = pod("old", sandbox=None)
    assert kept(old)[0]["since"] == "2026-01-01T10:00:00Z"  # PodScheduled, then
    assert kept(pod("pulling", sandbox=None, waiting="ErrImagePull"), pod("has-ip", sandbox=None, pod_ip="198.18.0.9")) == []


def test_the_same_error_on_other_sandboxes_and_pods_is_one_error():
    assert sandboxes.error_key(FLANNEL_COMBINED) == sandboxes.error_key(FLANNEL)
    assert sandboxes.error_key(DOCKERSHIM) == sandboxes.error_key(DOCKERSHIM_OTHER_POD)
    assert sandboxes.error_key(CILIUM) != sandboxes.error_key(FLANNEL)
    assert "/var/run/cilium/cilium.sock" in sandboxes.error_key(CILIUM)


def test_twenty_thousand_pods_are_one_finding_with_counts_and_the_first():
    pods = [pod("web-%05d" % i, namespace="ns-%03d" % (i % 400), node="node-%04d" % (i % 3000))
            for i in range(20000)]
    waiting = kept(*pods)
    events = [sandboxes.sandbox_event(event("web-%05d" % i, FLANNEL if i % 2 else FLANNEL_COMBINED,
                                            namespace="ns-%03d" % (i % 400))) for i in range(0, 20000, 7)]
    found = sandboxes.check_waiting(waiting, events, NOW, 300, parse_time)
    assert found["check"] == "node.pods_waiting_for_sandbox" and found["severity"] == "critical"
    evidence = found["evidence"]
    assert (evidence["count"], evidence["nodes_count"], evidence["namespaces_count"]) == (20000, 3000, 400)
    assert len(evidence["pods"]) <= 20 and len(evidence["nodes"]) == len(evidence["namespaces"]) == sandboxes.TOP
    assert evidence["errors_count"] == 1 and evidence["errors"][0]["pods"] == len(events)
    assert "20000 pods in 400 namespaces on 3000 nodes" in found["summary"]
    assert "loadFlannelSubnetEnv failed" in found["summary"] and found["subject"] == "20000 pods on 3000 nodes"
    assert evidence["oldest_seconds"] == 3600


def test_pods_waiting_less_than_stuck_after_are_not_said():
    young = kept(pod("web-1", since="2026-01-01T11:58:00Z"))
    assert sandboxes.check_waiting(young, [], NOW, 300, parse_time) is None
    assert sandboxes.check_waiting(young, [], NOW, 60, parse_time)["evidence"]["count"] == 1


def test_errors_are_ranked_by_pods_and_only_of_the_pods_that_wait():
    waiting = kept(pod("a"), pod("b"), pod("c", node="node2"))
    events = [sandboxes.sandbox_event(e) for e in (
        event("a", CILIUM), event("b", CILIUM), event("c", FLANNEL), event("gone", FLANNEL),
        event("n1", FLANNEL, kind="Node"))]
    evidence = sandboxes.check_waiting(waiting, [e for e in events if e], NOW, 300, parse_time)["evidence"]
    assert [(e["pods"], "cilium" in e["error"]) for e in evidence["errors"]] == [(2, True), (1, False)]
    assert evidence["nodes"] == [{"name": "node1", "pods": 2}, {"name": "node2", "pods": 1}]


def test_no_event_is_a_warning_that_says_so_and_agents_down_make_it_critical():
    waiting = kept(pod("a"))
    found = sandboxes.check_waiting(waiting, [], NOW, 300, parse_time)
    assert found["severity"] == "warning" and "no FailedCreatePodSandBox Event names them" in found["summary"]
    unread = sandboxes.check_waiting(waiting, None, NOW, 300, parse_time)
    assert unread["evidence"]["events_read"] is False
    down = sandboxes.check_waiting(waiting, [], NOW, 300, parse_time, agents_down=["node1", "node9"])
    assert down["severity"] == "critical" and down["evidence"]["nodes_with_cni_agent_down"] == ["node1"]
