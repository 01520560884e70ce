"""ingress_path through nodeIP:nodePort: a NodePort Service (no VIP) read from the stand-in, every node of the play
probed at its own IP on the nodePort and captured there, each node walked on its own; and the role refusing to
bisect when the play lacks a host the path needs (--limit, as a slice of an AWX sliced job would).

Independently: kubectl shows the Service as the stand-in serves it, curl from the client shows which nodes answer
on the nodePort, iptables-save shows the NodePort rule gone on the broken node."""

from __future__ import annotations

import copy

import pytest

from tests.kube_api import FIXTURES, StandIn, load_yaml
from tests.kube_api.helpers import kubectl
from tests.integration.test_service_path import RECORD, ROLE, lab_service_objects
from tests.lab.faults import kube as kube_faults
from tests.lab.faults import path as lab_path


@pytest.fixture(scope="module")
def lb(lab):
    info = lab_path.loadbalancer(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    info["nodeport"] = lab_path.nodeport(lab)
    yield info
    lab_path.no_nodeport(lab)
    lab_path.path_repair(lab)


@pytest.fixture(scope="module")
def api(lab, lb):
    """Service default/web-np: the web Service as type NodePort (nodePort 30080, no VIP), its one backend the web pod;
    and default/web, the LoadBalancer Service of test_service_path (its VIP, nodePort 30080)."""
    objects = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "service_path.yaml")]))
    [svc] = [copy.deepcopy(o) for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "web"]
    svc["metadata"] = {"name": "web-np", "namespace": "default"}
    svc["spec"]["type"] = "NodePort"
    svc["spec"]["clusterIP"] = svc["spec"]["clusterIPs"][0] = lab.service_ip(81)
    svc["spec"]["ports"] = [dict(svc["spec"]["ports"][0], port=lb["vip_port"], nodePort=lab_path.NODE_PORT)]
    svc["status"] = {"loadBalancer": {}}
    [eps] = [copy.deepcopy(o) for o in objects if o["kind"] == "EndpointSlice" and o["metadata"]["name"] == "web-x7k2p"]
    eps["metadata"]["name"] = "web-np-4xk2p"
    eps["metadata"]["labels"]["kubernetes.io/service-name"] = "web-np"
    endpoint = eps["endpoints"][0]
    endpoint["addresses"], endpoint["nodeName"] = [lb["pod_ip"]], lb["worker"]
    eps["endpoints"], eps["ports"] = [endpoint], [dict(eps["ports"][0], port=lb["pod_port"])]
    server = StandIn(lab_service_objects(lab, lb) + [svc, eps], lab.workdir / "kube-api-nodeport",
                     lab.controller_ip).start()
    yield server
    server.stop()


def curl_node(lab, lb, node):
    return lab.run(["ip", "netns", "exec", lb["client_ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", f"http://{lab.node(node).ip}:{lab_path.NODE_PORT}/"],
                   check=False).stdout


def run_role(ansible, lb, api, **extra):
    # the role's own capture window (ingress_path_duration, 60 s): the captures stop as soon as the probes are sent,
    # and the window must cover the role's tasks up to the probes however loaded the machine is (30 s did not, with
    # another pytest worker beside it: a capture that ended before the probes was read as where they vanished)
    return ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars=dict({
        "ingress_path_service": "default/web-np", "ingress_path_kubeconfig": str(api.kubeconfig())}, **extra))


def findings_by_entry(run):
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    assert all(f["check"].startswith("ingress.") for f in findings), findings
    return dict((f["evidence"]["entry_node"], f) for f in findings), findings


def test_nodeport_service_every_node_probed_and_captured(lab, ansible, lb, api):
    svc = kubectl(api.kubeconfig(), "get", "svc", "-n", "default", "web-np")
    assert svc["spec"]["type"] == "NodePort" and svc["spec"]["ports"][0]["nodePort"] == lab_path.NODE_PORT
    assert [curl_node(lab, lb, n.name) for n in lab.nodes] == ["200"] * len(lab.nodes)
    run = run_role(ansible, lb, api)
    assert run.rc == 0, run
    by_entry, findings = findings_by_entry(run)
    assert len(findings) == len(lab.nodes) and sorted(by_entry) == sorted(n.name for n in lab.nodes), findings
    assert all(f["check"] == "ingress.ok" and f["evidence"]["entry"] == "nodeport" for f in findings), findings
    for name, item in by_entry.items():
        assert item["subject"] == "%s:%d" % (lab.node(name).ip, lab_path.NODE_PORT)
    # the client probed each node's IP on the nodePort; each node captured with the nodePort in its filter
    probe = run.result(ROLE + "Send TCP probes from the client to the VIP", "client")
    assert sorted(set((t["address"], t["tcp"]["port"]) for t in probe["targets"])) == sorted(
        (n.ip, lab_path.NODE_PORT) for n in lab.nodes)
    captures = [r for r in run.results(task=ROLE + "Collect the captures") if "flows" in r["result"]]
    assert sorted(r["host"] for r in captures) == sorted(["client"] + [n.name for n in lab.nodes])
    assert all(r["result"]["stopped_by_file"] for r in captures), [(r["host"], r["result"]["seconds"]) for r in captures]
    assert all("port %d" % lab_path.NODE_PORT in r["result"]["filter"] for r in captures)
    # no announcer was looked for (a NodePort has no VIP), and the API made no service.no_vip finding
    arp = ROLE + "Ask from the client which MACs answer ARP for the VIP (RFC 5227 probes, no cache touched)"
    assert not [r for r in run.results(task=arp) if r["status"] == "ok" and "probes" in r["result"]]
    api_read = run.result(ROLE + "Read the Service's VIP, port, ready backends and announcer from the Kubernetes API",
                          "client")
    assert api_read["service"]["node_port"] == lab_path.NODE_PORT and api_read["findings"] == [], api_read["findings"]


