"""The controller side of the one-pass triage: plugin_utils/node_pass (the node_pass action's
logic) computes the fleet inputs with the scenario roles' code and variables and records the
results; the node_pass_fleet filter publishes the fleet's conclusions once."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.filter.connectivity_peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.filter.node_pass_fleet import node_pass_fleet
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import BadHostVariable
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import ParamsError
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import bad_variable_findings
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import lean
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import params as node_pass_params
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import record as node_pass_record

HOSTVARS = {
    "n1": {"ansible_host": "198.18.96.11", "k8s_pod_cidr": "198.19.96.0/24"},
    "n2": {"ansible_host": "198.18.96.12", "k8s_pod_cidr": ["198.19.97.0/24"], "k8s_node_name": "worker-2"},
    "n3": {"ansible_host": "198.18.96.13", "k8s_node_ip": "198.18.100.13"},
    "client": {"ansible_host": "198.18.96.50"},
}
GROUPS = {"k8s_nodes": ["n1", "n2", "n3"], "admin_control_plane": ["client", "n3"], "control_plane": ["n1"]}


def test_fleet_inputs_come_from_the_inventory_contract():
    params = node_pass_params({"firewall_drops_interval": 2, "calico_sockets": [], "pod_network_tunnel_device": ""},
                              "n2", HOSTVARS, GROUPS)
    assert params["node_name"] == "worker-2"
    # no DNS server and no VIP: dns and stale_arp are not asked
    assert params["scenarios"] == ["cni", "calico", "cilium_maps", "cilium_agent", "pod_network", "firewall_drops",
                                   "connectivity", "logs", "conntrack", "pmtu", "sysctl"]
    assert params["firewall_drops"] == {"interval": 2}
    # the path-MTU peers follow the same inventory-node contract as the connectivity peers
    assert params["pmtu"] == {"targets": connectivity_peers(GROUPS["k8s_nodes"], "n2", 8, HOSTVARS)}
    assert params["conntrack"] == {}
    # triage_cni auto: a node without BIRD or without Cilium is "not a ... node", not critical
    assert params["calico"] == {"expected_peers": ["198.18.96.11", "198.18.96.12", "198.18.100.13"],
                                "when_not_calico": "skip"}
    assert params["cilium_maps"]["when_not_cilium"] == "skip"
    assert params["cilium_agent"] == {"when_not_cilium": "skip"}
    # the hosts with a pod CIDR, named and addressed as calico_inventory_nodes does
    assert params["pod_network"] == {"peers": [
        {"node": "n1", "node_ip": "198.18.96.11", "pod_cidrs": ["198.19.96.0/24"]},
        {"node": "worker-2", "node_ip": "198.18.96.12", "pod_cidrs": ["198.19.97.0/24"]}]}
    assert params["connectivity"] == {"targets": connectivity_peers(GROUPS["k8s_nodes"], "n2", 8, HOSTVARS)}
    assert "live_frontends" not in params["cilium_maps"]  # unknown: no stale-frontend check


def test_cni_choice_dns_servers_and_vip_clients():
    owners = {"expected": {"198.18.96.200": "02:18:03:00:00:01"}, "owners": {}, "findings": []}
    variables = {"triage_cni": "cilium", "dns_servers": [{"address": "198.18.112.10", "role": "service"}],
                 "stale_arp_vips": ["198.18.96.200"], "cilium_maps_live_frontends": [], "dns_host_resolvers": False}
    params = node_pass_params(variables, "n3", HOSTVARS, GROUPS, owners)
    assert "calico" not in params["scenarios"] and "cilium_maps" in params["scenarios"]
    assert params["scenarios"][-6:] == ["dns", "logs", "conntrack", "pmtu", "sysctl", "stale_arp"]
    assert params["dns"] == {"servers": variables["dns_servers"], "host_resolvers": False}
    assert params["stale_arp"] == {"addresses": ["198.18.96.200"], "expected": owners["expected"]}
    # [] means "Kubernetes has no services"; triage_cni cilium reads the maps whatever the node shows
    assert params["cilium_maps"] == {"live_frontends": [], "when_not_cilium": "check"}
    # and an absent agent socket is the agent down, not "not a Cilium node"; the agent's variables and the
    # CNI configuration directory reach its check
    variables.update(cilium_agent_metrics_url="http://127.0.0.1:9090/metrics", cilium_agent_interval=2,
                     cni_conf_dir="/etc/cni/custom")
    assert node_pass_params(variables, "n3", HOSTVARS, GROUPS, owners)["cilium_agent"] == {
        "metrics_url": "http://127.0.0.1:9090/metrics", "interval": 2, "cni_conf_dir": "/etc/cni/custom",
        "when_not_cilium": "critical"}
    # a client that is not a node gets only stale_arp
    assert node_pass_params(variables, "client", HOSTVARS, GROUPS, owners)["scenarios"] == ["stale_arp"]


def test_kube_inputs_replace_the_variables_with_a_kubeconfig():
    kube = {"nodes": [{"name": "a", "calico_ipv4_address": "10.0.0.1", "internal_ip": "10.1.0.1"},
                      {"name": "b", "calico_ipv4_address": None, "internal_ip": "10.1.0.2"}],
            "service_frontends": ["10.96.0.1:443/TCP"], "dns_servers": [{"address": "10.96.0.10"}]}
    kube.update(changed=False, credential_source="kubeconfig", findings=[])
    params = node_pass_params({"dns_servers": [{"address": "1.1.1.1"}]}, "n1", HOSTVARS, GROUPS, kube=kube)
    assert params["calico"]["expected_peers"] == ["10.0.0.1", "10.1.0.2"]
    assert params["cilium_maps"]["live_frontends"] == ["10.96.0.1:443/TCP"]
    assert params["dns"]["servers"] == [{"address": "10.96.0.10"}]


def test_without_a_usable_api_the_variables_are_used_and_skips_say_why():
    # registered with failed_when: false, a failed read keeps failed false and has no findings
    for kube, why in (({"failed": False, "credential_source": None, "msg": "no credentials"}, "no Kubernetes credentials ("),
                      ({"failed": False, "credential_source": "env", "msg": "401 Unauthorized"},
                       "the Kubernetes API could not be read: 401 Unauthorized"),
                      ({"skipped": True}, "no Kubernetes credentials (")):
        params = node_pass_params({"cilium_maps_live_frontends": ["198.18.0.1:80/TCP"]}, "n1", HOSTVARS, GROUPS, kube=kube)
        assert params["cilium_maps"]["live_frontends"] == ["198.18.0.1:80/TCP"]
        assert params["skipped"]["dns"].startswith("no DNS servers given (dns_servers) and " + why), params["skipped"]
        assert params["calico"]["expected_peers"] == ["198.18.96.11", "198.18.96.12", "198.18.100.13"]
    # every wanted scenario that does not apply to a host is named with its reason
    params = node_pass_params({"triage_cni": "calico", "stale_arp_vips": ["198.18.96.200"]}, "client", HOSTVARS, GROUPS)
    assert params["scenarios"] == ["stale_arp"]
    assert params["skipped"]["cni"] == "not in group k8s_nodes"
    params = node_pass_params({"triage_cni": "calico"}, "n1", HOSTVARS, GROUPS)
    assert params["skipped"] == {"cilium_maps": "triage_cni is calico", "cilium_agent": "triage_cni is calico",
                                 "dns": params["skipped"]["dns"],
                                 "stale_arp": "not a client of the VIPs (not in group admin_control_plane)"}


def test_a_peer_without_a_usable_address_is_left_out_and_named():
    """ansible_host a DNS name and no k8s_node_ip: the peer has no address to probe or expect; the others
    leave it out of their lists and say why, and its own pass still runs (it needs no address of its own)."""
    hostvars = dict(HOSTVARS, n1={"ansible_host": "n1.example"})
    params = node_pass_params({}, "n2", hostvars, GROUPS)
    assert [t["name"] for t in params["connectivity"]["targets"]] == ["n3"]
    assert params["calico"]["expected_peers"] == ["198.18.96.12", "198.18.100.13"]
    assert "ansible_host='n1.example' is invalid" in params["left_out"]["n1"]
    [note] = params["left_out_findings"]
    assert note["check"] == "triage.peers_left_out" and note["subject"] == "n1" and note["severity"] == "warning"
    assert "calico expected BGP peers" in note["summary"] and "connectivity targets" in note["summary"]
    assert node_pass_params({}, "n1", hostvars, GROUPS)["scenarios"][:2] == ["cni", "calico"]


@pytest.mark.parametrize("variable, value, shown", [
    ("k8s_pod_cidr", "198.19.98.0/33", "k8s_pod_cidr='198.19.98.0/33' is invalid"),
    ("k8s_node_name", "node1\nkube-system", "k8s_node_name='node1\\nkube-system' is invalid"),
    ("k8s_node_ip", "198.18.96.300", "k8s_node_ip='198.18.96.300' is invalid"),
])
def test_one_hosts_bad_variable_is_that_hosts(variable, value, shown):
    """The host with the bad variable fails with a finding naming it (the value escaped, the fix); every
    other host builds its checks without that peer, and says so."""
    hostvars = dict(HOSTVARS, n1=dict(HOSTVARS["n1"], **{variable: value}))
    with pytest.raises(BadHostVariable) as info:
        node_pass_params({}, "n1", hostvars, GROUPS)
    [item] = bad_variable_findings(info.value)
    assert item["check"] == "triage.bad_host_variable" and item["severity"] == "critical" and item["subject"] == "n1"
    assert shown in item["summary"] and "\n" not in item["summary"] and variable in item["remediation"]
    recorded = node_pass_record({"failed": True, "bad_variable": True, "msg": str(info.value)}, info.value.scenarios,
                                info.value.skipped, [item])
    assert recorded["host"]["status"] == "failed" and recorded["host"]["findings"] == [item]
    assert recorded["results"]["cni"]["status"] == "failed"
    for host in ("n2", "n3"):
        params = node_pass_params({}, host, hostvars, GROUPS)
        assert shown in params["left_out"]["n1"]
        assert "n1" not in [p["node"] for p in params["pod_network"]["peers"]]
        # a list that needs only the address keeps the peer unless its address is what is wrong
        probed = "n1" in [t["name"] for t in params["connectivity"]["targets"]]
        assert probed is (variable != "k8s_node_ip")


def test_a_failed_build_is_failed_not_not_checked():
    recorded = node_pass_record({"failed": True, "msg": "cannot build this host's checks: x"}, [], {})
    assert recorded["host"] == {"status": "failed", "reason": "cannot build this host's checks: x"}


def test_a_skipped_api_read_gives_its_true_reason():
    params = node_pass_params({"triage_scenarios": ["dns"]}, "n1", HOSTVARS, GROUPS,
                              kube={"skipped": True, "false_condition": "'dns' in triage_scenarios"})
    assert "was not read (its step was skipped: 'dns' in triage_scenarios is false)" in params["skipped"]["dns"]
    params = node_pass_params({"triage_scenarios": ["dns"]}, "n1", HOSTVARS, GROUPS, kube={
        "skipped": True, "false_condition": "hostvars['localhost'].triage_api_source | default('not probed') is not none"})
    assert "no Kubernetes credentials" in params["skipped"]["dns"]


def test_record_keeps_asked_scenarios_and_marks_a_pass_that_did_not_run():
    entry = {"status": "ran", "reason": "", "findings": [], "data": {"x": 1}, "seconds": 0.1}
    result = {"scenarios": {"cni": entry, "dns": dict(entry, status="skipped")}, "timing": {}}
    record = node_pass_record(result, ["cni"], {"stale_arp": "no VIPs given (stale_arp_vips)"})
    assert record["host"] == {"status": "reached", "reason": ""}
    assert record["results"] == {
        "cni": {"status": "ran", "reason": "", "findings": [], "details": {}, "data": {"x": 1}},
        "stale_arp": {"status": "skipped", "reason": "no VIPs given (stale_arp_vips)", "findings": [], "details": {}, "data": {}}}
    down = node_pass_record({"unreachable": True, "msg": "ssh: connect to host: timed out"}, ["cni", "calico"])
    assert down["host"] == {"status": "unreachable", "reason": "ssh: connect to host: timed out"}
    assert down["results"] == dict((name, {"status": "not run", "reason": "host unreachable", "findings": [], "details": {},
                                           "data": {}}) for name in ("cni", "calico"))
    python = node_pass_record({"failed": True, "rc": 127, "msg": "/nonexistent/python3: not found"}, ["cni"])
    assert python["host"]["status"] == "no usable Python" and python["results"]["cni"]["status"] == "not run"
    broken = node_pass_record({"failed": True, "msg": "boom"}, ["cni"])
    assert broken["host"] == {"status": "failed", "reason": "boom"} and broken["results"]["cni"]["status"] == "failed"
    # nothing applied: the task was skipped, the host is not claimed as checked
    idle = node_pass_record({"skipped": True, "changed": False}, [], {"cni": "not in group k8s_nodes"})
    assert idle["host"]["status"] == "not checked" and idle["results"]["cni"]["status"] == "skipped"


def test_record_keeps_the_details_the_html_report_draws():
    maps = [{"name": "m%d" % i, "type": "hash", "entries": i, "max_entries": 10, "ratio": i / 10.0} for i in range(10)]
    result = {"scenarios": {"cilium_maps": {"status": "ran", "reason": "", "findings": [], "data": {"maps": maps}}}}
    fill = node_pass_record(result, ["cilium_maps"])["results"]["cilium_maps"]["details"]["map_fill"]
    assert [m["name"] for m in fill] == ["m9", "m8", "m7", "m6", "m5", "m4", "m3", "m2"]


def test_the_triages_record_keeps_only_the_data_the_fleet_reads_and_the_fleet_still_draws_its_matrix():
    row = {"address": "198.18.96.12", "name": "n2", "reachable": False}
    routes = {"status": "ran", "findings": [], "data": {"peer_routes": [{"node": "n%d" % i} for i in range(99)]}}
    result = {"scenarios": {"pod_network": routes,
                            "connectivity": {"status": "ran", "reason": "", "findings": [], "data": {"targets": [row]}},
                            "dns": {"status": "ran", "reason": "", "findings": [], "data": {"pod": {"name": "p"}}}}}
    recorded = node_pass_record(result, ["pod_network", "connectivity", "dns"])["results"]
    kept = lean(recorded)
    assert "data" not in kept["pod_network"] and kept["pod_network"]["details"] == recorded["pod_network"]["details"]
    assert kept["connectivity"]["data"] == {"targets": [row]} and kept["dns"]["data"] == {"pod": {"name": "p"}}
    assert "data" in recorded["pod_network"]  # the record itself is not changed
    fleet = node_pass_fleet({"n1": {"triage_results": kept}, "n3": {"triage_results": kept}}, ["n1", "n3"], {})
    assert [f["check"] for f in fleet["connectivity"]["findings"]] == ["connectivity.node_isolated"]


def test_fleet_publishes_owner_findings_once_and_the_connectivity_matrix():
    unowned = {"check": "arp.vip_unowned", "severity": "critical", "subject": "198.18.96.200"}
    owners = {"expected": {}, "owners": {"198.18.96.200": []}, "findings": [unowned]}
    row = {"address": "198.18.96.12", "name": "n2", "reachable": False}
    hostvars = {"n1": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [row]}}}},
                "n3": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [dict(row)]}}}},
                "n2": {"triage_results": {"connectivity": {"status": "skipped", "data": {}}}}}
    fleet = node_pass_fleet(hostvars, ["n1", "n2", "n3"], owners)
    assert fleet["stale_arp"]["findings"] == [dict(unowned, scope="fleet", hosts=[])]
    assert [(f["check"], f["subject"], f["scope"], f["hosts"]) for f in fleet["connectivity"]["findings"]] == [
        ("connectivity.node_isolated", "n2", "fleet", ["n1", "n3"])]
    assert fleet["connectivity"]["hosts"] == ["n1", "n3"]
    assert node_pass_fleet({}, [], {}) == {}


def test_fleet_publishes_the_api_reads_once_and_a_failed_read_as_a_finding():
    crash = {"check": "node.cni_pod_crashloop", "severity": "critical", "subject": "node2/calico-node-m4q8z"}
    api = {"cni": {"changed": False, "nodes": [{"name": "node2"}, {"name": "node1"}], "findings": [crash]},
           "kube": {"failed": True, "msg": "the API answered 403 Forbidden"},
           "dns": {"skipped": True, "changed": False}}
    fleet = node_pass_fleet({}, [], {}, api)
    # no inventory host at all (the API's side alone): the read concerns none of the triage's hosts
    assert fleet["cni"] == {"status": "ran", "reason": "", "details": {}, "hosts": [],
                            "findings": [dict(crash, scope="fleet", hosts=[])]}
    assert fleet["kube"]["status"] == "failed" and fleet["kube"]["reason"] == "the API answered 403 Forbidden"
    assert [(f["check"], f["subject"]) for f in fleet["kube"]["findings"]] == [("triage.check_failed", "the Kubernetes API")]
    assert "dns" not in fleet
    # no credentials at all: said plainly, not a failure
    fleet = node_pass_fleet({}, [], {}, {"kube": {"failed": False, "credential_source": None, "msg": "no credentials"}})
    assert fleet["kube"]["status"] == "skipped" and fleet["kube"]["reason"].startswith("no Kubernetes credentials")


def test_an_api_finding_about_one_node_of_the_play_concerns_that_nodes_host_alone():
    """node2's crash-looping CNI pod concerns node2's host (found by its k8s_node_name), not every node the read
    covered; a finding about a node outside the play, or about no node, keeps the read's hosts: the inventory hosts
    of the nodes it covered (node9 is none of them: a cluster's 5,000 node names on every finding were 70 kB each)."""
    crash = {"check": "node.cni_pod_crashloop", "severity": "critical", "subject": "worker-2/calico-node-m4q8z"}
    down = {"check": "node.network_unavailable", "severity": "critical", "subject": "n1"}
    files = {"check": "node.cni_binary_missing", "severity": "warning", "subject": "n3:/opt/cni/bin"}
    outside = {"check": "node.cni_pod_missing", "severity": "critical", "subject": "node9"}
    daemonset = {"check": "node.cni_daemonset_degraded", "severity": "warning", "subject": "kube-system/calico-node"}
    nodes = [{"name": "worker-2"}, {"name": "n1"}, {"name": "n3"}, {"name": "node9"}]
    api = {"cni": {"changed": False, "nodes": nodes, "findings": [crash, down, files, outside, daemonset]}}
    fleet = node_pass_fleet(HOSTVARS, ["n1", "n2", "n3"], {}, api)
    assert [(f["subject"], f["hosts"]) for f in fleet["cni"]["findings"]] == [
        ("worker-2/calico-node-m4q8z", ["n2"]), ("n1", ["n1"]), ("n3:/opt/cni/bin", ["n3"]),
        ("node9", ["n1", "n2", "n3"]), ("kube-system/calico-node", ["n1", "n2", "n3"])]
    assert all(f["scope"] == "fleet" for f in fleet["cni"]["findings"])


def test_the_log_lines_the_api_reads_matched_are_the_logs_records_data():
    match = {"check": "log.pod_not_started", "subject": "n1/calico-node-z9t5r", "count": 2, "lines": ["x"],
             "explains": ["node.cni_pod_pending"]}
    found = {"check": "log.pod_not_started", "severity": "warning", "subject": "n1/calico-node-z9t5r"}
    fleet = node_pass_fleet(HOSTVARS, ["n1"], {}, {"logs": {"changed": False, "findings": [found], "matches": [match]}})
    assert fleet["logs"]["data"] == {"matches": [match]}
    assert [(f["subject"], f["hosts"]) for f in fleet["logs"]["findings"]] == [("n1/calico-node-z9t5r", ["n1"])]


@pytest.mark.parametrize("value", [False, "false", "no", 0])
def test_the_logs_roles_logs_node_false_skips_the_nodes_own_log_and_says_so(value):
    narrowed = {"scenarios": ["logs"], "nodes": ["n1", "n2"]}
    params = node_pass_params({"logs_node": value}, "n1", HOSTVARS, GROUPS, narrowed=narrowed)
    assert params["scenarios"] == []
    assert params["skipped"] == {"logs": "logs_node is false: the node's own log was not read (only the API's pod logs "
                                         "and events)"}
    # the triage (not narrowed) has no logs_node: the node's log is read
    assert "logs" in node_pass_params({"logs_node": value}, "n1", HOSTVARS, GROUPS)["scenarios"]
    assert node_pass_params({"logs_node": True}, "n1", HOSTVARS, GROUPS, narrowed=narrowed)["scenarios"] == ["logs"]


HOSTILE = [None, "", "../../etc/passwd", float("nan"), float("inf"), 10 ** 400, -1, [], [None], {"x": None},
           "<script>alert(1)</script>", "a" * 100000]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: repr(v)[:20])
