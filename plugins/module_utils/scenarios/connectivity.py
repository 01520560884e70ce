# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario connectivity: ICMP, TCP and ARP probes to a sample of the other nodes (module reachability)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "connectivity"
MODULE = "reachability"
PREFIXES = ("reach", "connectivity")
FLEET_DATA = True  # the cross-node matrix is drawn from every node's probe rows
OPTIONS = scenario.options(reachability_options.CHECK_SPEC, targets=[], probes=["icmp", "tcp", "arp"], tcp_port=10250,
                           count=2)
# an empty list of peers is not an error here: the scenario is skipped and says why
_RULES = dict(reachability_options.RULES)
_RULES["targets"] = rules.each(reachability_options.TARGET_RULE, max_items=reachability_options.MAX_TARGETS)
RULES = rules.fields(**_RULES)
ROLE_VARIABLES = (("probes", "connectivity_probes"), ("tcp_port", "connectivity_tcp_port"),
                  ("count", "connectivity_count"), ("timeout", "connectivity_timeout"), ("rate", "connectivity_rate"))
FLEET_VARIABLES = ("connectivity_group", "connectivity_max_peers")


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.probes import reachability  # pylint: disable=import-outside-toplevel

    return reachability.node_check


def skip_reason(sub, params):
    del params
    return None if sub.get("targets") else "no peers to probe (connectivity.targets is empty)"


def needs(fleet, sub):
    """A sample of connectivity_group (at most connectivity_max_peers), a ring so every node is probed by as many."""
    sub["targets"] = fleet.peer_sample("connectivity_group", "connectivity_max_peers", "connectivity targets")


def fleet(context):
    """On the controller, once after the pass: the cross-node matrix of the hosts whose check ran (None: none ran)."""
    # plugin_utils exists on the controller only, and only the controller calls this (see scenarios/__init__)
    from ansible_collections.k8snet.triage.plugins.plugin_utils import fleet_results  # pylint: disable=import-outside-toplevel

    return fleet_results.connectivity(context)
