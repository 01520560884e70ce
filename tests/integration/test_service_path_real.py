"""service_path_info and the ingress_path role over a real cluster (tests/lab/cluster.py): the Service, its
EndpointSlices and its nodePort are the real API server's and EndpointSlice controller's, the DNAT on the announcing
node is kube-proxy's own (iptables mode on node1). The lab writes only what is not the cluster's: the pods' status
(the kubelet's part), status.loadBalancer.ingress (a load-balancer controller's) and the VIP on node1's eth0 (as
keepalived or kube-vip hold one; MetalLB's speaker binds none, it answers ARP itself: test_real_metallb.py runs it).
The client is outside the cluster (tests/lab/faults/path.py).

Independent readers: kubectl from the same release, ``iptables-save`` in node1's namespace, ``ip -j route`` on the
backend's node and curl from the client.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_ingress_path import observed_source
from tests.lab.faults import path as lab_path

NS = "shop"
NAME = "web"
ROLE = "k8snet.triage.ingress_path : "
RECORD = ROLE + "Record the findings of this host"
BISECT = ROLE + "Find the first hop where the probes vanished"
EGRESS_RECORD = "k8snet.triage.egress : Record the findings of this host"
EGRESS_PROBE = ("k8snet.triage.egress : Send TCP probes from the pod's network namespace (found by the pod's IP, or "
                "egress_pod_pid)")
# captures and probes in time windows (as test_service_path.py): no other worker beside it
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def svc(lab, kube_cluster):
    """shop/web: a LoadBalancer Service (externalTrafficPolicy Cluster) whose one pod runs behind node2; its VIP
    written to its status and bound on node1's eth0 (the announcer); the client outside the cluster."""
    info = kube_cluster.web_service(NS, NAME, nodes=("node2",), vip_index=12, policy="Cluster")
    lab_path.masquerade(lab)
    info["client"] = lab_path.client(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    lab.ns_run("node1", ["ip", "addr", "replace", "%s/32" % info["vip"], "dev", "eth0"])
    [info["pod"]] = info["pods"]
    kube_cluster.wait_for("kube-proxy's DNAT of %s on node1" % info["vip"],
                          lambda: dnat_rules(lab, info["vip"], info["pod"]["ip"]), timeout=60)
    yield info


def dnat_rules(lab, vip, pod_ip):
    """kube-proxy's rules on node1 (iptables mode) that send the VIP to the pod: the chain jump for VIP:80 and the
    endpoint's DNAT, as iptables-save prints them."""
    rules = lab.ns_run("node1", ["iptables-save", "-t", "nat"]).stdout.splitlines()
    to_vip = [r for r in rules if "-d %s/32" % vip in r and "--dport 80" in r and "shop/web:http" in r]
    to_pod = [r for r in rules if "DNAT" in r and "--to-destination %s:8080" % pod_ip in r]
    return to_vip and to_pod and (to_vip, to_pod)


def curl(lab, svc, address=None, port=80):
    return lab.run(["ip", "netns", "exec", svc["client"]["ns"], "curl", "-s", "--connect-timeout", "1", "-m", "2",
                    "http://%s:%d/" % (address or svc["vip"], port)], check=False).stdout


def slice_endpoints(kube_cluster, name=NAME):
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", NS, "-l", "kubernetes.io/service-name=" + name)
    return [e for s in slices["items"] for e in s.get("endpoints") or []]


def all_terminating(endpoints):
    """The endpoints when there are some and every one is marked terminating, else None."""
    if endpoints and all((e.get("conditions") or {}).get("terminating") for e in endpoints):
        return endpoints
    return None


def path_info(ansible, kube_cluster, service):
    args = {"kubeconfig": str(kube_cluster.kubeconfig()), "service": service}
    result = ansible.module("localhost", "service_path_info", args)["localhost"]
    assert not result["failed"], result
    return result


def run_role(ansible, kube_cluster, svc):
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=svc["inventory"], extra_vars={
        "ingress_path_service": "%s/%s" % (NS, NAME), "ingress_path_kubeconfig": str(kube_cluster.kubeconfig())})
    assert run.rc == 0, run
    return run


