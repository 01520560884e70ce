"""The IBM Cloud cycle against the API stand-in: calico-node crash-loops on node2 (NetworkUnavailable)
with `Failed to set NetworkUnavailable ... Client.Timeout exceeded` in its previous log, and the admission
webhook policy-guard (failurePolicy Fail on pods and nodes/status) has its only pod Pending on node2.
One run of the cni scenario names the cycle; the log lines go under the findings they explain.
Independent reader: kubectl against the stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import checks, kubectl
from tests.kube_api.store import load_logs, shift_to_now
from tests.lab.faults import kube as kube_faults

LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"


def stand_in(lab, fixture, label):
    """The stand-in with cluster.yaml, cni.yaml, events.yaml, one webhooks fixture and calico's logs, moved to now."""
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in (
        "cluster.yaml", "cni.yaml", "events.yaml", fixture)]))
    objects, logs = shift_to_now(objects, load_logs([LOGS], objects))
    return StandIn(objects, lab.workdir / label, lab.controller_ip, logs=logs).start()


@pytest.fixture(scope="module")
def api(lab):
    server = stand_in(lab, "webhooks.yaml", "kube-api-webhooks")
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
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in run.results(task="Keep the findings of this host"))
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


def _policies(kubeconfig):
    """(failurePolicy of every webhook, the restore annotation) as kubectl reads them."""
    out = {}
    for name in ("policy-guard", "tenant-quota"):
        obj = kubectl(kubeconfig, "get", "validatingwebhookconfiguration", name)
        for hook in obj["webhooks"]:
            out[hook["name"]] = hook["failurePolicy"]
        if name == "policy-guard":
            record = (obj["metadata"].get("annotations") or {}).get("k8snet.triage/failure-policy-restore")
    return out, record


def test_the_repair_relaxes_only_the_named_webhook_and_restore_puts_it_back(lab, ansible, api):
    kubeconfig = str(api.kubeconfig())
    args = {"kubeconfig": kubeconfig, "configuration": "policy-guard", "webhook": "validate.policy-guard.example.com"}
    start = _policies(kubeconfig)
    assert start == ({"validate.policy-guard.example.com": "Fail", "audit.policy-guard.example.com": "Ignore",
                      "pods.tenant-quota.example.com": "Fail"}, None)
    version = kubectl(kubeconfig, "get", "validatingwebhookconfiguration", "policy-guard")["metadata"]["resourceVersion"]

    # check mode: the diff, nothing changed
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, state="relaxed"), check=True, diff=True)
    result = result["localhost"]
    assert result["changed"] and not result["failed"] and result["failure_policy"] == "Ignore"
    assert '"failurePolicy": "Fail"' in result["diff"]["before"] and '"failurePolicy": "Ignore"' in result["diff"]["after"]
    assert _policies(kubeconfig) == start
    assert kubectl(kubeconfig, "get", "validatingwebhookconfiguration", "policy-guard")["metadata"][
        "resourceVersion"] == version

    # for real: only that webhook changes, the previous value is recorded
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, state="relaxed"))["localhost"]
    assert result["changed"] and result["previous"] == "Fail"
    policies, record = _policies(kubeconfig)
    assert policies == dict(start[0], **{"validate.policy-guard.example.com": "Ignore"})
    assert record == '{"validate.policy-guard.example.com": "Fail"}'
    patches = [r for r in api.requests if r["method"] == "PATCH"]
    assert [r["path"] for r in patches] == [
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/policy-guard"]
    # again: nothing to do; and the cycle is no longer closed
    again = ansible.module("localhost", "webhook_failure_policy", dict(args, state="relaxed"))["localhost"]
    assert not again["changed"] and len([r for r in api.requests if r["method"] == "PATCH"]) == 1
    cycle = ansible.module("localhost", "webhook_deadlock", {"kubeconfig": kubeconfig})["localhost"]
    assert checks(cycle["findings"]) == [("webhook.no_cni_deadlock", "cluster")]

    # restore: the recorded value comes back, the record goes; twice is a no-op
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, state="restored"), diff=True)["localhost"]
    assert result["changed"] and result["failure_policy"] == "Fail"
    assert _policies(kubeconfig) == start
    again = ansible.module("localhost", "webhook_failure_policy", dict(args, state="restored"))["localhost"]
    assert not again["changed"] and "nothing to restore" in again["msg"]


