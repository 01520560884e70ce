# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage: the node_triage parameters of one host."""

from __future__ import annotations

DOCUMENTATION = """
name: node_pass_params
short_description: the k8snet.triage.node_triage parameters of one host, fleet inputs included
version_added: 0.2.0
description:
  - Builds, on the controller, what one host's C(k8snet.triage.node_triage) call needs, from the
    scenario roles' variables (same names, same defaults) and from what needs the fleet, computed
    with the same code as the scenario roles.
  - C(calico.expected_peers) from C(calico_expected_nodes), else the Kubernetes Node list (O(kube)),
    else the inventory group C(calico_nodes_group) (the C(calico_inventory_nodes) contract).
  - C(pod_network.peers) from C(pod_network_peers), else the hosts of C(pod_network_nodes_group) that
    have C(k8s_pod_cidr), named and addressed by the same contract.
  - C(connectivity.targets) from C(connectivity_peers) over C(connectivity_group).
  - C(pmtu.targets) from C(pmtu_targets), else C(connectivity_peers) over C(pmtu_group) (at most C(pmtu_max_peers)).
  - C(dns.servers) from O(kube) (C(dns_servers) of kube_network_facts) when a kubeconfig was given,
    else C(dns_servers); C(cilium_maps.live_frontends) likewise from C(service_frontends), else
    C(cilium_maps_live_frontends).
  - C(stale_arp.expected) from O(owners), the output of C(vip_owners) over the owners' pre-read.
  - C(scenarios) from C(triage_scenarios) and C(triage_cni), the node scenarios for hosts of
    C(triage_nodes_group), C(dns) only with DNS servers, C(stale_arp) for hosts of
    C(stale_arp_clients_group) when C(stale_arp_vips) is given.
options:
  _input:
    description: The variables of the play as a dict (role variables named as in the scenario roles, C(triage_*) ones).
    type: dict
    required: true
  host:
    description: The inventory name of the host.
    type: str
    required: true
  hostvars:
    description: The play's C(hostvars) (addresses of the other nodes).
    type: dict
    required: true
  groups:
    description: The play's C(groups).
    type: dict
    required: true
  owners:
    description: The output of the C(vip_owners) filter (C(expected) is used); empty without VIPs.
    type: dict
    default: {}
  kube:
    description: The result of C(kube_network_facts) gathered once (C(nodes), C(service_frontends), C(dns_servers)); empty without a kubeconfig.
    type: dict
    default: {}
"""

EXAMPLES = """
- name: Compute the node_triage parameters of this host
  ansible.builtin.set_fact:
    node_params: "{{ variables | k8snet.triage.node_pass_params(inventory_hostname, hostvars, groups) }}"
  vars:
    names: "{{ q('ansible.builtin.varnames', '^(triage|pod_network|connectivity)_') }}"
    variables: "{{ dict(names | zip(q('ansible.builtin.vars', *names))) }}"
"""