def test_hostile_variables_and_inputs_give_a_clear_error_or_parameters_the_module_validates(value):
    """What node_pass hands node_triage comes from the inventory and extra vars: hostile values give
    a ParamsError naming the problem, or reach the module, whose option rules refuse them; nothing
    else escapes (no traceback in the play)."""
    names = ["triage_scenarios", "triage_cni", "triage_nodes_group", "stale_arp_vips", "stale_arp_clients_group",
             "dns_servers", "cilium_maps_live_frontends", "calico_expected_nodes", "pod_network_peers",
             "connectivity_group", "connectivity_max_peers", "firewall_drops_interval", "calico_sockets"]
    for name in names:
        for owners, kube in (({}, {}), (value if isinstance(value, dict) else {"expected": value}, {}),
                             ({}, {"findings": [], "credential_source": "env", "nodes": value, "dns_servers": value,
                                   "service_frontends": value})):
            try:
                out = node_pass_params({name: value}, "n1", HOSTVARS, GROUPS, owners, kube)
            except ParamsError as exc:
                assert str(exc)
                continue
            assert isinstance(out["scenarios"], list) and isinstance(out["skipped"], dict)
    # the inventory contract handed in by the action (one host's entry, or a whole entry, hostile)
    for inventory in ({"n1": value}, dict(HOSTVARS, n2={"k8s_node_ip": value}), dict(HOSTVARS, n3={"k8s_pod_cidr": value})):
        try:
            out = node_pass_params({}, "n1", inventory, GROUPS)
        except ParamsError as exc:
            assert str(exc)
            continue
        assert isinstance(out["scenarios"], list)
    for junk in (value, {"scenarios": value}, {"unreachable": value, "msg": value}, {"failed": True, "rc": value}):
        if not isinstance(junk, dict):
            with pytest.raises(ParamsError):
                node_pass_record(junk, ["cni"])
            continue
        recorded = node_pass_record(junk, ["cni"])
        # never ok for what did not run: a result without scenarios is not "reached"
        assert recorded["host"]["status"] != "reached" or isinstance(junk.get("scenarios"), dict)
        assert recorded["results"]["cni"]["status"] in ("failed", "not run")


