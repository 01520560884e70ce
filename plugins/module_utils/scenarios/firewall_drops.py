# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario firewall_drops: DROP / REJECT counters that climb over a window (module iptables_drops)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.firewall import options as iptables_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "firewall_drops"
MODULE = "iptables_drops"
PREFIXES = ("iptables",)
SAMPLED = True
NODE_NAMED = True
OPTIONS = scenario.options(iptables_options.CHECK_SPEC)
RULES = rules.fields(**iptables_options.RULES)
ROLE_VARIABLES = (("interval", "firewall_drops_interval"), ("limit", "firewall_drops_limit"),
                  ("backends", "firewall_drops_backends"), ("warning_pps", "firewall_drops_warning_pps"),
                  ("critical_pps", "firewall_drops_critical_pps"))


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.firewall import iptables  # pylint: disable=import-outside-toplevel

    return iptables.node_check


def details(data):
    if not isinstance(data.get("drops"), list):
        return {}
    return {"drop_rates": scenario.top(data["drops"], "pps", ("backend", "chain", "rule", "owner", "pps"))}