RETURN = """
_value:
  description: The parameters of C(k8snet.triage.node_triage) for this host.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.connectivity_peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.module_utils.calico import NodeListError, inventory_nodes
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

NODE_SCENARIOS = ["cni", "calico", "cilium_maps", "pod_network", "firewall_drops", "connectivity", "dns", "conntrack",
                  "pmtu"]
# scenario -> (node_triage option, role variable); a role variable that is unset keeps the
# module's default, which is the role's default
ROLE_VARIABLES = {
    "cni": (("conf_dir", "cni_conf_dir"), ("bin_dir", "cni_bin_dir")),
    "calico": (("sockets", "calico_sockets"), ("node_to_node_mesh", "calico_node_to_node_mesh"),
               ("stuck_after", "calico_stuck_after"), ("timeout", "calico_timeout")),
    "cilium_maps": (("bpffs", "cilium_maps_bpffs"), ("maps", "cilium_maps_maps"),
                    ("warn_ratio", "cilium_maps_warn_ratio"), ("critical_ratio", "cilium_maps_critical_ratio")),
    "pod_network": (("mode", "pod_network_mode"), ("tunnel_device", "pod_network_tunnel_device"),
                    ("local_pod_routes", "pod_network_local_pod_routes"),
                    ("destinations", "pod_network_destinations"), ("reader", "pod_network_reader")),
    "firewall_drops": (("interval", "firewall_drops_interval"), ("limit", "firewall_drops_limit"),
                       ("backends", "firewall_drops_backends"), ("warning_pps", "firewall_drops_warning_pps"),
                       ("critical_pps", "firewall_drops_critical_pps")),
    "connectivity": (("probes", "connectivity_probes"), ("tcp_port", "connectivity_tcp_port"),
                     ("count", "connectivity_count"), ("timeout", "connectivity_timeout")),
    "dns": (("names", "dns_names"), ("expect", "dns_expect"), ("cluster_domain", "dns_cluster_domain"),
            ("protocols", "dns_protocols"), ("timeout", "dns_timeout"), ("retries", "dns_retries"),
            ("host_resolvers", "dns_host_resolvers"), ("resolv_conf", "dns_resolv_conf")),
    "stale_arp": (("interface", "stale_arp_interface"), ("probe", "stale_arp_probe"),
                  ("probe_timeout", "stale_arp_probe_timeout")),
    "conntrack": (("warn_ratio", "conntrack_warn_ratio"), ("critical_ratio", "conntrack_critical_ratio"),
                  ("interval", "conntrack_interval"), ("top", "conntrack_top"), ("top_pairs", "conntrack_top_pairs"),
                  ("reader", "conntrack_reader")),
    "pmtu": (("min_size", "pmtu_min_size"), ("max_size", "pmtu_max_size"), ("timeout", "pmtu_timeout")),
}


def _set(variables, pairs):
    out = {}
    for option, name in pairs:
        value = variables.get(name)
        if value is None or value == "" or (option == "sockets" and not value):
            continue  # unset, or the role's "empty means the default"
        out[option] = value
    return out


def _group(groups, name):
    return list(groups.get(name) or [])


def _expected_peers(variables, hostvars, groups, kube):
    if variables.get("calico_expected_nodes"):
        nodes = variables["calico_expected_nodes"]
    elif variables.get("triage_kubeconfig"):
        # projectcalico.org/IPv4Address (prefix length removed), else the InternalIP
        nodes = [{"name": n["name"], "address": n.get("calico_ipv4_address") or n.get("internal_ip")}
                 for n in kube.get("nodes") or [] if n.get("calico_ipv4_address") or n.get("internal_ip")]
    else:
        nodes = inventory_nodes(_group(groups, variables.get("calico_nodes_group") or "k8s_nodes"), hostvars)
    return [str(n["address"]) for n in nodes]


def _pod_peers(variables, hostvars, groups):
    if variables.get("pod_network_peers"):
        return variables["pod_network_peers"]
    hosts = [h for h in _group(groups, variables.get("pod_network_nodes_group") or "k8s_nodes")
             if hostvars[h].get("k8s_pod_cidr")]
    peers = []
    for node in inventory_nodes(hosts, hostvars):
        cidrs = hostvars[node["host"]]["k8s_pod_cidr"]
        peers.append({"node": node["name"], "node_ip": node["address"],
                      "pod_cidrs": [cidrs] if isinstance(cidrs, str) else list(cidrs)})
    return peers


def _scenarios(variables, host, groups, dns_servers):
    wanted = variables.get("triage_scenarios")
    wanted = NODE_SCENARIOS + ["stale_arp"] if wanted is None else list(wanted)
    cni = variables.get("triage_cni") or "auto"
    out = []
    if host in _group(groups, variables.get("triage_nodes_group") or "k8s_nodes"):
        out = [s for s in NODE_SCENARIOS if s in wanted]
        out = [s for s in out if not (s == "calico" and cni not in ("auto", "calico"))
               and not (s == "cilium_maps" and cni not in ("auto", "cilium"))
               and not (s == "dns" and not dns_servers)]
    if ("stale_arp" in wanted and variables.get("stale_arp_vips")
            and host in _group(groups, variables.get("stale_arp_clients_group") or "admin_control_plane")):
        out.append("stale_arp")
    return out


def node_pass_params(variables, host, hostvars, groups, owners=None, kube=None):
    if not isinstance(variables, dict):
        raise AnsibleFilterError("node_pass_params expects the play's variables as a dict")
    for value, what in ((owners, "owners (the vip_owners result)"), (kube, "kube (the kube_network_facts result)")):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("node_pass_params: %s must be a dict, not %s" % (what, type(value).__name__))
    owners, kube = owners or {}, kube or {}
    api = bool(variables.get("triage_kubeconfig"))
    dns_servers = kube.get("dns_servers") or [] if api else variables.get("dns_servers") or []
    scenarios = _scenarios(variables, host, groups, dns_servers)
    facts = hostvars[host]
    params = {"node_name": str(facts.get("k8s_node_name") or host), "scenarios": scenarios}
    try:
        for name in scenarios:
            params[name] = _set(variables, ROLE_VARIABLES[name])
        if "calico" in scenarios:
            params["calico"]["expected_peers"] = _expected_peers(variables, hostvars, groups, kube)
        if "pod_network" in scenarios:
            params["pod_network"]["peers"] = _pod_peers(variables, hostvars, groups)
    except NodeListError as exc:
        raise AnsibleFilterError(str(exc))
    # triage_cni auto decides per node (a node without BIRD / Cilium is "not a ... node"); an explicit CNI does not
    auto = (variables.get("triage_cni") or "auto") == "auto"
    if "calico" in scenarios:
        params["calico"]["when_not_calico"] = "skip" if auto else "critical"
    if "cilium_maps" in scenarios:
        params["cilium_maps"]["when_not_cilium"] = "skip" if auto else "check"
    if "cilium_maps" in scenarios:
        live = kube.get("service_frontends") if api else variables.get("cilium_maps_live_frontends")
        if live is not None:
            params["cilium_maps"]["live_frontends"] = live
    if "connectivity" in scenarios:
        params["connectivity"]["targets"] = connectivity_peers(
            _group(groups, variables.get("connectivity_group") or "k8s_nodes"), host,
            variables.get("connectivity_max_peers") or 8, hostvars)
    if "dns" in scenarios:
        params["dns"]["servers"] = dns_servers
    if "pmtu" in scenarios:
        # explicit targets (pod addresses too), else the same inventory-node contract as connectivity's peers
        if not params["pmtu"].get("max_size"):
            params["pmtu"].pop("max_size", None)  # the role's 0: the interface MTU
        ring = _group(groups, variables.get("pmtu_group") or "k8s_nodes")
        params["pmtu"]["targets"] = list(variables.get("pmtu_targets") or []) or (connectivity_peers(
            ring, host, variables.get("pmtu_max_peers") or 8, hostvars) if host in ring else [])
    if "stale_arp" in scenarios:
        params["stale_arp"].update(addresses=list(variables["stale_arp_vips"]), expected=owners.get("expected") or {})
    return params


class FilterModule(object):
    def filters(self):
        return guard_all({"node_pass_params": node_pass_params})
