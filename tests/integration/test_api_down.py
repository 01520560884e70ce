"""triage.yml against a Kubernetes API server that accepts and never answers, that refuses the credentials (401)
and that refuses every read (403): the first API step that meets it is the one finding (kube.api_unreachable,
kube.api_unauthorized, kube.api_forbidden: the address, the request, the deadline or the status), every later API
step is skipped at once naming it, and the node side runs as before (a stale ARP entry is still found, and is
there: ``ip -j neigh`` inside the node).

The server's own record is the independent reader of what the triage asked: one request in all (the later steps
did not connect), held by the triage for one call's deadline (30 s), where six API steps used to wait 30 s each.

The silent server stays a stand-in (tests/kube_api/hostile.py, why="misbehaving"): a real API server cannot be made
to accept and never answer. The refusals are the lab's real API server's (tests/lab/cluster.py): a token it does not
know (401) and a ServiceAccount bound to no role (403 on every read); its audit log is the record of what was asked."""

from __future__ import annotations

import json
import time

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.kube_api.hostile import Hostile
from tests.lab.cluster_objects import RealApi, audit_requests
from tests.lab.faults import arp
from tests.lab.faults import kube as kube_faults

CALL_DEADLINE = 30.0  # kube_transport.CALL_TIMEOUT: one call's deadline, the one the triage waits out once
STALE_MAC = "02:de:ad:00:be:ef"
# six API steps: the node pass's four reads (Node list, node conditions, webhooks, agents' logs) and f5, lb_health
NODE_SCENARIOS = ["cni", "logs", "stale_arp"]
API_STEPS = ("kube", "cni", "logs")
# the wall-time bound holds on a controller that only this file loads
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def stale_vip(lab):
    vip = lab.vip(9)
    arp.bind_vip(lab, "node1", vip)
    arp.stale_neighbor(lab, "node3", vip, STALE_MAC)
    yield vip
    lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
    lab.ns_run("node3", ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)


def _triage(ansible, kubeconfig, vip, out):
    started = time.monotonic()
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_kubeconfig": str(kubeconfig), "triage_scenarios": NODE_SCENARIOS, "stale_arp_vips": [vip],
        "report_output_dir": str(out), "report_fail_on_critical": False})
    seconds = time.monotonic() - started
    assert run.rc == 0, run
    return run, json.loads((out / "triage-report.json").read_text()), seconds


def _neigh(lab, node, vip):
    """node's neighbour entry for ``vip``, read with ``ip -j neigh`` inside its namespace (not our module)."""
    out = lab.ns_run(node, ["ip", "-j", "neigh", "show", "to", vip]).stdout
    return [(n.get("lladdr"), n.get("state")) for n in json.loads(out or "[]")]


def _check_down(report, lab, vip, check, server):
    """The one finding, the later API steps skipped naming it, no triage.check_failed, the node side as before."""
    [down] = [f for f in report["findings"] if f["check"] == check]
    assert down["scope"] == "fleet" and down["subject"] == server and down["evidence"]["server"] == server, down
    assert not [f for f in report["findings"] if f["check"] == "triage.check_failed"], report["findings"]
    assert not [f for f in report["findings"] if f["check"].startswith("kube.api_") and f is not down]
    controller = report["hosts"]["localhost"]["scenarios"]
    for scenario in ("f5", "lb_health"):
        assert controller[scenario]["status"] == "skipped", controller[scenario]
        assert controller[scenario]["reason"].startswith("not tried: ") and check in controller[scenario]["reason"]
    # the node side ran: node3's stale entry for the VIP is found, and is there
    assert STALE_MAC in [entry[0] for entry in _neigh(lab, "node3", vip)]
    stale = [f for f in report["findings"] if f["check"] == "arp.stale_entry"]
    assert [f["host"] for f in stale] == ["node3"], stale
    assert report["hosts"]["node3"]["scenarios"]["stale_arp"]["status"] == "ran"
    for node in ("node1", "node2", "node3"):  # the CNI files on every node, read over SSH as before
        assert report["hosts"][node]["scenarios"]["cni"]["status"] == "ran", report["hosts"][node]["scenarios"]["cni"]
    return down


