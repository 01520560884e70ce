"""The IBM Cloud cycle on the real control plane (tests/lab/cluster.py, the fixtures loaded through the real API
server by tests/lab/cluster_objects.py): calico-node crash-loops on node2 (NetworkUnavailable), and the admission
webhook policy-guard (failurePolicy Fail on pods and nodes/status) has its only pod Pending on node2, so its Service
has no ready endpoint. The real API server refuses, in its own words, the pods and node status updates the webhook
covers; one run of the cni scenario names the cycle; the repair relaxes only that webhook, and restore puts it back
(a writer in between gets the API server's own 409). Independent reader: kubectl from the same release.

calico-node-m4q8z is a real container on a real kubelet and containerd on node2 (tests/lab/node_agent.py), made
before the webhooks: it prints calico's startup.go lines as tests/kube_api/logs/ibm_cycle.yaml holds them and exits 1,
the kubelet's own CrashLoopBackOff; kube_logs reads its previous log through the API server -> kubelet path. What the
real components do under the cycle: the webhook's rule names "pods" and "nodes/status", so the kubelet's node status
patches are refused in the webhook's name ("Error updating node status, will retry ... failed calling webhook"), while
its pod status writes (the pods/status subresource, which the rule does not name) and its Lease pass: the pod's
restarts keep counting and the node is not marked unreachable. The runbook's VPN tests stop that kubelet first (their
pod on node2 stays Pending as the fixture has it)."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError

import yaml

from tests.kube_api import FIXTURES, load_yaml
from tests.kube_api.helpers import checks
from tests.kube_api.store import shift_to_now
from tests.lab.cluster_objects import RealApi
from tests.lab.core import LabError
from tests.lab.node_agent import BUSYBOX_IMAGE, NodeAgent

LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"
FILES = ("cluster.yaml", "cni.yaml", "events.yaml")
HOOK = "validate.policy-guard.example.com"
SUBJECT = "webhook:policy-guard/" + HOOK


def fresh(*names):
    """The fixture files' objects, their Events moved to just before now (readers bound events by age)."""
    return shift_to_now(load_yaml([FIXTURES / n for n in names]), {})[0]