def test_one_node_without_its_nodeport_rule_is_that_node_nat(lab, ansible, lb, api):
    lab_path.break_nodeport(lab, "node3")
    try:
        assert "k8t-path-np" not in lab.ns_run("node3", ["iptables-save", "-t", "nat"]).stdout.replace("k8t-path-np-masq", "")
        assert [curl_node(lab, lb, n) for n in ("node1", "node2", "node3")] == ["200", "200", "000"]
        run = run_role(ansible, lb, api)
    finally:
        lab_path.nodeport(lab)
    assert run.rc == 0, run
    by_entry, findings = findings_by_entry(run)
    assert {n: f["check"] for n, f in by_entry.items()} == {"node1": "ingress.ok", "node2": "ingress.ok",
                                                            "node3": "ingress.nat"}, findings
    assert by_entry["node3"]["summary"].startswith("via node node3: ")


def test_manual_lb_a_vip_outside_the_cluster_goes_through_the_given_nodes(lab, ansible, lb, api):
    """ManualLB: the LoadBalancer Service's VIP is on a load balancer outside the cluster that forwards to
    nodeIP:nodePort; ingress_path_entry=nodeport probes the given entry nodes (a survey's comma-separated text)."""
    svc = kubectl(api.kubeconfig(), "get", "svc", "-n", "default", "web")
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["ports"][0]["nodePort"] == lab_path.NODE_PORT
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars={
        "ingress_path_service": "default/web", "ingress_path_kubeconfig": str(api.kubeconfig()),
        "ingress_path_entry": "nodeport", "ingress_path_entry_nodes": "node1, node2"})
    assert run.rc == 0, run
    by_entry, findings = findings_by_entry(run)
    assert {n: f["check"] for n, f in by_entry.items()} == {"node1": "ingress.ok", "node2": "ingress.ok"}, findings
    probe = run.result(ROLE + "Send TCP probes from the client to the VIP", "client")
    assert sorted(set(t["address"] for t in probe["targets"])) == sorted([lab.node("node1").ip, lab.node("node2").ip])
    # node3 is no entry node and holds no backend: it captured nothing
    assert not [r for r in run.results(task=ROLE + "Collect the captures", host="node3") if "flows" in r["result"]]


def test_a_capture_that_ends_before_it_is_told_to_stop_judges_no_hop(lab, ansible, lb, api):
    """Under load the captures' window could close before the probes (the flake of the test above, issue 47): a
    capture that ended by itself (here: ingress_path_max_packets reached) fails the run naming it, no finding is
    made from what it may lack."""
    run = run_role(ansible, lb, api, ingress_path_max_packets=4)
    assert run.rc != 0
    captures = [r for r in run.results(task=ROLE + "Collect the captures") if "flows" in r["result"]]
    assert captures and not any(r["result"]["stopped_by_file"] for r in captures)
    messages = " ".join(str(r["result"].get("msg")) for r in run.records if r["status"] == "failed")
    assert "ended before it was told to stop" in messages and "raise ingress_path_duration" in messages, messages
    # the client, which judges every hop, records nothing; the nodes keep their empty record
    assert not run.results(task=RECORD, host="client")
    assert all(r["result"]["ansible_facts"]["ingress_path_findings"] == [] for r in run.results(task=RECORD))


def test_a_play_without_the_backends_node_names_it_instead_of_a_finding(lab, ansible, lb, api):
    """--limit leaves the worker (the backend's node) out, as a slice of an AWX sliced job would: the role fails
    naming it, or with ingress_path_missing_hosts=skip records the reason; no capture starts, no finding is made."""
    args = dict(inventory=lb["inventory"], limit="client,node1,node3")
    extra = {"ingress_path_service": "default/web-np", "ingress_path_kubeconfig": str(api.kubeconfig())}
    run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, **args)
    assert run.rc != 0
    messages = " ".join(str(r["result"].get("msg")) for r in run.records if r["status"] == "failed")
    assert "missing host(s) %s" % lb["worker"] in messages, messages
    assert not run.results(task=ROLE + "Start the capture on this hop")
    run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=dict(extra, ingress_path_missing_hosts="skip"), **args)
    assert run.rc == 0, run
    facts = run.result(ROLE + "Say which hosts the path needs and this play does not hold", "client")["ansible_facts"]
    assert "missing host(s) %s" % lb["worker"] in facts["ingress_path_skip_reason"] and facts["ingress_path_findings"] == []
    assert not run.results(task=ROLE + "Start the capture on this hop") and not run.results(task=RECORD)