def test_every_variable_the_parameters_read_is_handed_over_by_the_action():
    """The node_pass action templates only the variables in VARIABLES: one read here but missing there
    would silently keep its default."""
    import re

    from ansible_collections.k8snet.triage.plugins.plugin_utils import node_pass

    source = open(node_pass.__file__).read()
    read = set(re.findall(r'variables(?:\.get\(|\[)"([a-z_]+)"', source))
    assert read and read <= set(node_pass.VARIABLES), read - set(node_pass.VARIABLES)


CALICO_LINE = ('2026-01-01 11:54:02.131 [WARNING][9] startup/startup.go 1336: Failed to set NetworkUnavailable to False; '
               'will retry error=Patch "https://10.96.0.1:443/api/v1/nodes/node2/status?timeout=2s": net/http: request '
               'canceled (Client.Timeout exceeded while awaiting headers)')


def _calico_log(subject):
    from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs

    groups = logs.match([{"text": CALICO_LINE, "time": "2026-01-01T11:54:02.131Z", "subject": subject, "origin": "o"}])
    return [logs.group_data(g) for g in groups], logs.findings(groups)


def test_the_fleet_puts_the_agents_log_lines_under_the_findings_they_explain():
    """cni's two API reads (node conditions, webhooks) form one entry; kube_logs' matching line goes
    under node.network_unavailable, and its own log finding is not repeated beside it."""
    matches, log_findings = _calico_log("node2/calico-node-m4q8z")
    down = {"check": "node.network_unavailable", "severity": "critical", "layer": "L3", "subject": "node2",
            "summary": "s", "evidence": {}, "remediation": ""}
    cycle = dict(down, check="webhook.cni_deadlock", subject="webhook:policy/validate")
    api = {"cni": [{"changed": False, "nodes": [{"name": "node2"}], "findings": [down]},
                   {"changed": False, "findings": [cycle]}],
           "logs": {"changed": False, "findings": log_findings, "matches": matches}}
    fleet = node_pass_fleet({"node2": {}}, ["node2"], {}, api)
    assert sorted(f["check"] for f in fleet["cni"]["findings"]) == ["node.network_unavailable", "webhook.cni_deadlock"]
    explained = [f for f in fleet["cni"]["findings"] if f["check"] == "node.network_unavailable"][0]
    assert "Client.Timeout" in explained["evidence"]["logs"][0]["lines"][0]["text"]
    assert not [f for f in fleet["logs"]["findings"] if f["check"] == log_findings[0]["check"]]
    # a failed read among the two is said: the entry failed, with the other's findings kept
    api["cni"][1] = {"failed": False, "credential_source": "env", "msg": "403 Forbidden"}
    fleet = node_pass_fleet({"node2": {}}, ["node2"], {}, api)
    assert fleet["cni"]["status"] == "failed" and fleet["cni"]["reason"] == "403 Forbidden"
    assert {"node.network_unavailable", "triage.check_failed"} <= set(f["check"] for f in fleet["cni"]["findings"])


