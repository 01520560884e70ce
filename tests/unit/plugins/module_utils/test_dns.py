# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dns: the stdlib wire parser on real dnsmasq 2.90 replies (checked against dnspython),
answer classification, and the findings the server matrix implies."""

from __future__ import annotations

import binascii
import json
from pathlib import Path

import dns.message
import dns.rrset
import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.dns import options as dns_options
from ansible_collections.k8snet.triage.plugins.module_utils.dns import check as d
from ansible_collections.k8snet.triage.plugins.module_utils.dns import wire as w
from ansible_collections.k8snet.triage.plugins.module_utils.dns import resolv_conf as rc
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

FIX = Path(__file__).parent / "fixtures" / "dns"
REPLIES = json.loads((FIX / "dnsmasq_2.90_responses.json").read_text())
EXPECTED = {
    "noerror_a_udp": ("NOERROR", ["198.18.176.1"], "ok"),
    "noerror_a_tcp": ("NOERROR", ["198.18.176.20"], "ok"),
    "nxdomain": ("NXDOMAIN", [], "nxdomain"),
    "refused": ("REFUSED", [], "refused"),
    "forwarded_external": ("NOERROR", ["198.18.160.150"], "ok"),
    "nodata_aaaa": ("NOERROR", [], "nodata"),
}


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_parse_real_dnsmasq_replies(label):
    wire = binascii.unhexlify(REPLIES[label]["response_hex"])
    got = w.parse_response(wire)
    rcode, answers, status = EXPECTED[label]
    assert (got["id"], got["rcode"], got["answers"], got["truncated"]) == (0x1234, rcode, answers, False)
    assert w.classify(got) == status
    # the same bytes read by dnspython agree
    msg = dns.message.from_wire(wire)
    assert dns.rcode.to_text(msg.rcode()) == rcode
    assert [r.address for rrset in msg.answer for r in rrset] == answers


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_our_query_is_what_dnspython_reads(label):
    case = REPLIES[label]
    assert w.build_query(case["name"], case["rdtype"], qid=0x1234).hex() == case["query_hex"]
    msg = dns.message.from_wire(binascii.unhexlify(case["query_hex"]))
    assert str(msg.question[0].name) == case["name"] + "." and msg.edns == 0 and msg.flags & 0x0100


def test_cname_chain_with_compression_pointers():
    query = dns.message.make_query("api.default.svc.cluster.local", "A")
    reply = dns.message.make_response(query)
    reply.answer.append(dns.rrset.from_text("api.default.svc.cluster.local.", 30, "IN", "CNAME",
                                            "kubernetes.default.svc.cluster.local."))
    reply.answer.append(dns.rrset.from_text("kubernetes.default.svc.cluster.local.", 30, "IN", "A", "198.18.176.1"))
    got = w.parse_response(reply.to_wire())
    assert got["cnames"] == ["kubernetes.default.svc.cluster.local"] and got["answers"] == ["198.18.176.1"]


def test_truncated_and_short_replies():
    reply = dns.message.make_response(dns.message.make_query("x.cluster.local", "A"))
    reply.flags |= 0x0200
    assert w.parse_response(reply.to_wire())["truncated"] is True
    with pytest.raises(ValueError, match="shorter than a DNS header"):
        w.parse_response(b"\x12\x34")


def test_classify_against_expect():
    reply = {"rcode": "NOERROR", "answers": ["198.18.176.9"]}
    assert w.classify(reply, ["198.18.176.1"]) == "wrong_answer"
    assert w.classify(reply, ["198.18.176.9"]) == "ok"
    assert w.classify({"rcode": "SERVFAIL"}) == "servfail"
    assert w.classify({"rcode": "NOTIMP"}) == "error"


def test_resolv_conf_real_systemd_files():
    assert rc.parse_resolv_conf((FIX / "resolv.conf.systemd-stub").read_text()) == ["127.0.0.53"]
    assert rc.parse_resolv_conf((FIX / "resolv.conf.systemd-uplink").read_text()) == ["198.18.160.90", "198.18.160.91"]
    found = rc.read_resolv_confs([str(FIX / "resolv.conf.systemd-uplink"), str(FIX / "missing")])
    assert list(found) == [str(FIX / "resolv.conf.systemd-uplink")]


def test_bad_input_names_the_value():
    with pytest.raises(InputError, match=r"servers\[0\].address='kube-dns' is invalid: give an IPv4 or IPv6 address"):
        d.validate_servers([{"address": "kube-dns"}])
    with pytest.raises(InputError, match="label '' is empty, longer than 63"):
        d.validate_names(["a..b"], {})
    # issue 11: a 300-character name was a traceback; an empty list gave dns.ok
    with pytest.raises(InputError, match="a DNS name has at most 253 characters, this one has 300"):
        d.validate_names(["abcdefghi." * 29 + "abcdefghij"], {})
    with pytest.raises(InputError, match="names=.* the list is empty, so nothing would be checked"):
        d.validate_names([], {})
    with pytest.raises(InputError, match="not in names"):
        d.validate_names(["a.cluster.local"], {"b.cluster.local": "198.18.176.1"})
    with pytest.raises(InputError, match="'nope' is invalid: give an IPv4 or IPv6 address"):
        d.validate_names(["a.cluster.local"], {"a.cluster.local": ["nope"]})
    assert d.validate_names(["a.cluster.local"], {"a.cluster.local": "198.18.176.1"}) == {"a.cluster.local": ["198.18.176.1"]}


# ------------------------------------------------------------------ checks

SERVERS = d.validate_servers([
    {"address": "198.18.176.10", "name": "kube-dns", "role": "service"},
    {"address": "198.19.160.2", "name": "coredns-a", "node": "node1"},
    {"address": "198.19.161.2", "name": "coredns-b", "node": "node2"},
    {"address": "198.19.162.2", "name": "coredns-c", "node": "node3"},
])
CLUSTER, EXTERNAL = "kubernetes.default.svc.cluster.local", "www.upstream.test"


def rows(statuses):
    """statuses: {(server, name): status} -> rows over udp and tcp."""
    out = []
    for (server, name), status in statuses.items():
        for proto in ("udp", "tcp"):
            out.append({"server": server, "name": name, "protocol": proto, "status": status,
                        "error": "timed out" if status == "timeout" else None})
    return out


def matrix(a="ok", b="ok", c="ok", svc="ok", ext="ok"):
    st = {}
    for addr, status in (("198.18.176.10", svc), ("198.19.160.2", a), ("198.19.161.2", b), ("198.19.162.2", c)):
        st[(addr, CLUSTER)] = status
        st[(addr, EXTERNAL)] = ext if status == "ok" else status
    return rows(st)


def test_all_ok():
    [f] = d.check_matrix(SERVERS, matrix())
    assert (f["check"], f["severity"]) == ("dns.ok", "ok")


def test_some_fail_names_the_pods_and_their_nodes():
    [f] = d.check_matrix(SERVERS, matrix(b="refused", c="timeout"))
    assert (f["check"], f["severity"]) == ("dns.some_servers_fail", "warning")
    assert f["evidence"]["failing_nodes"] == ["node2", "node3"]
    assert "coredns-c did not answer from here (on node3)" in f["summary"]
    assert "coredns-b answered with errors (refused)" in f["summary"]
    assert "node3" in f["remediation"]


def test_kube_dns_failing_is_critical():
    [f] = d.check_matrix(SERVERS, matrix(svc="timeout"))
    assert (f["check"], f["severity"]) == ("dns.some_servers_fail", "critical")


def test_all_fail_silent_points_at_connectivity():
    [f] = d.check_matrix(SERVERS, matrix("timeout", "timeout", "unreachable", "timeout"))
    assert (f["check"], f["severity"]) == ("dns.all_servers_fail", "critical")
    assert "cannot reach any of them" in f["summary"]


def test_upstream_broken_when_cluster_names_work():
    [f] = d.check_matrix(SERVERS, matrix(ext="servfail"))
    assert (f["check"], f["severity"]) == ("dns.upstream", "critical")
    assert f["evidence"]["statuses"] == {"servfail": 8}


def test_host_resolver_cluster_domain_expected_to_fail():
    confs = {"/run/systemd/resolve/resolv.conf": ["198.18.160.90"]}
    good = rows({("198.18.160.90", EXTERNAL): "ok", ("198.18.160.90", CLUSTER): "refused"})
    [f] = d.check_host_resolvers(confs, good)
    assert f["severity"] == "ok" and "cluster.local names fail there as expected" in f["summary"]
    bad = rows({("198.18.160.90", EXTERNAL): "timeout", ("198.18.160.90", CLUSTER): "timeout"})
    [f] = d.check_host_resolvers(confs, bad)
    assert (f["check"], f["severity"]) == ("dns.host_resolver", "critical")
    assert "none of them answered at all" in f["summary"]
    [f] = d.check_host_resolvers({}, [])
    assert f["severity"] == "warning"


def test_host_resolvers_asked_no_external_name_are_not_ok():
    """Regression (issue 47): with only cluster names asked, the host resolvers were ok - also when none answered."""
    confs = {"/etc/resolv.conf": ["198.18.160.90"]}
    [f] = d.check_host_resolvers(confs, rows({("198.18.160.90", CLUSTER): "nxdomain"}))
    assert (f["check"], f["severity"]) == ("dns.host_resolver", "warning")
    assert f["summary"].startswith("the host resolvers were not tested: no external name was asked")
    assert "external_names" in f["remediation"] and f["evidence"]["unreachable"] == []
    [f] = d.check_host_resolvers(confs, rows({("198.18.160.90", CLUSTER): "unreachable"}))
    assert f["severity"] == "warning" and f["summary"].endswith("; and none of them (198.18.160.90) answered at all")
    assert f["evidence"]["unreachable"] == ["198.18.160.90"]


def test_the_host_resolvers_are_asked_the_external_names_by_default(monkeypatch):
    """node_check asks the host resolvers the servers' names and then external_names (registry.k8s.io unless
    given), so the default cluster-only names still test what coredns forwards to."""
    asked = []

    def matrix_of(self, servers, names, protocols, expect):
        if servers:  # the cluster DNS servers: none here
            asked.append(list(names))
        return [{"server": s, "name": n, "protocol": protocols[0], "status": "ok", "error": None}
                for s in servers for n in names]
    monkeypatch.setattr(d.Resolver, "matrix", matrix_of)
    monkeypatch.setattr(d, "read_resolv_confs", lambda paths: {"/etc/resolv.conf": ["198.18.160.90"]})
    out = d.node_check({"names": [CLUSTER], "host_resolvers": True})
    assert asked == [[CLUSTER, "registry.k8s.io"]]
    assert [(f["check"], f["severity"]) for f in out["findings"]] == [("dns.host_resolver", "ok")]
    asked[:] = []
    out = d.node_check({"names": [CLUSTER], "host_resolvers": True, "external_names": []})
    assert asked == [[CLUSTER]] and out["findings"][0]["severity"] == "warning"
    assert d.host_resolver_names([CLUSTER, EXTERNAL], [EXTERNAL, "registry.k8s.io"]) == [
        CLUSTER, EXTERNAL, "registry.k8s.io"]


# ------------------------------------------------------------------ issue 13: servers as users write them


def test_plain_addresses_are_servers_beside_the_dict_form():
    servers = d.validate_servers(["10.96.0.10", {"address": "198.19.160.2", "name": "coredns-a", "node": "node1"},
                                  " 2001:db8::53"])
    assert servers == [
        {"address": "10.96.0.10", "name": "10.96.0.10", "node": None, "role": "pod"},
        {"address": "198.19.160.2", "name": "coredns-a", "node": "node1", "role": "pod"},
        {"address": "2001:db8::53", "name": "2001:db8::53", "node": None, "role": "pod"}]
    # the module's rule accepts both forms too (it is what node_triage and dns_check enforce)
    assert dns_options.RULES["servers"]("servers", ["10.96.0.10", {"address": "10.96.0.11"}]) == [
        {"address": "10.96.0.10"}, {"address": "10.96.0.11"}]


@pytest.mark.parametrize("item, message", [
    ("kube-dns", r"servers\[0\]='kube-dns' is invalid: give an IPv4 or IPv6 address"),
    (5, r"servers\[0\]=5 is invalid: give an address such as 10.96.0.10, or a dict"),
    ({"adress": "10.96.0.10"}, r"servers\[0\] has unknown keys adress"),
    ({"name": "kube-dns"}, r"servers\[0\] has no address"),
    ({"address": "10.96.0.10", "role": "cache"}, r"servers\[0\].role='cache' is invalid: give one of service"),
])
def test_a_server_that_is_neither_form_is_refused_by_name(item, message):
    with pytest.raises(InputError, match=message):
        d.validate_servers([item])
    with pytest.raises(InputError, match=message):
        dns_options.RULES["servers"]("servers", [item])


def test_silent_servers_of_unknown_node_say_what_is_known():
    servers = d.validate_servers(["198.18.176.10", "198.19.161.2", {"address": "198.19.162.2", "name": "coredns-c"}])
    st = {("198.18.176.10", CLUSTER): "ok", ("198.19.161.2", CLUSTER): "timeout", ("198.19.162.2", CLUSTER): "timeout"}
    [f] = d.check_matrix(servers, rows(st))
    text = f["summary"] + " " + f["remediation"]
    assert "(on ?)" not in text and "its node" not in text and "?" not in text
    assert "198.19.161.2, coredns-c did not answer from here: a connectivity problem between this node and those " \
           "servers (the node they run on is not known" in f["summary"]
    assert "between this node and those servers" in f["remediation"]
    # one known, one unknown: the known node is named, the unknown one said to be unknown
    mixed = d.validate_servers(["198.18.176.10", {"address": "198.19.161.2", "name": "coredns-b", "node": "node2"},
                                {"address": "198.19.162.2", "name": "coredns-c"}])
    [f] = d.check_matrix(mixed, rows(st))
    assert "(on node2; the node of coredns-c is not known)" in f["summary"]
    assert "?" not in f["summary"] + f["remediation"] and "its node" not in f["summary"] + f["remediation"]
    # one server of unknown node
    [f] = d.check_matrix(servers[:2], rows({k: v for k, v in st.items() if k[0] != "198.19.162.2"}))
    assert "between this node and that server (the node it runs on is not known" in f["summary"]