class Admitting(http.server.BaseHTTPRequestHandler):
    """An admission webhook that admits everything, and counts what it reviewed."""
    reviewed = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Admitting.reviewed.append(review["request"]["resource"]["resource"])
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": {"uid": review["request"]["uid"], "allowed": True}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def injector(lab, kube_cluster, tmp_path_factory):
    """The fixture's external-injector webhook (a URL outside the cluster, failurePolicy Fail) as a server that
    answers on the controller's lab address: the stand-in never called it; the real API server does, and a URL
    it cannot reach would refuse every pod in the injector's own name, not the cycle's."""
    work = tmp_path_factory.mktemp("injector")
    cert, key = kube_cluster.ca.issue("injector", addresses=[lab.controller_ip])
    (work / "tls.crt").write_bytes(cert)
    (work / "tls.key").write_bytes(key)
    server = http.server.ThreadingHTTPServer((lab.controller_ip, 0), Admitting)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(work / "tls.crt", work / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "https://%s:%d/mutate" % (lab.controller_ip, server.server_address[1])
    server.shutdown()
    server.server_close()


# calico-node's lines as ibm_cycle.yaml holds them (calico's startup.go, cited there), printed by a real container on
# node2 that exits 1 after each run: the kubelet's own crash loop, its previous log the lines.
CRASH = 'printf "%s\\n" "$@"; exit 1'


def calico_node(fixture_pod, logs):
    """The fixture's calico-node-m4q8z (its name, labels, owner DaemonSet, node, hostNetwork) as a real container;
    its status is the kubelet's."""
    item = [i for i in logs if i["pod"] == "calico-node-m4q8z"][0]
    spec = dict(fixture_pod["spec"], terminationGracePeriodSeconds=1, automountServiceAccountToken=False,
                containers=[{"name": "calico-node", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                             "command": ["sh", "-c", CRASH, "sh"],
                             "args": [text for _stamp, text in item["lines"]]}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": fixture_pod["metadata"], "spec": spec}


@pytest.fixture(scope="module")
def node2(kube_cluster):
    """A real kubelet and containerd on node2 (tests/lab/node_agent.py), started by ``api``."""
    agent = NodeAgent(kube_cluster, "node2")
    yield agent
    agent.stop()


def crash_looping(kube_cluster):
    status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "calico-node-m4q8z")["status"]
    main = (status.get("containerStatuses") or [{}])[0]
    waiting = main.get("state", {}).get("waiting", {})
    return main.get("restartCount", 0) >= 2 and waiting.get("reason") == "CrashLoopBackOff" and main


@pytest.fixture(scope="module")
def api(lab, kube_cluster, injector, node2):
    """The fixtures on the real API server, calico-node-m4q8z a real crash-looping container on node2's real
    kubelet; the webhook configurations are made last (they refuse pods at once)."""
    objects = fresh(*FILES, "webhooks.yaml")
    for obj in objects:
        if obj["kind"] == "MutatingWebhookConfiguration" and obj["metadata"]["name"] == "external-injector":
            obj["webhooks"][0]["clientConfig"] = {"url": injector,
                                                  "caBundle": base64.b64encode(kube_cluster.ca.pem).decode()}
    hooks = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    real = RealApi(kube_cluster)
    calico = [o for o in objects if o["metadata"]["name"] == "calico-node-m4q8z"][0]
    real.loader.load([o for o in objects if o not in hooks and o is not calico])
    node2.start(timeout=300)
    real.loader.load([calico_node(calico, yaml.safe_load(LOGS.read_text()))])
    kube_cluster.wait_for("calico-node-m4q8z in the kubelet's CrashLoopBackOff", lambda: crash_looping(kube_cluster),
                          timeout=180)
    real.loader.load(hooks)
    yield real
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        kube_cluster.kubectl("delete", kind, "--all", check=False)


def kubectl_run(kube_cluster, namespace, name):
    """kubectl run of a pod bound to node1: the CompletedProcess (its stderr holds the API server's refusal)."""
    return kube_cluster.kubectl("run", name, "-n", namespace, "--image=lab.invalid/x:1", "--restart=Never",
                                "--overrides", json.dumps({"spec": {"nodeName": "node1"}}), check=False)


def test_one_run_of_the_cni_scenario_names_the_cycle(lab, ansible, kube_cluster, api):
    kubeconfig = api.kubeconfig()
    # independent reader: what kubectl sees of each link
    hook = kube_cluster.kubectl_json("get", "validatingwebhookconfiguration", "policy-guard")["webhooks"][0]
    assert hook["failurePolicy"] == "Fail" and hook["rules"][0]["resources"] == ["pods", "nodes/status"]
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", "policy-guard")["items"]
    assert slices and not [e for s in slices for e in s.get("endpoints") or []
                           if (e.get("conditions") or {}).get("ready")], slices
    pod = kube_cluster.kubectl_json("get", "pod", "-n", "policy-guard", "policy-guard-6d8f7b9c4-tq5lw")
    assert (pod["status"]["phase"], pod["spec"]["nodeName"]) == ("Pending", "node2")
    node = kube_cluster.kubectl_json("get", "node", "node2")
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "NetworkUnavailable"] == ["True"]
    # the cycle, in the real API server's own words: a pod (kube-system: only policy-guard covers it) is refused,
    # and so is node2's status update, which calico-node would write once its network is back
    reviewed = len(Admitting.reviewed)
    refused = kubectl_run(kube_cluster, "kube-system", "refused")
    assert refused.returncode != 0 and 'failed calling webhook "%s"' % HOOK in refused.stderr, refused.stderr
    assert Admitting.reviewed[reviewed:] == ["pods"]  # the external injector answered: it is not the refusal
    assert 'no endpoints available for service "policy-guard-webhook"' in refused.stderr, refused.stderr
    with pytest.raises(LabError) as status_update:
        kube_cluster.set_node_condition("node2", "NetworkUnavailable", "False", "CalicoIsUp", "Calico is running")
    assert HOOK in str(status_update.value)

    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig)})
    assert run.rc == 0, run
    hooks = run.results(action="webhook_deadlock")
    assert len(hooks) == 1  # once, on the controller
    found = hooks[0]["result"]["findings"]
    assert checks(found) == [("webhook.cni_deadlock", SUBJECT)], found
    assert found[0]["severity"] == "critical"
    assert found[0]["evidence"]["nodes"] == ["node2"]
    assert found[0]["evidence"]["cni_pods"] == ["kube-system/calico-node-m4q8z"]
    assert found[0]["evidence"]["backend_pods"] == ["policy-guard-6d8f7b9c4-tq5lw"]
    # a fleet finding, published once; each node keeps its own findings
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in run.results(task="Keep the findings of this host"))
    assert ("webhook.cni_deadlock", SUBJECT) in checks(facts["node1"]["cni_fleet_findings"])
    assert "webhook.cni_deadlock" not in [f["check"] for f in facts["node2"]["cni_findings"]]