def test_a_hosts_own_log_lines_go_under_its_findings():
    matches, log_findings = _calico_log("node2")
    down = {"check": "node.network_unavailable", "severity": "critical", "layer": "L3", "subject": "node2",
            "summary": "s", "evidence": {}, "remediation": ""}
    result = {"scenarios": {"cni": {"status": "ran", "reason": "", "findings": [down], "data": {}},
                            "logs": {"status": "ran", "reason": "", "findings": log_findings, "data": {"matches": matches}}}}
    recorded = node_pass_record(result, ["cni", "logs"])["results"]
    assert "Client.Timeout" in recorded["cni"]["findings"][0]["evidence"]["logs"][0]["lines"][0]["text"]
    assert recorded["logs"]["findings"] == []


def test_pmtu_targets_and_conntrack_ratios_from_the_role_variables():
    variables = {"pmtu_targets": [{"address": "198.19.97.5", "name": "web-0"}], "pmtu_timeout": 1.0,
                 "conntrack_warn_ratio": 0.5, "conntrack_interval": 0, "pmtu_max_size": 0}
    params = node_pass_params(variables, "n1", HOSTVARS, GROUPS)
    assert params["pmtu"] == {"targets": [{"address": "198.19.97.5", "name": "web-0"}], "timeout": 1.0}
    assert params["conntrack"] == {"warn_ratio": 0.5, "interval": 0}
    params = node_pass_params({"pmtu_group": "control_plane", "pmtu_max_peers": 1}, "n3", HOSTVARS, GROUPS)
    assert params["pmtu"]["targets"] == []  # n3 is not in control_plane's ring: nothing to measure, skipped on the node


