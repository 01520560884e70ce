"""ingress_path from a Service: the role gets only ingress_path_service, a kubeconfig of the lab's real API server
(tests/lab/cluster.py) and the client (group ingress_clients); the VIP, port, backend, worker and LB node come from
the API and from who answers ARP for the VIP.

The lab path of test_ingress_path (VIP on node1, DNAT to the web pod behind node2) is described to the real API
server (tests/lab/cluster_objects.py) as Service default/web with an EndpointSlice of another controller's (the
EndpointSlice controller keeps its own, empty, beside it: no pod of the cluster is selected), the lab's Nodes,
MetalLB's ServiceL2Status (with its upstream CRD) naming node1 and the speaker's event. The path's NAT is the lab's
own (tests/lab/faults/path.py: these tests break it by hand, rule by rule), so the Service is labelled as another
service proxy's (``service.kubernetes.io/service-proxy-name``) and the lab's kube-proxies leave it alone; the walk of
kube-proxy's own DNAT is test_service_path_real.py's. Every expectation is checked independently: kubectl reads the
API server's objects, `ip -j addr` shows who holds the VIP, arping from the client shows which MACs answer, curl
shows whether the Service works."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import kube as kube_faults
from tests.lab.faults import path as lab_path

ROLE = "k8snet.triage.ingress_path : "
RECORD = ROLE + "Record the findings of this host"
# kube-proxy leaves a Service with this label to the proxy it names: here the lab's hand-made NAT
PROXY_LABEL = {"service.kubernetes.io/service-proxy-name": "k8snet-lab-path"}
L2_CRD = "servicel2statuses.metallb.io"
# captures and probes in time windows: once failed (a task of the role, rc 2) with another worker's lab beside it,
# never alone; it runs with no other worker beside it
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def lb(lab):
    info = lab_path.loadbalancer(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    yield info
    lab_path.path_repair(lab)


def lab_service_objects(lab, lb):
    """service_path.yaml and metallb.yaml with the lab's VIP and its one backend (the web pod on the worker)."""
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "service_path.yaml",
                                                                             "metallb.yaml")]))
    out = []
    for obj in objects:
        obj = copy.deepcopy(obj)
        if obj["kind"] == "Service" and obj["metadata"]["name"] == "web":
            obj["metadata"]["labels"] = dict(obj["metadata"].get("labels") or {}, **PROXY_LABEL)
            obj["status"]["loadBalancer"]["ingress"] = [{"ip": lb["vip"], "ipMode": "VIP"}]
            obj["spec"]["ports"][0]["port"] = lb["vip_port"]
        if obj["kind"] == "EndpointSlice":
            if obj["metadata"]["name"] != "web-x7k2p":
                continue
            endpoint = obj["endpoints"][0]
            endpoint["addresses"], endpoint["nodeName"] = [lb["pod_ip"]], lb["worker"]
            obj["endpoints"] = [endpoint]
            obj["ports"][0]["port"] = lb["pod_port"]
        if obj["kind"] == "ServiceL2Status":
            obj["status"]["node"] = obj["metadata"]["labels"]["metallb.io/node"] = lb["lb"]
        out.append(obj)
    return out


@pytest.fixture(scope="module")
def api(lab, lb, kube_cluster):
    return RealApi(kube_cluster).load_objects(lab_service_objects(lab, lb))


def slice_endpoints(kube_cluster, name="web"):
    """Every endpoint of the Service's EndpointSlices as kubectl reads them, and the slices' managers."""
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", "default", "-l",
                                       "kubernetes.io/service-name=" + name)["items"]
    managers = sorted(s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] for s in slices)
    return [e for s in slices for e in s.get("endpoints") or []], managers


def arping_macs(lab, lb):
    """The MACs answering ARP for the VIP, seen by arping from the client (not our code)."""
    # Thomas Habets' arping: -0 probes from 0.0.0.0 (no cache learns from it), -r prints each reply's MAC
    out = lab.run(["ip", "netns", "exec", lb["client_ns"], "arping", "-0", "-r", "-c", "3", "-w", "3", "-i", "eth0",
                   lb["vip"]], check=False).stdout
    return sorted(set(m.lower() for m in re.findall(r"\b([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5})\b", out)))


def holds_vip(lab, node, vip):
    addrs = json.loads(lab.ns_run(node, ["ip", "-j", "addr", "show", "dev", "eth0"]).stdout)
    return any(a.get("local") == vip for link in addrs for a in link.get("addr_info", []))


