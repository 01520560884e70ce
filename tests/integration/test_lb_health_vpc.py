"""Issue 29, the runbook on the lab: OpenShift's router-default on a VPC with externalTrafficPolicy Local, two
router pods (node1, node2) and three nodes.  node3 fails the load balancer's health check (503) and its traffic
nodePort accepts and never answers.  The check, the dry run (check mode, --diff), the explicit switch to
Cluster, the post-check while "kube-proxy" reprograms node3, and a post-check that gives up at its deadline.

Independent readers: urllib on the health ports, a raw socket and ``ss`` on node3 for the silent connection,
curl on the nodePort after the switch, kubectl for the Service, the stand-in's request log for PATCHes."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request

import pytest

from tests.integration.conftest import ROOT
from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import checks, kubectl
from tests.lab.faults import kube as kube_faults
from tests.lab.faults import lb_health as vpc

SVC = "openshift-ingress/router-default"


def router_objects(lab, pods):
    """cluster.yaml and router_vpc.yaml with the lab's node addresses and router pod IPs."""
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "router_vpc.yaml")]))
    for obj in objects:
        if obj["kind"] == "EndpointSlice" and obj["metadata"]["name"].startswith("router-default"):
            for endpoint in obj["endpoints"]:
                endpoint["addresses"] = [pods[endpoint["nodeName"]]["ip"]]
    return objects


@pytest.fixture(scope="module")
def vpc_lab(lab):
    info = vpc.vpc_router(lab)
    health = [kube_faults.health_endpoint(lab, "node1", vpc.HEALTH_PORT, 1),
              kube_faults.health_endpoint(lab, "node2", vpc.HEALTH_PORT, 1),
              kube_faults.health_endpoint(lab, "node3", vpc.HEALTH_PORT, 0)]
    server = StandIn(router_objects(lab, info["pods"]), lab.workdir / "kube-api-vpc", lab.controller_ip).start()
    info["server"] = server
    yield info
    server.stop()
    kube_faults.stop_health_endpoints(lab, health)
    vpc.vpc_router_repair(lab)


@pytest.fixture
def api(lab, vpc_lab):
    """The Service back to policy Local and node3 back to no forwarding after each test."""
    server = vpc_lab["server"]
    yield server
    svc = server.store.get("services", "openshift-ingress", "router-default")
    svc["spec"].update(externalTrafficPolicy="Local", healthCheckNodePort=vpc.HEALTH_PORT)
    server.store.put(svc)
    vpc.vpc_router_repair(lab)


def health_status(address):
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, vpc.HEALTH_PORT), timeout=3) as response:
            return response.status
    except urllib.request.HTTPError as exc:
        return exc.code


def silent_connection(lab, node):
    """A raw connect to node's nodePort: established, no byte in 1.5 s, and ss on the node shows it ESTAB."""
    address = lab.node(node).ip
    with socket.create_connection((address, vpc.NODE_PORT), timeout=2) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(1.5)
        try:
            data = sock.recv(100)
        except socket.timeout:
            data = None
        states = lab.ns_run(node, ["ss", "-Htn", "state", "established", "sport", "= :%d" % vpc.NODE_PORT]).stdout
    return data, states.strip()


def curl_nodeport(lab, node):
    return lab.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--connect-timeout", "1", "-m", "2",
                    "http://%s:%d/" % (lab.node(node).ip, vpc.NODE_PORT)], check=False).stdout


def args_for(server, **extra):
    return dict({"kubeconfig": str(server.kubeconfig()), "services": [SVC], "probe_traffic": True,
                 "probe_timeout": 1.0}, **extra)


def test_check_expected_no_impact_with_the_pool_view(lab, ansible, api):
    assert [health_status(n.ip) for n in lab.nodes] == [200, 200, 503]
    assert [curl_nodeport(lab, n) for n in ("node1", "node2")] == ["200", "200"]
    data, states = silent_connection(lab, "node3")
    assert data is None and states, "node3's nodePort should accept and stay silent"
    result = ansible.module("localhost", "lb_health", args_for(api))["localhost"]
    assert checks(result["findings"]) == [("lb.nodes_without_endpoints", SVC)], result["findings"]
    [item] = result["findings"]
    assert "expected with policy Local: no impact unless the nodes with an endpoint (node1, node2) fail it too" \
        in item["summary"] and item["summary"].endswith("pool: node1, node2 pass, node3 fail")
    pool = item["evidence"]["pool"]
    assert {n: (r["health_check"], r.get("traffic")) for n, r in pool.items()} == {
        "node1": ("pass", "answered"), "node2": ("pass", "answered"), "node3": ("fail", "silent")}
    assert item["evidence"]["owner"]["name"] == "default" and "source IP is lost" in item["evidence"]["trade_off"]
    assert result["traffic"][SVC]["node3"]["detail"] == "connected (ESTABLISHED, keepalive) and no byte back within 1s"
    assert result["changed"] is False


