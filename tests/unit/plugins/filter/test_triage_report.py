"""triage_report / triage_summary_lines / triage_repair_requests / triage_html_json: coverage from
one explicit structure, nothing unchecked shown as ok, fleet findings counted once, safe embedding."""

from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.filter.triage_html_json import triage_html_json
from ansible_collections.k8snet.triage.plugins.filter.triage_repair_requests import triage_repair_requests
from ansible_collections.k8snet.triage.plugins.filter.triage_report import triage_report
from ansible_collections.k8snet.triage.plugins.filter.triage_summary_lines import triage_summary_lines


def f(check, severity="warning", subject="s", **extra):
    return dict({"check": check, "severity": severity, "layer": "L3", "subject": subject, "summary": check,
                 "evidence": {}, "remediation": ""}, **extra)


def ran(*findings, details=None):
    return {"status": "ran", "reason": "", "findings": list(findings), "details": details or {}}


def skipped(reason):
    return {"status": "skipped", "reason": reason, "findings": [], "details": {}}


PENDING = {"status": "not finished", "reason": "did not finish", "findings": [], "details": {}}


def test_every_host_and_scenario_has_a_status_and_nothing_unchecked_is_ok():
    hostvars = {
        "node1": {"triage_host": {"status": "reached", "reason": ""},
                  "triage_results": {"cni": ran(f("cni.ok", "ok")), "calico": skipped("not a Calico node: no BIRD socket"),
                                     "pod_network": ran(f("route.missing", "critical"))}},
        "node2": {"triage_host": {"status": "unreachable", "reason": "Connection refused"},
                  "triage_results": {"cni": PENDING, "calico": skipped("triage_cni is cilium")}},
        "node3": {"triage_host": {"status": "no usable Python", "reason": "interpreter not found"},
                  "triage_results": {"cni": PENDING}},
        "node4": {"triage_host": {"status": "reached", "reason": ""},
                  "triage_results": {"cni": ran(f("cni.ok", "ok")), "pod_network": PENDING}},
        "node5": {"some_findings": [f("x.y", "critical")]},  # not targeted: its stray facts are not read
        "node6": {"triage_host": {"status": "reached", "reason": ""},
                  "triage_results": {"calico": skipped("not a Calico node")}},
    }
    report = triage_report(hostvars, sorted(hostvars) + ["missing"])
    hosts = report["hosts"]
    assert hosts["node1"]["status"] == "reached" and hosts["node1"]["verdict"] == "critical"
    assert hosts["node1"]["scenarios"]["calico"] == {"status": "skipped", "reason": "not a Calico node: no BIRD socket",
                                                     "findings": 0, "worst": None}
    assert hosts["node2"]["status"] == "unreachable"
    assert hosts["node2"]["scenarios"]["cni"]["status"] == "not run"
    assert hosts["node2"]["scenarios"]["calico"]["status"] == "skipped"
    assert hosts["node3"]["status"] == "no usable Python"
    # a scenario that never recorded its outcome on a reached host: the host failed during it
    assert hosts["node4"]["status"] == "failed" and "pod_network" in hosts["node4"]["reason"]
    assert hosts["node4"]["scenarios"]["pod_network"]["status"] == "failed"
    assert hosts["node5"]["status"] == "not checked" and hosts["node5"]["verdict"] == "not checked"
    assert hosts["missing"]["status"] == "not checked"
    assert hosts["node6"]["verdict"] == "not checked"  # everything skipped: not ok
    checks = {(x["host"], x["check"]) for x in report["findings"]}
    assert {("node2", "triage.host_unreachable"), ("node3", "triage.no_python"), ("node4", "triage.host_failed")} <= checks
    assert ("node5", "x.y") not in checks
    [down] = [x for x in report["findings"] if x["check"] == "triage.host_unreachable"]
    # ssh's words, then what they mean for the node, in plain words
    assert "nothing listens for SSH: sshd is down" in down["summary"] and down["evidence"]["ssh_failure"] == "refused"
    assert report["coverage"]["hosts"] == {"reached": 2, "unreachable": 1, "no usable Python": 1, "failed": 1,
                                           "not checked": 2}
    assert report["coverage"]["scenarios"]["not run"] == 2
    for host, info in hosts.items():
        if info["status"] not in ("reached", "controller"):
            assert info["verdict"] != "ok", host