def curl(lab, lb):
    return lab.run(["ip", "netns", "exec", lb["client_ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", f"http://{lb['vip']}:{lb['vip_port']}/"], check=False).stdout


def run_role(ansible, lb, api):
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars={
        "ingress_path_service": "default/web", "ingress_path_kubeconfig": str(api.kubeconfig())})
    assert run.rc == 0, run
    return run


def test_the_api_server_holds_the_path_as_kubectl_sees_it(lab, lb, api, kube_cluster):
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "default", "web")
    assert svc["status"]["loadBalancer"]["ingress"][0]["ip"] == lb["vip"]
    endpoints, managers = slice_endpoints(kube_cluster)
    assert [(e["addresses"], e["nodeName"]) for e in endpoints] == [([lb["pod_ip"]], lb["worker"])]
    # the EndpointSlice controller's own slice is there too, empty (the Service selects no pod of the cluster)
    assert managers == ["endpointslice-controller.k8s.io", "k8snet.lab"]
    [status] = kube_cluster.kubectl_json("get", L2_CRD, "-A")["items"]
    assert status["status"]["node"] == lb["lb"]


def test_healthy_path_names_the_announcer(lab, ansible, lb, api):
    assert holds_vip(lab, lb["lb"], lb["vip"]) and curl(lab, lb) == "200"
    assert arping_macs(lab, lb) == [lab.node(lb["lb"]).mac.lower()]
    run = run_role(ansible, lb, api)
    api_read = run.result(ROLE + "Read the Service's VIP, port, ready backends and announcer from the Kubernetes API",
                          "client")
    assert api_read["service"]["vip"] == lb["vip"] and api_read["announcer"]["hosts"] == [lb["lb"]]
    assert [(e["ip"], e["host"], e["port"]) for e in api_read["endpoints"]] == [(lb["pod_ip"], lb["worker"], lb["pod_port"])]
    # the API was read with the kubeconfig given (the API server's audit log): the Service, its slices, nodes,
    # ServiceL2Status
    paths = [r["path"] for r in api.requests]
    assert "/api/v1/namespaces/default/services/web" in paths and "/apis/metallb.io/v1beta1/servicel2statuses" in paths
    facts = run.result(RECORD, "client")["ansible_facts"]
    [finding] = facts["ingress_path_findings"]
    assert finding["check"] == "ingress.ok"
    assert finding["evidence"]["announcer"] == lb["lb"] and finding["evidence"]["lb_nodes"] == [lb["lb"]]
    assert facts["ingress_path_details"]["announcer"] == lb["lb"]
    # the captures ran on the announcer and the backend's node, and nowhere else
    captured = sorted(r["host"] for r in run.results(task=ROLE + "Collect the captures") if "flows" in r["result"])
    assert captured == sorted(["client", lb["lb"], lb["worker"]])
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    assert [h["hop"] for h in bisect["hops"]][:3] == ["client_out", "lb_in", "lb_translated"]


def test_vip_removed_from_its_node_is_unannounced(lab, ansible, lb, api):
    lab.ns_run(lb["lb"], ["ip", "addr", "del", f"{lb['vip']}/32", "dev", "eth0"])
    lab.run(["ip", "-n", lb["client_ns"], "neigh", "flush", "to", lb["vip"]], check=False)
    try:
        assert not any(holds_vip(lab, n.name, lb["vip"]) for n in lab.nodes)
        assert arping_macs(lab, lb) == [] and curl(lab, lb) != "200"
        run = run_role(ansible, lb, api)
    finally:
        lab_path.path_repair(lab)
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    by_check = dict((f["check"], f) for f in findings)
    assert sorted(by_check) == ["ingress.arp", "ingress.vip_unannounced"], findings
    unannounced = by_check["ingress.vip_unannounced"]
    assert unannounced["severity"] == "critical" and unannounced["subject"] == lb["vip"]
    assert unannounced["evidence"]["expected"] == [lb["lb"]]
    assert unannounced["evidence"]["expected_from"] == "load balancer status"
    # no node answers: the announcer is none, and the capture fell back to the node MetalLB names
    assert all(f["evidence"]["announcer"] is None and f["evidence"]["lb_nodes"] == [lb["lb"]] for f in findings)


