# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The inventory-node contract (controller side), in one place for every role and filter.

Host variables of a node: ``k8s_node_name`` (default: the inventory name), ``k8s_node_ip``
(default: ``ansible_host``, else the inventory name; a prefix length is dropped), ``k8s_pod_cidr``
(optional; one CIDR or a list).  Pure functions over ``hostvars``.

``contract_problems`` checks one host's contract with the rules the node checks apply to what is
built from it; ``usable_hosts`` leaves out of a peer list the hosts whose contract is broken and
says why, so one host's mistake stays that host's (its own pass fails, the others go on without it).
"""

from __future__ import annotations

import functools

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


class NodeListError(ValueError):
    """A node list entry is unusable (the message names the host and the fix)."""


def inventory_nodes(hosts, hostvars, names=False):
    """``[{host, name, address}]`` of inventory hosts, by the contract above (a bad k8s_node_ip, or with
    ``names`` a bad k8s_node_name, is a NodeListError naming the host, the variable and the fix)."""
    nodes = []
    for host in hosts:
        variables = hostvars[host]
        _refuse_bad(host, variables, ("k8s_node_name", "k8s_node_ip") if names else ("k8s_node_ip",))
        name = variables.get("k8s_node_name") or host
        raw = variables.get("k8s_node_ip") or variables.get("ansible_host") or host
        try:
            address = host_address(raw)
        except ValueError:
            raise NodeListError(
                "host %s: %r is not an IP address; set k8s_node_ip to the node's address (its InternalIP; "
                "with Calico, its BGP address, the projectcalico.org/IPv4Address of its Node)" % (host, raw))
        nodes.append({"host": str(host), "name": str(name), "address": address})
    return nodes


def pod_cidr_peers(hosts, hostvars):
    """route_check's ``peers`` (``[{node, node_ip, pod_cidrs}]``) of the hosts that have ``k8s_pod_cidr``."""
    with_cidrs = [host for host in hosts if hostvars[host].get("k8s_pod_cidr")]
    for host in with_cidrs:
        _refuse_bad(host, hostvars[host], ("k8s_pod_cidr",))
    peers = []
    for node in inventory_nodes(with_cidrs, hostvars, names=True):  # the name is route_check's peer name
        cidrs = hostvars[node["host"]]["k8s_pod_cidr"]
        peers.append({"node": node["name"], "node_ip": node["address"],
                      "pod_cidrs": [cidrs] if isinstance(cidrs, str) else list(cidrs)})
    return peers


MAX_POD_CIDRS = 16


def _refuse_bad(host, variables, names):
    """NodeListError naming the host, the variable, its value (escaped) and the fix, for a bad contract variable of ``names``."""
    problems = [p["message"] for p in contract_problems(host, variables) if p["variable"] in names]
    if problems:
        raise NodeListError("host %s: %s" % (host, "; ".join(problems)))


def _problem(variable, value, rule):
    """The message of ``rule(variable, value)`` when it refuses the value (it names the variable, the
    value shown safely and the fix), else None."""
    try:
        rule(variable, value)
    except InputError as exc:
        return exc.message
    return None


def _contract_key(variables):
    """What ``_check_contract`` reads, hashable ((type, value) per variable, a list as a tuple), or None when a
    value is neither a plain scalar nor a list of strings."""
    key = []
    for name in EVERY_VARIABLE:
        value = variables.get(name)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = tuple(value)
        elif not (value is None or isinstance(value, (str, int, float, bool))):
            return None
        key.append((type(value).__name__, value))
    return tuple(key)


# every host's pass checks every peer's contract in several lists (route, BGP and probe peers): a fleet of n
# hosts would check each one n times over
@functools.lru_cache(maxsize=65536)
def _checked(key):
    return _check_contract(dict((name, list(value) if isinstance(value, tuple) else value)
                                for name, (_type, value) in zip(EVERY_VARIABLE, key)))


def contract_problems(host, variables):
    """``[{variable, message}]`` for each inventory-contract variable of ``host`` that the checks cannot
    use (an empty list when all are usable); checked once per set of values (see ``_check_contract``)."""
    variables = variables if hasattr(variables, "get") else {}
    key = _contract_key(variables)
    if key is None:
        return _check_contract(variables)
    return [dict(problem) for problem in _checked(key)]


def _check_contract(variables):
    """The problems of a host's contract variables: k8s_node_name (no control characters, at most 253
    characters), the address (k8s_node_ip, else ansible_host, else the inventory name: an IP address,
    a prefix length allowed) and k8s_pod_cidr (CIDRs, at most 16)."""
    problems = []
    name = variables.get("k8s_node_name")
    if name is not None and name != "":
        message = _problem("k8s_node_name", name, params.node_name)
        if message:
            problems.append({"variable": "k8s_node_name", "message": message + "; set k8s_node_name to the node's "
                             "Kubernetes name (kubectl get nodes), or leave it out to use the inventory name"})
    raw = variables.get("k8s_node_ip")
    if raw is not None and raw != "":
        try:
            host_address(raw)
        except ValueError:
            message = _problem("k8s_node_ip", raw, params.address()) or "k8s_node_ip is not an IP address"
            problems.append({"variable": "k8s_node_ip", "message": message + "; set k8s_node_ip to the node's address "
                             "(its InternalIP; with Calico, its BGP address, the projectcalico.org/IPv4Address of its Node)"})
    cidrs = variables.get("k8s_pod_cidr")
    if cidrs is not None and cidrs != "":
        rule = params.network if isinstance(cidrs, str) else params.each(params.network, max_items=MAX_POD_CIDRS)
        message = _problem("k8s_pod_cidr", cidrs, rule)
        if message:
            problems.append({"variable": "k8s_pod_cidr", "message": message + "; set k8s_pod_cidr to the node's podCIDR "
                             "(kubectl get node NAME -o jsonpath='{.spec.podCIDRs}'), or leave it out"})
    return problems


def address_problem(host, variables):
    """Why ``host`` has no usable address when k8s_node_ip is not set (its ansible_host, else its
    inventory name, is not an IP address), else None.  Not a mistake of the host's own pass: it is
    left out of its peers' lists, which say so."""
    variables = variables if hasattr(variables, "get") else {}
    if variables.get("k8s_node_ip"):
        return None
    variable = "ansible_host" if variables.get("ansible_host") else "inventory name"
    raw = variables.get("ansible_host") or host
    try:
        host_address(raw)
    except ValueError:
        return "its address is unknown (%s, and k8s_node_ip is not set); set k8s_node_ip to the node's address " \
               "(its InternalIP)" % (_problem(variable, raw, params.address()) or "%s is not an IP address" % variable)
    return None


ADDRESS = ("k8s_node_ip", "ansible_host")
EVERY_VARIABLE = ("k8s_node_name", "k8s_node_ip", "ansible_host", "k8s_pod_cidr")


def usable_hosts(hosts, hostvars, needs=EVERY_VARIABLE):
    """``(usable, left_out)``: the hosts whose contract variables in ``needs`` the checks can use, in
    order, and ``{host: why}`` for the others (a bad variable of ``needs``; an unknown address when
    ``needs`` has the address, k8s_node_ip or ansible_host)."""
    usable, left_out = [], {}
    for host in hosts:
        variables = hostvars[host] if host in hostvars else {}
        problems = [p["message"] for p in contract_problems(host, variables) if p["variable"] in needs]
        missing = address_problem(host, variables) if set(ADDRESS) & set(needs) else None
        if missing:
            problems.append(missing)
        if problems:
            left_out[str(host)] = "; ".join(problems)
        else:
            usable.append(host)
    return usable, left_out
