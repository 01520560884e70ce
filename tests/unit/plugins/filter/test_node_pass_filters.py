"""The controller side of the one-pass triage: node_pass_params computes the fleet inputs with the
scenario roles' code and variables; node_pass_record and node_pass_fleet shape the results."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.connectivity_peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.filter.node_pass_fleet import node_pass_fleet
from ansible_collections.k8snet.triage.plugins.filter.node_pass_params import node_pass_params
from ansible_collections.k8snet.triage.plugins.filter.node_pass_record import node_pass_record

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
    assert params["scenarios"] == ["cni", "calico", "cilium_maps", "pod_network", "firewall_drops", "connectivity",
                                   "conntrack", "pmtu"]
    assert params["firewall_drops"] == {"interval": 2}
    # the path-MTU peers follow the same inventory-node contract as the connectivity peers
    assert params["pmtu"] == {"targets": connectivity_peers(GROUPS["k8s_nodes"], "n2", 8, HOSTVARS)}
    assert params["conntrack"] == {}
    # triage_cni auto: a node without BIRD or without Cilium is "not a ... node", not critical
    assert params["calico"] == {"expected_peers": ["198.18.96.11", "198.18.96.12", "198.18.100.13"],
                                "when_not_calico": "skip"}
    assert params["cilium_maps"]["when_not_cilium"] == "skip"
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
    assert params["scenarios"][-4:] == ["dns", "conntrack", "pmtu", "stale_arp"]
    assert params["dns"] == {"servers": variables["dns_servers"], "host_resolvers": False}
    assert params["stale_arp"] == {"addresses": ["198.18.96.200"], "expected": owners["expected"]}
    # [] means "Kubernetes has no services"; triage_cni cilium reads the maps whatever the node shows
    assert params["cilium_maps"] == {"live_frontends": [], "when_not_cilium": "check"}
    # a client that is not a node gets only stale_arp
    assert node_pass_params(variables, "client", HOSTVARS, GROUPS, owners)["scenarios"] == ["stale_arp"]


def test_kube_inputs_replace_the_variables_with_a_kubeconfig():
    kube = {"nodes": [{"name": "a", "calico_ipv4_address": "10.0.0.1", "internal_ip": "10.1.0.1"},
                      {"name": "b", "calico_ipv4_address": None, "internal_ip": "10.1.0.2"}],
            "service_frontends": ["10.96.0.1:443/TCP"], "dns_servers": [{"address": "10.96.0.10"}]}
    params = node_pass_params({"triage_kubeconfig": "/k", "dns_servers": [{"address": "1.1.1.1"}]},
                              "n1", HOSTVARS, GROUPS, kube=kube)
    assert params["calico"]["expected_peers"] == ["10.0.0.1", "10.1.0.2"]
    assert params["cilium_maps"]["live_frontends"] == ["10.96.0.1:443/TCP"]
    assert params["dns"]["servers"] == [{"address": "10.96.0.10"}]


def test_bad_inventory_address_is_named():
    with pytest.raises(AnsibleFilterError, match="host n1: 'n1.example' is not an IP address"):
        node_pass_params({}, "n1", dict(HOSTVARS, n1={"ansible_host": "n1.example"}), GROUPS)


def test_record_keeps_asked_scenarios_and_marks_a_pass_that_did_not_run():
    entry = {"status": "ran", "reason": "", "findings": [], "data": {"x": 1}, "seconds": 0.1}
    result = {"scenarios": {"cni": entry, "dns": dict(entry, status="skipped")}, "timing": {}}
    assert node_pass_record(result, ["cni"]) == {"cni": {"status": "ran", "reason": "", "findings": [], "data": {"x": 1}}}
    down = node_pass_record({"unreachable": True, "msg": "ssh: connect to host: timed out"}, ["cni", "calico"])
    assert down == {name: {"status": "failed", "reason": "ssh: connect to host: timed out", "findings": [], "data": {}}
                    for name in ("cni", "calico")}


def test_fleet_publishes_owner_findings_once_and_the_connectivity_matrix():
    unowned = {"check": "arp.vip_unowned", "severity": "critical", "subject": "198.18.96.200"}
    owners = {"expected": {}, "owners": {"198.18.96.200": []}, "findings": [unowned]}
    row = {"address": "198.18.96.12", "name": "n2", "reachable": False}
    hostvars = {"n1": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [row]}}}},
                "n3": {"triage_results": {"connectivity": {"status": "ran", "data": {"targets": [dict(row)]}}}},
                "n2": {"triage_results": {"connectivity": {"status": "skipped", "data": {}}}}}
    fleet = node_pass_fleet(hostvars, ["n1", "n2", "n3"], owners)
    assert fleet["stale_arp"]["findings"] == [unowned]
    assert [(f["check"], f["subject"]) for f in fleet["connectivity"]["findings"]] == [("connectivity.node_isolated", "n2")]
    assert fleet["connectivity"]["hosts"] == ["n1", "n3"]
    assert node_pass_fleet({}, [], {}) == {}


def test_fleet_publishes_the_api_reads_once_and_a_failed_read_as_a_finding():
    crash = {"check": "node.cni_pod_crashloop", "severity": "critical", "subject": "node2/calico-node-m4q8z"}
    api = {"cni": {"changed": False, "nodes": [{"name": "node2"}, {"name": "node1"}], "findings": [crash]},
           "kube": {"failed": True, "msg": "the API answered 403 Forbidden"},
           "dns": {"skipped": True, "changed": False}}
    fleet = node_pass_fleet({}, [], {}, api)
    assert fleet["cni"] == {"status": "ran", "reason": "", "findings": [crash], "hosts": ["node1", "node2"]}
    assert fleet["kube"]["status"] == "failed" and fleet["kube"]["reason"] == "the API answered 403 Forbidden"
    assert [(f["check"], f["subject"]) for f in fleet["kube"]["findings"]] == [("triage.check_failed", "the Kubernetes API")]
    assert "dns" not in fleet


def test_pmtu_targets_and_conntrack_ratios_from_the_role_variables():
    variables = {"pmtu_targets": [{"address": "198.19.97.5", "name": "web-0"}], "pmtu_timeout": 1.0,
                 "conntrack_warn_ratio": 0.5, "conntrack_interval": 0, "pmtu_max_size": 0}
    params = node_pass_params(variables, "n1", HOSTVARS, GROUPS)
    assert params["pmtu"] == {"targets": [{"address": "198.19.97.5", "name": "web-0"}], "timeout": 1.0}
    assert params["conntrack"] == {"warn_ratio": 0.5, "interval": 0}
    params = node_pass_params({"pmtu_group": "control_plane", "pmtu_max_peers": 1}, "n3", HOSTVARS, GROUPS)
    assert params["pmtu"]["targets"] == []  # n3 is not in control_plane's ring: nothing to measure, skipped on the node