def test_a_client_whose_gateway_does_not_resolve_is_told_so(lab, ansible, lb, api):
    """The client reaches the VIP through a gateway whose address nobody holds: its neighbour entry fails, nothing
    the client sends to the VIP leaves its segment. The kernel's FAILED entry (ip -j neigh) is the independent
    reader; the role names the unresolved gateway, and no vip_unannounced."""
    gateway = str(lab.network[250])  # on the lab segment, held by no namespace (the VIPs are .200 and up, few)
    lab.run(["ip", "-n", lb["client_ns"], "route", "replace", "%s/32" % lb["vip"], "via", gateway, "dev", "eth0"])
    # the client keeps trying, as a client does: a FAILED entry nothing uses is garbage-collected by the kernel, and
    # the role (a minute later on a loaded machine) would find no entry, not a failed one
    pinger = subprocess.Popen(["ip", "netns", "exec", lb["client_ns"], "ping", "-q", "-i", "0.5", lb["vip"]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert curl(lab, lb) != "200"  # the client tried (its gateway's resolution failed)
        [gw] = json.loads(lab.run(["ip", "-n", lb["client_ns"], "-j", "neigh", "show", gateway]).stdout)
        assert "FAILED" in gw["state"] or "INCOMPLETE" in gw["state"], gw
        run = run_role(ansible, lb, api)
    finally:
        pinger.kill()
        pinger.wait(timeout=30)
        lab.run(["ip", "-n", lb["client_ns"], "route", "del", "%s/32" % lb["vip"]], check=False)
        lab.run(["ip", "-n", lb["client_ns"], "neigh", "flush", "to", gateway], check=False)
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    checks = [f["check"] for f in findings]
    assert "ingress.vip_unannounced" not in checks, findings
    unresolved = [f for f in findings if f["check"] == "ingress.client_gateway_unresolved"]
    assert len(unresolved) == 1, findings
    [unresolved] = unresolved
    assert unresolved["severity"] == "critical" and gateway in unresolved["summary"]
    assert unresolved["evidence"]["client_route"]["gateway_resolved"] is False


def test_a_reply_lost_on_its_way_to_the_client_is_not_an_unannounced_vip(lab, ansible, lb, api):
    """The LB node answers ARP for the VIP but the switch drops the reply before the client's port: asked from the
    client alone that was ingress.vip_unannounced, a false critical (the node does announce). The candidates'
    captures show the reply leaving the LB node; tcpdump on the client and the switch's own counter show it lost."""
    lab_path.drop_arp_replies_to_client(lab)
    try:
        assert arping_macs(lab, lb) == []  # arping from the client gets no reply (not our code)
        run = run_role(ansible, lb, api)
        rules = lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "-j", "list", "table", "bridge",
                         lab_path.NAT_COMMENT]).stdout
    finally:
        lab_path.path_repair(lab)
    dropped = [e["counter"]["packets"] for item in json.loads(rules)["nftables"] if "rule" in item
               for e in item["rule"]["expr"] if "counter" in e]
    assert dropped and dropped[0] > 0, rules  # the switch dropped replies (its counter, not our capture)
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    checks = [f["check"] for f in findings]
    assert "ingress.vip_unannounced" not in checks, findings
    [lost] = [f for f in findings if f["check"] == "ingress.vip_reply_not_delivered"]
    assert lost["severity"] == "critical" and lost["subject"] == lb["vip"]
    assert lb["lb"] + " answered" in lost["summary"]
    seen = lost["evidence"]["nodes_arp"]
    assert seen[lb["lb"]]["replies_out"] >= 1 and seen[lb["lb"]]["requests_in"] >= 1
    assert all(seen[n]["replies_out"] == 0 for n in seen if n != lb["lb"])
    # the candidates' ARP captures ran on every node of the play but the client, and were cleaned up
    captured = sorted(r["host"] for r in run.results(task=ROLE + "Collect the ARP captures") if "flows" in r["result"])
    assert captured == sorted(n.name for n in lab.nodes)
    # this run's capture directories (the tempfile task's paths: not a glob, which would also see other runs') are gone
    mkdir = ROLE + "Make a private directory for the ARP capture on the announcer candidates (mode 0700)"
    made = [r["result"]["path"] for r in run.results(task=mkdir) if "path" in r["result"]]
    assert len(made) == len(lab.nodes) and all(p.startswith("/var/tmp/k8snet-arp-") for p in made), made
    assert not lab.run(["ls", "-d"] + made, check=False).stdout.strip()


