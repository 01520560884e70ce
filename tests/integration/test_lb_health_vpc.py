"""Issue 29, the runbook on the lab's real control plane (tests/lab/cluster.py): OpenShift's router-default on a VPC
with externalTrafficPolicy Local (router_vpc.yaml through the real API server), two router pods (HTTP servers in pod
namespaces of node1 and node2, the EndpointSlice's addresses) and three nodes. The real kube-proxies do the rest:
node1 and node2 answer the load balancer's health check (200) and forward their traffic nodePort to their own
router; node3, without a router, answers 503 and drops its nodePort ("has no local endpoints", kube-proxy's
iptables mode). The check, the dry run (check mode, --diff), the explicit switch to Cluster, the post-check while
kube-proxy on node3 comes back and reprograms its nodePort, and a post-check that gives up at its deadline (node3's
kube-proxy down, its old rules still dropping).

The runbook's other node3 (a nodePort that accepts and never answers) is not what kube-proxy does; lb_health's
reading of it is covered by tests/unit/plugins/module_utils/test_lb_health_vpc.py.

Independent readers: urllib on the health ports, curl on the nodePorts, iptables-save on node3 for kube-proxy's
drop, kubectl for the Service, the API server's audit log for PATCHes."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

from tests.integration.conftest import ROOT
from tests.kube_api import FIXTURES
from tests.kube_api.helpers import checks
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import lb_health as vpc

SVC = "openshift-ingress/router-default"


def router_fixture(path, pods):
    """router_vpc.yaml with the router pods' addresses in its EndpointSlice, written to ``path``."""
    doc = yaml.safe_load((FIXTURES / "router_vpc.yaml").read_text())
    for obj in doc["items"]:
        if obj["kind"] == "EndpointSlice" and obj["metadata"]["name"].startswith("router-default"):
            for endpoint in obj["endpoints"]:
                endpoint["addresses"] = [pods[endpoint["nodeName"]]["ip"]]
    path.write_text(yaml.safe_dump(doc))
    return path


def local_ready(lab, kube_cluster):
    """Wait until the real kube-proxies serve policy Local again: health checks 200, 200, 503, node3 dropping."""
    kube_cluster.wait_for("kube-proxy's health checks of router-default (200, 200, 503) and node3's nodePort dropped",
                          lambda: [health_status(n.ip) for n in lab.nodes] == [200, 200, 503]
                          and curl_nodeport(lab, "node3") == "000", timeout=120)


@pytest.fixture(scope="module")
def vpc_lab(lab, kube_cluster):
    # the router pods; the lab's own node3 set-up is off (mode "none"): node3 is kube-proxy's
    info = vpc.vpc_router(lab, mode="none")
    server = RealApi(kube_cluster, "cluster.yaml")
    server.load(router_fixture(server.workdir / "router_vpc.yaml", info["pods"]))
    local_ready(lab, kube_cluster)
    info["server"] = server
    yield info


@pytest.fixture
def api(lab, kube_cluster, vpc_lab):
    """The Service back to policy Local and every kube-proxy running after each test."""
    server = vpc_lab["server"]
    yield server
    for node in lab.nodes:
        if not kube_cluster._proxy_healthy(node):  # pylint: disable=protected-access
            kube_cluster.start_proxy(node)
    kube_cluster.kubectl("patch", "svc", "-n", "openshift-ingress", "router-default", "--type", "merge", "-p",
                         json.dumps({"spec": {"externalTrafficPolicy": "Local",
                                              "healthCheckNodePort": vpc.HEALTH_PORT}}))
    local_ready(lab, kube_cluster)


def health_status(address):
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, vpc.HEALTH_PORT), timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def curl_nodeport(lab, node):
    return lab.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--connect-timeout", "1", "-m", "2",
                    "http://%s:%d/" % (lab.node(node).ip, vpc.NODE_PORT)], check=False).stdout


def kube_proxy_drop(lab, node):
    """kube-proxy's own rules on ``node`` that drop the nodePort for want of a local endpoint (iptables-save)."""
    rules = "\n".join(lab.ns_run(node, [tool], check=False).stdout
                      for tool in ("iptables-nft-save", "iptables-legacy-save"))
    return [r for r in rules.splitlines() if "openshift-ingress/router-default:http has no local endpoints" in r
            and ("DROP" in r or "KUBE-MARK-DROP" in r)]


def args_for(server, **extra):
    return dict({"kubeconfig": str(server.kubeconfig()), "services": [SVC], "probe_traffic": True,
                 "probe_timeout": 1.0}, **extra)