def test_the_log_lines_go_under_the_findings_they_explain(lab, ansible, kube_cluster, api):
    """The node and cycle findings from the real API server; calico's log lines from node2's real kubelet through
    the API server, while the webhook refuses the kubelet's node status writes."""
    kubeconfig = str(api.kubeconfig())
    # independent reader: kubectl logs --previous through the same API server -> kubelet path
    # (read again while the kubelet answers "unable to retrieve container logs": a read racing a restart, when the
    # previous container is the one just removed by its garbage collection of dead containers)

    def previous():
        out = kube_cluster.kubectl("-n", "kube-system", "logs", "--previous", "calico-node-m4q8z", check=False)
        return out.stdout.count("Failed to set NetworkUnavailable to False") == 2 and out.stdout
    kube_cluster.wait_for("calico-node-m4q8z's previous log", previous, timeout=120)
    # what the cycle does to the real kubelet's own writes: its node status patches refused in the webhook's name
    # (its log; the audit policy does not log system:nodes), its pod status writes (pods/status, a subresource the
    # webhook's rule "pods" does not name) let through: the restarts keep counting
    refused = 'Error updating node status, will retry" err="failed to patch status'
    kube_cluster.wait_for("node2's kubelet refused a node status update", lambda: any(
        refused in line and 'failed calling webhook \\"%s\\"' % HOOK in line
        for line in (kube_cluster.logs / "kubelet-node2.log").read_text(errors="replace").splitlines()), timeout=120)

    def restart_count():
        status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "calico-node-m4q8z")["status"]
        return (status.get("containerStatuses") or [{}])[0].get("restartCount", 0)
    restarts = restart_count()
    kube_cluster.wait_for("a restart of calico-node-m4q8z written by the kubelet under the webhook",
                          lambda: restart_count() > restarts, timeout=180)

    def read_logs():  # the same race as kubectl's read above
        out = ansible.module("localhost", "kube_logs", {"kubeconfig": kubeconfig, "nodes": ["node2"]})["localhost"]
        return out["matches"] and out
    logs = kube_cluster.wait_for("kube_logs' read of calico-node-m4q8z", read_logs, timeout=120)

    def in_back_off():  # the kubelet shows CrashLoopBackOff between runs, the container's exit for a moment
        found = ansible.module("localhost", "node_network_status", {"kubeconfig": kubeconfig})["localhost"]
        return any(f["check"] == "node.cni_pod_crashloop" for f in found["findings"]) and found
    cni = kube_cluster.wait_for("node_network_status read in a back-off", in_back_off, timeout=120)
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
                ("webhook.cni_deadlock", SUBJECT)):
        lines = by[key]["evidence"]["logs"][0]["lines"]
        assert "Failed to set NetworkUnavailable" in lines[0]["text"] and lines[0]["time"], key
    # the calico line now sits under those findings, not beside them
    assert ("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z") not in by


def _policies(kube_cluster):
    """(failurePolicy of every webhook, the restore annotation) as kubectl reads them."""
    out = {}
    for name in ("policy-guard", "tenant-quota"):
        obj = kube_cluster.kubectl_json("get", "validatingwebhookconfiguration", name)
        for hook in obj["webhooks"]:
            out[hook["name"]] = hook["failurePolicy"]
        if name == "policy-guard":
            record = (obj["metadata"].get("annotations") or {}).get("k8snet.triage/failure-policy-restore")
    return out, record


