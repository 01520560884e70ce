"""The cilium_maps repair's opt-in last step (cilium_maps_restart_agent): the runbook's "restart anetd" after a map
cleanup, against the lab's bpffs on node1 and the API stand-in (tests/kube_api) serving anetd's pods.  The
stand-in plays the DaemonSet controller: once the agent pod is deleted it adds a new ready one on the same node.
Independent readers: bpftool in node1's mount namespace, kubectl against the stand-in."""

from __future__ import annotations

import copy
import threading
import time

import pytest

from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import kubectl
from tests.lab.faults import bpf as lb
from tests.lab.faults import kube as kube_faults

AGENT, NEW_AGENT = "anetd-5kx8w", "anetd-r4t6z"


@pytest.fixture
def api(lab):
    objs = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "anetd.yaml")]))
    server = StandIn(objs, lab.workdir / "kube-api-maps-restart", lab.controller_ip).start()
    yield server
    server.stop()


@pytest.fixture
def maps(lab):
    lb.remove_bpf_maps(lab, "node1")
    yield lb.cilium_lb_maps(lab, "node1", services=4, orphans=12)
    lb.remove_bpf_maps(lab, "node1")


def agents(api):
    """{pod name: (node, uid)} of anetd's pods, as kubectl reads them."""
    items = kubectl(api.kubeconfig(), "get", "pods", "-n", "kube-system")["items"]
    return dict((p["metadata"]["name"], (p["spec"]["nodeName"], p["metadata"]["uid"])) for p in items)


def daemonset_controller(api, stop):
    """Once the agent pod is gone, start its successor on the same node (ready), as the DaemonSet would."""
    while not stop.is_set():
        if api.store.get("pods", "kube-system", AGENT) is None:
            time.sleep(1)  # a new pod is not ready at once
            old = next(o for o in load_yaml([FIXTURES / "anetd.yaml"]) if o["kind"] == "Pod")
            new = copy.deepcopy(old)
            new["metadata"]["name"] = NEW_AGENT
            new["metadata"].pop("uid", None)
            api.store.put(new)
            return
        time.sleep(0.2)


def run(ansible, api, check=False, **extra):
    extra = dict({"cilium_maps_cleanup": True, "cilium_maps_restart_agent": True,
                  "cilium_maps_kubeconfig": str(api.kubeconfig()), "cilium_maps_restart_wait": 30}, **extra)
    return ansible.playbook("playbooks/cilium_maps.yml", extra, check=check, limit="node1")


def result(play, name):
    [record] = [r for r in play.records if r["task"].endswith(name) and r["host"] == "node1"]
    return record


def test_dry_run_previews_then_the_cleanup_restarts_the_nodes_agent_once(lab, ansible, api, maps):
    before = agents(api)
    assert before[AGENT][0] == "node1"
    dry = run(ansible, api, check=True)
    assert dry.rc == 0, dry
    preview = result(dry, "Restart the agent, dry run first (its guards, and the pod it would delete)")["result"]
    assert "would delete the agent pod kube-system/%s on node1" % AGENT in preview["msg"]
    assert result(dry, "Restart the agent")["status"] == "skipped"
    assert agents(api) == before  # nothing deleted by the dry run
    assert lb.bpftool_count(lab, "node1", maps["backends"]) == maps["backend_entries"]

    stop = threading.Event()
    controller = threading.Thread(target=daemonset_controller, args=(api, stop), daemon=True)
    controller.start()
    try:
        real = run(ansible, api)
    finally:
        stop.set()
        controller.join(10)
    assert real.rc == 0, real
    assert lb.bpftool_count(lab, "node1", maps["backends"]) == maps["live_backends"]  # the cleanup, then
    after = agents(api)
    assert AGENT not in after and after[NEW_AGENT][0] == "node1"  # the one agent of node1 was restarted
    assert dict((k, v) for k, v in after.items() if k != NEW_AGENT) == dict(
        (k, v) for k, v in before.items() if k != AGENT)  # and no other pod
    facts = result(real, "Keep the restart in this host's findings and report")["result"]["ansible_facts"]
    [restarted] = [f for f in facts["cilium_maps_findings"] if f["check"] == "cilium.agent_restarted"]
    assert restarted["evidence"]["uid"] == before[AGENT][1]
    assert facts["cilium_maps_report"]["agent_restart"]["done"] is True
    assert result(real, "Wait until the node's new agent pod is ready")["status"] == "ok"

    again = run(ansible, api)  # nothing left to clean: no restart
    assert again.rc == 0, again
    assert result(again, "Restart the agent on this node (the runbook's last step, opt-in)")["status"] == "skipped"
    assert agents(api) == after


def test_no_agent_pod_on_the_node_fails_it_and_restarts_nothing(lab, ansible, api, maps):
    api.store.delete("pods", "kube-system", AGENT)
    before = agents(api)
    play = run(ansible, api)
    assert play.rc != 0
    failed = result(play, "Refuse the restart unless exactly one agent pod runs on this node")
    assert failed["status"] == "failed"
    assert "no agent pod of DaemonSet cilium or anetd on node node1; nothing was restarted" in failed["result"]["msg"]
    assert agents(api) == before