def test_arp_right_and_traffic_lost_on_the_way_is_the_fabric(lab, ansible, lb, api):
    """The LB node answers ARP for the VIP and the client gets its reply, but the switch drops the client's IPv4
    packets to the VIP (an SDN ignoring ARP replies, an ACL). That was ingress.arp, pointing at the VIP's owner and
    the caches; it is the network between. arping from the client (its MAC), curl (fails), the client's kernel
    neighbour entry (the LB node's MAC) and the switch's own counter are the independent readers."""
    lab_path.drop_vip_traffic_from_client(lab)
    try:
        assert arping_macs(lab, lb) == [lab.node(lb["lb"]).mac.lower()]
        assert curl(lab, lb) != "200"
        [entry] = json.loads(lab.run(["ip", "-n", lb["client_ns"], "-j", "neigh", "show", "to", lb["vip"]]).stdout)
        assert entry["lladdr"].lower() == lab.node(lb["lb"]).mac.lower(), entry
        lab.run(["ip", "-n", lb["client_ns"], "neigh", "flush", "to", lb["vip"]], check=False)
        run = run_role(ansible, lb, api)
        rules = lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "-j", "list", "table", "bridge",
                         lab_path.NAT_COMMENT]).stdout
    finally:
        lab_path.path_repair(lab)
    dropped = [e["counter"]["packets"] for item in json.loads(rules)["nftables"] if "rule" in item
               for e in item["rule"]["expr"] if "counter" in e]
    assert dropped and dropped[0] > 0, rules
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    checks = [f["check"] for f in findings]
    assert "ingress.arp" not in checks and "ingress.vip_unannounced" not in checks, findings
    [fabric] = [f for f in findings if f["check"] == "ingress.fabric"]
    assert fabric["severity"] == "critical" and fabric["layer"] == "L2" and "SDN" in fabric["remediation"]
    sides = fabric["evidence"]["fabric"]
    assert sides["arp_answered_by"] == {"mac": lab.node(lb["lb"]).mac.lower(), "hosts": [lb["lb"]]}
    assert sides["client"]["tcp_out"] >= 1 and sides["client"]["arp_replies"] >= 1
    assert sides["lb_nodes"] == {lb["lb"]: {"tcp_in": 0}}
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    assert bisect["vanished_at"] == "fabric" and [h["hop"] for h in bisect["hops"]] == ["client_out", "lb_in"]


def test_two_nodes_answering_is_an_announcer_mismatch(lab, ansible, lb, api):
    other = next(n.name for n in lab.nodes if n.name not in (lb["lb"], lb["worker"]))
    lab.ns_run(other, ["ip", "addr", "replace", f"{lb['vip']}/32", "dev", "eth0"])
    lab.run(["ip", "-n", lb["client_ns"], "neigh", "flush", "to", lb["vip"]], check=False)
    try:
        assert holds_vip(lab, other, lb["vip"]) and holds_vip(lab, lb["lb"], lb["vip"])
        assert arping_macs(lab, lb) == sorted([lab.node(lb["lb"]).mac.lower(), lab.node(other).mac.lower()])
        run = run_role(ansible, lb, api)
    finally:
        lab.ns_run(other, ["ip", "addr", "del", f"{lb['vip']}/32", "dev", "eth0"], check=False)
        lab_path.path_repair(lab)
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    [mismatch] = [f for f in findings if f["check"] == "ingress.announcer_mismatch"]
    assert mismatch["severity"] == "critical" and "2 MACs answer" in mismatch["summary"]
    owners = dict((a["mac"], a["hosts"]) for a in mismatch["evidence"]["answering"])
    assert owners == {lab.node(lb["lb"]).mac.lower(): [lb["lb"]], lab.node(other).mac.lower(): [other]}
    assert mismatch["evidence"]["holders"] == sorted([lb["lb"], other])
    assert all("announcer" in f["evidence"] for f in findings if f["check"].startswith("ingress."))


def crd_gone(kube_cluster):
    return kube_cluster.kubectl("get", "crd", L2_CRD, check=False).returncode != 0


