"""Issue 29, the path: ingress_path through every node's nodePort of router-default (externalTrafficPolicy Local,
routers on node1 and node2), on the lab's real control plane and kube-proxies (router_vpc.yaml through the real API
server, as in test_lb_health_vpc).  node3 has no router and does not forward - kube-proxy drops its nodePort ("has
no local endpoints") - which is expected with Local, not a NAT failure (before, the walk blamed ingress.nat).

Independently: curl from the client on each node's nodePort, iptables-save on node3 (kube-proxy's drop, no DNAT to
a router).  The runbook's other node3, a nodePort that accepts and never answers, is not what kube-proxy does and is
not played here any more."""

from __future__ import annotations

import pytest

from tests.integration.test_lb_health_vpc import kube_proxy_drop, local_ready, router_fixture
from tests.integration.test_service_path import RECORD
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import lb_health as vpc
from tests.lab.faults import path as lab_path


@pytest.fixture(scope="module")
def local(lab, kube_cluster):
    info = vpc.vpc_router(lab, mode="none")  # the router pods; node3 is kube-proxy's
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    info["client"] = lab_path.client(lab)
    server = RealApi(kube_cluster, "cluster.yaml")
    server.load(router_fixture(server.workdir / "router_vpc.yaml", info["pods"]))
    local_ready(lab, kube_cluster)
    info["server"] = server
    yield info


def curl_from_client(lab, local, node):
    return lab.run(["ip", "netns", "exec", local["client"]["ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", "http://%s:%d/" % (lab.node(node).ip, vpc.NODE_PORT)],
                   check=False).stdout


def test_node_without_router_is_expected_not_nat(lab, ansible, local):
    assert [curl_from_client(lab, local, n) for n in ("node1", "node2", "node3")] == ["200", "200", "000"]
    assert kube_proxy_drop(lab, "node3"), "kube-proxy on node3 should drop the nodePort (no local endpoint)"
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=local["inventory"], extra_vars={
        "ingress_path_service": "openshift-ingress/router-default",
        "ingress_path_kubeconfig": str(local["server"].kubeconfig()), "ingress_path_entry": "nodeport",
        "ingress_path_port": "http", "ingress_path_duration": 30})
    assert run.rc == 0, run
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    # the VPC load balancer publishes a hostname, no IP: the API read says so (service.no_vip); the walk goes
    # through the nodes' nodePort
    assert [f["check"] for f in findings if "entry_node" not in f["evidence"]] == ["service.no_vip"], findings
    by_entry = dict((f["evidence"]["entry_node"], f) for f in findings if "entry_node" in f["evidence"])
    assert {n: (f["check"], f["severity"]) for n, f in by_entry.items()} == {
        "node1": ("ingress.ok", "ok"), "node2": ("ingress.ok", "ok"),
        "node3": ("ingress.nodeport_no_local_endpoint", "info")}, findings
    node3 = by_entry["node3"]
    assert node3["subject"] == "%s:%d" % (lab.node("node3").ip, vpc.NODE_PORT)
    assert node3["summary"].startswith("via node node3: expected with externalTrafficPolicy Local: node3 has no local "
                                       "endpoint of the Service (they run on node1, node2)")
    assert node3["evidence"]["serving_nodes"] == ["node1", "node2"]
    # node3 did receive the probes (the capture saw them) and translated none
    hops = dict((h["hop"], h["packets"]) for h in node3["evidence"]["hops"])
    assert hops["lb_in"] > 0 and hops["lb_translated"] == 0, hops
