"""The runbook's "restart anetd", opt-in and targeted, against the real control plane (tests/lab/cluster.py): one
named agent pod on one named node, dry run first, refused while another agent is not ready, the delete carrying the
pod's uid as a precondition.  Independent reader: kubectl from the same release.

anetd.yaml's objects are loaded through the real API server (tests/lab/cluster_objects.py), each test in a namespace
of its own: the agent pods bound to their nodes, their status written as their kubelet's, owned by a real DaemonSet
anetd that places nothing (there is no scheduler). The real API server deletes a pod gracefully: it stays, with a
deletionTimestamp, until its kubelet confirms that the containers stopped; the lab plays that confirmation (a DELETE
with gracePeriodSeconds 0, what a kubelet sends), as test_f5_real_cluster.py does."""

from __future__ import annotations

import copy
import itertools

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.lab.cluster_objects import RealApi

AGENT = "anetd-5kx8w"
NAMESPACES = itertools.count(1)


def objects(namespace, unready_sibling=False):
    """anetd.yaml (its ConfigMap, anetd-5kx8w on node1) and a second agent anetd-q7r2m on node3 (ready, or not),
    in ``namespace``."""
    objs = load_yaml([FIXTURES / "anetd.yaml"])
    first = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == AGENT)
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "anetd-q7r2m"
    second["spec"]["nodeName"] = "node3"
    if unready_sibling:
        second["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                           "lastTransitionTime": "2026-01-01T11:00:00Z"}]
        second["status"]["containerStatuses"][0].update(ready=False, restartCount=9,
                                                        state={"waiting": {"reason": "CrashLoopBackOff"}})
    objs.append(second)
    for obj in objs:
        obj["metadata"]["namespace"] = namespace
    return objs


@pytest.fixture(scope="module")
def real(kube_cluster):
    return RealApi(kube_cluster)


@pytest.fixture()
def api(real, request):
    """The module's RealApi with this test's agents loaded; ``api.ns`` their namespace."""
    real.ns = "anetd-%d" % next(NAMESPACES)
    real.loader.load(objects(real.ns, getattr(request, "param", False)))
    return real


def pod_path(namespace, name):
    return "/api/v1/namespaces/%s/pods/%s" % (namespace, name)


def pods(kube_cluster, namespace):
    """[(name, terminating)] of the namespace's pods, as kubectl reads them."""
    items = kube_cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
    return sorted((p["metadata"]["name"], bool(p["metadata"].get("deletionTimestamp"))) for p in items)


def kubelet_confirms_deletion(kube_cluster, namespace, name):
    """The node's kubelet, once the containers stopped: the final DELETE (grace period 0); waits until it is gone."""
    uid = kube_cluster.request("GET", pod_path(namespace, name))["metadata"]["uid"]
    confirm = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
    kube_cluster.request("DELETE", pod_path(namespace, name), confirm)
    kube_cluster.wait_gone("pod %s/%s" % (namespace, name), pod_path(namespace, name))


def restart(ansible, api, check=False, **args):
    args = dict({"kubeconfig": str(api.kubeconfig()), "pod": "%s/%s" % (api.ns, AGENT), "node": "node1"}, **args)
    return ansible.module("localhost", "cilium_agent_restart", args, check=check, diff=True)["localhost"]


def test_dry_run_then_the_restart_of_the_one_pod_named(lab, ansible, api, kube_cluster):
    ns = api.ns
    assert pods(kube_cluster, ns) == [(AGENT, False), ("anetd-q7r2m", False)]
    uid = kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]["uid"]
    dry = restart(ansible, api, check=True)
    assert not dry["failed"] and dry["changed"], dry
    assert "would delete the agent pod %s/%s on node1 (uid %s)" % (ns, AGENT, uid) in dry["msg"]
    assert '"deleted": true' in dry["diff"]["after"] and uid in dry["diff"]["before"]
    assert pods(kube_cluster, ns) == [(AGENT, False), ("anetd-q7r2m", False)]  # nothing deleted in check mode
    done = restart(ansible, api)
    assert not done["failed"] and done["changed"], done
    # the real API server deletes gracefully: the pod is Terminating until its kubelet confirms; only the one named
    terminating = kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]
    assert pods(kube_cluster, ns) == [(AGENT, True), ("anetd-q7r2m", False)]
    [found] = done["findings"]
    assert (found["check"], found["subject"]) == ("cilium.agent_restarted", "node1 cilium-agent")
    assert found["evidence"]["uid"] == uid and found["evidence"]["deletion"] == terminating["deletionTimestamp"]
    # the same name again while it terminates: refused, not a second restart
    again = restart(ansible, api)
    assert again["failed"] and not again["changed"], again
    assert "is already being deleted (deletionTimestamp %s" % terminating["deletionTimestamp"] in again["msg"]
    assert kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]["uid"] == uid
    # its kubelet confirms; the same name again: nothing is deleted twice, and the error says why
    kubelet_confirms_deletion(kube_cluster, ns, AGENT)
    again = restart(ansible, api)
    assert again["failed"] and "there is no pod %s/%s (already restarted?" % (ns, AGENT) in again["msg"]
    assert pods(kube_cluster, ns) == [("anetd-q7r2m", False)]