def test_service_path_info_reads_the_real_service_and_slices(lab, ansible, kube_cluster, svc):
    """What the API server allocated and the controller wrote, as kubectl reads it, is what the module returns."""
    spec = kube_cluster.kubectl_json("get", "svc", "-n", NS, NAME)
    [endpoint] = slice_endpoints(kube_cluster)
    assert endpoint["addresses"] == [svc["pod"]["ip"]] and endpoint["nodeName"] == "node2"
    assert endpoint["conditions"] == {"ready": True, "serving": True, "terminating": False}
    result = path_info(ansible, kube_cluster, "%s/%s" % (NS, NAME))
    view = result["service"]
    assert view["vip"] == svc["vip"] and view["vip_source"] == "status.loadBalancer.ingress"
    assert view["cluster_ip"] == spec["spec"]["clusterIP"] and view["node_port"] == svc["node_port"]
    assert view["target_port"] == "http", view  # named in the Service; the slice gives its number
    assert [(e["ip"], e["port"], e["node"], e["pod"]) for e in result["endpoints"]] == [
        (svc["pod"]["ip"], 8080, "node2", svc["pod"]["name"])]
    # no MetalLB here: nothing names the announcer, the role finds it from the ARP answers
    assert result["announcer"]["source"] is None
    assert [f["check"] for f in result["findings"]] == ["service.announcer_unknown"]