def test_kube_proxy_drop_on_the_node_without_router_is_expected_too(lab, ansible, api):
    vpc.vpc_router_repair(lab, mode="drop")
    assert curl_nodeport(lab, "node3") == "000"
    result = ansible.module("localhost", "lb_health", args_for(api))["localhost"]
    assert checks(result["findings"]) == [("lb.nodes_without_endpoints", SVC)], result["findings"]
    assert result["traffic"][SVC]["node3"]["state"] == "dropped"


def test_dry_run_refuses_without_the_explicit_switch_and_shows_it_with(lab, ansible, api):
    before = len(api.requests)
    plain = ansible.module("localhost", "lb_health", args_for(api, remediate="cluster", remediate_services=[SVC]),
                           check=True, diff=True)["localhost"]
    assert plain["changed"] is False and plain["patched"] == []
    assert plain["not_attempted"][0]["reason"].startswith("expected with externalTrafficPolicy Local: 1 of 3 nodes")
    dry = ansible.module("localhost", "lb_health", args_for(api, remediate="cluster", remediate_services=[SVC],
                                                            force_policy_switch=True), check=True, diff=True)["localhost"]
    assert dry["changed"] is True and dry["patched"] == [SVC] and dry["verification"] == []
    after = dry["diff"]["after"]
    assert after.startswith("externalTrafficPolicy: Cluster\n") and "# why: asked explicitly (force_policy_switch)" in after
    assert "# trade-off: externalTrafficPolicy: Cluster makes every node pass" in after
    assert "# warning: the ingress operator owns openshift-ingress/router-default (IngressController " \
           "openshift-ingress-operator/default)" in after
    assert ("lb.owner_may_revert", SVC) in checks(dry["findings"])
    assert [r for r in api.requests[before:] if r["method"] != "GET"] == []
    assert kubectl(api.kubeconfig(), "get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"


def kube_proxy_after(lab, server, delay):
    """Like kube-proxy: once the API has policy Cluster, reprogram node3 (after ``delay`` seconds)."""
    done = threading.Event()

    def watch():
        deadline = time.time() + 60
        while time.time() < deadline:
            svc = server.store.get("services", "openshift-ingress", "router-default")
            if svc["spec"].get("externalTrafficPolicy") == "Cluster":
                time.sleep(delay)
                vpc.vpc_cluster_policy(lab)
                done.set()
                return
            time.sleep(0.1)
    threading.Thread(target=watch, daemon=True).start()
    return done


def test_switch_then_post_check_waits_for_every_node(lab, ansible, api):
    reprogrammed = kube_proxy_after(lab, api, 2.5)
    args = args_for(api, remediate="cluster", remediate_services=[SVC], force_policy_switch=True, verify_timeout=20)
    before = len(api.requests)
    real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
    assert reprogrammed.is_set()
    assert real["changed"] is True and real["patched"] == [SVC], real
    [check] = real["verification"]
    assert check["passed"] is True and check["policy"] == "Cluster" and check["health_check_node_port"] is None
    assert check["attempts"] >= 2 and 2.0 <= check["seconds"] < 20, check
    assert {n: r["state"] for n, r in check["nodes"].items()} == dict.fromkeys(("node1", "node2", "node3"), "answered")
    found = dict((f["check"], f) for f in real["findings"])
    assert found["lb.policy_switched"]["severity"] == "ok" and found["lb.owner_may_revert"]["severity"] == "warning"
    assert [r["method"] for r in api.requests[before:]].count("PATCH") == 1
    spec = kubectl(api.kubeconfig(), "get", "svc", "-n", "openshift-ingress", "router-default")["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
    assert [curl_nodeport(lab, n) for n in ("node1", "node2", "node3")] == ["200", "200", "200"]
    again = ansible.module("localhost", "lb_health", args)["localhost"]
    assert again["changed"] is False and again["patched"] == [] and again["verification"] == []
    print("\npost-check: %d attempts, %ss; %s" % (check["attempts"], check["seconds"], found["lb.policy_switched"]["summary"]))


def test_role_fails_when_the_post_check_gives_up(lab, ansible, api):
    """Nothing reprograms node3: the post-check stops at its deadline, the role fails saying why."""
    started = time.time()
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(api.kubeconfig()), "lb_health_services": [SVC], "lb_health_remediate": "cluster",
        "lb_health_remediate_services": [SVC], "lb_health_force_policy_switch": True, "lb_health_verify_timeout": 3,
        "lb_health_probe_timeout": 1})
    assert run.rc != 0, run
    kept = run.result("Keep the LB health findings and what the remediation did", "localhost")["ansible_facts"]
    [check] = kept["lb_health_remediation"]["verification"]
    assert check["passed"] is False and check["why"].startswith("node3 do not answer on the traffic nodePort")
    assert [f["severity"] for f in kept["lb_health_findings"] if f["check"] == "lb.policy_switched"] == ["critical"]
    assert "the post-check failed for %s" % SVC in run.stdout
    assert time.time() - started < 120
    assert json.dumps(kept["lb_health_remediation"]["owners"][SVC]["kind"]) == '"IngressController"'


