"""dns_check and role dns against dnsmasq coredns stand-ins in the lab, from every node
(node1: venv Python with dnspython; node2: /usr/bin/python3 and node3: Python 3.9, both without
dnspython, so the standard-library client runs there).  Each expectation is checked against
dnspython run independently inside the node's namespace."""

from __future__ import annotations

import json

import pytest

from tests.lab.faults import dns as lab_dns

EXTERNAL = lab_dns.UPSTREAM_NAME
CLUSTER = "kubernetes.default.svc.cluster.local"
MISSING = "nope.default.svc.cluster.local"
HOST_RESOLV = ["/run/systemd/resolve/resolv.conf"]  # the node's private /run: never the machine's resolver


@pytest.fixture(scope="module")
def cluster_dns(lab):
    info = lab_dns.dns_cluster(lab)
    yield info
    lab_dns.dns_repair(lab)


def servers(info):
    out = [{"address": info["kube_dns"], "name": "kube-dns", "role": "service"}]
    for name, pod in sorted(info["pods"].items()):
        out.append({"address": pod["ip"], "name": name, "node": pod["node"], "role": "pod"})
    return out


def independent(lab, node, server, name, proto="udp"):
    """rcode (or 'timeout') as dnspython sees it from the node's namespace."""
    code = ("import dns.message, dns.query, dns.rcode, dns.exception, sys\n"
            "q = dns.message.make_query(sys.argv[1], 'A')\n"
            "try:\n"
            "    r = (dns.query.udp if sys.argv[3] == 'udp' else dns.query.tcp)(q, sys.argv[2], timeout=1)\n"
            "    print(dns.rcode.to_text(r.rcode()))\n"
            "except (dns.exception.Timeout, OSError):\n"
            "    print('timeout')\n")
    return lab.ns_run(node, [lab.python, "-c", code, name, server, proto]).stdout.strip()


def args(info, **extra):
    base = {"names": [CLUSTER, MISSING, EXTERNAL], "servers": servers(info), "timeout": 1.0, "retries": 0,
            "expect": {CLUSTER: info["expect"][CLUSTER]}}
    base.update(extra)
    return base


def by_check(result):
    return dict((f["check"], f) for f in result["findings"])


def test_matrix_from_every_node(lab, ansible, cluster_dns):
    results = ansible.module("k8s_nodes", "dns_check", args(cluster_dns, host_resolvers=True, resolv_conf=HOST_RESOLV,
                                                            external_names=[EXTERNAL]))
    assert results["node1"]["backend"] == "dnspython"
    assert results["node2"]["backend"] == results["node3"]["backend"] == "stdlib"
    c_ip = cluster_dns["pods"]["coredns-c"]["ip"]
    b_ip = cluster_dns["pods"]["coredns-b"]["ip"]
    for node in ("node1", "node2", "node3"):
        res = results[node]
        assert res["changed"] is False and "matrix" in res, res
        rows = dict(((r["server"], r["name"], r["protocol"]), r) for r in res["matrix"])
        assert len(rows) == 4 * 3 * 2
        # every status agrees with dnspython run independently from the same node
        assert rows[(b_ip, CLUSTER, "udp")]["status"] == "refused" == independent(lab, node, b_ip, CLUSTER).lower()
        assert rows[(cluster_dns["kube_dns"], MISSING, "tcp")]["status"] == "nxdomain"
        assert independent(lab, node, cluster_dns["kube_dns"], MISSING, "tcp") == "NXDOMAIN"
        assert rows[(cluster_dns["kube_dns"], CLUSTER, "udp")]["answers"] == [cluster_dns["expect"][CLUSTER]]
        some = by_check(res)["dns.some_servers_fail"]
        failing = dict((s["server"], s) for s in some["evidence"]["failing"])
        if node == "node3":  # coredns-c answers its own node only
            assert rows[(c_ip, CLUSTER, "udp")]["status"] == "ok" and independent(lab, node, c_ip, CLUSTER) == "NOERROR"
            assert set(failing) == {"coredns-b"} and some["evidence"]["failing_nodes"] == ["node2"]
        else:
            assert rows[(c_ip, CLUSTER, "udp")]["status"] == "timeout" == independent(lab, node, c_ip, CLUSTER)
            assert set(failing) == {"coredns-b", "coredns-c"}
            assert "in-cluster connectivity problem between this node and node3" in some["summary"]
        assert some["severity"] == "warning"  # the kube-dns Service itself works
        host = by_check(res)["dns.host_resolver"]
        assert host["severity"] == "ok" and "cluster.local names fail there as expected" in host["summary"]


def test_all_servers_fail(lab, ansible, cluster_dns):
    lab_dns.dns_stop(lab, "coredns-a")  # kube-dns is DNAT-ed to coredns-a only
    try:
        assert independent(lab, "node1", cluster_dns["kube_dns"], CLUSTER) == "timeout"
        res = ansible.module("node1", "dns_check", args(cluster_dns))["node1"]
        f = by_check(res)["dns.all_servers_fail"]
        assert f["severity"] == "critical" and f["layer"] == "DNS"
        assert {s["server"] for s in f["evidence"]["servers"]} == {"kube-dns", "coredns-a", "coredns-b", "coredns-c"}
    finally:
        lab_dns.dns_repair(lab)
    assert independent(lab, "node1", cluster_dns["kube_dns"], CLUSTER) == "NOERROR"