def test_fleet_findings_are_counted_once():
    vip = f("arp.vip_unowned", "critical", "198.18.0.200", scope="fleet", hosts=["node2", "node3"])
    hostvars = {h: {"triage_host": {"status": "reached", "reason": ""},
                    "triage_results": {"stale_arp": ran(vip, f("arp.stale_entry", "critical", h))}} for h in ("node2", "node3")}
    report = triage_report(hostvars, ["node2", "node3"])
    assert report["counts"]["check"] == {"arp.vip_unowned": 1, "arp.stale_entry": 2}
    assert all(x["scope"] in ("host", "fleet") for x in report["findings"])


def test_summary_lists_hosts_not_checked_and_skipped_scenarios():
    hostvars = {"node1": {"triage_host": {"status": "reached", "reason": ""},
                          "triage_results": {"calico": skipped("not a Calico node"), "cni": ran()}},
                "node2": {"triage_host": {"status": "unreachable", "reason": "refused"}, "triage_results": {"cni": PENDING}}}
    lines = triage_summary_lines(triage_report(hostvars, ["node1", "node2"]))
    text = "\n".join(lines)
    assert "NOT CHECKED node2: unreachable (refused)" in text
    assert "calico skipped on node1: not a Calico node" in text
    assert "hosts: 1 reached, 1 unreachable" in text


@pytest.mark.parametrize("value, refused", [
    (True, True), ("yes", True), ("True", True), (1, True), (False, False), ("false", False), ("no", False),
    (None, False), ("", False), (0, False)])
def test_repair_requests_bool_options(value, refused):
    out = triage_repair_requests({"node2": {"cilium_maps_cleanup": value}, "node1": {}}, ["node1", "node2", "nowhere"])
    assert bool(out) is refused
    if refused:
        assert out == ["node2: cilium_maps_cleanup=%s" % value]


@pytest.mark.parametrize("value, refused", [("cluster", True), ("none", False), ("None", False), (None, False), ("x", True)])
def test_repair_requests_string_options(value, refused):
    assert bool(triage_repair_requests({"localhost": {"lb_health_remediate": value}}, ["localhost"])) is refused


def test_repair_requests_an_unevaluable_value_is_refused():
    class Lazy(dict):
        def __getitem__(self, key):
            raise RuntimeError("'undefined_var' is undefined")

    out = triage_repair_requests({"n": Lazy(stale_arp_flush="{{ undefined_var }}")}, ["n"])
    assert out and "cannot be evaluated" in out[0]


@pytest.mark.parametrize("text", ["<!--<script>", "</script>", "]]>", "a\u2028b\u2029c", "&amp; <b>x</b>", "'\"\\"])
def test_html_json_has_no_markup_and_round_trips(text):
    out = triage_html_json({"findings": [{"summary": text, "evidence": {text: [text]}}]})
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        assert char not in out
    assert json.loads(out) == {"findings": [{"summary": text, "evidence": {text: [text]}}]}


def test_summary_names_the_hosts_of_a_fleet_finding():
    vip = f("arp.vip_unowned", "critical", "198.18.0.200", scope="fleet", hosts=["cp1", "cp2"])
    hostvars = {"node2": {"triage_host": {"status": "reached", "reason": ""}, "triage_results": {"stale_arp": ran(vip)}}}
    assert "    fleet (cp1, cp2)  198.18.0.200" in triage_summary_lines(triage_report(hostvars, ["node2"]))


def test_gaps_group_the_scenarios_that_did_not_run_by_reason():
    hostvars = {h: {"triage_host": {"status": "reached", "reason": ""},
                    "triage_results": {"calico": skipped("not a Calico node"), "cni": ran()}} for h in ("n1", "n2", "n3")}
    hostvars["n4"] = {"triage_host": {"status": "unreachable", "reason": "x"}, "triage_results": {"cni": PENDING}}
    gaps = triage_report(hostvars, sorted(hostvars))["coverage"]["gaps"]
    assert gaps == [{"scenario": "calico", "status": "skipped", "reason": "not a Calico node", "hosts": ["n1", "n2", "n3"]}]


