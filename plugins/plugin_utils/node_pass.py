# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage (the k8snet.triage.node_pass action).

``params`` builds, for one host, what its ``k8snet.triage.node_triage`` call needs, from the
scenario roles' variables (same names, same defaults) and from what needs the fleet, computed
with the same code as the scenario roles:

- ``calico.expected_peers`` from ``calico_expected_nodes``, else the Kubernetes Node list (the API
  read handed in as ``kube``), else the inventory group ``calico_nodes_group`` (the
  ``calico_inventory_nodes`` contract);
- ``pod_network.peers`` from ``pod_network_peers``, else the hosts of ``pod_network_nodes_group``
  that have ``k8s_pod_cidr``, named and addressed by the same contract;
- ``connectivity.targets`` from ``connectivity_peers`` over ``connectivity_group``;
- ``dns.servers`` and ``cilium_maps.live_frontends`` from the API read when it returned its facts
  (any credential the kube layer accepts), else ``dns_servers`` / ``cilium_maps_live_frontends``;
- ``stale_arp.expected`` from ``owners``, the output of ``vip_owners`` over the owners' pre-read;
- ``scenarios`` from ``triage_scenarios`` and ``triage_cni``; ``skipped``, for every wanted
  scenario that does not apply to the host, the reason, so the report covers every scenario of
  every host.

``record`` turns the module's result into the host's ``triage_host`` and ``triage_results``, the
two facts the report reads.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleError

from ansible_collections.k8snet.triage.plugins.filter.as_list import as_list
from ansible_collections.k8snet.triage.plugins.filter.connectivity_peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.filter.log_evidence import log_evidence
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.inventory import (
    ADDRESS, EVERY_VARIABLE, NodeListError, contract_problems, inventory_nodes, pod_cidr_peers, usable_hosts)
# node_triage's argument spec (every node check's options). Imported here, at the top: Ansible loads
# this action's module in the controller's main process before it forks a worker per host, so the
# checks' code is compiled once and every worker inherits it (imported inside a function, each of
# the n workers compiled it again from source: about 0.3 s of CPU per host).
from ansible_collections.k8snet.triage.plugins.module_utils.node_pass import ARGUMENT_SPEC
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import INPUT_ERRORS


class ParamsError(ValueError):
    """The inventory or the variables cannot give this host's parameters (the message says which)."""


class BadHostVariable(ParamsError):
    """This host's own inventory-contract variables cannot be used (``problems``: [{variable, message}]):
    the host fails, with one finding per variable; the other hosts leave it out of their peers."""

    def __init__(self, host, problems, scenarios=(), skipped=None):
        self.host = host
        self.problems = problems
        self.scenarios, self.skipped = list(scenarios), dict(skipped or {})
        super(BadHostVariable, self).__init__("host %s: %s" % (host, "; ".join(p["message"] for p in problems)))


BAD_HOST_VARIABLE = "triage.bad_host_variable"
PEERS_LEFT_OUT = "triage.peers_left_out"


def bad_variable_findings(error):
    """One critical finding per bad variable of the host (its value shown escaped, and the fix)."""
    return [finding(BAD_HOST_VARIABLE, "critical", "control-plane", error.host,
                    "%s: none of this host's checks ran, and the other hosts leave it out of theirs: %s"
                    % (error.host, p["message"]), {"variable": p["variable"]},
                    "Fix %s in the inventory (host_vars of %s) and run again" % (p["variable"], error.host))
            for p in error.problems]


def left_out_findings(left_out, checkers):
    """One warning per peer left out of this host's peer lists, the same from every host that left it
    out (a fleet finding, counted once): ``left_out`` {peer: {why, lists}}; ``checkers``, the hosts
    whose lists it was left out of as every host computes them."""
    return [dict(finding(PEERS_LEFT_OUT, "warning", "control-plane", peer,
                         "%s was left out of the other hosts' %s: %s" % (peer, ", ".join(sorted(entry["lists"])), entry["why"]),
                         {"peer": peer, "lists": sorted(entry["lists"])},
                         "Fix the variable named on %s and run again; until then no host checks it as a peer" % peer),
                 scope="fleet", hosts=sorted(checkers)) for peer, entry in sorted(left_out.items())]


