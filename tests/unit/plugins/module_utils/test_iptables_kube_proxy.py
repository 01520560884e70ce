"""iptables_drops reads kube-proxy's own rules as kube-proxy means them (fixtures/kube_proxy/: the rule
sets of kube-proxy's tests, captured with iptables-legacy-save -c / nft -j list ruleset after loading them
into a private network namespace; sources in each fixture's header), and the drop rules of Calico,
firewalld and ufw the runbooks meet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.firewall import checks as iptables_checks
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import parsers as iptables_parsers

FIX = Path(__file__).parent / "fixtures" / "kube_proxy"
SAVE = (FIX / "iptables_cleanup_test_initial.save").read_text()
NFT = (FIX / "nftables_overall.json").read_text()


def _grown(save_t0, save_t1, backend="legacy"):
    before, after = iptables_parsers.parse_save(save_t0, backend, 4), iptables_parsers.parse_save(save_t1, backend, 4)
    before.taken, after.taken = 0.0, 2.0
    return iptables_checks.compare([before], [after]), [after]


def _count(text, comment, packets):
    """The same save with the counter of the rule carrying ``comment`` set to ``packets`` (a second
    snapshot; the rule text stays kube-proxy's)."""
    return re.sub(r"^\[0:0\] (-A .*%s.*)$" % re.escape(comment), lambda m: "[%d:%d] %s" % (packets, packets * 60, m.group(1)),
                  text, flags=re.M)


def test_every_kube_proxy_drop_is_read():
    rs = iptables_parsers.parse_save(SAVE, "legacy", 4)
    readings = {}
    for entry in rs.entries.values():
        reading = iptables_checks.interpret(entry)
        if entry["owner"] == "kube-proxy":
            assert reading, entry["rule"]
            readings.setdefault(reading["reason"], set()).add(str(reading["object"].get("name") or entry["chain"]))
    assert readings == {"no_endpoints": {"svc6"}, "no_local_endpoints": {"svc2"},
                        "load_balancer_source_ranges": {"svc5"}, "localnet": {"KUBE-FIREWALL"},
                        "invalid_state": {"KUBE-FORWARD"}}
    # "someone else's" rules are not kube-proxy's and get no kube-proxy reading
    others = [e for e in rs.entries.values() if "someone else" in e["rule"]]
    assert len(others) == 3 and {e["owner"] for e in others} == {"other"}
    assert all(iptables_checks.interpret(e) is None for e in others)


@pytest.mark.parametrize("comment, reason, service, step", [
    ("ns6/svc6:p80 has no endpoints", "no_endpoints", "ns6/svc6:p80",
     "kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6"),
    ("ns2/svc2:p80 has no local endpoints", "no_local_endpoints", "ns2/svc2:p80",
     "kubectl get endpointslices -n ns2 -l kubernetes.io/service-name=svc2 -o wide"),
    ("ns5/svc5:p80 traffic not accepted", "load_balancer_source_ranges", "ns5/svc5:p80",
     "kubectl get service -n ns5 svc5 -o jsonpath='{.spec.loadBalancerSourceRanges}'"),
])
def test_growing_kube_proxy_drop_names_the_service(comment, reason, service, step):
    grown, after = _grown(SAVE, _count(SAVE, comment, 12))
    assert len(grown) == (3 if "local" in comment else 1)  # svc2's comment is on three rules
    found = iptables_checks.check(grown, after, "node2", 2.0, 20, 1.0, 100.0)
    growing = [f for f in found if f["check"] == "iptables.drops_growing"]
    assert len(growing) == len(grown)
    item = growing[0]
    assert service in item["summary"] and "dropped 12 packets in 2.0s" in item["summary"]
    assert item["remediation"].startswith(step)
    assert item["evidence"]["reason"] == reason and item["evidence"]["object"]["kind"] == "Service"
    # the three readings are told apart in words, not only in the reason code
    words = {"no_endpoints": "has no ready endpoints", "no_local_endpoints": "no ready endpoint on this node",
             "load_balancer_source_ranges": "loadBalancerSourceRanges"}
    assert words[reason] in item["summary"]
    assert grown[0]["reading"]["reason"] == reason


def test_nftables_mode_firewall_and_reject_chain():
    rs = iptables_parsers.parse_nft(NFT)
    assert ("ip", "kube-proxy") in rs.tables
    by_chain = dict((e["chain"], e) for e in rs.entries.values() if e["kind"] == "rule")
    fw = iptables_checks.interpret(by_chain["firewall-HVFWP5L3-ns5/svc5/tcp/p80"])
    assert fw["reason"] == "load_balancer_source_ranges" and fw["object"]["name"] == "svc5" and fw["object"]["port"] == "p80"
    iptables_checks.rule_text(by_chain["reject-chain"])
    rej = iptables_checks.interpret(by_chain["reject-chain"], refusals=rs.refusals)
    assert rej["reason"] == "no_endpoints" and (rej["object"]["namespace"], rej["object"]["name"]) == ("ns6", "svc6")
    assert rej["next_step"].startswith("kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6")
    checks = sorted(iptables_checks.interpret(e)["reason"] for e in rs.entries.values() if e["chain"] == "cluster-ips-check")
    # "Reject traffic to invalid ports of ClusterIPs" and "Drop traffic to unallocated ClusterIPs"
    assert checks == ["clusterip_invalid_port", "clusterip_unallocated"]
    # kube-proxy writes no counter statement: its drops are read, never counted as growing
    assert not any(e["counted"] for e in rs.entries.values() if e["table"] == "kube-proxy")


def test_nftables_no_endpoint_maps_become_findings():
    rs = iptables_parsers.parse_nft(NFT)
    assert sorted((r["service"], r["reason"], r["kind"], r["match"]) for r in rs.refusals) == [
        ("ns2/svc2:p80", "no_local_endpoints", "address", "1.2.3.4 . tcp . 80"),
        ("ns2/svc2:p80", "no_local_endpoints", "address", "192.168.99.22 . tcp . 80"),
        ("ns2/svc2:p80", "no_local_endpoints", "nodeport", "tcp . 3001"),
        ("ns6/svc6:p80", "no_endpoints", "address", "172.30.0.46 . tcp . 80"),
    ]
    found = [f for f in iptables_checks.check([], [rs], "node3", 0, 20, 1.0, 100.0) if f["check"] == "iptables.service_refused"]
    assert [(f["subject"], f["evidence"]["reason"], f["severity"]) for f in found] == [
        ("node3 ns2/svc2:p80", "no_local_endpoints", "info"), ("node3 ns6/svc6:p80", "no_endpoints", "info")]
    assert "NodePort tcp . 3001" in found[0]["summary"]
    assert found[1]["remediation"].startswith("kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6")


def test_ipvs_source_ranges_chain():
    # kubernetes/kubernetes pkg/proxy/ipvs/proxier.go writes `-A KUBE-SOURCE-RANGES-FIREWALL -j DROP` ("drop packets
    # filtered by KUBE-SOURCE-RANGES-FIREWALL"; the stored copy read does not show its commit)
    text = "*filter\n:KUBE-SOURCE-RANGES-FIREWALL - [0:0]\n[7:420] -A KUBE-SOURCE-RANGES-FIREWALL -j DROP\nCOMMIT\n"
    entry = list(iptables_parsers.parse_save(text, "nft", 4).entries.values())[0]
    reading = iptables_checks.interpret(entry)
    assert reading["reason"] == "load_balancer_source_ranges" and "ipset list KUBE-LOAD-BALANCER-FW" in reading["next_step"]


# Calico's endpoint chain in iptables-save -c format, written here: the chain layout (cali-tw-<interface>
# jumping to its cali-pi- policy chains) and the comments are Felix's (projectcalico/calico
# felix/rules/endpoints.go: "Start of policies", "Return if policy accepted", "Drop if no policies passed
# packet"); the cali: rule IDs are arbitrary.
_TW = "-A cali-tw-cali0ef24b1 -m comment --comment"
CALICO = "\n".join([
    "*filter", ":cali-tw-cali0ef24b1 - [0:0]", ":cali-pi-_tTE-E7yY40ogArNVgKt - [0:0]",
    '[0:0] %s "cali:Mm_GAikGLiINmRQh" -m comment --comment "Start of policies" -j MARK --set-xmark 0x0/0x2000000' % _TW,
    '[0:0] %s "cali:c6bGtQzwKsoipZq6" -m mark --mark 0x0/0x2000000 -j cali-pi-_tTE-E7yY40ogArNVgKt' % _TW,
    '[0:0] %s "cali:46b6gNjtXYDXasAi" -m comment --comment "Return if policy accepted" '
    '-m mark --mark 0x1000000/0x1000000 -j RETURN' % _TW,
    '[5:300] %s "cali:6kNf2_vqiCYkwInx" -m comment --comment "Drop if no policies passed packet" '
    '-m mark --mark 0x0/0x2000000 -j DROP' % _TW,
    "COMMIT", ""])


def test_calico_endpoint_drop_names_the_interface_and_policy_chain():
    rs = iptables_parsers.parse_save(CALICO, "nft", 4)
    entry = list(rs.entries.values())[0]
    reading = iptables_checks.interpret(entry, rs.jumps)
    assert reading["reason"] == "no_policy_allowed"
    assert reading["object"] == {"kind": "WorkloadEndpoint", "interface": "cali0ef24b1",
                                 "policy_chains": ["cali-pi-_tTE-E7yY40ogArNVgKt"]}
    assert "to the pod on cali0ef24b1" in reading["meaning"]
    assert reading["next_step"].startswith("calicoctl get workloadendpoints -A -o wide | grep cali0ef24b1")
    per, top = iptables_checks.totals([rs], 5)
    assert top[0]["reading"]["reason"] == "no_policy_allowed"


@pytest.mark.parametrize("table, chain, owner, kind, name", [
    ("filter", "IN_public_deny", "firewalld", "firewalld zone", "public"),
    ("firewalld", "filter_IN_public_deny", "firewalld", "firewalld zone", "public"),
    ("filter", "ufw-user-input", "ufw", "ufw", None),
    ("filter", "CILIUM_FORWARD", "cilium", "cilium", None),
])
def test_node_firewalls_are_named(table, chain, owner, kind, name):
    entry = {"chain": chain, "table": table, "owner": iptables_parsers.owner_of(table, chain), "rule": "-A %s -j DROP" % chain,
             "family": "ipv4"}
    assert entry["owner"] == owner
    reading = iptables_checks.interpret(entry)
    assert reading["object"]["kind"] == kind and reading["object"].get("name") == name


def test_old_kube_proxy_marked_drop():
    # kubelet_network_linux.go (kubernetes/kubernetes, before 1.25) wrote this rule; KUBE-MARK-DROP marks
    text = ('*filter\n:KUBE-FIREWALL - [0:0]\n[3:180] -A KUBE-FIREWALL -m comment --comment '
            '"kubernetes firewall for dropping marked packets" -m mark --mark 0x8000/0x8000 -j DROP\nCOMMIT\n')
    entry = list(iptables_parsers.parse_save(text, "legacy", 4).entries.values())[0]
    reading = iptables_checks.interpret(entry)
    assert reading["reason"] == "marked_for_drop" and "KUBE-MARK-DROP" in reading["next_step"]


_REJECT_CHAIN = {"chain": "reject-chain", "table": "kube-proxy", "owner": "kube-proxy", "family": "ip",
                 "verdict": "reject", "rule": "reject"}


def test_reject_chain_refusals_named_without_a_namespace_are_read_as_they_are():
    """Before: a no-endpoint map entry naming its Service without "ns/" made the reading raise AttributeError."""
    one = iptables_checks.interpret(_REJECT_CHAIN, refusals=[{"service": "default-nope", "reason": "no_endpoints"}])
    assert one["reason"] == "no_endpoints" and one["object"]["name"] == "default-nope"
    assert one["meaning"] == "kube-proxy rejects traffic to Service default-nope: it has no ready endpoints"
    assert one["next_step"].startswith("kubectl get endpointslices -A -l kubernetes.io/service-name=default-nope")
    two = iptables_checks.interpret(_REJECT_CHAIN, refusals=[{"service": "nope", "reason": "no_endpoints"},
                                                             {"service": "ns6/svc6:p80", "reason": "no_endpoints"}])
    assert two["meaning"].endswith("without ready endpoints: nope, ns6/svc6:p80")
    assert two["next_step"] == ("kubectl get endpointslices -A -l kubernetes.io/service-name=nope; "
                                "kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6")


def test_a_reject_comment_naming_the_service_without_a_namespace_names_it():
    """Before: a KUBE-SERVICES reject whose comment was "default-nope has no endpoints" got no Service reading."""
    text = ('*filter\n:KUBE-SERVICES - [0:0]\n[4:240] -A KUBE-SERVICES -d 10.96.0.9/32 -p tcp -m comment --comment '
            '"default-nope has no endpoints" -j REJECT --reject-with icmp-port-unreachable\nCOMMIT\n')
    entry = list(iptables_parsers.parse_save(text, "legacy", 4).entries.values())[0]
    reading = iptables_checks.interpret(entry)
    assert (reading["reason"], reading["object"]["name"], reading["object"]["namespace"]) == (
        "no_endpoints", "default-nope", None)
    assert "Service default-nope: it has no ready endpoints" in reading["meaning"]
