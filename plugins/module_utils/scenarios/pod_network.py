# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario pod_network: the routes to every other node's pod CIDR (module route_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.routes import options as routes_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "pod_network"
MODULE = "route_check"
PREFIXES = ("route",)
NODE_NAMED = True
OPTIONS = scenario.options(routes_options.CHECK_SPEC)
RULES = rules.fields(**routes_options.RULES)
ROLE_VARIABLES = (("mode", "pod_network_mode"), ("tunnel_device", "pod_network_tunnel_device"),
                  ("local_pod_routes", "pod_network_local_pod_routes"),
                  ("destinations", "pod_network_destinations"), ("reader", "pod_network_reader"))
FLEET_VARIABLES = ("pod_network_peers", "pod_network_nodes_group")


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.routes import mesh as routes  # pylint: disable=import-outside-toplevel

    return routes.node_check


def needs(fleet, sub):
    """The peers and their pod CIDRs: pod_network_peers, else the hosts of pod_network_nodes_group that
    have k8s_pod_cidr, named and addressed by the inventory-node contract."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.inventory import EVERY_VARIABLE, pod_cidr_peers  # pylint: disable=import-outside-toplevel

    sub["peers"] = fleet.variables.get("pod_network_peers") or pod_cidr_peers(
        fleet.usable(fleet.group("pod_network_nodes_group"), EVERY_VARIABLE, "pod_network peers"), fleet.hostvars)