@pytest.mark.parametrize("api", [True], indirect=True)
def test_refused_while_another_agent_is_not_ready(lab, ansible, api, kube_cluster):
    ns = api.ns
    sibling = kube_cluster.kubectl_json("get", "pod", "-n", ns, "anetd-q7r2m")
    assert [c["status"] for c in sibling["status"]["conditions"] if c["type"] == "Ready"] == ["False"]
    for check in (True, False):
        result = restart(ansible, api, check=check)
        assert result["failed"] and not result["changed"], result
        assert result["msg"].startswith("refused: 1 other agent pod of DaemonSet anetd is not ready "
                                        "(%s/anetd-q7r2m on node3 (Running))" % ns), result["msg"]
        assert result["unready"] == ["%s/anetd-q7r2m" % ns]
    assert pods(kube_cluster, ns) == [(AGENT, False), ("anetd-q7r2m", False)]


def test_the_guards_name_the_problem_and_change_nothing(lab, ansible, api, kube_cluster):
    ns = api.ns
    wrong_node = restart(ansible, api, node="node2")
    assert wrong_node["failed"] and "runs on node1, not on node2" in wrong_node["msg"]
    # a pod of a ReplicaSet (a real one, which places nothing) on the same node
    other = copy.deepcopy(next(o for o in objects(ns) if o["kind"] == "Pod" and o["metadata"]["name"] == AGENT))
    other["metadata"].update(name="metrics-server-7c9d6b8f5-2xq9w", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "metrics-server-7c9d6b8f5", "uid": "1",
         "controller": True}])
    api.loader.load([other])
    owners = kube_cluster.kubectl_json("get", "pod", "-n", ns, "metrics-server-7c9d6b8f5-2xq9w")["metadata"]
    assert [o["kind"] for o in owners["ownerReferences"]] == ["ReplicaSet"]
    not_agent = restart(ansible, api, pod="%s/metrics-server-7c9d6b8f5-2xq9w" % ns)
    assert not_agent["failed"] and ("pod %s/metrics-server-7c9d6b8f5-2xq9w is not a Cilium agent pod: it "
                                    "belongs to no DaemonSet" % ns) in not_agent["msg"], not_agent["msg"]
    absent = restart(ansible, api, pod="%s/anetd-zzzzz" % ns)
    assert absent["failed"] and "there is no pod %s/anetd-zzzzz" % ns in absent["msg"]
    bad = restart(ansible, api, pod="../anetd-5kx8w")
    assert bad["failed"] and "pod" in bad["msg"]
    assert pods(kube_cluster, ns) == [(AGENT, False), ("anetd-q7r2m", False),
                                      ("metrics-server-7c9d6b8f5-2xq9w", False)]


def test_a_pod_replaced_under_the_same_name_is_not_deleted(api, kube_cluster):
    """Between the read and the delete the name came to hold another pod (its DaemonSet's, after a kubelet's force
    delete): the uid precondition makes the real API server refuse (409), nothing is deleted. The module's code runs
    in this process (as test_real_cluster.py's concurrent writer), the replacement made right after its read."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.k8snet.triage.plugins.module_utils.cilium import restart as cilium_restart
    from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError

    ns = api.ns
    first = kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]["uid"]
    replaced = []

    class ReplacedAfterRead(kube_client.Kube):
        def get(self, plural, name, *args, **kw):
            got = super().get(plural, name, *args, **kw)
            if (plural, name) == ("pods", AGENT) and not replaced:
                kube_cluster.request("DELETE", pod_path(ns, AGENT), {"apiVersion": "v1", "kind": "DeleteOptions",
                                                                     "gracePeriodSeconds": 0})
                pod = next(o for o in objects(ns) if o["kind"] == "Pod" and o["metadata"]["name"] == AGENT)
                kube_cluster.wait_for("the old pod gone", lambda: pods(kube_cluster, ns)[0][0] != AGENT, timeout=60)
                api.loader.load([pod])
                replaced.append(kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]["uid"])
            return got

    params = {"kubeconfig": str(api.kubeconfig()), "pod": "%s/%s" % (ns, AGENT), "node": "node1"}
    with pytest.raises(ChangeError) as refused:
        cilium_restart.restart(params, ReplacedAfterRead)
    assert replaced and replaced[0] != first
    message = str(refused.value)
    # the real API server's words (the stand-in said "Precondition failed: UID in precondition: ...")
    assert "(409 Conflict)" in message and "the UID in the precondition (%s) does not match the UID in record (%s)" % (
        first, replaced[0]) in message, message
    now = kube_cluster.kubectl_json("get", "pod", "-n", ns, AGENT)["metadata"]
    assert now["uid"] == replaced[0] and not now.get("deletionTimestamp")
    assert pods(kube_cluster, ns) == [(AGENT, False), ("anetd-q7r2m", False)]