def test_check_expected_no_impact_with_the_pool_view(lab, ansible, api):
    assert [health_status(n.ip) for n in lab.nodes] == [200, 200, 503]
    assert [curl_nodeport(lab, n) for n in ("node1", "node2", "node3")] == ["200", "200", "000"]
    assert kube_proxy_drop(lab, "node3"), "kube-proxy on node3 should drop the nodePort (no local endpoint)"
    result = ansible.module("localhost", "lb_health", args_for(api))["localhost"]
    assert checks(result["findings"]) == [("lb.nodes_without_endpoints", SVC)], result["findings"]
    [item] = result["findings"]
    assert "expected with policy Local: no impact unless the nodes with an endpoint (node1, node2) fail it too" \
        in item["summary"] and item["summary"].endswith("pool: node1, node2 pass, node3 fail")
    pool = item["evidence"]["pool"]
    assert {n: (r["health_check"], r.get("traffic")) for n, r in pool.items()} == {
        "node1": ("pass", "answered"), "node2": ("pass", "answered"), "node3": ("fail", "dropped")}
    assert item["evidence"]["owner"]["name"] == "default" and "source IP is lost" in item["evidence"]["trade_off"]
    assert result["traffic"][SVC]["node3"]["state"] == "dropped"
    assert result["traffic"][SVC]["node3"]["detail"] == "no answer to the connect within 1s (SYN dropped)"
    assert result["changed"] is False


def test_dry_run_refuses_without_the_explicit_switch_and_shows_it_with(lab, ansible, kube_cluster, api):
    before = len(api.requests)
    plain = ansible.module("localhost", "lb_health", args_for(api, remediate="cluster", remediate_services=[SVC]),
                           check=True, diff=True)["localhost"]
    assert plain["changed"] is False and plain["patched"] == []
    assert plain["not_attempted"][0]["reason"].startswith("expected with externalTrafficPolicy Local: 1 of 3 nodes")
    dry = ansible.module("localhost", "lb_health", args_for(api, remediate="cluster", remediate_services=[SVC],
                                                            force_policy_switch=True),
                         check=True, diff=True)["localhost"]
    assert dry["changed"] is True and dry["patched"] == [SVC] and dry["verification"] == []
    after = dry["diff"]["after"]
    assert after.startswith("externalTrafficPolicy: Cluster\n")
    assert "# why: asked explicitly (force_policy_switch)" in after
    assert "# trade-off: externalTrafficPolicy: Cluster makes every node pass" in after
    assert "# warning: the ingress operator owns openshift-ingress/router-default (IngressController " \
           "openshift-ingress-operator/default)" in after
    assert ("lb.owner_may_revert", SVC) in checks(dry["findings"])
    assert [r for r in api.requests[before:] if r["method"] != "GET"] == []
    assert kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"


def kube_proxy_back_after(kube_cluster, delay):
    """node3's kube-proxy is down (its old rules drop the nodePort); once the API has policy Cluster, start it
    again after ``delay`` seconds: it reprograms node3 then, as a slow kube-proxy would."""
    kube_cluster.stop_proxy("node3")
    done = threading.Event()

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            svc = kube_cluster.request("GET", "/api/v1/namespaces/openshift-ingress/services/router-default")
            if svc["spec"].get("externalTrafficPolicy") == "Cluster":
                time.sleep(delay)
                kube_cluster.start_proxy("node3")
                done.set()
                return
            time.sleep(0.2)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    done.thread = thread
    return done


def test_switch_then_post_check_waits_for_every_node(lab, ansible, kube_cluster, api):
    reprogrammed = kube_proxy_back_after(kube_cluster, 2.5)
    args = args_for(api, remediate="cluster", remediate_services=[SVC], force_policy_switch=True, verify_timeout=90)
    before = len(api.requests)
    real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
    reprogrammed.thread.join(timeout=120)
    assert reprogrammed.is_set()
    assert real["changed"] is True and real["patched"] == [SVC], real
    [check] = real["verification"]
    assert check["passed"] is True and check["policy"] == "Cluster" and check["health_check_node_port"] is None
    assert check["attempts"] >= 2 and 2.0 <= check["seconds"] < 90, check
    assert {n: r["state"] for n, r in check["nodes"].items()} == dict.fromkeys(("node1", "node2", "node3"), "answered")
    found = dict((f["check"], f) for f in real["findings"])
    assert found["lb.policy_switched"]["severity"] == "ok" and found["lb.owner_may_revert"]["severity"] == "warning"
    assert [r["method"] for r in api.requests[before:]].count("PATCH") == 1
    spec = kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
    assert [curl_nodeport(lab, n) for n in ("node1", "node2", "node3")] == ["200", "200", "200"]
    again = ansible.module("localhost", "lb_health", args)["localhost"]
    assert again["changed"] is False and again["patched"] == [] and again["verification"] == []
    summary = found["lb.policy_switched"]["summary"]
    print("\npost-check: %d attempts, %ss; %s" % (check["attempts"], check["seconds"], summary))


