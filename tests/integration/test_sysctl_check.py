"""sysctl_check, the sysctl playbook and the one pass against the lab's kernel: forwarding turned off on one
node, rp_filter on a Cilium-named interface of another, a bridge without bridge-nf-call-iptables on a third.
Every value is checked against sysctl -n in the node's namespace, not against our module."""

from __future__ import annotations

import pytest

from tests.lab.faults import sysctl, undone


@pytest.fixture
def inject(lab):
    with undone(lab, sysctl.restore) as inject_:
        yield inject_
    for node in lab.nodes:  # every node forwards again and our interfaces are gone (independent readers)
        assert sysctl.read(lab, node.name, "net.ipv4.ip_forward") == 1
        links = lab.ns_run(node, ["ip", "-br", "link"]).stdout
        assert sysctl.CILIUM_IFACE not in links and sysctl.BRIDGE not in links


def _checks(findings):
    return sorted((f["check"], f["severity"]) for f in findings)


def test_each_wrong_parameter_is_named_on_its_node_and_nowhere_else(lab, ansible, inject):
    inject(sysctl.ip_forward_off, node="node1")
    inject(sysctl.cilium_rp_filter, node="node2", value=2)
    inject(sysctl.bridge_without_nf, node="node2")
    assert sysctl.read(lab, "node1", "net.ipv4.ip_forward") == 0
    assert sysctl.read(lab, "node2", "net.ipv4.conf.%s.rp_filter" % sysctl.CILIUM_IFACE) == 2

    run = ansible.playbook("k8snet.triage.sysctl")
    assert run.rc == 0, run
    found = dict((rec["host"], rec["result"]["ansible_facts"]["sysctl_findings"])
                 for rec in run.results(action="ansible.builtin.set_fact") if "sysctl_findings" in
                 rec["result"].get("ansible_facts", {}))
    assert set(found) == {n.name for n in lab.nodes}
    assert _checks(found["node1"]) == [("sysctl.ip_forward_off", "critical")]
    assert _checks(found["node2"]) == [("sysctl.bridge_nf_off", "warning"), ("sysctl.rp_filter_on_cilium", "warning")]
    by_check = dict((f["check"], f) for f in found["node2"])
    assert by_check["sysctl.rp_filter_on_cilium"]["evidence"]["rp_filter"] == {sysctl.CILIUM_IFACE: 2}
    assert by_check["sysctl.bridge_nf_off"]["evidence"]["bridges"] == [sysctl.BRIDGE]
    [ok] = found["node3"]
    # the lab's nodes are network namespaces: the neighbour table's limit is the host's, not readable there
    assert ok["check"] == "sysctl.ok" and "not checked: neighbour table" in ok["summary"], ok


def test_the_module_reads_what_sysctl_reads(lab, ansible):
    result = ansible.module("node3", "sysctl_check", {"node_name": "node3"})["node3"]
    assert not result["failed"], result
    assert result["ip_forward"] == sysctl.read(lab, "node3", "net.ipv4.ip_forward") == 1
    assert result["rp_filter_all"] == sysctl.read(lab, "node3", "net.ipv4.conf.all.rp_filter")
    assert result["neigh"]["gc_thresh3"] is None  # not in a child namespace
    arp = lab.ns_run(lab.node("node3"), ["cat", "/proc/net/arp"]).stdout.splitlines()
    assert result["neigh"]["entries"] == len(arp) - 1


def test_the_one_pass_gives_the_same_findings_as_the_role(lab, ansible, inject):
    inject(sysctl.ip_forward_off, node="node1")
    run = ansible.playbook("k8snet.triage.triage", extra_vars={"triage_scenarios": ["sysctl"],
                                                               "report_fail_on_critical": False})
    assert run.rc == 0, run
    results = dict((rec["host"], rec["result"]["ansible_facts"]["triage_results"]) for rec in run.results(action="node_pass"))
    assert results["node1"]["sysctl"]["status"] == "ran"
    assert _checks(results["node1"]["sysctl"]["findings"]) == [("sysctl.ip_forward_off", "critical")]
    assert _checks(results["node2"]["sysctl"]["findings"]) == [("sysctl.ok", "ok")]
