"""Issue 29, the path: ingress_path through every node's nodePort of router-default (externalTrafficPolicy Local,
routers on node1 and node2).  node3 has no router and does not forward - it accepts and never answers, or drops
as kube-proxy does - which is expected with Local, not a NAT failure (before, the walk blamed ingress.nat).

Independently: curl from the client on each node's nodePort, iptables-save on node3 (no DNAT for the nodePort)."""

from __future__ import annotations

import pytest

from tests.integration.test_lb_health_vpc import router_objects
from tests.integration.test_service_path import RECORD
from tests.kube_api import StandIn
from tests.lab.faults import lb_health as vpc
from tests.lab.faults import path as lab_path


@pytest.fixture(scope="module")
def local(lab):
    info = vpc.vpc_router(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    info["client"] = lab_path.client(lab)
    server = StandIn(router_objects(lab, info["pods"]), lab.workdir / "kube-api-vpc-path", lab.controller_ip).start()
    info["server"] = server
    yield info
    server.stop()
    vpc.vpc_router_repair(lab)


def curl_from_client(lab, local, node):
    return lab.run(["ip", "netns", "exec", local["client"]["ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", "http://%s:%d/" % (lab.node(node).ip, vpc.NODE_PORT)],
                   check=False).stdout


@pytest.mark.parametrize("mode", ["silent", "drop"])
def test_node_without_router_is_expected_not_nat(lab, ansible, local, mode):
    vpc.vpc_router_repair(lab, mode=mode)
    try:
        assert [curl_from_client(lab, local, n) for n in ("node1", "node2", "node3")] == ["200", "200", "000"]
        assert "--dport %d" % vpc.NODE_PORT not in lab.ns_run("node3", ["iptables-save", "-t", "nat"]).stdout
        run = ansible.playbook("k8snet.triage.ingress_path", inventory=local["inventory"], extra_vars={
            "ingress_path_service": "openshift-ingress/router-default",
            "ingress_path_kubeconfig": str(local["server"].kubeconfig()), "ingress_path_entry": "nodeport",
            "ingress_path_port": "http", "ingress_path_duration": 30})
    finally:
        vpc.vpc_router_repair(lab)
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
