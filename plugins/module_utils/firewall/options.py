# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the firewall drop counter check (iptables_drops, node_triage's firewall_drops): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params


BACKENDS = ("legacy", "nft", "nftables")
MAX_INTERVAL, MAX_LIMIT, MAX_PPS = 300, 1000, 1e9

# The options of the counter check: iptables_drops', and node_triage's firewall_drops.
# Paired one-to-one with the doc fragment k8snet.triage.iptables.
CHECK_SPEC = dict(
    backends=dict(type="list", elements="str", choices=list(BACKENDS), default=list(BACKENDS)),
    interval=dict(type="float", default=5),
    limit=dict(type="int", default=20),
    warning_pps=dict(type="float", default=1.0),
    critical_pps=dict(type="float", default=100.0),
)


# The option rules (bounds, shapes) of the iptables options, used by module iptables_drops and by node_triage.
RULES = dict(
    backends=params.each(params.choice(*BACKENDS), max_items=len(BACKENDS), non_empty=True,
                         what="give at least one of %s" % ", ".join(BACKENDS)),
    interval=lambda option, value: params.number(option, value, 0, MAX_INTERVAL, unit="seconds"),
    limit=params.count(1, MAX_LIMIT),
    warning_pps=lambda option, value: params.number(option, value, 0, MAX_PPS, unit="packets per second"),
    critical_pps=lambda option, value: params.number(option, value, 0, MAX_PPS, unit="packets per second"),
    node_name=params.node_name,
)