def test_role_fails_when_the_post_check_gives_up(lab, ansible, kube_cluster, api):
    """Nothing reprograms node3 (its kube-proxy is down, its rules still drop the nodePort): the post-check stops
    at its deadline, the role fails saying why."""
    kube_cluster.stop_proxy("node3")
    started = time.time()
    run = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(api.kubeconfig()), "lb_health_services": [SVC], "lb_health_remediate": "cluster",
        "lb_health_remediate_services": [SVC], "lb_health_force_policy_switch": True, "lb_health_verify_timeout": 3,
        "lb_health_probe_timeout": 1})
    assert run.rc != 0, run
    assert curl_nodeport(lab, "node3") == "000"
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


def test_the_survey_asks_for_the_runbooks_switch_and_the_traffic_probe(lab, ansible, kube_cluster, api):
    """Issue 47: from AWX the OpenShift runbook's explicit switch was refused and the traffic probe never ran, as
    the survey did not ask for them. Answered "true" (text, as AWX passes it) in a dry run: node3's nodePort (that
    kube-proxy drops) is probed and the switch is shown, not refused, and nothing is patched."""
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
    # the traffic probe ran: node3 drops the connect (what curl and iptables-save show independently)
    assert switched["traffic"][SVC]["node3"]["state"] == "dropped", switched["traffic"]
    assert curl_nodeport(lab, "node3") == "000" and kube_proxy_drop(lab, "node3")
    # the dry run changed nothing: no write reached the API, the Service is still Local
    assert [r for r in api.requests[before:] if r["method"] != "GET"] == []
    assert kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"
    # the same answers with the switch left at its default ("false"): refused, as before
    refused = ansible.playbook("k8snet.triage.lb_health", extra_vars=dict(extra, lb_health_force_policy_switch="false"))
    result = refused.result("Switch externalTrafficPolicy of the named Services", "localhost")
    assert result["patched"] == []
    assert result["not_attempted"][0]["reason"].startswith("expected with externalTrafficPolicy Local")


def test_a_switch_put_back_later_is_said_as_reverted(lab, ansible, kube_cluster, api, tmp_path):
    """S003-12: lb_health switches router-default to Cluster and records its run in the triage's report history;
    "an OpenShift update" (a kubectl patch, as the ingress operator would) puts Local back; the next triage writing
    its report there says lb.policy_reverted (when it was switched), not the generic expected-with-Local warning.
    Independent readers: kubectl for the policy, the history files and triage-report.json as written."""
    out = tmp_path / "report"
    out.mkdir()
    switch = ansible.playbook("k8snet.triage.lb_health", extra_vars={
        "lb_health_kubeconfig": str(api.kubeconfig()), "lb_health_services": [SVC], "lb_health_remediate": "cluster",
        "lb_health_remediate_services": [SVC], "lb_health_force_policy_switch": True, "lb_health_verify_timeout": 20,
        "lb_health_probe_timeout": 1, "lb_health_report_dir": str(out)})
    assert switch.rc == 0, switch
    [entry] = [json.loads(p.read_text()) for p in (out / "history").iterdir()]
    assert entry["scenario"] == "lb_health" and list(entry["lb_switches"]) == [SVC]
    assert not (out / "triage-report.json").exists()  # the triage's reports are left alone
    # the "OpenShift update": the operator puts the policy back, kube-proxy drops node3's nodePort again
    kube_cluster.kubectl("patch", "svc", "-n", "openshift-ingress", "router-default", "--type", "merge", "-p",
                         json.dumps({"spec": {"externalTrafficPolicy": "Local",
                                              "healthCheckNodePort": vpc.HEALTH_PORT}}))
    assert kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")["spec"][
        "externalTrafficPolicy"] == "Local"
    local_ready(lab, kube_cluster)
    triage = ansible.playbook("k8snet.triage.triage", {
        "triage_scenarios": ["sysctl"], "triage_api_scenarios": ["lb_health"], "lb_health_services": [SVC],
        "triage_kubeconfig": str(api.kubeconfig()), "report_output_dir": str(out), "report_fail_on_critical": False})
    assert triage.rc == 0, [(r["host"], r["task"], r["result"].get("msg")) for r in triage.records
                            if r["status"] == "failed"]
    report = json.loads((out / "triage-report.json").read_text())
    lb = [f for f in report["findings"] if f["check"].startswith("lb.") and f["subject"] == SVC]
    assert [f["check"] for f in lb] == ["lb.policy_reverted"], lb
    assert lb[0]["evidence"]["switched_at"] == entry["lb_switches"][SVC]["at"] and lb[0]["state"] == "new"
    assert "back at externalTrafficPolicy Local although lb_health switched it to Cluster" in lb[0]["summary"]
    assert list(report["since"]["lb_switches"]) == [SVC]
