"""The IBM Cloud cycle against the API stand-in: calico-node crash-loops on node2 (NetworkUnavailable)
with `Failed to set NetworkUnavailable ... Client.Timeout exceeded` in its previous log, and the admission
webhook policy-guard (failurePolicy Fail on pods and nodes/status) has its only pod Pending on node2.
One run of the cni scenario names the cycle; the log lines go under the findings they explain.
Independent reader: kubectl against the stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import checks, kubectl
from tests.kube_api.store import load_logs, shift_to_now
from tests.lab.faults import kube as kube_faults

LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"


@pytest.fixture(scope="module")
def api(lab):
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in (
        "cluster.yaml", "cni.yaml", "events.yaml", "webhooks.yaml")]))
    objects, logs = shift_to_now(objects, load_logs([LOGS], objects))
    server = StandIn(objects, lab.workdir / "kube-api-webhooks", lab.controller_ip, logs=logs).start()
    yield server
    server.stop()


def test_one_run_of_the_cni_scenario_names_the_cycle(lab, ansible, api):
    kubeconfig = api.kubeconfig()
    # independent reader: what kubectl sees of each link
    hook = kubectl(kubeconfig, "get", "validatingwebhookconfiguration", "policy-guard")["webhooks"][0]
    assert hook["failurePolicy"] == "Fail" and hook["rules"][0]["resources"] == ["pods", "nodes/status"]
    slices = kubectl(kubeconfig, "get", "endpointslices", "-n", "policy-guard")["items"]
    assert [s.get("endpoints") or [] for s in slices] == [[]]
    pod = kubectl(kubeconfig, "get", "pod", "-n", "policy-guard", "policy-guard-6d8f7b9c4-tq5lw")
    assert (pod["status"]["phase"], pod["spec"]["nodeName"]) == ("Pending", "node2")
    node = kubectl(kubeconfig, "get", "node", "node2")
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "NetworkUnavailable"] == ["True"]

    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig)})
    assert run.rc == 0, run
    hooks = run.results(action="webhook_deadlock")
    assert len(hooks) == 1  # once, on the controller
    found = hooks[0]["result"]["findings"]
    assert checks(found) == [("webhook.cni_deadlock", "webhook:policy-guard/validate.policy-guard.example.com")]
    assert found[0]["severity"] == "critical"
    assert found[0]["evidence"]["nodes"] == ["node2"]
    assert found[0]["evidence"]["cni_pods"] == ["kube-system/calico-node-m4q8z"]
    assert found[0]["evidence"]["backend_pods"] == ["policy-guard-6d8f7b9c4-tq5lw"]
    # a fleet finding, published once; each node keeps its own findings
    facts = {r["host"]: r["result"]["ansible_facts"] for r in run.results(action="set_fact")}
    assert ("webhook.cni_deadlock", "webhook:policy-guard/validate.policy-guard.example.com") in checks(
        facts["node1"]["cni_fleet_findings"])
    assert "webhook.cni_deadlock" not in [f["check"] for f in facts["node2"]["cni_findings"]]


def test_the_log_lines_go_under_the_findings_they_explain(lab, ansible, api):
    kubeconfig = str(api.kubeconfig())
    logs = ansible.module("localhost", "kube_logs", {"kubeconfig": kubeconfig, "nodes": ["node2"]})["localhost"]
    cni = ansible.module("localhost", "node_network_status", {"kubeconfig": kubeconfig})["localhost"]
    cycle = ansible.module("localhost", "webhook_deadlock", {"kubeconfig": kubeconfig})["localhost"]
    playbook = lab.workdir / "log_evidence.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Join\n      ansible.builtin.set_fact:\n"
        "        joined: \"{{ findings | k8snet.triage.log_evidence(matches) }}\"\n")
    findings = cni["findings"] + cycle["findings"] + logs["findings"]
    run = ansible.playbook(str(playbook), extra_vars={"findings": findings, "matches": logs["matches"]})
    assert run.rc == 0, run
    joined = run.results(action="set_fact")[0]["result"]["ansible_facts"]["joined"]
    by = dict(((f["check"], f["subject"]), f) for f in joined)
    for key in (("node.network_unavailable", "node2"), ("node.cni_pod_crashloop", "node2/calico-node-m4q8z"),
                ("webhook.cni_deadlock", "webhook:policy-guard/validate.policy-guard.example.com")):
        lines = by[key]["evidence"]["logs"][0]["lines"]
        assert "Failed to set NetworkUnavailable" in lines[0]["text"] and lines[0]["time"], key
    # the calico line now sits under those findings, not beside them
    assert ("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z") not in by
