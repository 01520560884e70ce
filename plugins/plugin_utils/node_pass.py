# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of the one-pass triage (the k8snet.triage.node_pass action).

``params`` builds, for one host, what its ``k8snet.triage.node_triage`` call needs: which scenarios
apply to the host (each scenario's ``applies``, module_utils/scenarios/<name>.py), their options from
the scenario roles' variables (same names, same defaults: each scenario's ``ROLE_VARIABLES``), and what
they need from the fleet (each scenario's ``needs``: expected BGP peers, pod-CIDR peers, probe targets,
DNS servers, live frontends, the VIP owners' MACs), all read from one ``Fleet``: the variables, the
inventory contract, the API read, the VIP owners' pre-read and the DNS pod.  ``skipped`` says, for every
wanted scenario that does not apply to the host, the reason, so the report covers every scenario of
every host.

``record`` turns the module's result into the host's ``triage_host`` and ``triage_results``, the
two facts the report reads (each scenario's record built by plugin_utils/record.py).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleError

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, fleet
from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import (
    ADDRESS, NodeListError, contract_problems, usable_hosts)
# node_triage's argument spec (every node check's options). Imported here, at the top: Ansible loads
# this action's module in the controller's main process before it forks a worker per host, so the
# checks' code is compiled once and every worker inherits it (imported inside a function, each of
# the n workers compiled it again from source: about 0.3 s of CPU per host).
from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import ARGUMENT_SPEC, BY_NAME, FLEET_DATA, REGISTRY
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils import record as records
from ansible_collections.k8snet.triage.plugins.plugin_utils.api_reads import api_read, pod_host
from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import as_list
from ansible_collections.k8snet.triage.plugins.plugin_utils.log_evidence import with_log_evidence
from ansible_collections.k8snet.triage.plugins.plugin_utils.peers import connectivity_peers
from ansible_collections.k8snet.triage.plugins.plugin_utils.survey import bounded_int
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import INPUT_ERRORS, plain_names


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
    return [fleet(finding(PEERS_LEFT_OUT, "warning", "control-plane", peer,
                          "%s was left out of the other hosts' %s: %s" % (peer, ", ".join(sorted(entry["lists"])), entry["why"]),
                          {"peer": peer, "lists": sorted(entry["lists"])},
                          "Fix the variable named on %s and run again; until then no host checks it as a peer" % peer),
                  checkers) for peer, entry in sorted(left_out.items())]


def _guarded(what, func, *args):
    """``func(*args)``; input of a shape it cannot use is a ParamsError naming it, never a traceback."""
    try:
        return func(*args)
    except ParamsError:
        raise
    except AnsibleError as exc:  # the inventory contract's own message (connectivity_peers)
        raise ParamsError(str(getattr(exc, "message", exc)))
    except INPUT_ERRORS as exc:
        detail = ("%s: %s" % (type(exc).__name__, plain_names(str(exc))))[:300]
        raise ParamsError("node_pass cannot use %s (%s); see ansible-doc k8snet.triage.node_pass for the "
                          "variables it reads and what they hold" % (what, detail))


def params(variables, host, hostvars, groups, owners=None, kube=None, pod=None, narrowed=None):
    """The node_triage parameters of ``host`` (plus ``skipped``: {scenario: reason}).  ``narrowed``, a scenario
    role's call: {scenarios: [its name], nodes: the play's hosts}, in place of triage_scenarios and
    triage_nodes_group (the role's play is its nodes)."""
    return _guarded("the variables or the fleet inputs of host %s" % host, _params,
                    variables, host, hostvars, groups, owners, kube, pod, narrowed)


def record(result, asked, skipped=None, host_findings=None, left_out=None):
    """``{"host": {status, reason[, findings][, peers_left_out]}, "results": {scenario: {...}}}`` from
    node_triage's result; ``host_findings`` and ``left_out`` (from ``params``) go into the host's record."""
    return _guarded("this node_triage result", _record, result, asked, skipped, host_findings, left_out)


def lean(results):
    """The triage's record of a host: ``results`` without the data of the scenarios whose data no fleet conclusion
    reads (``FLEET_DATA``).  The findings and the details the report draws stay; the whole data (route rows and
    BGP sessions per peer: 60 of 69 KB a host at 100 nodes, n x n for the fleet) would otherwise be copied by
    every later task of every host, on the controller."""
    return dict((name, entry if name in FLEET_DATA or not isinstance(entry, dict)
                 else dict((key, value) for key, value in entry.items() if key != "data"))
                for name, entry in results.items())


# scenario -> ((node_triage option, role variable), ...), from each scenario's declaration; a role variable
# that is unset keeps the module's default, which is the role's default
ROLE_VARIABLES = dict((declared.NAME, declared.ROLE_VARIABLES) for declared in REGISTRY)


# the triage's own variables a host's parameters are computed from
TRIAGE_VARIABLES = ("triage_scenarios", "triage_cni", "triage_nodes_group", "triage_ssh_retries", "triage_node_deadline",
                    "triage_command_timeout")
# every variable a host's parameters are computed from: the triage's, and each scenario's controller side beyond
# its role options (its FLEET_VARIABLES: stale_arp_vips, calico_nodes_group, dns_pod ...)
FLEET_VARIABLES = TRIAGE_VARIABLES + tuple(
    name for declared in REGISTRY for name in getattr(declared, "FLEET_VARIABLES", ()))
# ... and the scenario roles' options above: the variables the node_pass action hands over, templated
VARIABLES = FLEET_VARIABLES + tuple(name for pairs in ROLE_VARIABLES.values() for _option, name in pairs)


# the variables that hold lists (the triage's and each scenario's FLEET_LISTS): a survey (AWX) gives them as newline-
# or comma-separated text
LIST_VARIABLES = ("triage_scenarios",) + tuple(
    name for declared in REGISTRY for name in getattr(declared, "FLEET_LISTS", ()))


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


def _api(kube):
    """(usable, reason) of the API read handed in: usable when it returned its facts."""
    status, message = api_read(kube)
    if status == "failed":
        return False, "the Kubernetes API could not be read: %s" % (message or "no result")[:300]
    return status == "ran", message


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


class Fleet(object):
    """What one host's scenarios are decided and computed from: the variables (templated, lists split), the
    inventory, and the fleet's reads (the API read, the VIP owners, the DNS pod).  Each scenario's
    ``applies`` and ``needs`` (module_utils/scenarios) read it."""

    def __init__(self, variables, host, hostvars, groups, owners, kube, pod, nodes=None):
        self.variables, self.host, self.hostvars, self.groups = variables, host, hostvars, groups
        self.owners, self.kube = owners, kube
        self.api, self.api_reason = _api(kube)
        if not self.api:
            self.kube = {}  # a read that failed or did not run gives nothing, not its partial facts
        self.dns_servers = (kube.get("dns_servers") or []) if self.api else (variables.get("dns_servers") or [])
        self.pod_ip, self.repeat = _dns_pod(variables, host, hostvars, groups, pod)
        self.cni = str(variables.get("triage_cni") or "auto").lower()
        # triage_cni auto decides per node (a node without BIRD / Cilium is "not a ... node"); an explicit CNI does not
        self.auto = (variables.get("triage_cni") or "auto") == "auto"
        self.nodes_group = variables.get("triage_nodes_group") or "k8s_nodes"
        # a scenario role's play: its hosts are the nodes, whatever their group (None: triage_nodes_group's)
        self.nodes = None if nodes is None else list(nodes)
        self.peers = _Peers(host, hostvars)

    def group(self, variable, default="k8s_nodes"):
        """The hosts of the inventory group named by ``variable`` (else ``default``)."""
        return _group(self.groups, self.variables.get(variable) or default)

    def not_a_node(self):
        """The reason a node scenario does not apply to this host (None when it is in triage_nodes_group)."""
        if self.nodes is not None:
            return None if self.host in self.nodes else "not one of this play's hosts"
        return None if self.host in _group(self.groups, self.nodes_group) else "not in group %s" % self.nodes_group

    def cni_is_not(self, cni):
        """The reason a scenario of ``cni`` does not apply (None when triage_cni is auto or ``cni``)."""
        return None if self.cni in ("auto", cni) else "triage_cni is %s" % self.cni

    def usable(self, hosts, needs, what):
        """``hosts`` without those whose contract variables ``needs`` are unusable (recorded as left out of ``what``)."""
        return self.peers.usable(hosts, needs, what)

    def role_options(self, pairs):
        """node_triage options from the role variables of ``pairs`` ((option, variable), ...)."""
        return _set(self.variables, pairs)

    def peer_sample(self, group_variable, max_variable, what, members_only=False):
        """The peers this host probes: a ring over the group's usable hosts (this host in it if it is a member:
        it probes the others, its own address is not needed), at most ``max_variable`` (8) of them; none when
        ``members_only`` and this host is not in the group."""
        group = self.group(group_variable)
        if members_only and self.host not in group:
            return []
        usable = set(self.peers.usable(group, ADDRESS, what))
        ring = [h for h in group if h in usable or h == self.host]
        return connectivity_peers(ring, self.host, self.variables.get(max_variable) or 8, self.hostvars, max_variable)


def applicable(fleet, wanted=None):
    """(scenarios to run on this host, {scenario: reason} for the wanted ones that do not apply to it)."""
    wanted = [declared.NAME for declared in REGISTRY] if wanted is None else list(wanted)
    out, skipped = [], {}
    for declared in REGISTRY:
        if declared.NAME not in wanted:
            continue
        # a scenario that declares no ``applies`` runs on the triage's nodes
        reason = getattr(declared, "applies", Fleet.not_a_node)(fleet)
        if reason:
            skipped[declared.NAME] = reason
        else:
            out.append(declared.NAME)
    return out, skipped


def _params(variables, host, hostvars, groups, owners=None, kube=None, pod=None, narrowed=None):
    if not isinstance(variables, dict):
        raise ParamsError("node_pass expects the play's variables as a dict")
    for value, what in ((owners, "owners (the vip_owners result)"), (kube, "kube (the kube_network_info result)"),
                        (pod, "pod (the kube_network_info result of dns_pod)")):
        if value is not None and not isinstance(value, dict):
            raise ParamsError("node_pass: %s must be a dict, not %s" % (what, kind(value)))
    narrowed = narrowed or {}
    fleet = Fleet(_lists(variables), host, hostvars, groups, owners or {}, kube or {}, pod or {}, narrowed.get("nodes"))
    scenarios, skipped = applicable(fleet, narrowed.get("scenarios") or fleet.variables.get("triage_scenarios"))
    own = contract_problems(host, hostvars[host]) if scenarios else []
    if own:
        raise BadHostVariable(host, own, scenarios, skipped)
    out = {"node_name": str(hostvars[host].get("k8s_node_name") or host), "scenarios": scenarios, "skipped": skipped,
           "ssh_retries": ssh_retries(fleet.variables.get("triage_ssh_retries"))}
    # the pass's total deadline and each command's time limit on the node (node_triage checks their bounds)
    for option, variable in (("deadline", "triage_node_deadline"), ("command_timeout", "triage_command_timeout")):
        if fleet.variables.get(variable) not in (None, ""):
            out[option] = fleet.variables[variable]
    try:
        for declared in REGISTRY:
            if declared.NAME in scenarios:
                out[declared.NAME] = sub = fleet.role_options(declared.ROLE_VARIABLES)
                needs = getattr(declared, "needs", None)
                if needs:
                    needs(fleet, sub)
    except NodeListError as exc:
        raise ParamsError(str(exc))
    # what this host's record says of the peers its lists left out (not a node_triage option)
    out["left_out"] = dict((peer, entry["why"]) for peer, entry in sorted(fleet.peers.left_out.items()))
    out["left_out_findings"] = left_out_findings(fleet.peers.left_out, fleet.peers.checkers)
    return out


# the kinds of ssh failure (report_fold.ssh_failure) that another connection may mend: no answer in time, or a
# connection reset or closed during SSH's start (sshd's MaxStartups under a fleet's connections), or words
# it does not know (None)
SSH_RETRIED = ("no answer", "reset", "closed", None)
SSH_RETRIES_MAX = 5


def ssh_retries(value):
    """triage_ssh_retries as an int from 0 to SSH_RETRIES_MAX (default 1: one more connection); a survey or -e gives
    text. ParamsError names the variable and what it accepts."""
    if value is None or value == "":
        return 1
    retries = bounded_int(value, 0, SSH_RETRIES_MAX)
    if retries is None:
        raise ParamsError("triage_ssh_retries=%s is not a number of SSH retries: give 0 to %d (default 1; each retry "
                          "costs a node that is really down one more connect timeout)" % (str(value)[:40], SSH_RETRIES_MAX))
    return retries


NO_PYTHON = re.compile(r"interpreter|python", re.IGNORECASE)


def details(scenario, data):
    """The compact view of one scenario's data that the HTML report draws ({} for the others)."""
    draw = getattr(BY_NAME.get(scenario), "details", None)
    return draw(data) if draw and isinstance(data, dict) else {}


def _host(result, asked):
    """The host's status from the registered result (failed_when: false leaves failed false: the
    result of a pass that ran has its scenarios, any other is a failure, whatever its flag says)."""
    if result.get("unreachable"):
        return "unreachable", str(result.get("msg") or "no answer over SSH")
    if result.get("bad_variable") or (result.get("failed") and not asked):
        # its checks could not even be built (a bad host variable, an unusable inventory): a failure, not "not checked"
        return "failed", str(result.get("msg") or "this host's checks could not be built")
    if result.get("skipped") or not asked:
        return records.NO_SCENARIO_APPLIES
    if isinstance(result.get("scenarios"), dict) and not result.get("failed"):
        return "reached", ""
    msg = str(result.get("msg") or "the node pass did not run")
    if result.get("rc") in (126, 127) or NO_PYTHON.search(msg):
        return "no usable Python", msg
    return "failed", msg


def _check_record_arguments(result, asked, skipped):
    """Refuse a record's arguments that are not of the shape it reads (ParamsError names which)."""
    if not isinstance(result, dict):
        raise ParamsError("the node pass record expects the registered result of a node_triage task")
    if not isinstance(asked, list) or not all(isinstance(name, str) for name in asked):
        raise ParamsError("the node pass record expects the list of scenario names asked for, not %r" % (asked,))
    if skipped is not None and not isinstance(skipped, dict):
        raise ParamsError("the node pass record: skipped must be the dict of scenario to reason from the pass "
                          "parameters")


def _scenario_record(name, entry, status, reason):
    """The record of scenario ``name``: from its ``entry`` in the result, else not run (the host not reached
    or without Python) or failed (the host's ``reason``)."""
    if isinstance(entry, dict):
        state = entry.get("status") if entry.get("status") in ("ran", "skipped", "failed") else "failed"
        return records.result(state, entry.get("reason", ""), entry.get("findings"),
                              details(name, entry.get("data")), entry.get("data") or {})
    if status in ("unreachable", "no usable Python"):
        return records.result("not run", "host %s" % status, data={})
    return records.result("failed", reason or "the node pass did not return this scenario", data={})


def _add_log_evidence(results):
    """Attach the log lines the logs scenario matched to the findings they explain (when it ran and matched)."""
    matches = ((results.get("logs") or {}).get("data") or {}).get("matches")
    if results.get("logs", {}).get("status") == "ran" and isinstance(matches, list) and matches:
        with_log_evidence(results, matches)


def _host_state(status, reason, host_findings, left_out, attempts=None):
    """The host's ``triage_host``: status, reason, and its own findings and peers left out when it has any, and
    how many SSH connections it took when more than one."""
    state = {"status": status, "reason": reason}
    if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 1:
        state["ssh_attempts"] = attempts
    if host_findings:
        state["findings"] = list(host_findings)
    if left_out:
        state["peers_left_out"] = dict(left_out)
    return state


def _record(result, asked, skipped=None, host_findings=None, left_out=None):
    _check_record_arguments(result, asked, skipped)
    status, reason = _host(result, asked)
    results = dict((str(name), records.result("skipped", why, data={})) for name, why in (skipped or {}).items())
    scenarios = result.get("scenarios") if status == "reached" else None
    for name in asked:
        entry = scenarios.get(name) if isinstance(scenarios, dict) else None
        results[name] = _scenario_record(name, entry, status, reason)
    _add_log_evidence(results)
    return {"host": _host_state(status, reason, host_findings, left_out, result.get("ssh_attempts")),
            "results": results}