def _guarded(what, func, *args):
    """``func(*args)``; input of a shape it cannot use is a ParamsError naming it, never a traceback."""
    try:
        return func(*args)
    except ParamsError:
        raise
    except AnsibleError as exc:  # the inventory contract's own message (connectivity_peers)
        raise ParamsError(str(getattr(exc, "message", exc)))
    except INPUT_ERRORS as exc:
        detail = ("%s: %s" % (type(exc).__name__, exc))[:300]
        raise ParamsError("node_pass cannot use %s (%s); see ansible-doc k8snet.triage.node_pass for the "
                          "variables it reads and what they hold" % (what, detail))


def params(variables, host, hostvars, groups, owners=None, kube=None, pod=None):
    """The node_triage parameters of ``host`` (plus ``skipped``: {scenario: reason})."""
    return _guarded("the variables or the fleet inputs of host %s" % host, _params,
                    variables, host, hostvars, groups, owners, kube, pod)


def record(result, asked, skipped=None, host_findings=None, left_out=None):
    """``{"host": {status, reason[, findings][, peers_left_out]}, "results": {scenario: {...}}}`` from
    node_triage's result; ``host_findings`` and ``left_out`` (from ``params``) go into the host's record."""
    return _guarded("this node_triage result", _record, result, asked, skipped, host_findings, left_out)


NODE_SCENARIOS = ["cni", "calico", "cilium_maps", "cilium_agent", "pod_network", "firewall_drops", "connectivity", "dns",
                  "logs", "conntrack", "pmtu"]
# scenario -> (node_triage option, role variable); a role variable that is unset keeps the
# module's default, which is the role's default
ROLE_VARIABLES = {
    "cni": (("conf_dir", "cni_conf_dir"), ("bin_dir", "cni_bin_dir")),
    "calico": (("sockets", "calico_sockets"), ("node_to_node_mesh", "calico_node_to_node_mesh"),
               ("stuck_after", "calico_stuck_after"), ("timeout", "calico_timeout")),
    "cilium_maps": (("bpffs", "cilium_maps_bpffs"), ("maps", "cilium_maps_maps"),
                    ("warn_ratio", "cilium_maps_warn_ratio"), ("critical_ratio", "cilium_maps_critical_ratio")),
    "cilium_agent": (("agent_socket", "cilium_agent_socket"), ("health_socket", "cilium_agent_health_socket"),
                     ("monitor_socket", "cilium_agent_monitor_socket"),
                     ("metrics_url", "cilium_agent_metrics_url"), ("interval", "cilium_agent_interval"),
                     ("timeout", "cilium_agent_timeout"), ("top", "cilium_agent_top"),
                     ("warning_pps", "cilium_agent_warning_pps"), ("critical_pps", "cilium_agent_critical_pps"),
                     ("cni_conf_dir", "cni_conf_dir")),
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
    # node_log_files (the inventory's name for the node's log files) wins over the role's logs_node_log_files
    "logs": (("node_log_files", "logs_node_log_files"), ("node_log_files", "node_log_files"),
             ("units", "logs_units"), ("source", "logs_source"), ("since", "logs_since"),
             ("max_bytes", "logs_max_bytes")),
    "conntrack": (("warn_ratio", "conntrack_warn_ratio"), ("critical_ratio", "conntrack_critical_ratio"),
                  ("interval", "conntrack_interval"), ("top", "conntrack_top"), ("top_pairs", "conntrack_top_pairs"),
                  ("reader", "conntrack_reader")),
    "pmtu": (("min_size", "pmtu_min_size"), ("max_size", "pmtu_max_size"), ("timeout", "pmtu_timeout")),
}


# every variable a host's parameters are computed from: the scenario roles' options above, and these
FLEET_VARIABLES = ("triage_scenarios", "triage_cni", "triage_nodes_group", "stale_arp_vips", "stale_arp_clients_group",
                   "dns_servers", "cilium_maps_live_frontends", "calico_expected_nodes", "calico_nodes_group",
                   "pod_network_peers", "pod_network_nodes_group", "connectivity_group", "connectivity_max_peers",
                   "pmtu_targets", "pmtu_group", "pmtu_max_peers", "dns_pod", "dns_repeat", "dns_repeat_interval")
