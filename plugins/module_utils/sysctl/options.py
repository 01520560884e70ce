# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the kernel parameter check (sysctl_check, node_triage's sysctl): the argument spec and its rules,
apart from the check's code, which node_triage imports only when the check runs (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params

# the interfaces Cilium needs without reverse-path filtering (its endpoints' veths and its own devices)
CILIUM_INTERFACES = ("lxc*", "cilium_*")
MAX_PATTERNS = 32

# The options of the kernel parameter check: sysctl_check's (with node_name), and node_triage's sysctl.
# Paired one-to-one with the doc fragment k8snet.triage.sysctl.
CHECK_SPEC = dict(
    rp_filter_interfaces=dict(type="list", elements="str", default=list(CILIUM_INTERFACES)),
    neigh_warn_ratio=dict(type="float", default=0.8),
)

RULES = dict(
    node_name=params.node_name,
    rp_filter_interfaces=params.each(params.interface, max_items=MAX_PATTERNS),
    neigh_warn_ratio=params.ratio(),
)