def test_role_walks_the_real_kube_proxy_dnat(lab, ansible, kube_cluster, svc):
    # the client's first request: until kube-proxy on node1 has synced the Service and the client has learned the
    # VIP's MAC it may go unanswered (seen once under CI's two workers); the path must answer within 30 s
    kube_cluster.wait_for("the client's request answered through the VIP",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    run = run_role(ansible, kube_cluster, svc)
    facts = run.result(RECORD, "client")["ansible_facts"]
    checks = sorted(f["check"] for f in facts["ingress_path_findings"])
    assert checks == ["ingress.ok", "service.announcer_unknown"], facts["ingress_path_findings"]
    ok = [f for f in facts["ingress_path_findings"] if f["check"] == "ingress.ok"][0]
    assert ok["evidence"]["announcer"] == "node1"
    bisect = run.result(BISECT, "client")["ansible_facts"]["__ingress_path_bisect"]
    assert bisect["vanished_at"] is None, bisect["hops"]
    hops = dict((h["hop"], h["packets"]) for h in bisect["hops"])
    # kube-proxy translated on node1: the probes were seen there after the DNAT, toward the pod
    assert hops.get("lb_translated", 0) > 0, bisect["hops"]
    captured = sorted(r["host"] for r in run.results(task=ROLE + "Collect the captures") if "flows" in r["result"])
    assert captured == ["client", "node1", "node2"]


def test_pod_route_removed_is_named(lab, ansible, kube_cluster, svc):
    pod = svc["pod"]
    lab.ns_run("node2", ["ip", "route", "del", "%s/32" % pod["ip"]])
    try:
        assert lab.ns_run("node2", ["ip", "-j", "route", "get", pod["ip"]], check=False).returncode != 0
        assert curl(lab, svc) == ""
        assert dnat_rules(lab, svc["vip"], pod["ip"])  # kube-proxy's rules are still there: the break is below them
        run = run_role(ansible, kube_cluster, svc)
    finally:
        lab.ns_run("node2", ["ip", "route", "replace", "%s/32" % pod["ip"], "dev", pod["device"]])
    bisect = run.result(BISECT, "client")["ansible_facts"]["__ingress_path_bisect"]
    assert bisect["vanished_at"] == "pod", bisect["hops"]
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    assert sorted(f["check"] for f in findings) == ["ingress.pod_forwarding", "service.announcer_unknown"], findings
    assert curl(lab, svc) == pod["name"]


def test_terminating_pod_real_slice_and_path_info(lab, ansible, kube_cluster, svc):
    """A pod deleted with a grace period and no kubelet to confirm stays Terminating. The real EndpointSlice
    controller keeps it with ready false, serving true, terminating true; kube-proxy, with no ready endpoint left,
    falls back to the serving terminating one: the Service still answers."""
    name = "term"
    other = kube_cluster.web_service(NS, name, nodes=("node3",), vip_index=13, policy="Cluster")
    [pod] = other["pods"]
    kube_cluster.kubectl("delete", "pod", "-n", NS, pod["name"], "--grace-period=300", "--wait=false")
    try:
        current = kube_cluster.kubectl_json("get", "pod", "-n", NS, pod["name"])
        assert current["metadata"].get("deletionTimestamp"), current["metadata"]
        endpoints = kube_cluster.wait_for("the controller marks %s terminating" % pod["name"],
                                          lambda: all_terminating(slice_endpoints(kube_cluster, name)))
        assert [(e["addresses"], e["conditions"]) for e in endpoints] == [
            ([pod["ip"]], {"ready": False, "serving": True, "terminating": True})]
        # kube-proxy still forwards to it: the nodePort answers from the client
        node_ip = lab.node("node1").ip
        assert kube_cluster.wait_for("nodePort of %s/%s answers" % (NS, name),
                                     lambda: curl(lab, svc, node_ip, other["node_port"]) == pod["name"], timeout=30)
        result = path_info(ansible, kube_cluster, "%s/%s" % (NS, name))
        lab.ns_run("node1", ["ip", "addr", "replace", "%s/32" % other["vip"], "dev", "eth0"])
        role = ansible.playbook("k8snet.triage.ingress_path", inventory=svc["inventory"], extra_vars={
            "ingress_path_service": "%s/%s" % (NS, name), "ingress_path_kubeconfig": str(kube_cluster.kubeconfig())})
    finally:
        lab.ns_run("node1", ["ip", "addr", "del", "%s/32" % other["vip"], "dev", "eth0"], check=False)
        kube_cluster.kubectl("delete", "pod", "-n", NS, pod["name"], "--grace-period=0", "--force", check=False)
    print(json.dumps({"endpoints": result["endpoints"], "findings": result["findings"]}, indent=1))
    assert result["endpoints_count"] == 0 and result["endpoints"] == []
    checks = dict((f["check"], f) for f in result["findings"])
    assert "service.no_ready_endpoints" not in checks, checks
    only = checks["service.only_terminating_endpoints"]
    assert only["severity"] == "warning"
    assert only["evidence"]["serving_terminating"] == [{"ip": pod["ip"], "pod": pod["name"], "node": "node3"}]
    # the role walks only ready backends: it stops before any capture, and says why (not "every connection fails")
    assert role.rc != 0
    messages = " ".join(str(r["result"].get("msg")) for r in role.records if r["status"] == "failed")
    assert "only 1 serving terminating one(s) (%s)" % pod["name"] in messages, messages
    assert not role.results(task=ROLE + "Collect the captures")


@pytest.mark.parametrize("broken", [False, True], ids=["masquerade", "no_masquerade"])
def test_egress_from_a_real_pod(lab, ansible, kube_cluster, svc, broken):
    """The egress role from the pod's name: its IP and node are the ones the real API server holds (kubectl reads
    them); tcpdump on the client shows the source address a connect from the pod's namespace arrives with."""
    pod = svc["pod"]
    seen = kube_cluster.kubectl_json("get", "pod", "-n", NS, pod["name"])
    assert (seen["status"]["podIP"], seen["spec"]["nodeName"]) == (pod["ip"], "node2")
    where = {"client_ns": svc["client"]["ns"], "pod_ns": pod["ns"], "client": svc["client"]["ip"]}
    pcaps = lab.workdir / "pcaps"
    pcaps.mkdir(exist_ok=True)
    if broken:
        lab_path.break_masquerade(lab, "node2")
    try:
        expected_source = pod["ip"] if broken else lab.node("node2").ip
        assert observed_source(lab, where) == expected_source
        run = ansible.playbook("k8snet.triage.egress", inventory=svc["inventory"], extra_vars={
            "egress_pod": "%s/%s" % (NS, pod["name"]), "egress_kubeconfig": str(kube_cluster.kubeconfig()),
            "egress_target": svc["client"]["ip"], "egress_target_port": 9, "egress_pcap_dir": str(pcaps),
            "egress_duration": 20})
        assert run.rc == 0, run
    finally:
        lab_path.masquerade(lab)
    assert [r["host"] for r in run.results(task=EGRESS_RECORD)] == ["node2"]
    probe = run.result(EGRESS_PROBE, "node2")
    assert probe["invocation"]["module_args"]["pod_ip"] == pod["ip"]
    assert probe["targets"][0]["tcp"]["status"] == ("timeout" if broken else "refused")
    [finding] = run.result(EGRESS_RECORD, "node2")["ansible_facts"]["egress_findings"]
    assert finding["check"] == ("egress.no_snat" if broken else "egress.ok"), finding
    assert finding["evidence"]["pod"] == "%s/%s" % (NS, pod["name"]) and finding["evidence"]["node"] == "node2"
    assert finding["evidence"]["source_seen"] == expected_source
    started = run.result("k8snet.triage.egress : Start the capture toward the target", "node2")
    assert started["results_file"] and not Path(started["results_file"]).exists(), started["results_file"]