VARIABLES = FLEET_VARIABLES + tuple(name for pairs in ROLE_VARIABLES.values() for _option, name in pairs)


# the variables that hold lists: a survey (AWX) gives them as newline- or comma-separated text
LIST_VARIABLES = ("triage_scenarios", "stale_arp_vips", "dns_servers", "cilium_maps_live_frontends")


def _list_options():
    """{role variable: True} for the role variables whose node_triage option is a list."""
    return dict((name, True) for scenario, pairs in ROLE_VARIABLES.items() for option, name in pairs
                if ARGUMENT_SPEC[scenario]["options"][option].get("type") == "list")


def _lists(variables):
    """The variables with the list ones that came as text split as as_list does."""
    lists = _list_options()
    return dict((name, as_list(value, name) if isinstance(value, str) and (name in LIST_VARIABLES or name in lists)
                 else value) for name, value in variables.items())


# the options whose empty string means "none" (not "the default"), as in their module
EMPTY_MEANS_NONE = ("metrics_url",)


def _set(variables, pairs):
    out = {}
    for option, name in pairs:
        value = variables.get(name)
        if value == "" and option in EMPTY_MEANS_NONE:
            out[option] = value
            continue
        if value is None or value == "" or (option == "sockets" and not value):
            continue  # unset, or the role's "empty means the default"
        out[option] = value
    return out


def _group(groups, name):
    return list(groups.get(name) or [])


class _Peers(object):
    """The inventory hosts one host's checks take as peers, without those whose contract variables the
    list needs are unusable; ``left_out`` says which were left out, of which lists and why."""

    def __init__(self, host, hostvars):
        self.host, self.hostvars, self.left_out, self.checkers = host, hostvars, {}, set()

    def usable(self, hosts, needs, what):
        usable, out = usable_hosts(hosts, self.hostvars, needs)
        for peer, why in out.items():
            if peer != self.host:
                self.left_out.setdefault(peer, {"why": why, "lists": set()})["lists"].add(what)
        if out:
            self.checkers.update(usable)
        return usable


def _expected_peers(variables, hostvars, groups, kube, peers):
    if variables.get("calico_expected_nodes"):
        nodes = variables["calico_expected_nodes"]
    elif kube:
        # read from the API: projectcalico.org/IPv4Address (prefix length removed), else the InternalIP
        nodes = [{"name": n["name"], "address": n.get("calico_ipv4_address") or n.get("internal_ip")}
                 for n in kube.get("nodes") or [] if n.get("calico_ipv4_address") or n.get("internal_ip")]
    else:
        # only the addresses are used: a peer with a bad name stays expected (left out, its session would look unexpected)
        nodes = inventory_nodes(peers.usable(_group(groups, variables.get("calico_nodes_group") or "k8s_nodes"), ADDRESS,
                                             "calico expected BGP peers"), hostvars)
    return [str(n["address"]) for n in nodes]


def _pod_peers(variables, hostvars, groups, peers):
    if variables.get("pod_network_peers"):
        return variables["pod_network_peers"]
    return pod_cidr_peers(peers.usable(_group(groups, variables.get("pod_network_nodes_group") or "k8s_nodes"),
                                       EVERY_VARIABLE, "pod_network peers"), hostvars)


def _ring(group, host, peers, what):
    """The ring connectivity_peers samples from: the group's usable hosts, and this host if it is in the group
    (it probes the others: its own address is not needed)."""
    usable = peers.usable(group, ADDRESS, what)
    return [h for h in group if h in usable or h == host]


NO_CREDENTIALS = ("no Kubernetes credentials (triage_kubeconfig, module_defaults for group/k8snet.triage.kube, "
                  "K8S_AUTH_*, an in-cluster service account or ~/.kube/config)")