def test_a_run_that_checked_nothing_says_so_and_why():
    hostvars = {
        "node1": {"triage_host": {"status": "unreachable", "reason": "Connection timed out"},
                  "triage_results": {"cni": PENDING}},
        "node2": {"triage_host": {"status": "reached", "reason": ""},
                  "triage_results": {"stale_arp": skipped("no VIPs given (stale_arp_vips)")}},
        "localhost": {"triage_host": {"status": "controller", "reason": ""},
                      "triage_results": {"f5": skipped("no Kubernetes credentials")}},
    }
    report = triage_report(hostvars, ["node1", "node2", "localhost", "node9"])
    [item] = [f for f in report["findings"] if f["check"].startswith("triage.nothing")]
    assert item["check"] == "triage.nothing_checked" and item["severity"] == "critical" and item["host"] == "localhost"
    assert "1 unreachable" in item["summary"] and "1 not checked" in item["summary"]
    assert "stale_arp: skipped (no VIPs given (stale_arp_vips)) on node2" in item["summary"]
    assert "f5: skipped (no Kubernetes credentials) on localhost" in item["summary"]
    assert report["hosts"]["localhost"]["verdict"] == "critical" and report["worst"] == "critical"
    # nobody at all: still said
    [item] = triage_report({}, [])["findings"]
    assert item["check"] == "triage.nothing_checked" and "no host at all" in item["summary"]


def test_a_requested_scenario_that_ran_nowhere_is_critical_with_its_reasons():
    hostvars = {"node1": {"triage_host": {"status": "reached", "reason": ""},
                          "triage_results": {"cni": ran(f("node.cni_files_ok", "ok")),
                                             "calico": skipped("triage_cni is cilium")}},
                "node2": {"triage_host": {"status": "reached", "reason": ""},
                          "triage_results": {"cni": ran(), "calico": skipped("triage_cni is cilium")}}}
    report = triage_report(hostvars, ["node1", "node2"], requested=["cni", "calico", "dns"])
    found = dict((f["subject"], f) for f in report["findings"] if f["check"] == "triage.scenario_not_run")
    assert sorted(found) == ["scenario calico", "scenario dns"]
    assert "skipped (triage_cni is cilium) on node1, node2" in found["scenario calico"]["summary"]
    assert "no host of the run has it" in found["scenario dns"]["summary"]
    # not asked by name: the defaults that do not fit are no finding
    assert not [f for f in triage_report(hostvars, ["node1", "node2"])["findings"] if f["check"].startswith("triage.")]
    # a scenario playbook's report: its scenario is asked for
    assert [f["check"] for f in triage_report({"node1": {}}, ["node1"], "dns")["findings"]] == ["triage.nothing_checked"]


API_ONLY = {"localhost": {"triage_host": {"status": "controller", "reason": ""},
                          "triage_results": {"cni": ran(f("node.network_unavailable", "critical", "node2")),
                                             "f5": ran(), "lb_health": skipped("no LoadBalancer Service")}}}


@pytest.mark.parametrize("members, why", [
    (None, "the inventory has no group k8s_nodes"),
    ([], "group k8s_nodes has no host"),
])
def test_the_api_half_alone_says_no_node_was_checked_and_why(members, why):
    """Issue 47: a triage with Kubernetes credentials and no node host checked the API's side only: the coverage
    says so, and triage.no_node_checked (critical) makes the run not green."""
    report = triage_report(API_ONLY, ["localhost"], nodes={"group": "k8s_nodes", "hosts": members})
    assert report["coverage"]["nodes"] == {"group": "k8s_nodes", "hosts": 0, "checked": 0, "reason": why}
    [item] = [f for f in report["findings"] if f["check"].startswith("triage.")]
    assert item["check"] == "triage.no_node_checked" and item["severity"] == "critical" and item["host"] == "localhost"
    assert item["summary"].startswith("no node was checked: %s; only the Kubernetes API's side (cni, f5) ran, so" % why)
    assert item["scope"] == "fleet" and report["worst"] == "critical"
    assert report["counts"]["check"]["triage.no_node_checked"] == 1
    assert "NO NODE CHECKED: %s (the Kubernetes API's side only)" % why in triage_summary_lines(report)


