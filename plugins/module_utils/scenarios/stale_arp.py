# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario stale_arp: the VIPs' neighbour entries on their clients against the MAC of the node that
holds each VIP (module arp_check, read-only here; the role's repair flushes)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.arp import options as neighbors_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "stale_arp"
MODULE = "arp_check"
PREFIXES = ("arp",)
OPTIONS = scenario.options(neighbors_options.CHECK_SPEC, addresses=[], probe=True)
RULES = rules.fields(**neighbors_options.RULES)
ROLE_VARIABLES = (("interface", "stale_arp_interface"), ("probe", "stale_arp_probe"),
                  ("probe_timeout", "stale_arp_probe_timeout"))
# the fleet half: the VIP owners' pre-read (which owner holds each VIP, and its MAC)
API_READS = ("vip_owners",)
FLEET_VARIABLES = ("stale_arp_vips", "stale_arp_clients_group")
FLEET_LISTS = ("stale_arp_vips",)


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.arp import neighbors  # pylint: disable=import-outside-toplevel

    return neighbors.node_check


def skip_reason(sub, params):
    del params
    return None if sub.get("addresses") else "no VIP to check (stale_arp.addresses is empty)"


def applies(fleet):
    """It runs on the VIPs' clients (stale_arp_clients_group; a role's run: its play's hosts), not on the nodes."""
    if fleet.nodes is not None:
        if fleet.host not in fleet.nodes:
            return "not one of this play's hosts"
    else:
        clients = fleet.variables.get("stale_arp_clients_group") or "admin_control_plane"
        if fleet.host not in fleet.groups.get(clients, ()):
            return "not a client of the VIPs (not in group %s)" % clients
    return None if fleet.variables.get("stale_arp_vips") else "no VIPs given (stale_arp_vips)"


def needs(fleet, sub):
    """The VIPs, and the MAC each should resolve to (vip_owners over the owners' pre-read)."""
    sub.update(addresses=list(fleet.variables["stale_arp_vips"]), expected=fleet.owners.get("expected") or {})


def fleet(context):
    """On the controller, once after the pass: the VIP owners' findings (a VIP no owner holds, or several),
    concerning the nodes that hold the VIPs (None without VIPs)."""
    # plugin_utils exists on the controller only, and only the controller calls this (see scenarios/__init__)
    from ansible_collections.k8snet.triage.plugins.plugin_utils import fleet_results  # pylint: disable=import-outside-toplevel

    return fleet_results.stale_arp(context)