def test_the_repair_refuses_what_it_cannot_do_and_changes_nothing(lab, ansible, api):
    kubeconfig = str(api.kubeconfig())
    start = _policies(kubeconfig)
    args = {"kubeconfig": kubeconfig, "configuration": "policy-guard", "state": "relaxed"}
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, webhook="nope.example.com"))["localhost"]
    assert result["failed"] and result["msg"].startswith("ValidatingWebhookConfiguration policy-guard has no webhook "
                                                         "nope.example.com (it has: validate.policy-guard.example.com")
    absent = dict(args, configuration="absent", webhook="x.example.com")
    result = ansible.module("localhost", "webhook_failure_policy", absent)["localhost"]
    assert result["failed"] and "there is no ValidatingWebhookConfiguration named absent" in result["msg"]
    # another client rewrites the object between our read and our patch: 409, nothing changed
    api.concurrent_writes.add(("validatingwebhookconfigurations", None, "policy-guard"))
    try:
        result = ansible.module("localhost", "webhook_failure_policy",
                                dict(args, webhook="validate.policy-guard.example.com"))["localhost"]
    finally:
        api.concurrent_writes.clear()
    assert result["failed"] and "409 Conflict" in result["msg"]
    assert _policies(kubeconfig) == start


# ------------------------------------------------------------------ the runbook's own case: through the VPN pod
TUNNEL_HOOK = "webhook:sysdig-admission-controller-webhook/audit.secure.sysdig.com"


@pytest.fixture(scope="module")
def tunnel_api(lab):
    server = stand_in(lab, "webhooks_tunnel.yaml", "kube-api-tunnel")
    yield server
    server.stop()


def test_the_runbook_cycle_through_the_vpn_pod(lab, ansible, tunnel_api):
    """The IBM runbook as it happened: the webhook's pod is healthy on node1, the VPN client pod is Pending on
    node2 where calico-node crash-loops.  One run of the cni scenario names the cycle through the VPN pod and the
    pod waiting on node2; calico's log line is evidence under the cycle."""
    kubeconfig = tunnel_api.kubeconfig()
    # independent reader: each link as kubectl sees it
    pods = {p["metadata"]["name"]: p for p in kubectl(kubeconfig, "get", "pods", "-A")["items"]}
    hook_pod = pods["sysdig-admission-controller-webhook-5c9d8f7b6-j4wzp"]
    assert (hook_pod["status"]["phase"], hook_pod["spec"]["nodeName"]) == ("Running", "node1")
    [vpn] = kubectl(kubeconfig, "get", "pods", "-n", "kube-system", "-l", "app=vpn")["items"]
    assert (vpn["status"]["phase"], vpn["spec"]["nodeName"]) == ("Pending", "node2")
    slices = kubectl(kubeconfig, "get", "endpointslices", "-n", "sysdig-admission-controller")["items"]
    assert [[e["nodeName"] for e in s["endpoints"] if e["conditions"]["ready"]] for s in slices] == [["node1"]]

    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig)})
    assert run.rc == 0, run
    [hooks] = run.results(action="webhook_deadlock")
    found = hooks["result"]["findings"]
    assert checks(found) == [("webhook.cni_deadlock", TUNNEL_HOOK)]
    assert found[0]["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]
    assert found[0]["evidence"]["nodes"] == ["node2"] and found[0]["evidence"]["cni_pods"] == ["kube-system/calico-node-m4q8z"]
    assert hooks["result"]["webhooks"][0]["via_tunnel"] is True
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in run.results(task="Keep the findings of this host"))
    assert ("webhook.cni_deadlock", TUNNEL_HOOK) in checks(facts["node1"]["cni_fleet_findings"])
    assert ("node.pods_waiting_for_network", "node2") in checks(facts["node2"]["cni_findings"])
    # with the tunnel model switched off (a cluster whose API server reaches pods directly) the healthy webhook clears it
    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig), "cni_tunnel_pods": "[]"})
    assert run.rc == 0, run
    assert checks(run.results(action="webhook_deadlock")[0]["result"]["findings"]) == [
        ("webhook.no_cni_deadlock", "cluster")]


def test_triage_names_the_cycle_through_the_vpn_pod(lab, ansible, tunnel_api, tmp_path):
    out = tmp_path / "report"
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_kubeconfig": str(tunnel_api.kubeconfig()), "triage_scenarios": ["cni", "logs"],
        "report_output_dir": str(out), "report_fail_on_critical": False})
    assert run.rc == 0, run
    report = json.loads((out / "triage-report.json").read_text())
    [cycle] = [f for f in report["findings"] if f["check"] == "webhook.cni_deadlock"]
    assert cycle["subject"] == TUNNEL_HOOK and cycle["severity"] == "critical"
    assert cycle["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]
    # calico's own line is evidence under the cycle, not a finding beside it
    lines = [line["text"] for group in cycle["evidence"].get("logs", []) for line in group["lines"]]
    assert any("Failed to set NetworkUnavailable" in text for text in lines), cycle["evidence"].keys()
    # and so is the API server's refusal, from the ReplicaSet controller's FailedCreate event
    assert any('failed calling webhook "audit.secure.sysdig.com"' in text for text in lines), lines
    assert "log.webhook_call_failed" not in [f["check"] for f in report["findings"]]
    assert ("node.pods_waiting_for_network", "node2") in checks(report["findings"])
    html = (out / "triage-report.html").read_text()
    assert "vpn-6b8f9d7c5-x2k4n" in html and "webhook.cni_deadlock" in html