def api_read(result):
    """``(status, message)`` of a registered API read: ``ran``; ``skipped`` (not run, or no credentials at
    all: the message says so); ``failed`` with the module's message (registered with failed_when: false,
    a read that failed keeps failed false but has no findings)."""
    if result and result.get("skipped"):
        # skipped by its when: only the credentials test means there are none; any other is said as it is
        condition = str(result.get("false_condition") or "")
        if condition and "triage_api_source" not in condition and "credential_source" not in condition:
            return "skipped", "the Kubernetes API was not read (its step was skipped: %s is false)" % condition[:200]
    if not result or result.get("skipped") or ("credential_source" in result and result["credential_source"] is None):
        return "skipped", NO_CREDENTIALS
    if result.get("failed") or "findings" not in result:
        return "failed", str(result.get("msg") or "")
    return "ran", ""


def _api(kube):
    """(usable, reason) of the API read handed in: usable when it returned its facts."""
    status, message = api_read(kube)
    if status == "failed":
        return False, "the Kubernetes API could not be read: %s" % (message or "no result")[:300]
    return status == "ran", message


def pod_host(pod, hosts, hostvars):
    """The inventory host of ``pod``'s node (a kube_network_info ``gather: [pod]`` result's ``pod``): the
    first of ``hosts`` whose k8s_node_name, else whose inventory name, is that node; None if none is."""
    node = (pod or {}).get("node") if isinstance(pod, dict) else None
    for host in hosts if node else ():
        facts = hostvars[host] if host in hostvars else None
        if str((facts or {}).get("k8s_node_name") or host) == node:
            return host
    return None


def _dns_pod(variables, host, hostvars, groups, pod):
    """``(pod_ip or None, repeat)`` for this host's dns check: the pod view of ``dns_pod`` runs on its
    node only (and the repeated queries with it); without dns_pod the repeated queries run on every node."""
    repeat = variables.get("dns_repeat") or 0
    if not variables.get("dns_pod"):
        return None, repeat
    status, _message = api_read(pod)
    found = pod.get("pod") if status == "ran" and isinstance(pod.get("pod"), dict) else None
    nodes = _group(groups, variables.get("triage_nodes_group") or "k8s_nodes")
    if found and pod_host(found, nodes, hostvars) == host:
        return str(found["ip"]), repeat
    return None, 0


def _scenarios(variables, host, groups, dns_servers, api_reason, pod_ip=None):
    """(scenarios to run, {scenario: reason} for the wanted ones that do not apply to this host)."""
    wanted = variables.get("triage_scenarios")
    wanted = NODE_SCENARIOS + ["stale_arp"] if wanted is None else list(wanted)
    cni = str(variables.get("triage_cni") or "auto").lower()
    nodes_group = variables.get("triage_nodes_group") or "k8s_nodes"
    clients_group = variables.get("stale_arp_clients_group") or "admin_control_plane"
    is_node = host in _group(groups, nodes_group)
    out, skipped = [], {}
    for name in NODE_SCENARIOS:
        if name not in wanted:
            continue
        if not is_node:
            skipped[name] = "not in group %s" % nodes_group
        elif name == "calico" and cni not in ("auto", "calico"):
            skipped[name] = "triage_cni is %s" % cni
        elif name in ("cilium_maps", "cilium_agent") and cni not in ("auto", "cilium"):
            skipped[name] = "triage_cni is %s" % cni
        elif name == "dns" and not dns_servers and not pod_ip:
            skipped[name] = ("no DNS servers given (dns_servers) and %s" % api_reason if api_reason
                             else "the Kubernetes API lists no DNS Service and no DNS pod (see the kube findings)")
        else:
            out.append(name)
    if "stale_arp" in wanted:
        if host not in _group(groups, clients_group):
            skipped["stale_arp"] = "not a client of the VIPs (not in group %s)" % clients_group
        elif not variables.get("stale_arp_vips"):
            skipped["stale_arp"] = "no VIPs given (stale_arp_vips)"
        else:
            out.append("stale_arp")
    return out, skipped