def test_nodes_that_were_not_reached_are_no_node_checked_with_their_statuses():
    hostvars = dict(API_ONLY, node1={"triage_host": {"status": "unreachable", "reason": "Connection timed out"},
                                     "triage_results": {"cni": PENDING}},
                    node2={"triage_host": {"status": "no usable Python", "reason": "/usr/bin/python3 missing"},
                           "triage_results": {"cni": PENDING}})
    report = triage_report(hostvars, ["localhost", "node1", "node2", "node3"],
                           nodes={"group": "k8s_nodes", "hosts": ["node1", "node2", "node3"]})
    nodes = report["coverage"]["nodes"]
    assert nodes["checked"] == 0 and nodes["hosts"] == 3
    assert nodes["reason"] == ("none of the 3 hosts of group k8s_nodes was reached "
                               "(1 no usable Python, 1 not checked, 1 unreachable)")
    assert [f["check"] for f in report["findings"] if f["check"] == "triage.no_node_checked"] == ["triage.no_node_checked"]
    # a VIPs' client outside the group was checked: said beside the API's side
    hostvars["admin1"] = {"triage_host": {"status": "reached", "reason": ""}, "triage_results": {"stale_arp": ran()}}
    report = triage_report(hostvars, ["localhost", "admin1", "node1", "node2", "node3"],
                           nodes={"group": "k8s_nodes", "hosts": ["node1", "node2", "node3"]})
    [item] = [f for f in report["findings"] if f["check"] == "triage.no_node_checked"]
    assert "only the Kubernetes API's side (cni, f5) and the checks of admin1 ran" in item["summary"], item


def test_one_node_checked_is_no_finding_and_no_nodes_group_no_coverage_of_nodes():
    # node1 was reached; that no scenario applied to it (stale_arp runs on the VIPs' clients) is no gap of nodes
    hostvars = dict(API_ONLY, node1={"triage_host": {"status": "reached", "reason": ""},
                                     "triage_results": {"stale_arp": skipped("not a client of the VIPs")}})
    report = triage_report(hostvars, ["localhost", "node1", "node2"],
                           nodes={"group": "k8s_nodes", "hosts": ["node1", "node2"]})
    assert report["coverage"]["nodes"] == {"group": "k8s_nodes", "hosts": 2, "checked": 1, "reason": ""}
    assert not [f for f in report["findings"] if f["check"] == "triage.no_node_checked"]
    # nodes the triage found no scenario of applies to were considered, not missed (dns_pod on a node outside it)
    hostvars = dict(API_ONLY, node1={"triage_host": {"status": "not checked", "reason": "no scenario applies to this host"},
                                     "triage_results": {"dns": skipped("no DNS servers given")}})
    report = triage_report(hostvars, ["localhost", "node1"], nodes={"group": "k8s_nodes", "hosts": ["node1"]})
    assert report["coverage"]["nodes"]["checked"] == 1
    assert not [f for f in report["findings"] if f["check"] == "triage.no_node_checked"]
    # a scenario playbook's report, or a triage that asked for no node scenario: the nodes are not accounted for
    report = triage_report(API_ONLY, ["localhost"])
    assert "nodes" not in report["coverage"] and not [f for f in report["findings"] if f["check"].startswith("triage.")]
    # nothing checked at all is triage.nothing_checked alone (it says everything)
    report = triage_report({}, [], nodes={"group": "k8s_nodes", "hosts": []})
    assert [f["check"] for f in report["findings"]] == ["triage.nothing_checked"]


@pytest.mark.parametrize("nodes", ["k8s_nodes", {"hosts": []}, {"group": "k8s_nodes", "hosts": "node1"}])
def test_nodes_of_another_shape_are_refused(nodes):
    with pytest.raises(Exception, match="nodes must be"):
        triage_report(API_ONLY, ["localhost"], nodes=nodes)


