"""A backend on the host network (a hostNetwork pod: no veth, the node's own address) on the ingress path: the
walk must not look for a pod veth it does not have, and must still find the hop where packets vanish.
Independent reader: curl from the client and iptables-save on the LB node."""

from __future__ import annotations

import pytest

from tests.lab.faults import path as lab_path

ROLE = "k8snet.triage.ingress_path : "


@pytest.fixture(scope="module")
def hostnet(lab):
    lab_path.loadbalancer(lab)
    info = lab_path.host_network_backend(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    info["client_ns"] = lab_path.client(lab)["ns"]
    yield info
    lab_path.path_repair(lab)


def curl(lab, info):
    return lab.run(["ip", "netns", "exec", info["client_ns"], "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--connect-timeout", "1", "-m", "2", "http://%s:%s/" % (info["vip"], info["vip_port"])],
                   check=False).stdout


def walk(lab, ansible, info):
    extra = {"ingress_path_lb_nodes": [info["lb"]], "ingress_path_worker": info["worker"],
             "ingress_path_vip": info["vip"], "ingress_path_port": info["vip_port"],
             "ingress_path_pod_ip": info["backend_ip"], "ingress_path_pod_port": info["backend_port"]}
    run = ansible.playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=info["inventory"])
    assert run.rc == 0, run
    bisect = run.result(ROLE + "Find the first hop where the probes vanished", "client")["ansible_facts"]["__ingress_path_bisect"]
    [found] = run.result(ROLE + "Record the findings of this host", "client")["ansible_facts"]["ingress_path_findings"]
    return bisect, found


def test_a_host_network_backend_that_answers_is_ok(lab, ansible, hostnet):
    assert curl(lab, hostnet) == "200"
    bisect, found = walk(lab, ansible, hostnet)
    assert found["check"] == "ingress.ok", (found, bisect["hops"])
    hops = [h["hop"] for h in bisect["hops"]]
    assert "pod_veth" not in hops and "host_socket" in hops, hops
    assert found["evidence"]["backend_on_host_network"] is True


def test_a_host_network_backend_behind_a_broken_dnat(lab, ansible, hostnet):
    rule = ["PREROUTING", "-d", "%s/32" % hostnet["vip"], "-p", "tcp", "--dport", str(hostnet["vip_port"]), "-m",
            "comment", "--comment", lab_path.NAT_COMMENT + "-hostnet", "-j", "DNAT", "--to-destination",
            "%s:%s" % (hostnet["backend_ip"], hostnet["backend_port"])]
    lab.ns_run(hostnet["lb"], ["iptables", "-t", "nat", "-D", *rule])
    try:
        assert curl(lab, hostnet) != "200"
        assert "k8t-path-hostnet " not in lab.ns_run(hostnet["lb"], ["iptables-save", "-t", "nat"]).stdout
        bisect, found = walk(lab, ansible, hostnet)
    finally:
        lab.ns_run(hostnet["lb"], ["iptables", "-t", "nat", "-A", *rule])
    assert bisect["vanished_at"] == "nat" and found["check"] == "ingress.nat", bisect["hops"]


def test_a_host_network_backend_that_does_not_answer(lab, ansible, hostnet):
    """Its node drops the connections before the process sees them: they arrive, nothing answers."""
    rule = ["INPUT", "-d", hostnet["backend_ip"], "-p", "tcp", "--dport", str(hostnet["backend_port"]), "-j", "DROP"]
    lab.ns_run(hostnet["worker"], ["iptables", "-A", *rule])
    try:
        assert curl(lab, hostnet) != "200"
        bisect, found = walk(lab, ansible, hostnet)
    finally:
        lab.ns_run(hostnet["worker"], ["iptables", "-D", *rule])
    hops = dict((h["hop"], h["packets"]) for h in bisect["hops"])
    assert hops["worker_in"] > 0 and hops["host_socket"] == 0, bisect["hops"]
    assert found["check"] == "ingress.backend" and "in the backend on the host network (no reply)" in found["summary"]
