# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario calico: BIRD's BGP sessions against the peers the fleet expects (module calico_bgp_status)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.calico import options as bird_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "calico"
MODULE = "calico_bgp_status"
PREFIXES = ("bgp",)
OPTIONS = scenario.options(bird_options.CHECK_SPEC, when_not_calico="skip")
RULES = rules.fields(**bird_options.RULES)
ROLE_VARIABLES = (("sockets", "calico_sockets"), ("node_to_node_mesh", "calico_node_to_node_mesh"),
                  ("stuck_after", "calico_stuck_after"), ("timeout", "calico_timeout"))
# the fleet half: the Node list read once (its BGP peers), and what its controller side reads besides ROLE_VARIABLES
API_READS = ("kube_network_info",)
FLEET_VARIABLES = ("calico_expected_nodes", "calico_nodes_group", "calico_when_not_calico")


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird  # pylint: disable=import-outside-toplevel

    return bird.node_check


def skip_reason(sub, params):
    """No BIRD socket and no Calico configuration (with when_not_calico=skip), decided before bird.py loads."""
    del params

    def calico_config():
        from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files  # pylint: disable=import-outside-toplevel

        return cni_files.has_calico_config(sub.get("cni_conf_dir") or "/etc/cni/net.d")

    return bird_options.skip_reason(sub, calico_config)


def applies(fleet):
    return fleet.not_a_node() or fleet.cni_is_not("calico")


def needs(fleet, sub):
    """The BGP peers to expect: calico_expected_nodes, else the API's Node list
    (projectcalico.org/IPv4Address, else the InternalIP), else the inventory group calico_nodes_group."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import ADDRESS, inventory_nodes  # pylint: disable=import-outside-toplevel

    variables = fleet.variables
    if variables.get("calico_expected_nodes"):
        nodes = variables["calico_expected_nodes"]
    elif fleet.api:
        nodes = [{"name": n["name"], "address": n.get("calico_ipv4_address") or n.get("internal_ip")}
                 for n in fleet.kube.get("nodes") or [] if n.get("calico_ipv4_address") or n.get("internal_ip")]
    else:
        # only the addresses are used: a peer with a bad name stays expected (left out, its session would look unexpected)
        nodes = inventory_nodes(fleet.usable(fleet.group("calico_nodes_group"), ADDRESS, "calico expected BGP peers"),
                                fleet.hostvars)
    sub["expected_peers"] = [str(n["address"]) for n in nodes]
    # the role's calico_when_not_calico when set; else triage_cni auto decides per node (a node without BIRD is
    # "not a Calico node"), an explicit CNI does not
    sub["when_not_calico"] = variables.get("calico_when_not_calico") or ("skip" if fleet.auto else "critical")


SHOWN_SESSIONS = 8


def details(data):
    """The BGP sessions, those not Established first, at most 8 (a full mesh has one per node: the report
    would grow with the square of the fleet), and how many of how many are Established."""
    peers = data.get("peers")
    if not isinstance(peers, list):
        return {}
    peers = [p for p in peers if isinstance(p, dict)]
    up = [p for p in peers if p.get("bgp_state") == "Established"]
    shown = ([p for p in peers if p.get("bgp_state") != "Established"] + up)[:SHOWN_SESSIONS]
    out = {"bgp_sessions": shown}
    if len(peers) > len(shown):
        out["bgp_established"] = "%d of %d sessions Established (%d shown)" % (len(up), len(peers), len(shown))
    return out