def survey_answers(answers):
    """The lb_health job template's survey answered as AWX passes it: every question's default, overridden
    by ``answers`` (text, as typed; a multiple choice is the string "true"/"false"), empty optional ones left out."""
    survey = json.loads((ROOT / "extensions/awx/surveys/lb_health.json").read_text())
    out = {}
    for item in survey["spec"]:
        value = answers.get(item["variable"], item.get("default", ""))
        if value == "" and not item["required"]:
            continue
        out[item["variable"]] = value
    return out


def test_the_survey_asks_for_the_runbooks_switch_and_the_traffic_probe(lab, ansible, api):
    """Issue 47: from AWX the OpenShift runbook's explicit switch was refused and the traffic probe never ran, as
    the survey did not ask for them. Answered "true" (text, as AWX passes it) in a dry run: node3's silent
    nodePort is probed and the switch is shown, not refused, and nothing is patched."""
    answers = survey_answers({"lb_health_services": SVC + "\n", "lb_health_remediate": "cluster",
                              "lb_health_remediate_services": SVC + "\n", "lb_health_force_policy_switch": "true",
                              "lb_health_probe_traffic": "true"})
    assert answers["dry_run"] == "true" and answers["lb_health_probe_traffic"] == "true"
    before = len(api.requests)
    extra = dict(answers, lb_health_kubeconfig=str(api.kubeconfig()), lb_health_probe_timeout=1)
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars=extra)
    assert run.rc == 0, run
    switched = run.result("Switch externalTrafficPolicy of the named Services", "localhost")
    assert switched["changed"] is True and switched["patched"] == [SVC], switched
    assert "# why: asked explicitly (force_policy_switch)" in switched["diff"]["after"]
    # the traffic probe ran: node3 accepts and never answers (what silent_connection shows independently)
    assert switched["traffic"][SVC]["node3"]["state"] == "silent", switched["traffic"]
    # the dry run changed nothing: no write reached the API, the Service is still Local
    assert [r for r in api.requests[before:] if r["method"] != "GET"] == []
    assert kubectl(api.kubeconfig(), "get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"
    # the same answers with the switch left at its default ("false"): refused, as before
    refused = ansible.playbook("k8snet.triage.lb_health", extra_vars=dict(extra, lb_health_force_policy_switch="false"))
    result = refused.result("Switch externalTrafficPolicy of the named Services", "localhost")
    assert result["patched"] == [] and result["not_attempted"][0]["reason"].startswith("expected with externalTrafficPolicy Local")


def test_a_switch_put_back_later_is_said_as_reverted(lab, ansible, api, tmp_path):
    """S003-12: lb_health switches router-default to Cluster and records its run in the triage's report history;
    "an OpenShift update" (a kubectl patch, as the ingress operator would) puts Local back; the next triage writing
    its report there says lb.policy_reverted (when it was switched), not the generic expected-with-Local warning.
    Independent readers: kubectl for the policy, the history files and triage-report.json as written."""
    out = tmp_path / "report"
    out.mkdir()
    kube_proxy_after(lab, api, 0.5)
    switch = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(api.kubeconfig()), "lb_health_services": [SVC], "lb_health_remediate": "cluster",
        "lb_health_remediate_services": [SVC], "lb_health_force_policy_switch": True, "lb_health_verify_timeout": 20,
        "lb_health_probe_timeout": 1, "lb_health_report_dir": str(out)})
    assert switch.rc == 0, switch
    [entry] = [json.loads(p.read_text()) for p in (out / "history").iterdir()]
    assert entry["scenario"] == "lb_health" and list(entry["lb_switches"]) == [SVC]
    assert not (out / "triage-report.json").exists()  # the triage's reports are left alone
    # the "OpenShift update": the operator puts the policy back, kube-proxy drops node3's forwarding again
    kubectl(api.kubeconfig(), "patch", "svc", "-n", "openshift-ingress", "router-default", "--type", "merge", "-p",
            json.dumps({"spec": {"externalTrafficPolicy": "Local", "healthCheckNodePort": vpc.HEALTH_PORT}}))
    vpc.vpc_router_repair(lab)
    assert kubectl(api.kubeconfig(), "get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"
    assert health_status(lab.node("node3").ip) == 503
    triage = ansible.playbook("k8snet.triage.triage", {
        "triage_scenarios": ["sysctl"], "triage_api_scenarios": ["lb_health"], "lb_health_services": [SVC],
        "triage_kubeconfig": str(api.kubeconfig()), "report_output_dir": str(out), "report_fail_on_critical": False})
    assert triage.rc == 0, [(r["host"], r["task"], r["result"].get("msg")) for r in triage.records if r["status"] == "failed"]
    report = json.loads((out / "triage-report.json").read_text())
    lb = [f for f in report["findings"] if f["check"].startswith("lb.") and f["subject"] == SVC]
    assert [f["check"] for f in lb] == ["lb.policy_reverted"], lb
    assert lb[0]["evidence"]["switched_at"] == entry["lb_switches"][SVC]["at"] and lb[0]["state"] == "new"
    assert "back at externalTrafficPolicy Local although lb_health switched it to Cluster" in lb[0]["summary"]
    assert list(report["since"]["lb_switches"]) == [SVC]