def test_module_falls_back_to_events_without_the_crd_and_takes_k8s_auth_env(lab, ansible, lb, api, kube_cluster):
    """A cluster without MetalLB's CRD: the speaker's nodeAssigned event names the announcer.  The credentials
    come from K8S_AUTH_KUBECONFIG (what AWX's Kubernetes credential sets), not from an option."""
    kube_cluster.kubectl("delete", "crd", L2_CRD, "--wait=false")
    os.environ["K8S_AUTH_KUBECONFIG"] = str(api.kubeconfig())
    try:
        kube_cluster.wait_for("CRD %s deleted" % L2_CRD, lambda: crd_gone(kube_cluster), timeout=120)
        proc = kube_cluster.kubectl("get", L2_CRD, "-A", check=False)
        assert proc.returncode != 0, proc.stdout  # kubectl: the server doesn't have a resource type
        [event] = kube_cluster.kubectl_json("get", "events", "-n", "default", "--field-selector",
                                            "reason=nodeAssigned")["items"]
        res = ansible.module("localhost", "service_path_info", {"service": "default/web", "port": "http"})["localhost"]
    finally:
        del os.environ["K8S_AUTH_KUBECONFIG"]
        kube_cluster.wait_for("CRD %s deleted" % L2_CRD, lambda: crd_gone(kube_cluster), timeout=120)
        api.load_objects([o for o in lab_service_objects(lab, lb) if o["kind"] == "ServiceL2Status"])
    assert not res["failed"], res
    assert res["announcer"]["source"] == "events" and res["announcer"]["nodes"] == ["node1"]
    assert 'node "node1"' in event["message"]
    assert res["service"]["vip"] == lb["vip"] and res["service"]["port"] == lb["vip_port"]
    # without inventory no host is named, and no node is reported missing
    assert [(e["ip"], e["node"], e["host"]) for e in res["endpoints"]] == [(lb["pod_ip"], lb["worker"], None)]
    assert res["findings"] == []


def test_a_backend_node_outside_the_inventory_is_named(lab, ansible, lb, api, kube_cluster):
    """The backend's node is no inventory host: named in a service.node_not_in_inventory finding, not skipped."""
    inventory = {"client": {}, "node1": {}, "node3": {}}
    args = {"service": "default/web", "kubeconfig": str(api.kubeconfig()), "inventory": inventory}
    res = ansible.module("localhost", "service_path_info", args)["localhost"]
    [finding] = res["findings"]
    assert (finding["check"], finding["subject"]) == ("service.node_not_in_inventory", lb["worker"])
    [endpoint] = slice_endpoints(kube_cluster)[0]
    assert endpoint["nodeName"] == lb["worker"]


@pytest.mark.parametrize("service, message", [
    ("default/nope", "Service default/nope not found"),
    ("default/../web", "service name='../web' is invalid"),
])
def test_a_wrong_service_fails_clearly_before_any_capture(lab, ansible, lb, api, service, message):
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars={
        "ingress_path_service": service, "ingress_path_kubeconfig": str(api.kubeconfig())})
    assert run.rc != 0
    failed = run.result(ROLE + "Read the Service's VIP, port, ready backends and announcer from the Kubernetes API",
                        "client")
    assert message in failed["msg"], failed["msg"]
    assert not run.results(task=ROLE + "Start the capture on this hop")
    # the API server saw no request for a name that is not a Kubernetes name (its audit log)
    if ".." in service:
        assert api.requests and not [r for r in api.requests if ".." in r["path"]]


# ------------------------------------------------------------------ every backend
@pytest.fixture(scope="module")
def balanced(lab, lb, api, kube_cluster):
    """Two backends (web on node2, web2 on node3) balanced round-robin by native nft on the LB node, and the
    Service's EndpointSlice listing both (as the controller that keeps it writes it)."""
    setup = lab_path.two_backends(lab)
    [eps] = [o for o in lab_service_objects(lab, lb) if o["kind"] == "EndpointSlice"]
    path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/" + eps["metadata"]["name"]
    second = copy.deepcopy(eps["endpoints"][0])
    b2 = setup["backends"][1]
    second["addresses"], second["nodeName"] = [b2["ip"]], b2["node"]
    second["targetRef"] = dict(second["targetRef"], name="web-5d8f7-fghij")
    kube_cluster.request("PATCH", path, {"endpoints": eps["endpoints"] + [second]},
                         content_type="application/merge-patch+json")
    yield dict(setup, api=api)
    kube_cluster.request("PATCH", path, {"endpoints": eps["endpoints"]}, content_type="application/merge-patch+json")
    lab_path.one_backend(lab)
    lab_path.path_repair(lab)


def http_log_hits(lab, name):
    return (lab.workdir / f"http-{name}.log").read_text().count('"GET /')


