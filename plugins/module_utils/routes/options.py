# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the route check (route_check, node_triage's pod_network): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink_options import NETLINK_ARGUMENT_SPEC


MODES = ("direct", "overlay")

# The argument spec of one peer (route_check's peers, the one-pass pod_network peers).
PEER_SPEC = dict(
    node=dict(type="str", required=True),
    node_ip=dict(type="str", required=True),
    node_ips=dict(type="list", elements="str", default=[]),
    pod_cidrs=dict(type="list", elements="str", required=True),
)

# The options of the route check: route_check's, and node_triage's pod_network.
# Paired one-to-one with the doc fragment k8snet.triage.routes.
CHECK_SPEC = dict(
    peers=dict(type="list", elements="dict", default=[], options=PEER_SPEC),
    mode=dict(type="str", choices=list(MODES), default="direct"),
    tunnel_device=dict(type="str"),
    local_pod_routes=dict(type="bool", default=True),
    destinations=dict(type="list", elements="str", default=[]),
)
CHECK_SPEC.update(NETLINK_ARGUMENT_SPEC)


# The option rules (bounds, shapes) of the routes options, used by module route_check and by node_triage.
RULES = dict(
    peers=params.each(params.fields(
        node=params.node_name, node_ip=params.address(), node_ips=params.each(params.address(), max_items=16),
        pod_cidrs=params.each(params.network, max_items=16)), max_items=5000),
    node_name=params.node_name,
    tunnel_device=params.interface,
    destinations=params.each(params.address(), max_items=256),
)