def _params(variables, host, hostvars, groups, owners=None, kube=None, pod=None):
    if not isinstance(variables, dict):
        raise ParamsError("node_pass expects the play's variables as a dict")
    for value, what in ((owners, "owners (the vip_owners result)"), (kube, "kube (the kube_network_info result)"),
                        (pod, "pod (the kube_network_info result of dns_pod)")):
        if value is not None and not isinstance(value, dict):
            raise ParamsError("node_pass: %s must be a dict, not %s" % (what, type(value).__name__))
    owners, kube, pod = owners or {}, kube or {}, pod or {}
    variables = _lists(variables)
    api, api_reason = _api(kube)
    dns_servers = (kube.get("dns_servers") or []) if api else (variables.get("dns_servers") or [])
    pod_ip, repeat = _dns_pod(variables, host, hostvars, groups, pod)
    scenarios, skipped = _scenarios(variables, host, groups, dns_servers, "" if api else api_reason, pod_ip)
    facts = hostvars[host]
    own = contract_problems(host, facts) if scenarios else []
    if own:
        raise BadHostVariable(host, own, scenarios, skipped)
    peers = _Peers(host, hostvars)
    out = {"node_name": str(facts.get("k8s_node_name") or host), "scenarios": scenarios, "skipped": skipped}
    try:
        for name in scenarios:
            out[name] = _set(variables, ROLE_VARIABLES[name])
        if "calico" in scenarios:
            out["calico"]["expected_peers"] = _expected_peers(variables, hostvars, groups, kube if api else {}, peers)
        if "pod_network" in scenarios:
            out["pod_network"]["peers"] = _pod_peers(variables, hostvars, groups, peers)
    except NodeListError as exc:
        raise ParamsError(str(exc))
    # triage_cni auto decides per node (a node without BIRD / Cilium is "not a ... node"); an explicit CNI does not
    auto = (variables.get("triage_cni") or "auto") == "auto"
    if "calico" in scenarios:
        out["calico"]["when_not_calico"] = "skip" if auto else "critical"
    if "cilium_maps" in scenarios:
        out["cilium_maps"]["when_not_cilium"] = "skip" if auto else "check"
        live = kube.get("service_frontends") if api else variables.get("cilium_maps_live_frontends")
        if live is not None:
            out["cilium_maps"]["live_frontends"] = live
    if "cilium_agent" in scenarios:
        out["cilium_agent"]["when_not_cilium"] = "skip" if auto else "critical"
    if "connectivity" in scenarios:
        out["connectivity"]["targets"] = connectivity_peers(
            _ring(_group(groups, variables.get("connectivity_group") or "k8s_nodes"), host, peers, "connectivity targets"),
            host, variables.get("connectivity_max_peers") or 8, hostvars)
    if "dns" in scenarios:
        out["dns"]["servers"] = dns_servers
        if pod_ip:
            out["dns"]["pod_ip"] = pod_ip
        if repeat:
            out["dns"].update(repeat=repeat, **_set(variables, (("repeat_interval", "dns_repeat_interval"),)))
    if "pmtu" in scenarios:
        # explicit targets (pod addresses too), else the same inventory-node contract as connectivity's peers
        if not out["pmtu"].get("max_size"):
            out["pmtu"].pop("max_size", None)  # the role's 0: the interface MTU
        ring = _group(groups, variables.get("pmtu_group") or "k8s_nodes")
        out["pmtu"]["targets"] = list(variables.get("pmtu_targets") or []) or (connectivity_peers(
            _ring(ring, host, peers, "pmtu targets"), host, variables.get("pmtu_max_peers") or 8, hostvars)
            if host in ring else [])
    if "stale_arp" in scenarios:
        out["stale_arp"].update(addresses=list(variables["stale_arp_vips"]), expected=owners.get("expected") or {})
    # what this host's record says of the peers its lists left out (not a node_triage option)
    out["left_out"] = dict((peer, entry["why"]) for peer, entry in sorted(peers.left_out.items()))
    out["left_out_findings"] = left_out_findings(peers.left_out, peers.checkers)
    return out


TOP = 8
NO_PYTHON = re.compile(r"interpreter|python", re.IGNORECASE)


def _top(rows, key, fields):
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get(key), (int, float))]
    return [dict((name, r.get(name)) for name in fields) for r in sorted(rows, key=lambda r: -r[key])[:TOP]]