def test_the_repair_relaxes_only_the_named_webhook_and_restore_puts_it_back(lab, ansible, kube_cluster, api):
    kubeconfig = str(api.kubeconfig())
    args = {"kubeconfig": kubeconfig, "configuration": "policy-guard", "webhook": "validate.policy-guard.example.com"}
    start = _policies(kube_cluster)
    assert start == ({"validate.policy-guard.example.com": "Fail", "audit.policy-guard.example.com": "Ignore",
                      "pods.tenant-quota.example.com": "Fail"}, None)
    version = kube_cluster.kubectl_json("get", "validatingwebhookconfiguration", "policy-guard")["metadata"][
        "resourceVersion"]

    # check mode: the diff, nothing changed
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, state="relaxed"), check=True, diff=True)
    result = result["localhost"]
    assert result["changed"] and not result["failed"] and result["failure_policy"] == "Ignore"
    assert '"failurePolicy": "Fail"' in result["diff"]["before"]
    assert '"failurePolicy": "Ignore"' in result["diff"]["after"]
    assert _policies(kube_cluster) == start
    assert kube_cluster.kubectl_json("get", "validatingwebhookconfiguration", "policy-guard")["metadata"][
        "resourceVersion"] == version

    # for real: only that webhook changes, the previous value is recorded
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, state="relaxed"))["localhost"]
    assert result["changed"] and result["previous"] == "Fail"
    policies, record = _policies(kube_cluster)
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
    assert _policies(kube_cluster) == start
    again = ansible.module("localhost", "webhook_failure_policy", dict(args, state="restored"))["localhost"]
    assert not again["changed"] and "nothing to restore" in again["msg"]


def test_the_repair_refuses_what_it_cannot_do_and_changes_nothing(lab, ansible, kube_cluster, api):
    kubeconfig = str(api.kubeconfig())
    start = _policies(kube_cluster)
    args = {"kubeconfig": kubeconfig, "configuration": "policy-guard", "state": "relaxed"}
    result = ansible.module("localhost", "webhook_failure_policy", dict(args, webhook="nope.example.com"))["localhost"]
    assert result["failed"] and result["msg"].startswith("ValidatingWebhookConfiguration policy-guard has no webhook "
                                                         "nope.example.com (it has: validate.policy-guard.example.com")
    absent = dict(args, configuration="absent", webhook="x.example.com")
    result = ansible.module("localhost", "webhook_failure_policy", absent)["localhost"]
    assert result["failed"] and "there is no ValidatingWebhookConfiguration named absent" in result["msg"]
    # another client (an operator's kubectl) writes the object between the module's read and its patch: the real
    # API server's 409, and nothing changed (the module's own code, driven in-process to place the write)

    class Raced(kube_client.Kube):
        raced = False

        def get(self, *a, **kw):
            read = super().get(*a, **kw)
            if not Raced.raced:
                Raced.raced = True
                kube_cluster.kubectl("annotate", "validatingwebhookconfiguration", "policy-guard",
                                     "example.com/touched=by-another-writer", "--overwrite")
            return read

    with pytest.raises(ChangeError) as refused:
        webhooks.set_failure_policy(dict(args, webhook=HOOK), Raced)
    assert "409 Conflict" in str(refused.value), refused.value
    written = kube_cluster.kubectl_json("get", "validatingwebhookconfiguration", "policy-guard")
    assert written["metadata"]["annotations"]["example.com/touched"] == "by-another-writer"
    assert _policies(kube_cluster) == start


# ------------------------------------------------------------------ the runbook's own case: through the VPN pod
TUNNEL_HOOK = "webhook:sysdig-admission-controller-webhook/audit.secure.sysdig.com"


@pytest.fixture(scope="module")
def tunnel_api(kube_cluster, api, node2):
    """The same cluster with the runbook's webhook in place of policy-guard's (the stand-in served them apart); node2's
    real kubelet stopped (the runbook's pod there stays Pending as the fixture has it)."""
    node2.stop()
    for kind, name in (("validatingwebhookconfiguration", "policy-guard"),
                       ("validatingwebhookconfiguration", "tenant-quota"),
                       ("mutatingwebhookconfiguration", "external-injector")):
        kube_cluster.kubectl("delete", kind, name, "--ignore-not-found")
    api.loader.load(fresh("webhooks_tunnel.yaml"))
    yield api