def test_list_variables_given_as_survey_text_are_split():
    """AWX surveys give lists as newline- or comma-separated text (a multiselect, a textarea)."""
    params = node_pass_params({"triage_scenarios": "cni\nfirewall_drops\nstale_arp\n", "stale_arp_vips": "198.18.96.200, 198.18.96.201",
                               "firewall_drops_backends": "legacy", "dns_names": "a.example\nb.example"},
                              "n3", HOSTVARS, GROUPS)
    assert params["scenarios"] == ["cni", "firewall_drops", "stale_arp"]
    assert params["stale_arp"]["addresses"] == ["198.18.96.200", "198.18.96.201"]
    assert params["firewall_drops"] == {"backends": ["legacy"]}


POD_READ = {"changed": False, "credential_source": "kubeconfig", "findings": [],
            "pod": {"namespace": "default", "name": "web", "ip": "198.19.97.7", "ips": ["198.19.97.7"],
                    "node": "worker-2", "phase": "Running", "host_network": False}}


def test_dns_pod_runs_the_pod_view_on_its_node_only():
    variables = {"dns_pod": "default/web", "dns_repeat": 20, "dns_repeat_interval": 0.1}
    # n2 is node worker-2 (k8s_node_name): the pod's view and the repeated queries run there, also
    # without any DNS server given
    params = node_pass_params(variables, "n2", HOSTVARS, GROUPS, pod=POD_READ)
    assert "dns" in params["scenarios"]
    assert params["dns"] == {"servers": [], "pod_ip": "198.19.97.7", "repeat": 20, "repeat_interval": 0.1}
    other = node_pass_params(variables, "n1", HOSTVARS, GROUPS, pod=POD_READ)
    assert "dns" not in other["scenarios"] and other["skipped"]["dns"].startswith("no DNS servers given")
    with_servers = node_pass_params(dict(variables, dns_servers=["198.18.112.10"]), "n1", HOSTVARS, GROUPS, pod=POD_READ)
    assert with_servers["dns"] == {"servers": ["198.18.112.10"]}  # no pod view, no repetition on other nodes
    # without dns_pod, dns_repeat applies to every node that runs dns
    plain = node_pass_params({"dns_servers": ["198.18.112.10"], "dns_repeat": 5}, "n1", HOSTVARS, GROUPS)
    assert plain["dns"] == {"servers": ["198.18.112.10"], "repeat": 5}