def test_a_silent_api_costs_one_deadline_and_is_one_finding(lab, ansible, stale_vip, tmp_path):
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / "cluster.yaml", FIXTURES / "cni.yaml"]))
    server = Hostile(objects, tmp_path / "hang", lab.controller_ip, "hang").start()
    url = server.url
    try:
        report, seconds = _triage(ansible, server.kubeconfig(), stale_vip, tmp_path / "report")[1:]
        requests = list(server.requests)
    finally:
        server.stop()
    # the server's clock: one request in all, held for one call's deadline
    assert len(requests) == 1, requests
    print("silent API: the triage took %.1f s, the hung request held %.1f s" % (seconds, requests[0].get("held", -1)))
    assert requests[0]["path"].split("?")[0] == "/api/v1/nodes" \
        and CALL_DEADLINE * 0.9 <= requests[0]["held"] <= CALL_DEADLINE * 1.1  # (its clock starts after the connect)
    # the whole run: one deadline and the node side (51-76 s measured on a shared 2-core machine), not six
    # deadlines (at least 180 s: 197 s before)
    assert seconds < 5 * CALL_DEADLINE, seconds
    down = _check_down(report, lab, stale_vip, "kube.api_unreachable", url)
    assert down["severity"] == "critical"
    assert down["evidence"]["request"] == "list nodes" and down["evidence"]["deadline"] == CALL_DEADLINE
    assert down["summary"].startswith("the Kubernetes API server at %s did not answer list nodes within 30 s"
                                      % url), down
    fleet = report["hosts"]["localhost"]["scenarios"]
    # the read that found it failed with the finding; the node pass's later reads were not tried, naming it
    assert fleet["kube"]["status"] == "failed"
    for scenario in ("cni", "logs"):
        assert "kube.api_unreachable" in fleet[scenario]["reason"], fleet[scenario]


def test_when_f5_is_the_first_api_step_lb_health_is_not_tried(lab, ansible, stale_vip, tmp_path):
    """No node scenario that reads the API: f5 meets the silent API server first (the triage's scenario step), its
    record holds the one finding, and lb_health after it is skipped naming it."""
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / "cluster.yaml"]))
    server = Hostile(objects, tmp_path / "hang", lab.controller_ip, "hang").start()
    url = server.url
    try:
        run = ansible.playbook("k8snet.triage.triage", extra_vars={
            "triage_kubeconfig": str(server.kubeconfig()), "triage_scenarios": ["stale_arp"],
            "stale_arp_vips": [stale_vip], "report_output_dir": str(tmp_path / "out"), "report_fail_on_critical": False})
        requests = list(server.requests)
    finally:
        server.stop()
    assert run.rc == 0, run
    assert len(requests) == 1, requests
    report = json.loads((tmp_path / "out" / "triage-report.json").read_text())
    controller = report["hosts"]["localhost"]["scenarios"]
    assert controller["f5"]["status"] == "failed"
    [down] = [f for f in report["findings"] if f["check"] == "kube.api_unreachable"]
    assert down["scenario"] == "f5" and down["subject"] == url and down["evidence"]["deadline"] == CALL_DEADLINE
    assert controller["lb_health"]["status"] == "skipped" and "kube.api_unreachable" in controller["lb_health"]["reason"]
    assert not [f for f in report["findings"] if f["check"] == "triage.check_failed"], report["findings"]
    assert [f["host"] for f in report["findings"] if f["check"] == "arp.stale_entry"] == ["node3"]


@pytest.mark.parametrize("refusal", ["401", "403"])
def test_an_api_that_refuses_everything_is_one_finding(lab, ansible, kube_cluster, stale_vip, tmp_path, refusal):
    api = RealApi(kube_cluster, "cluster.yaml", "cni.yaml") if refusal == "401" else RealApi(kube_cluster)
    if refusal == "401":
        kubeconfig, who = api.kubeconfig(tmp_path / "kubeconfig", token="wrong-token"), None
    else:  # a ServiceAccount no RoleBinding names: authenticated, allowed nothing
        kube_cluster.request("POST", "/api/v1/namespaces/k8snet-lab/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "no-rights", "namespace": "k8snet-lab"}})
        who = "system:serviceaccount:k8snet-lab:no-rights"
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", token=kube_cluster.token("k8snet-lab", "no-rights"))
    before = len(audit_requests(kube_cluster))
    report = _triage(ansible, kubeconfig, stale_vip, tmp_path / "report")[1]
    # the API server's audit log: what the triage's credential sent (a refused token is logged with no user)
    requests = [r for r in audit_requests(kube_cluster)[before:] if r["user"] == who]
    assert [(r["path"], r["code"]) for r in requests] == [("/api/v1/nodes", int(refusal))], requests
    check = "kube.api_unauthorized" if refusal == "401" else "kube.api_forbidden"
    down = _check_down(report, lab, stale_vip, check, kube_cluster.server)
    assert down["severity"] == "warning" and down["evidence"]["status"] == int(refusal)
    assert down["evidence"]["request"] == "list nodes"
