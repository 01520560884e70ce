"""ingress_path through nodeIP:nodePort: a NodePort Service (no VIP) of the lab's real control plane
(tests/lab/cluster.py), every node of the play probed at its own IP on the nodePort and captured there, each node
walked on its own; and the role refusing to bisect when the play lacks a host the path needs (--limit, as a slice of
an AWX sliced job would).

The nodePort is kube-proxy's own: Service default/web-np (type NodePort, nodePort 30080) selects the lab's web pod
(tests/lab/faults/path.py, behind node2), its Pod bound there and its status written as its kubelet would
(Cluster.run_pod); the EndpointSlice is the real controller's, and kube-proxy on every node (iptables mode on node1
and node3, nftables on node2) DNATs the node's port 30080 to the pod. default/web is the LoadBalancer Service of the
same pod (its nodePort the API server's choice), with MetalLB's ServiceL2Status (its upstream CRD) naming node1.

Independently: kubectl shows the Services and slices as the API server holds them, curl from the client shows which
nodes answer on the nodePort, iptables-save shows kube-proxy's NodePort rule gone on the broken node."""

from __future__ import annotations

import shlex

import pytest

from tests.integration.test_service_path import RECORD, ROLE
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import path as lab_path

POD = "web-5d8f7-abcde"


@pytest.fixture(scope="module")
def lb(lab):
    info = lab_path.loadbalancer(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    yield info
    lab_path.path_repair(lab)


def service(name, kind, node_port=None):
    port = {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    if node_port:
        port["nodePort"] = node_port
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": kind, "selector": {"app": "web"}, "ports": [port]}}


@pytest.fixture(scope="module")
def api(lab, lb, kube_cluster):
    """default/web-np (NodePort 30080) and default/web (LoadBalancer, the VIP in its status as a load-balancer
    controller writes it; MetalLB's ServiceL2Status names node1), both selecting the web pod behind node2."""
    real = RealApi(kube_cluster, "metallb.yaml")
    kube_cluster.run_pod("default", POD, lb["worker"], lb["pod_ip"], labels={"app": "web"},
                         containers=[{"name": "web", "image": "lab.invalid/web:1",
                                      "ports": [{"containerPort": lb["pod_port"], "name": "http"}]}])
    kube_cluster.apply([service("web-np", "NodePort", lab_path.NODE_PORT), service("web", "LoadBalancer")])
    kube_cluster.patch_status("/api/v1/namespaces/default/services/web",
                              {"loadBalancer": {"ingress": [{"ip": lb["vip"], "ipMode": "VIP"}]}})
    # kube-proxy on every node has synced the Service: each node's port answers from the client (the client's first
    # requests may also wait for its ARP)
    kube_cluster.wait_for("every node's nodePort %d answering" % lab_path.NODE_PORT, lambda: [
        curl_node(lab, lb, n.name) for n in lab.nodes] == ["200"] * len(lab.nodes), timeout=90, interval=1)
    return real


def nodeport_rules(lab, node, port=lab_path.NODE_PORT):
    """kube-proxy's rules (iptables mode) that catch the node's port ``port``, as iptables-save prints them."""
    return [r for r in lab.ns_run(node, ["iptables-save", "-t", "nat"]).stdout.splitlines()
            if r.startswith("-A KUBE-NODEPORTS ") and "--dport %d " % port in r + " "]


def curl_node(lab, lb, node, port=lab_path.NODE_PORT):
    return lab.run(["ip", "netns", "exec", lb["client_ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", f"http://{lab.node(node).ip}:{port}/"],
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


def test_nodeport_service_every_node_probed_and_captured(lab, ansible, lb, api, kube_cluster):
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "default", "web-np")
    assert svc["spec"]["type"] == "NodePort" and svc["spec"]["ports"][0]["nodePort"] == lab_path.NODE_PORT
    [slice_] = kube_cluster.kubectl_json("get", "endpointslices", "-n", "default", "-l",
                                         "kubernetes.io/service-name=web-np")["items"]
    assert [(e["addresses"], e["nodeName"]) for e in slice_["endpoints"]] == [([lb["pod_ip"]], lb["worker"])]
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


def test_one_node_without_its_nodeport_rule_is_that_node_nat(lab, ansible, lb, api, kube_cluster):
    """kube-proxy on node3 crashed and its NodePort rule went with an iptables flush of that chain's rule (kube-proxy
    would write it again at its next sync: it stays stopped until the run is done)."""
    assert kube_cluster.proxy_mode("node3") == "iptables"
    rules = nodeport_rules(lab, "node3")
    assert rules
    kube_cluster.stop_proxy("node3")
    try:
        for rule in rules:
            lab.ns_run("node3", ["iptables", "-w", "-t", "nat", "-D", *shlex.split(rule)[1:]])
        assert nodeport_rules(lab, "node3") == []
        assert [curl_node(lab, lb, n) for n in ("node1", "node2", "node3")] == ["200", "200", "000"]
        run = run_role(ansible, lb, api)
    finally:
        kube_cluster.start_proxy("node3")
        kube_cluster.wait_for("node3's nodePort answering again", lambda: curl_node(lab, lb, "node3") == "200",
                              timeout=90, interval=1)
    assert run.rc == 0, run
    by_entry, findings = findings_by_entry(run)
    assert {n: f["check"] for n, f in by_entry.items()} == {"node1": "ingress.ok", "node2": "ingress.ok",
                                                            "node3": "ingress.nat"}, findings
    assert by_entry["node3"]["summary"].startswith("via node node3: ")


def test_manual_lb_a_vip_outside_the_cluster_goes_through_the_given_nodes(lab, ansible, lb, api, kube_cluster):
    """ManualLB: the LoadBalancer Service's VIP is on a load balancer outside the cluster that forwards to
    nodeIP:nodePort; ingress_path_entry=nodeport probes the given entry nodes (a survey's comma-separated text)."""
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "default", "web")
    node_port = svc["spec"]["ports"][0]["nodePort"]
    assert svc["spec"]["type"] == "LoadBalancer" and 30000 <= node_port <= 32767 and node_port != lab_path.NODE_PORT
    assert [curl_node(lab, lb, n, node_port) for n in ("node1", "node2")] == ["200", "200"]
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars={
        "ingress_path_service": "default/web", "ingress_path_kubeconfig": str(api.kubeconfig()),
        "ingress_path_entry": "nodeport", "ingress_path_entry_nodes": "node1, node2"})
    assert run.rc == 0, run
    by_entry, findings = findings_by_entry(run)
    assert {n: f["check"] for n, f in by_entry.items()} == {"node1": "ingress.ok", "node2": "ingress.ok"}, findings
    probe = run.result(ROLE + "Send TCP probes from the client to the VIP", "client")
    assert sorted(set((t["address"], t["tcp"]["port"]) for t in probe["targets"])) == sorted(
        [(lab.node("node1").ip, node_port), (lab.node("node2").ip, node_port)])
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