def details(scenario, data):
    """The compact view of one scenario's data that the HTML report draws ({} for the others)."""
    data = data if isinstance(data, dict) else {}
    if scenario == "calico" and isinstance(data.get("peers"), list):
        return {"bgp_sessions": data["peers"]}
    if scenario == "cilium_maps" and isinstance(data.get("maps"), list):
        return {"map_fill": _top(data["maps"], "ratio", ("name", "type", "entries", "max_entries", "ratio"))}
    if scenario == "firewall_drops" and isinstance(data.get("drops"), list):
        return {"drop_rates": _top(data["drops"], "pps", ("backend", "chain", "rule", "owner", "pps"))}
    if scenario == "cilium_agent" and isinstance((data.get("monitor") or {}).get("flows"), list):
        return {"dropped_flows": _top(data["monitor"]["flows"], "packets", ("flow", "reason", "packets", "endpoint", "pod"))}
    return {}


def _host(result, asked):
    """The host's status from the registered result (failed_when: false leaves failed false: the
    result of a pass that ran has its scenarios, any other is a failure, whatever its flag says)."""
    if result.get("unreachable"):
        return "unreachable", str(result.get("msg") or "no answer over SSH")
    if result.get("bad_variable") or (result.get("failed") and not asked):
        # its checks could not even be built (a bad host variable, an unusable inventory): a failure, not "not checked"
        return "failed", str(result.get("msg") or "this host's checks could not be built")
    if result.get("skipped") or not asked:
        return "not checked", "no scenario applies to this host"
    if isinstance(result.get("scenarios"), dict) and not result.get("failed"):
        return "reached", ""
    msg = str(result.get("msg") or "the node pass did not run")
    if result.get("rc") in (126, 127) or NO_PYTHON.search(msg):
        return "no usable Python", msg
    return "failed", msg


def _record(result, asked, skipped=None, host_findings=None, left_out=None):
    if not isinstance(result, dict):
        raise ParamsError("the node pass record expects the registered result of a node_triage task")
    if not isinstance(asked, list) or not all(isinstance(name, str) for name in asked):
        raise ParamsError("the node pass record expects the list of scenario names asked for, not %r" % (asked,))
    if skipped is not None and not isinstance(skipped, dict):
        raise ParamsError("the node pass record: skipped must be the dict of scenario to reason from the pass parameters")
    status, reason = _host(result, asked)
    results = dict((str(name), {"status": "skipped", "reason": str(why), "findings": [], "details": {}, "data": {}})
                   for name, why in (skipped or {}).items())
    scenarios = result.get("scenarios") if status == "reached" else None
    for name in asked:
        entry = scenarios.get(name) if isinstance(scenarios, dict) else None
        if isinstance(entry, dict):
            results[name] = {"status": entry.get("status", "failed"), "reason": entry.get("reason", ""),
                             "findings": entry.get("findings") or [], "details": details(name, entry.get("data")),
                             "data": entry.get("data") or {}}
        elif status in ("unreachable", "no usable Python"):
            results[name] = {"status": "not run", "reason": "host %s" % status, "findings": [], "details": {}, "data": {}}
        else:
            results[name] = {"status": "failed", "reason": reason or "the node pass did not return this scenario",
                             "findings": [], "details": {}, "data": {}}
    matches = ((results.get("logs") or {}).get("data") or {}).get("matches")
    if results.get("logs", {}).get("status") == "ran" and isinstance(matches, list) and matches:
        with_log_evidence(results, matches)
    state = {"status": status, "reason": reason}
    if host_findings:
        state["findings"] = list(host_findings)
    if left_out:
        state["peers_left_out"] = dict(left_out)
    return {"host": state, "results": results}


def with_log_evidence(entries, matches):
    """The log lines of ``matches`` under the findings of ``entries`` ({scenario: {findings...}}, a
    host's or the fleet's) they explain (log_evidence); the log findings used so are not repeated on
    their own.  Changes ``entries`` in place."""
    tagged = [dict(f, _scenario=name) for name, entry in sorted(entries.items()) for f in entry["findings"]]
    kept = log_evidence(tagged, matches)
    for name, entry in entries.items():
        entry["findings"] = [dict((k, v) for k, v in f.items() if k != "_scenario") for f in kept
                             if f["_scenario"] == name]