def _with_dns(host_result):
    return {"n2": {"k8s_node_name": "worker-2", "triage_results": {"dns": host_result}}, "n1": {}}


@pytest.mark.parametrize("case", ["checked", "no credentials", "not found", "node not in inventory", "dns failed there"])
def test_the_fleet_says_why_a_pod_view_was_not_checked(case):
    ran = {"status": "ran", "reason": "", "findings": [], "data": {"pod": {"subject": "pod 198.19.97.7"}}}
    hostvars, result = _with_dns(ran), POD_READ
    if case in ("no credentials", "not found"):
        hostvars = _with_dns({"status": "skipped", "reason": "no DNS servers given", "findings": []})
    if case == "no credentials":
        result = {}
    elif case == "not found":
        result = {"failed": False, "credential_source": "kubeconfig",
                  "msg": "pod default/web does not exist (kubectl -n default get pod web)"}
    elif case == "node not in inventory":
        hostvars = _with_dns({"status": "ran", "reason": "", "findings": [], "data": {"pod": None}})
        result = dict(POD_READ, pod=dict(POD_READ["pod"], node="worker-9"))
    elif case == "dns failed there":
        hostvars = _with_dns({"status": "failed", "reason": "dns_check: no namespace holds 198.19.97.7", "findings": []})
    fleet = node_pass_fleet(hostvars, ["n1", "n2"], {}, {"dns_pod": {"ref": "default/web", "result": result, "wanted": True}})
    if case == "checked":
        assert "dns" not in fleet  # n2's own dns result holds the pod's findings
        return
    entry = fleet["dns"]
    if case == "no credentials":
        assert entry["status"] == "skipped" and "no Kubernetes credentials" in entry["reason"], entry
    elif case == "not found":
        assert entry["status"] == "failed" and "does not exist" in entry["reason"]
        assert [f["check"] for f in entry["findings"]] == ["triage.check_failed"]
    else:
        [found] = entry["findings"]
        assert found["check"] == "dns.pod_view_not_checked" and found["severity"] == "warning"
        assert ("worker-9, which is none of the triage's hosts" in found["summary"] if case == "node not in inventory"
                else "did not run with it on n2 (failed: dns_check: no namespace" in found["summary"]), found["summary"]