def test_a_hosts_own_findings_and_the_peers_it_left_out_are_in_its_record():
    bad = {"check": "triage.bad_host_variable", "severity": "critical", "layer": "control-plane", "subject": "node1",
           "summary": "node1: k8s_pod_cidr='198.19.98.0/33' is invalid", "evidence": {}, "remediation": "fix"}
    note = dict(f("triage.peers_left_out", subject="node1"), scope="fleet", hosts=["node2", "node3"])
    hostvars = {"node1": {"triage_host": {"status": "failed", "reason": "bad host variable", "findings": [bad]},
                          "triage_results": {"cni": {"status": "failed", "reason": "bad host variable", "findings": []}}},
                "node2": {"triage_host": {"status": "reached", "reason": "", "findings": [note],
                                          "peers_left_out": {"node1": "k8s_pod_cidr='198.19.98.0/33' is invalid"}},
                          "triage_results": {"cni": ran()}},
                "node3": {"triage_host": {"status": "reached", "reason": "", "findings": [note],
                                          "peers_left_out": {"node1": "k8s_pod_cidr='198.19.98.0/33' is invalid"}},
                          "triage_results": {"cni": ran()}}}
    report = triage_report(hostvars, ["node1", "node2", "node3"])
    checks = [(x["host"], x["check"]) for x in report["findings"]]
    # the host's own critical finding replaces the generic triage.host_failed; the note is counted once
    assert checks == [("node1", "triage.bad_host_variable"), ("node2", "triage.peers_left_out")]
    assert report["hosts"]["node3"]["peers_left_out"] == {"node1": "k8s_pod_cidr='198.19.98.0/33' is invalid"}
    assert report["hosts"]["node1"]["status"] == "failed" and report["hosts"]["node2"]["verdict"] == "warning"


def test_a_host_left_out_by_limit_says_so():
    report = triage_report({"node1": {}}, ["node1"], limit="node2")
    expected = "the triage did not target this host (it is in none of its groups, or --limit node2 left it out)"
    assert report["hosts"]["node1"]["reason"] == expected
    assert "or --limit" not in triage_report({"node1": {}}, ["node1"])["hosts"]["node1"]["reason"]


def test_a_scenario_roles_fleet_conclusions_are_the_controllers_record():
    # a scenario playbook: the nodes recorded by their role's pass, the fleet's conclusions only in localhost's
    # node_pass_fleet_results; the report counts them once, on the controller
    matrix = {"check": "connectivity.node_isolated", "severity": "critical", "layer": "L3", "subject": "n2",
              "summary": "n2 answers no peer", "evidence": {}, "remediation": "", "scope": "fleet", "hosts": ["n1"]}
    hostvars = {"n1": {"triage_host": {"status": "reached", "reason": ""}, "triage_results": {"connectivity": ran()}},
                "localhost": {"node_pass_fleet_results": {"connectivity": dict(ran(matrix), hosts=["n1"])}}}
    data = triage_report(hostvars, ["n1", "localhost"], "connectivity")
    assert data["hosts"]["localhost"]["status"] == "controller"
    assert [(f["check"], f["host"]) for f in data["findings"] if f["severity"] == "critical"] == [
        ("connectivity.node_isolated", "localhost")]


def test_the_ssh_retries_a_host_needed_are_in_its_entry_the_coverage_and_the_summary():
    """triage_ssh_retries: a host reached on its second connection says so; one that never answered says how many
    connections were tried, and ssh's words are read for the operator (the node does not answer)."""
    timed_out = "ssh: connect to host 198.18.0.13 port 22: Connection timed out"
    hostvars = {
        "node1": {"triage_host": {"status": "reached", "reason": "", "ssh_attempts": 2},
                  "triage_results": {"cni": ran(f("cni.ok", "ok"))}},
        "node2": {"triage_host": {"status": "reached", "reason": ""}, "triage_results": {"cni": ran(f("cni.ok", "ok"))}},
        "node3": {"triage_host": {"status": "unreachable", "reason": timed_out, "ssh_attempts": 3},
                  "triage_results": {"cni": PENDING}},
    }
    report = triage_report(hostvars, sorted(hostvars))
    assert report["hosts"]["node1"]["ssh_retries"] == 1 and "ssh_retries" not in report["hosts"]["node2"]
    assert report["coverage"]["ssh_retries"] == {"node1": 1, "node3": 2}
    [down] = [x for x in report["findings"] if x["check"] == "triage.host_unreachable"]
    assert ("node3 could not be reached over SSH (the node does not answer (the connection timed out): down, cut off "
            "or filtered; 3 connections tried)") in down["summary"]
    assert down["evidence"]["ssh_attempts"] == 3 and down["evidence"]["ssh_failure"] == "no answer"
    lines = triage_summary_lines(report)
    assert any(line.startswith("SSH RETRIED on 2 hosts") and "node1 (1), node3 (2)" in line for line in lines)