def test_every_backend_is_captured_and_each_probe_attributed(lab, ansible, lb, balanced, kube_cluster):
    endpoints = slice_endpoints(kube_cluster)[0]
    assert sorted(e["addresses"][0] for e in endpoints) == sorted(b["ip"] for b in balanced["backends"])
    # independently: the nft DNAT balances (each pod's own HTTP server logs one of two GETs)
    before = {n: http_log_hits(lab, n) for n in ("web", "web2")}
    assert [curl(lab, lb), curl(lab, lb)] == ["200", "200"]
    assert {n: http_log_hits(lab, n) - before[n] for n in before} == {"web": 1, "web2": 1}
    run = run_role(ansible, lb, balanced["api"])
    [finding] = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    assert finding["check"] == "ingress.ok" and "2 backends" in finding["summary"], finding
    rows = dict((r["ip"], r) for r in finding["evidence"]["backends"])
    assert set(rows) == {b["ip"] for b in balanced["backends"]}
    assert all(r["verdict"] == "ok" and r["translated"] > 0 for r in rows.values()), rows
    captured = sorted(r["host"] for r in run.results(task=ROLE + "Collect the captures") if "flows" in r["result"])
    assert captured == ["client", "node1", "node2", "node3"]


def test_broken_route_on_one_worker_is_that_backend_not_nat(lab, ansible, lb, balanced):
    b2 = balanced["backends"][1]
    lab_path.break_backend_route(lab, "web2")
    try:
        # independently: node3 has no route to web2 any more, and one of two requests fails
        assert lab.ns_run(b2["node"], ["ip", "-j", "route", "get", b2["ip"]], check=False).returncode != 0
        assert sorted([curl(lab, lb), curl(lab, lb)]) != ["200", "200"]
        run = run_role(ansible, lb, balanced["api"])
    finally:
        lab_path.path_repair(lab)
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    assert [f["check"] for f in findings] == ["ingress.pod_forwarding"], findings
    finding = findings[0]
    assert (finding["evidence"]["backend"]["pod"], finding["evidence"]["backend"]["host"]) == ("web-5d8f7-fghij", "node3")
    assert "node3 has no route to %s" % b2["ip"] in finding["summary"]
    verdicts = dict((r["ip"], r["verdict"]) for r in finding["evidence"]["backends"])
    assert verdicts == {lb["pod_ip"]: "ok", b2["ip"]: "vanished"}
    assert finding["evidence"]["announcer"] == lb["lb"]


def test_a_client_behind_a_router_proves_nothing_by_arp(lab, ansible, lb, api):
    """The client reaches the VIP through a gateway (here node1, routing for it): ARP from it for the VIP would
    ask on a segment the VIP is not on.  That was ingress.vip_unannounced, a false critical; now the client's
    route is said, the holders are named from the nodes' side, and the packet walk still runs."""
    route = ["ip", "-n", lb["client_ns"], "route", "replace", "%s/32" % lb["vip"], "via", lab.node(lb["lb"]).ip,
             "dev", "eth0"]
    lab.run(route)
    try:
        got = json.loads(lab.run(["ip", "-n", lb["client_ns"], "-j", "route", "get", lb["vip"]]).stdout)
        assert got[0]["gateway"] == lab.node(lb["lb"]).ip  # the kernel's own word: off the VIP's segment
        assert curl(lab, lb) == "200"
        run = run_role(ansible, lb, api)
    finally:
        lab.run(["ip", "-n", lb["client_ns"], "route", "del", "%s/32" % lb["vip"]], check=False)
    probe = run.result(ROLE + "Ask from the client which MACs answer ARP for the VIP (RFC 5227 probes, no cache "
                              "touched)", "client")
    via = probe["off_subnet"][lb["vip"]]
    assert (via["gateway"], via["interface"]) == (lab.node(lb["lb"]).ip, "eth0")
    # the gateway's neighbour entry as the client's kernel holds it (ip -j neigh, read after the run: it was used)
    [gw] = json.loads(lab.run(["ip", "-n", lb["client_ns"], "-j", "neigh", "show", lab.node(lb["lb"]).ip]).stdout)
    assert via["gateway_resolved"] is True and gw["lladdr"] in via["gateway_neighbor"]
    assert lb["vip"] not in probe["probes"]
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    checks = sorted(f["check"] for f in findings)
    assert "ingress.vip_unannounced" not in checks, findings
    [off] = [f for f in findings if f["check"] == "ingress.client_off_subnet"]
    assert off["severity"] == "info" and "the nodes holding it: %s" % lb["lb"] in off["summary"]