def test_an_empty_metrics_url_turns_the_agent_metrics_off_as_in_the_module():
    params = node_pass_params({"triage_cni": "cilium", "cilium_agent_metrics_url": ""}, "n1", HOSTVARS, GROUPS)
    assert params["cilium_agent"]["metrics_url"] == ""
    params = node_pass_params({"triage_cni": "cilium"}, "n1", HOSTVARS, GROUPS)
    assert "metrics_url" not in params["cilium_agent"]  # unset: the module's default URL


def test_a_scenario_roles_pass_runs_its_scenario_on_its_plays_hosts_whatever_their_group():
    # the sysctl playbook's play (sysctl_hosts) may hold a host outside k8s_nodes: the role's pass takes the play's
    # hosts as the nodes, and runs that scenario only
    narrowed = {"scenarios": ["sysctl"], "nodes": ["client", "n1"]}
    params = node_pass_params({"triage_scenarios": ["cni", "dns"]}, "client", HOSTVARS, GROUPS, narrowed=narrowed)
    assert params["scenarios"] == ["sysctl"] and params["skipped"] == {}
    assert node_pass_params({}, "client", HOSTVARS, GROUPS)["skipped"]["sysctl"] == "not in group k8s_nodes"
    outside = node_pass_params({}, "n2", HOSTVARS, GROUPS, narrowed=narrowed)
    assert outside["scenarios"] == [] and outside["skipped"] == {"sysctl": "not one of this play's hosts"}