def _route_missing(peer):
    cidr = "198.19.%d.0/24" % int(peer[4:])
    return f("route.missing", "critical", "%s %s" % (peer, cidr), evidence={"cidr": cidr, "peer": peer})


def test_a_hosts_card_counts_what_it_shows_once_the_pairs_are_folded():
    """11 nodes miss node5's pod CIDR: the pairs fold into one finding held by node5. Before, node5's card said ok
    beside the critical finding it showed, and each observer's said critical with no finding to show."""
    mesh = f("route.mesh", "ok", "mesh")
    reached = {"status": "reached", "reason": ""}
    hostvars = {}
    for i in range(1, 13):
        found = ([_route_missing("node5")] if i != 5 else []) + [mesh]
        hostvars["node%d" % i] = {"triage_host": reached, "triage_results": {"pod_network": ran(*found)}}
    report = triage_report(hostvars, sorted(hostvars))
    [folded] = [x for x in report["findings"] if x["check"] == "route.missing"]
    assert folded["host"] == "node5" and folded["evidence"]["folded"] == 11
    node5, node1 = report["hosts"]["node5"], report["hosts"]["node1"]
    assert node5["verdict"] == "critical" and node5["counts"] == {"critical": 1, "ok": 1}
    assert node5["scenarios"]["pod_network"] == {"status": "ran", "reason": "", "findings": 2, "worst": "critical"}
    # an observer's card shows its share: the one folded finding, once
    assert node1["verdict"] == "critical" and node1["counts"] == {"critical": 1, "ok": 1}
    assert node1["scenarios"]["pod_network"]["findings"] == 2


def test_the_probers_of_a_node_that_is_down_are_not_critical_for_it():
    """node4 is down: the probes to it fold into its one finding; the probers' cards keep only their own."""
    def unreachable(target):
        return f("reach.unreachable", "critical", target)
    isolated = f("connectivity.node_isolated", "critical", "node4", evidence={"probed_by": ["node1", "node2", "node3"]},
                 scope="fleet", hosts=["node1", "node2", "node3"])
    reached = {"status": "reached", "reason": ""}
    hostvars = dict(("node%d" % i, {"triage_host": reached,
                                    "triage_results": {"connectivity": ran(unreachable("node4"), f("reach.ok", "ok"))}})
                    for i in (1, 2, 3))
    hostvars["node4"] = {"triage_host": {"status": "unreachable", "reason": "ssh: connect to host x port 22: No route to host"},
                         "triage_results": {"connectivity": PENDING}}
    hostvars["localhost"] = {"node_pass_fleet_results": {"connectivity": ran(dict(isolated, host="localhost"))}}
    report = triage_report(hostvars, sorted(hostvars))
    [down] = [x for x in report["findings"] if x["severity"] == "critical"]
    assert (down["check"], down["subject"]) == ("triage.host_unreachable", "node4")
    for prober in ("node1", "node2", "node3"):
        assert report["hosts"][prober]["verdict"] == "ok" and report["hosts"][prober]["counts"] == {"ok": 1}
    assert report["hosts"]["node4"]["verdict"] == "critical"


def test_the_records_are_read_when_ansible_core_does_not_inject_facts_as_variables():
    """With inject_facts_as_vars off (ANSIBLE_INJECT_FACT_VARS=False: half the controller's CPU at 100 nodes, and
    ansible-core's announced default), node_pass's facts are only under ansible_facts; a set_fact variable (the
    stale-ARP re-check's record) still comes first."""
    record = {"triage_host": {"status": "reached", "reason": ""},
              "triage_results": {"cni": ran(f("cni.ok", "ok")), "pod_network": ran(f("route.missing", "critical"))}}
    later = {"cni": ran(f("cni.ok", "ok")), "pod_network": ran(f("route.mesh", "ok"))}
    hostvars = {"node1": {"ansible_facts": dict(record)},
                "node2": {"ansible_facts": dict(record), "triage_results": later}}
    report = triage_report(hostvars, ["node1", "node2"])
    assert report["hosts"]["node1"]["status"] == "reached" and report["hosts"]["node1"]["verdict"] == "critical"
    assert report["hosts"]["node2"]["verdict"] == "ok"
    assert [(x["host"], x["check"]) for x in report["findings"] if x["severity"] == "critical"] == [("node1", "route.missing")]


