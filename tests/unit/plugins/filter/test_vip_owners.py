"""vip_owners: the true MAC from the owners; unowned and doubly-owned VIPs are findings."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.vip_owners import vip_owners
from ansible_collections.k8snet.triage.plugins.filter.findings_lines import findings_lines
from ansible_collections.k8snet.triage.plugins.module_utils.arp import options as neighbors_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


def owner(node, *local):
    return {"item": node, "local": [{"address": a, "interface": "eth0", "mac": m} for a, m in local]}


def test_single_owner_gives_the_expected_mac():
    out = vip_owners([owner("cp1", ("198.18.0.200", "02:18:00:00:00:01")), owner("cp2")], ["198.18.0.200"])
    assert out["expected"] == {"198.18.0.200": "02:18:00:00:00:01"}
    assert out["findings"] == []


def test_unowned_vip_is_said_not_guessed():
    out = vip_owners([owner("cp1"), owner("cp2")], ["198.18.0.200"])
    assert out["expected"] == {}
    assert [f["check"] for f in out["findings"]] == ["arp.vip_unowned"]
    assert out["findings"][0]["severity"] == "critical"


def test_unreachable_owner_is_a_finding_not_an_unowned_vip():
    """The owner that may hold the VIP did not answer: say so, do not call the VIP unowned."""
    out = vip_owners([owner("cp1"), {"item": "cp2", "unreachable": True, "msg": "ssh: timeout"}], ["198.18.0.200"])
    assert out["expected"] == {}
    found = {f["check"]: f for f in out["findings"]}
    assert sorted(found) == ["arp.owner_unreachable", "arp.vip_owner_unknown"]
    assert found["arp.owner_unreachable"]["subject"] == "cp2" and "unreachable" in found["arp.owner_unreachable"]["summary"]
    assert found["arp.owner_unreachable"]["evidence"] == {"status": "unreachable", "msg": "ssh: timeout"}
    assert "cp2" in found["arp.vip_owner_unknown"]["summary"]


def test_failed_owner_hidden_by_failed_when_false_is_a_finding():
    """failed_when: false turns a module failure (no usable Python) into failed: false: no `local` tells it."""
    failed = {"item": "cp2", "failed": False, "failed_when_result": False, "rc": 127,
              "msg": "The module interpreter '/nonexistent/python3' was not found."}
    out = vip_owners([owner("cp1", ("198.18.0.200", "02:18:00:00:00:01")), failed], ["198.18.0.200"])
    assert out["expected"] == {"198.18.0.200": "02:18:00:00:00:01"}
    assert [(f["check"], f["subject"], f["severity"]) for f in out["findings"]] == [
        ("arp.owner_unreachable", "cp2", "warning")]
    assert "interpreter" in out["findings"][0]["evidence"]["msg"]


def test_empty_owner_group_says_so():
    out = vip_owners([], ["198.18.0.200"])
    assert [f["check"] for f in out["findings"]] == ["arp.vip_unowned"]
    assert "owners group is empty" in out["findings"][0]["summary"]


def test_two_owners_is_a_conflict_and_no_truth():
    out = vip_owners([owner("cp1", ("198.18.0.200", "02:18:00:00:00:01")),
                      owner("cp2", ("198.18.0.200", "02:18:00:00:00:02"))], ["198.18.0.200"])
    assert out["expected"] == {}
    assert out["findings"][0]["check"] == "arp.ip_conflict" and "cp1, cp2" in out["findings"][0]["summary"]


def test_findings_lines_sorts_critical_first_and_hides_ok():
    findings = [
        {"check": "arp.ok", "severity": "ok", "subject": "a", "summary": "fine"},
        {"check": "arp.not_cached", "severity": "info", "subject": "b", "summary": "info"},
        {"check": "arp.stale_entry", "severity": "critical", "subject": "c", "summary": "bad"},
    ]
    lines = findings_lines(findings)
    assert len(lines) == 2 and lines[0].startswith("CRITICAL") and "c: bad" in lines[0]


def test_owner_findings_are_fleet_conclusions():
    out = vip_owners([owner("cp1"), owner("cp2")], ["198.18.0.200"])
    assert [(f["scope"], f["hosts"]) for f in out["findings"]] == [("fleet", ["cp1", "cp2"])]


def test_vips_as_a_surveys_text_are_the_same_list():
    """An AWX textarea gives one VIP a line (with a trailing newline), -e key=value a comma-separated string."""
    results = [owner("cp1", ("198.18.0.200", "02:18:00:00:00:01"), ("198.18.0.201", "02:18:00:00:00:01"))]
    as_list = vip_owners(results, ["198.18.0.200", "198.18.0.201"])
    assert vip_owners(results, "198.18.0.200\n198.18.0.201\n") == as_list
    assert vip_owners(results, "198.18.0.200,198.18.0.201") == as_list


def test_result_without_item_names_the_delegated_owner():
    # a result registered without a loop but delegated: ansible-core records the delegated host in
    # _ansible_delegated_vars.ansible_delegated_host (task_executor), the inventory name
    result = {"_ansible_delegated_vars": {"ansible_delegated_host": "cp1", "ansible_host": "198.18.0.11"},
              "local": [{"address": "198.18.0.200", "interface": "eth0", "mac": "02:00:00:00:00:01"}]}
    out = vip_owners([result], ["198.18.0.200"])
    assert out["owners"]["198.18.0.200"] == [{"node": "cp1", "interface": "eth0", "mac": "02:00:00:00:00:01"}]


@pytest.mark.parametrize("result, said", [
    ({"local": []}, "names no owner host"),
    ({"item": None, "unreachable": True}, "names no owner host"),
    ("cp1", "is text, not a task result"),
])
def test_result_naming_no_owner_is_refused_with_what_is_expected(result, said):
    with pytest.raises(AnsibleFilterError) as exc:
        vip_owners([result], ["198.18.0.200"])
    assert said in str(exc.value) and "loop" in str(exc.value)


def test_delegated_owners_without_item_are_named_in_the_unowned_finding():
    """The finding says which owners were asked, and the fleet finding concerns them, also when the results name
    their owners by delegation rather than by item (before: [None, None] and no hosts at all)."""
    results = [{"_ansible_delegated_vars": {"ansible_delegated_host": name}, "local": []} for name in ("cp1", "cp2")]
    [unowned] = vip_owners(results, ["198.18.0.200"])["findings"]
    assert unowned["check"] == "arp.vip_unowned"
    assert unowned["evidence"]["owners_checked"] == ["cp1", "cp2"] and unowned["hosts"] == ["cp1", "cp2"]


@pytest.mark.parametrize("vips, bad, kind", [
    (["127.0.0.1"], "stale_arp_vips[0]='127.0.0.1'", "a loopback address"),
    ("198.18.0.200\n::1\n", "stale_arp_vips[1]='::1'", "a loopback address"),
    ("0.0.0.0", "stale_arp_vips[0]='0.0.0.0'", "the unspecified address"),
    (["198.18.0.200", "224.0.0.18"], "stale_arp_vips[1]='224.0.0.18'", "a multicast address"),
    (["169.254.10.1"], "stale_arp_vips[0]='169.254.10.1'", "a link-local address"),
    (["fe80::1"], "stale_arp_vips[0]='fe80::1'", "a link-local address"),
])
def test_an_address_no_vip_can_be_is_refused_naming_the_variable(vips, bad, kind):
    """What the triage and the stale_arp playbook refuse before any host is touched (and arp_check on the node)."""
    with pytest.raises(AnsibleFilterError) as exc:
        vip_owners([], vips)
    assert "%s is invalid: %s is %s" % (bad, bad.split("=")[1].strip("'"), kind) in str(exc.value), str(exc.value)
    assert "which no VIP can be" in str(exc.value)
    with pytest.raises(InputError, match="addresses\\[0\\]=.* which no VIP can be"):
        neighbors_options.RULES["addresses"]("addresses", [bad.split("=")[1].strip("'")])


def test_vips_any_host_can_hold_are_accepted():
    assert vip_owners([], ["198.18.0.200", "10.0.0.1", "2001:db8::10", "100.64.0.7"])["expected"] == {}


# --- a VIP no owner binds, answered on the wire (MetalLB L2: the elected speaker answers ARP, binds nothing) ------


def prober(node, **answers):
    """An owner's arp_check result with probe: true: ``answers`` VIP -> the MACs that answered its probes."""
    return {"item": node, "local": [], "probes": dict(
        (vip, [{"mac": mac, "vendor": None} for mac in macs]) for vip, macs in answers.items())}


