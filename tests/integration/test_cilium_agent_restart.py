"""The runbook's "restart anetd", opt-in and targeted, against the API stand-in (tests/kube_api): one named
agent pod on one named node, dry run first, refused while another agent is not ready, the delete carrying
the pod's uid as a precondition.  Independent reader: kubectl against the stand-in."""

from __future__ import annotations

import copy

import pytest

from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import kubectl
from tests.lab.faults import kube as kube_faults


def objects(lab, unready_sibling=False):
    """cluster.yaml and anetd.yaml: anetd-5kx8w on node1, and a second agent anetd-q7r2m on node3 (ready, or not)."""
    objs = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "anetd.yaml")]))
    first = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == "anetd-5kx8w")
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "anetd-q7r2m"
    second["spec"]["nodeName"] = "node3"
    if unready_sibling:
        second["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:00:00Z"}]
        second["status"]["containerStatuses"][0].update(ready=False, restartCount=9,
                                                        state={"waiting": {"reason": "CrashLoopBackOff"}})
    return objs + [second]


@pytest.fixture()
def api(lab, request):
    server = StandIn(objects(lab, getattr(request, "param", False)), lab.workdir / "kube-api-restart",
                     lab.controller_ip).start()
    yield server
    server.stop()


def pods(kubeconfig):
    return sorted(p["metadata"]["name"] for p in kubectl(kubeconfig, "get", "pods", "-n", "kube-system")["items"])


def restart(ansible, api, check=False, **args):
    args = dict({"kubeconfig": str(api.kubeconfig()), "pod": "kube-system/anetd-5kx8w", "node": "node1"}, **args)
    return ansible.module("localhost", "cilium_agent_restart", args, check=check, diff=True)["localhost"]


def test_dry_run_then_the_restart_of_the_one_pod_named(lab, ansible, api):
    kubeconfig = api.kubeconfig()
    assert pods(kubeconfig) == ["anetd-5kx8w", "anetd-q7r2m"]
    uid = kubectl(kubeconfig, "get", "pod", "-n", "kube-system", "anetd-5kx8w")["metadata"]["uid"]
    dry = restart(ansible, api, check=True)
    assert not dry["failed"] and dry["changed"], dry
    assert "would delete the agent pod kube-system/anetd-5kx8w on node1 (uid %s)" % uid in dry["msg"]
    assert '"deleted": true' in dry["diff"]["after"] and uid in dry["diff"]["before"]
    assert pods(kubeconfig) == ["anetd-5kx8w", "anetd-q7r2m"]  # nothing deleted in check mode
    done = restart(ansible, api)
    assert not done["failed"] and done["changed"], done
    assert pods(kubeconfig) == ["anetd-q7r2m"]  # only the one named
    [found] = done["findings"]
    assert (found["check"], found["subject"]) == ("cilium.agent_restarted", "node1 cilium-agent")
    assert found["evidence"]["uid"] == uid and found["evidence"]["deletion"]
    # the same name again: nothing is deleted twice, and the error says why
    again = restart(ansible, api)
    assert again["failed"] and "there is no pod kube-system/anetd-5kx8w (already restarted?" in again["msg"]
    assert pods(kubeconfig) == ["anetd-q7r2m"]


@pytest.mark.parametrize("api", [True], indirect=True)
def test_refused_while_another_agent_is_not_ready(lab, ansible, api):
    kubeconfig = api.kubeconfig()
    sibling = kubectl(kubeconfig, "get", "pod", "-n", "kube-system", "anetd-q7r2m")
    assert [c["status"] for c in sibling["status"]["conditions"] if c["type"] == "Ready"] == ["False"]
    for check in (True, False):
        result = restart(ansible, api, check=check)
        assert result["failed"] and not result["changed"], result
        assert result["msg"].startswith("refused: 1 other agent pod of DaemonSet anetd is not ready "
                                        "(kube-system/anetd-q7r2m on node3 (Running))"), result["msg"]
        assert result["unready"] == ["kube-system/anetd-q7r2m"]
    assert pods(kubeconfig) == ["anetd-5kx8w", "anetd-q7r2m"]


def test_the_guards_name_the_problem_and_change_nothing(lab, ansible, api):
    kubeconfig = api.kubeconfig()
    wrong_node = restart(ansible, api, node="node2")
    assert wrong_node["failed"] and "runs on node1, not on node2" in wrong_node["msg"]
    other = copy.deepcopy(api.store.get("pods", "kube-system", "anetd-5kx8w"))
    other["metadata"].update(name="metrics-server-7c9d6b8f5-2xq9w", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "metrics-server-7c9d6b8f5", "uid": "1", "controller": True}])
    other["metadata"].pop("uid", None)
    api.store.put(other)
    not_agent = restart(ansible, api, pod="kube-system/metrics-server-7c9d6b8f5-2xq9w")
    assert not_agent["failed"] and ("pod kube-system/metrics-server-7c9d6b8f5-2xq9w is not a Cilium agent pod: it "
                                    "belongs to no DaemonSet") in not_agent["msg"], not_agent["msg"]
    absent = restart(ansible, api, pod="kube-system/anetd-zzzzz")
    assert absent["failed"] and "there is no pod kube-system/anetd-zzzzz" in absent["msg"]
    bad = restart(ansible, api, pod="../anetd-5kx8w")
    assert bad["failed"] and "pod" in bad["msg"]
    assert pods(kubeconfig) == ["anetd-5kx8w", "anetd-q7r2m", "metrics-server-7c9d6b8f5-2xq9w"]


def test_a_pod_replaced_under_the_same_name_is_not_deleted(lab, ansible, api):
    """Between the read and the delete the name came to hold another pod: the uid precondition makes the API
    server refuse (409), nothing is deleted."""
    key = ("pods", "kube-system", "anetd-5kx8w")
    api.concurrent_writes.add(key)
    # every GET of the pod is followed by "another client" replacing it: a new uid
    real_put = api.store.put

    def put(obj):
        if (obj.get("kind"), obj["metadata"].get("name")) == ("Pod", "anetd-5kx8w"):
            obj = copy.deepcopy(obj)
            obj["metadata"]["uid"] = "00000000-0000-4000-8000-00000000beef"
        return real_put(obj)
    api.store.put = put
    try:
        result = restart(ansible, api)
    finally:
        api.store.put = real_put
        api.concurrent_writes.discard(key)
    assert result["failed"] and not result.get("changed"), result
    assert "Precondition failed: UID in precondition" in result["msg"], result["msg"]
    assert pods(api.kubeconfig()) == ["anetd-5kx8w", "anetd-q7r2m"]