def test_the_fleet_keeps_the_whole_connectivity_matrix_as_its_data():
    row = {"address": "198.18.96.12", "name": "n2", "reachable": False}
    hostvars = {"n1": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [row]}}}},
                "n3": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [dict(row)]}}}}}
    entry = node_pass_fleet(hostvars, ["n1", "n3"])["connectivity"]
    # the report draws the matrix without its pairs; the connectivity role's connectivity_matrix is the whole of it
    assert "pairs" not in entry["details"] and sorted((p["from"], p["to"]) for p in entry["data"]["pairs"]) == [
        ("n1", "n2"), ("n3", "n2")]
    assert [f["check"] for f in entry["data"]["findings"]] == ["connectivity.node_isolated"]


def test_the_fleet_reads_the_records_under_ansible_facts_when_facts_are_not_injected_as_variables():
    """inject_facts_as_vars off: node_pass's facts are only under ansible_facts; the matrix is drawn from them."""
    row = {"address": "198.18.96.12", "name": "n2", "reachable": False}
    record = {"connectivity": {"status": "ran", "data": {"targets": [row]}}}
    hostvars = dict((host, {"ansible_facts": {"triage_results": record}}) for host in ("n1", "n3"))
    entry = node_pass_fleet(hostvars, ["n1", "n3"])["connectivity"]
    assert sorted((p["from"], p["to"]) for p in entry["data"]["pairs"]) == [("n1", "n2"), ("n3", "n2")]


def test_the_node_deadline_and_command_timeout_reach_the_pass_only_when_given():
    params = node_pass_params({}, "n1", HOSTVARS, GROUPS)
    assert "deadline" not in params and "command_timeout" not in params  # node_triage's defaults
    params = node_pass_params({"triage_node_deadline": "120", "triage_command_timeout": 20}, "n1", HOSTVARS, GROUPS)
    assert params["deadline"] == "120" and params["command_timeout"] == 20  # node_triage converts and bounds them


def tagged(value):
    """``value`` as the controller holds a variable (ansible-core 2.19: a tagged copy, _AnsibleTaggedStr ...)."""
    from ansible._internal._datatag._tags import Origin  # pylint: disable=import-outside-toplevel
    return Origin(path="/inventory/group_vars/all.yml", line_num=3).tag(value)


@pytest.mark.parametrize("variable, value, shown, what", [
    ("connectivity_max_peers", "eight", "'eight'", "text"),
    ("connectivity_max_peers", {"n": 8}, "{'n': 8}", "a mapping"),
    ("connectivity_max_peers", [8], "[8]", "a list"),
    ("connectivity_max_peers", 2.5, "2.5", None),
    ("pmtu_max_peers", "many", "'many'", "text"),
])
def test_a_bad_peer_cap_is_named_by_its_variable_with_the_value_as_given(variable, value, shown, what):
    """Not the helper's argument (limit) nor the class holding the value (_AnsibleTaggedStr)."""
    variables = {variable: tagged(value), "triage_scenarios": ["connectivity", "pmtu"]}
    assert type(variables[variable]).__name__.startswith("_AnsibleTagged")  # what the controller really holds
    with pytest.raises(ParamsError) as exc:
        node_pass_params(variables, "n1", HOSTVARS, GROUPS)
    message = str(exc.value)
    assert message.startswith("%s=%s is invalid: give an integer from 0 to 65536" % (variable, shown)), message
    assert what is None or message.endswith("(got %s)" % what), message
    assert "_Ansible" not in message and "limit" not in message


def test_the_filter_names_its_own_argument():
    with pytest.raises(Exception, match=r"^limit='x' is invalid: give an integer from 0 to 65536 \(got text\)$"):
        connectivity_peers(["n1", "n2"], "n1", tagged("x"), HOSTVARS)