VIP = "198.18.64.220"


def test_vip_no_owner_binds_takes_the_one_answering_mac_and_says_so():
    probes = [prober("node1", **{VIP: ["02:18:02:00:00:03"]}), prober("node2", **{VIP: ["02:18:02:00:00:03"]}),
              prober("node3", **{VIP: []})]
    out = vip_owners([owner("node1"), owner("node2"), owner("node3")], [VIP], probes)
    assert out["expected"] == {VIP: "02:18:02:00:00:03"}
    assert out["announced"] == {VIP: "02:18:02:00:00:03"}
    [found] = out["findings"]
    assert (found["check"], found["severity"], found["subject"]) == ("arp.vip_announced", "info", VIP)
    assert found["evidence"] == {"truth_from": "announcer", "mac": "02:18:02:00:00:03", "answered": ["node1", "node2"]}
    assert found["hosts"] == ["node1", "node2", "node3"]


def test_vip_no_owner_binds_and_nothing_answers_stays_unowned():
    out = vip_owners([owner("node1"), owner("node2")], [VIP], [prober("node1", **{VIP: []}), prober("node2")])
    assert out["expected"] == {} and out["announced"] == {}
    assert [(f["check"], f["severity"]) for f in out["findings"]] == [("arp.vip_unowned", "critical")]