def test_the_runbook_cycle_through_the_vpn_pod(lab, ansible, kube_cluster, tunnel_api):
    """The IBM runbook as it happened: the webhook's pod is healthy on node1, the VPN client pod is Pending on
    node2 where calico-node crash-loops.  One run of the cni scenario names the cycle through the VPN pod and the
    pod waiting on node2."""
    kubeconfig = tunnel_api.kubeconfig()
    # independent reader: each link as kubectl sees it
    pods = {p["metadata"]["name"]: p for p in kube_cluster.kubectl_json("get", "pods", "-A")["items"]}
    hook_pod = pods["sysdig-admission-controller-webhook-5c9d8f7b6-j4wzp"]
    assert (hook_pod["status"]["phase"], hook_pod["spec"]["nodeName"]) == ("Running", "node1")
    [vpn] = kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", "-l", "app=vpn")["items"]
    assert (vpn["status"]["phase"], vpn["spec"]["nodeName"]) == ("Pending", "node2")
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", "sysdig-admission-controller")["items"]
    ready = sorted({e.get("nodeName") for s in slices for e in s.get("endpoints") or []
                    if (e.get("conditions") or {}).get("ready")})
    assert ready == ["node1"], slices

    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig)})
    assert run.rc == 0, run
    [hooks] = run.results(action="webhook_deadlock")
    found = hooks["result"]["findings"]
    assert checks(found) == [("webhook.cni_deadlock", TUNNEL_HOOK)]
    assert found[0]["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]
    assert found[0]["evidence"]["nodes"] == ["node2"]
    assert found[0]["evidence"]["cni_pods"] == ["kube-system/calico-node-m4q8z"]
    assert hooks["result"]["webhooks"][0]["via_tunnel"] is True
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in run.results(task="Keep the findings of this host"))
    assert ("webhook.cni_deadlock", TUNNEL_HOOK) in checks(facts["node1"]["cni_fleet_findings"])
    assert ("node.pods_waiting_for_network", "node2") in checks(facts["node2"]["cni_findings"])
    # with the tunnel model switched off (a cluster whose API server reaches pods directly) the healthy webhook
    # clears it
    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kubeconfig), "cni_tunnel_pods": "[]"})
    assert run.rc == 0, run
    assert checks(run.results(action="webhook_deadlock")[0]["result"]["findings"]) == [
        ("webhook.no_cni_deadlock", "cluster")]


def test_triage_names_the_cycle_through_the_vpn_pod(lab, ansible, kube_cluster, tunnel_api, tmp_path):
    """The triage (cni and logs) on the real API server: the cycle, with the API server's refusal (the ReplicaSet
    controller's FailedCreate Event) as evidence under it. calico-node's log cannot be read without a kubelet: the
    real API server's 500 is said as a log read that failed, naming node2's kubelet (calico's line under the cycle
    is test_the_log_lines_go_under_the_findings_they_explain's, from the stand-in)."""
    out = tmp_path / "report"
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_kubeconfig": str(tunnel_api.kubeconfig()), "triage_scenarios": ["cni", "logs"],
        "report_output_dir": str(out), "report_fail_on_critical": False})
    assert run.rc == 0, run
    report = json.loads((out / "triage-report.json").read_text())
    [cycle] = [f for f in report["findings"] if f["check"] == "webhook.cni_deadlock"]
    assert cycle["subject"] == TUNNEL_HOOK and cycle["severity"] == "critical"
    assert cycle["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]
    # the API server's refusal, from the ReplicaSet controller's FailedCreate event, is evidence under the cycle
    lines = [line["text"] for group in cycle["evidence"].get("logs", []) for line in group["lines"]]
    assert any('failed calling webhook "audit.secure.sysdig.com"' in text for text in lines), lines
    event = [e for e in kube_cluster.kubectl_json("get", "events", "-n", "kube-system", "--field-selector",
                                                  "reason=FailedCreate")["items"]
             if 'failed calling webhook "audit.secure.sysdig.com"' in e["message"]]
    assert event, "kubectl does not see the FailedCreate Event"
    assert "log.webhook_call_failed" not in [f["check"] for f in report["findings"]]
    assert ("node.pods_waiting_for_network", "node2") in checks(report["findings"])
    # calico-node's previous log: the API server could not reach node2's kubelet (no kubelet in the lab)
    [unreadable] = [f for f in report["findings"] if f["check"] == "log.not_readable"]
    assert {"node": "node2", "port": 10250} in unreadable["evidence"]["kubelets_unreachable"], unreadable
    assert any("calico-node-m4q8z" in e and "HTTP 500" in e for e in unreadable["evidence"]["errors"]), unreadable
    html = (out / "triage-report.html").read_text()
    assert "vpn-6b8f9d7c5-x2k4n" in html and "webhook.cni_deadlock" in html