def test_upstream_and_host_resolver_down(lab, ansible, cluster_dns):
    lab_dns.dns_upstream_down(lab)
    try:
        assert independent(lab, "node2", cluster_dns["kube_dns"], EXTERNAL) != "NOERROR"
        two = servers(cluster_dns)[:2]
        res = ansible.module("node2", "dns_check", args(cluster_dns, servers=two, host_resolvers=True,
                                                        resolv_conf=HOST_RESOLV))["node2"]
        checks = by_check(res)
        assert checks["dns.upstream"]["severity"] == "critical"
        assert EXTERNAL in checks["dns.upstream"]["summary"]
        assert checks["dns.host_resolver"]["severity"] == "critical"
        assert checks["dns.host_resolver"]["evidence"]["resolv_conf"] == {HOST_RESOLV[0]: [cluster_dns["upstream"]]}
    finally:
        lab_dns.dns_repair(lab)


def test_host_resolvers_asked_no_external_name_or_not_answering_are_never_ok(lab, ansible, cluster_dns):
    """Regression (issue 47): with the default names (cluster names only) the host resolvers were ok, also when none
    of them answered.  Now the default asks an external name (registry.k8s.io: the lab's upstream refuses it, as
    dnspython sees from the node), and a run that asks none says the host resolvers were not tested."""
    upstream = cluster_dns["upstream"]
    assert independent(lab, "node1", upstream, "registry.k8s.io") == "REFUSED"
    base = {"names": [CLUSTER], "servers": servers(cluster_dns)[:1], "timeout": 1.0, "retries": 0,
            "host_resolvers": True, "resolv_conf": HOST_RESOLV}
    res = ansible.module("node1", "dns_check", base)["node1"]
    assert sorted(set(r["name"] for r in res["host_matrix"])) == [CLUSTER, "registry.k8s.io"]
    host = by_check(res)["dns.host_resolver"]
    assert host["severity"] == "critical" and "fail for external names" in host["summary"], host
    res = ansible.module("node1", "dns_check", dict(base, external_names=[]))["node1"]
    host = by_check(res)["dns.host_resolver"]
    assert host["severity"] == "warning" and host["summary"].startswith(
        "the host resolvers were not tested: no external name was asked"), host
    # a resolv.conf naming a lab address where nothing listens: no resolver answers at all
    dead = str(lab.network[151])
    conf = lab.workdir / "dead-resolv.conf"
    conf.write_text("nameserver %s\n" % dead)
    assert independent(lab, "node1", dead, EXTERNAL) == "timeout"
    res = ansible.module("node1", "dns_check", dict(base, resolv_conf=[str(conf)], external_names=[]))["node1"]
    host = by_check(res)["dns.host_resolver"]
    assert host["severity"] == "warning" and "none of them (%s) answered at all" % dead in host["summary"], host
    res = ansible.module("node1", "dns_check", dict(base, resolv_conf=[str(conf)]))["node1"]
    host = by_check(res)["dns.host_resolver"]
    assert host["severity"] == "critical" and "none of them answered at all" in host["summary"], host


def test_wrong_answer_against_expect(ansible, cluster_dns):
    res = ansible.module("node3", "dns_check", {"names": [CLUSTER], "protocols": ["tcp"], "timeout": 1.0,
                                                "servers": servers(cluster_dns)[:1], "expect": {CLUSTER: "198.18.176.99"}})
    rows = res["node3"]["matrix"]
    assert [r["status"] for r in rows] == ["wrong_answer"]
    assert by_check(res["node3"])["dns.all_servers_fail"]["severity"] == "critical"


@pytest.mark.parametrize("bad, message", [
    ({"servers": [{"address": "kube-dns.kube-system"}]}, "servers[0].address='kube-dns.kube-system' is invalid: give an IPv4 or IPv6 address"),
    ({"names": ["a..cluster.local"]}, "label '' is empty, longer than 63"),
    ({"servers": []}, "nothing to ask"),
    ({"timeout": 0}, "timeout=0.0 is invalid: give a number more than 0 and at most 30 seconds"),
    ({"names": []}, "names=[] is invalid: the list is empty, so nothing would be checked"),
    ({"names": ["a" * 300]}, "a DNS name has at most 253 characters, this one has 300"),
    ({"port": 0}, "port=0 is invalid: give an integer from 1 to 65535"),
    ({"expect": {"other.cluster.local": "198.18.176.1"}}, "not in names"),
])
def test_bad_input_fails_clearly(ansible, cluster_dns, bad, message):
    res = ansible.module("node2", "dns_check", args(cluster_dns, **bad))["node2"]
    # a failed module returns its message and no findings (the recorder does not keep the "failed" key)
    assert "findings" not in res and message in res["msg"], res.get("msg")


def test_role_dns_sets_findings_per_node(lab, ansible, cluster_dns, tmp_path):
    extra = {"dns_servers": servers(cluster_dns), "dns_names": [CLUSTER, EXTERNAL], "dns_timeout": 1.0,
             "dns_retries": 0, "dns_resolv_conf": HOST_RESOLV}
    run = ansible.playbook("k8snet.triage.dns", extra_vars=extra)
    assert run.rc == 0, run
    for node in ("node1", "node2", "node3"):
        facts = run.result("Keep the findings of this host", node)["ansible_facts"]
        checks = [f["check"] for f in facts["dns_findings"]]
        assert "dns.some_servers_fail" in checks and "dns.host_resolver" in checks
    shown = run.result("Show the findings", "node1")["msg"]
    assert any("coredns-c did not answer" in line for line in shown), json.dumps(shown)