def test_vip_no_owner_binds_answered_by_two_macs_is_a_conflict_not_a_truth():
    probes = [prober("node1", **{VIP: ["02:18:02:00:00:02"]}),
              prober("node3", **{VIP: ["02:18:02:00:00:02", "02:18:02:00:00:03"]})]
    out = vip_owners([owner("node1"), owner("node3")], [VIP], probes)
    assert out["expected"] == {}
    [found] = out["findings"]
    assert (found["check"], found["severity"]) == ("arp.ip_conflict", "critical")
    assert found["evidence"]["answering"] == [{"mac": "02:18:02:00:00:02", "answered": ["node1", "node3"]},
                                              {"mac": "02:18:02:00:00:03", "answered": ["node3"]}]


def test_a_bound_vip_keeps_its_owner_whatever_answers_the_probes():
    """keepalived / kube-vip bind the VIP: the owner's MAC is the truth, the probes are not read for it."""
    out = vip_owners([owner("cp1", (VIP, "02:18:00:00:00:01")), owner("cp2")], [VIP],
                     [prober("cp2", **{VIP: ["02:18:00:00:00:09"]})])
    assert out["expected"] == {VIP: "02:18:00:00:00:01"} and out["announced"] == {}
    assert out["findings"] == []


def test_skipped_or_unreachable_probers_answer_nothing():
    probes = [{"item": "node1", "skipped": True, "false_condition": "__node_pass_unheld | length > 0"},
              {"item": "node2", "unreachable": True, "msg": "ssh: timeout"}]
    out = vip_owners([owner("node1"), owner("node2")], [VIP], probes)
    assert [f["check"] for f in out["findings"]] == ["arp.vip_unowned"]


def test_probes_not_a_list_is_refused_naming_what_is_expected():
    with pytest.raises(AnsibleFilterError, match="probe: true"):
        vip_owners([owner("node1")], [VIP], {"results": []})
