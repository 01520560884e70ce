"""dns_check and role dns take the servers as users write them (issue 13): plain addresses, as after
``dig @``, beside the dict form; and a summary never prints "(on ?)" or "between this node and its node"
when a server's node is unknown.  The lab's coredns stand-ins (tests/lab/faults/dns.py); each status is
checked against dnspython run independently in the node's namespace."""

from __future__ import annotations

import pytest

from tests.integration.test_dns_check import CLUSTER, EXTERNAL, HOST_RESOLV, independent
from tests.lab.faults import dns as lab_dns


@pytest.fixture(scope="module")
def cluster_dns(lab):
    info = lab_dns.dns_cluster(lab)
    yield info
    lab_dns.dns_repair(lab)


def test_plain_addresses_work_and_unknown_nodes_are_said_to_be_unknown(lab, ansible, cluster_dns):
    pods = cluster_dns["pods"]
    plain = [cluster_dns["kube_dns"], pods["coredns-a"]["ip"], pods["coredns-b"]["ip"], pods["coredns-c"]["ip"]]
    result = ansible.module("node1", "dns_check", {"names": [CLUSTER], "servers": plain, "timeout": 1.0,
                                                   "retries": 0, "protocols": ["udp"]})["node1"]
    assert not result["failed"], result  # was: "dictionary requested, could not parse JSON or key=value"
    statuses = dict((row["server"], row["status"]) for row in result["matrix"])
    assert sorted(statuses) == sorted(plain)
    # the kernel's and dnspython's view from node1, independently
    assert independent(lab, "node1", cluster_dns["kube_dns"], CLUSTER) == "NOERROR" and statuses[plain[0]] == "ok"
    assert independent(lab, "node1", pods["coredns-c"]["ip"], CLUSTER) == "timeout" == statuses[plain[3]]
    assert statuses[plain[2]] == "refused"
    [f] = [f for f in result["findings"] if f["check"] == "dns.some_servers_fail"]
    text = f["summary"] + " " + f["remediation"]
    assert "(on ?)" not in text and "its node" not in text and "?" not in text
    assert ("%s did not answer from here: a connectivity problem between this node and that server (the node it "
            "runs on is not known" % pods["coredns-c"]["ip"]) in f["summary"]
    assert "between this node and that server" in f["remediation"]

    # the dict form and plain addresses mixed: the node that is known is named
    mixed = [cluster_dns["kube_dns"], {"address": pods["coredns-c"]["ip"], "name": "coredns-c", "node": "node3"},
             pods["coredns-b"]["ip"]]
    result = ansible.module("node1", "dns_check", {"names": [CLUSTER], "servers": mixed, "timeout": 1.0,
                                                   "retries": 0, "protocols": ["udp"]})["node1"]
    [f] = [f for f in result["findings"] if f["check"] == "dns.some_servers_fail"]
    assert "coredns-c did not answer from here (on node3): an in-cluster connectivity problem between this node " \
           "and node3" in f["summary"]


@pytest.mark.parametrize("servers, message", [
    (["kube-dns"], "servers[0]='kube-dns' is invalid: give an IPv4 or IPv6 address"),
    ([{"adress": "198.18.80.10"}], "servers[0] has unknown keys adress"),
])
def test_a_server_in_neither_form_fails_by_name(ansible, cluster_dns, servers, message):
    result = ansible.module("node1", "dns_check", {"names": [CLUSTER], "servers": servers})["node1"]
    assert result["failed"] and message in result["msg"], result


def test_role_dns_takes_plain_addresses(lab, ansible, cluster_dns):
    extra = {"dns_servers": [cluster_dns["kube_dns"], cluster_dns["pods"]["coredns-a"]["ip"]],
             "dns_names": [CLUSTER, EXTERNAL], "dns_timeout": 1.0, "dns_retries": 0, "dns_resolv_conf": HOST_RESOLV}
    run = ansible.playbook("k8snet.triage.dns", extra_vars=extra, limit="node1")
    assert run.rc == 0, run
    facts = run.result("Keep the findings of this host", "node1")["ansible_facts"]
    assert [f["check"] for f in facts["dns_findings"] if f["check"].startswith("dns.") and "host" not in f["check"]] \
        == ["dns.ok"]