def test_a_record_older_than_the_run_is_an_earlier_runs_kept_by_a_fact_cache_and_not_this_runs_word():
    """With a fact cache (AWX's fact storage, fact_caching=jsonfile), a host that --limit left out still holds the
    record of the run before: it is not checked by this run, and its old findings are not shown as current."""
    started = 1_800_000_000.0
    old = {"triage_host": {"status": "reached", "reason": "", "recorded": started - 3600,
                           "findings": [f("triage.peers_left_out", "warning")]},
           "triage_results": {"pod_network": ran(f("route.missing", "critical"))}}
    now = {"triage_host": {"status": "reached", "reason": "", "recorded": started + 20},
           "triage_results": {"pod_network": ran(f("route.mesh", "ok"))}}
    unstamped = {"triage_host": {"status": "reached", "reason": ""}, "triage_results": {"pod_network": ran(f("route.mesh", "ok"))}}
    report = triage_report({"node1": now, "node2": old, "node3": unstamped}, ["node1", "node2", "node3"], since=started)
    node2 = report["hosts"]["node2"]
    assert node2["status"] == "not checked" and node2["verdict"] == "not checked"
    assert "its record is from an earlier run (2027-01-15T07:00:00+00:00), kept by the fact cache" in node2["reason"]
    assert not [x for x in report["findings"] if x["host"] == "node2" and x["severity"] != "ok"]
    assert report["hosts"]["node1"]["status"] == report["hosts"]["node3"]["status"] == "reached"
    # without a start (a filter call that gives none), a record is taken as it is
    assert triage_report({"node2": old}, ["node2"])["hosts"]["node2"]["status"] == "reached"


def test_a_record_that_names_its_run_is_judged_by_the_run_not_the_clock():
    """A fast rerun (sysctl only: 3 s a run) starts less than a second after the run before recorded its hosts, and
    a start read from /proc is not exact: the record names its run (node_pass's identity of the ansible-playbook
    process), and that decides, whatever the times say."""
    started = 1_800_000_000.0
    results = {"pod_network": ran(f("route.mesh", "ok"))}
    before = {"triage_host": {"status": "reached", "reason": "", "recorded": started - 0.5, "run": "boot-100-5"},
              "triage_results": results}
    this = {"triage_host": {"status": "reached", "reason": "", "recorded": started - 5, "run": "boot-200-9"},
            "triage_results": results}
    report = triage_report({"node1": this, "node2": before}, ["node1", "node2"], since=started, run="boot-200-9")
    assert report["hosts"]["node1"]["status"] == "reached"  # this run's, though its time says earlier
    node2 = report["hosts"]["node2"]
    assert node2["status"] == "not checked" and "its record is from an earlier run (" in node2["reason"], node2
    # a record without a run (an older collection's) is judged by its time, as before
    unnamed = {"triage_host": {"status": "reached", "reason": "", "recorded": started - 3600}, "triage_results": results}
    assert triage_report({"node3": unnamed}, ["node3"], since=started, run="boot-200-9")["hosts"]["node3"]["status"] == \
        "not checked"
    # a cache holding no time, or not one, with another run's name: not this run's, said without a time
    for odd in (float("nan"), float("inf"), 1e300, -5, "yesterday", None):
        state = {"triage_host": {"status": "reached", "reason": "", "recorded": odd, "run": "boot-100-5"},
                 "triage_results": results}
        node = triage_report({"node4": state}, ["node4"], since=started, run="boot-200-9")["hosts"]["node4"]
        assert node["status"] == "not checked" and "(no time recorded)" in node["reason"], (odd, node)
