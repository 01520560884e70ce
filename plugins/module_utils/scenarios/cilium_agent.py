# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario cilium_agent: the Cilium agent's health, its drop counters and the flows it drops
(module cilium_agent_status)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_options as cilium_agent_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "cilium_agent"
MODULE = "cilium_agent_status"
PREFIXES = ("cilium",)
SAMPLED = True
NODE_NAMED = True
OPTIONS = scenario.options(cilium_agent_options.CHECK_SPEC)
RULES = rules.fields(**cilium_agent_options.RULES)
ROLE_VARIABLES = (("agent_socket", "cilium_agent_socket"), ("health_socket", "cilium_agent_health_socket"),
                  ("monitor_socket", "cilium_agent_monitor_socket"),
                  ("metrics_url", "cilium_agent_metrics_url"), ("interval", "cilium_agent_interval"),
                  ("timeout", "cilium_agent_timeout"), ("top", "cilium_agent_top"),
                  ("warning_pps", "cilium_agent_warning_pps"), ("critical_pps", "cilium_agent_critical_pps"),
                  ("cni_conf_dir", "cni_conf_dir"))
FLEET_VARIABLES = ("cilium_agent_when_not_cilium",)


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent as cilium_agent  # pylint: disable=import-outside-toplevel

    return cilium_agent.node_check


def skip_reason(sub, params):
    """The check's own decision, made before its code (and its HTTP client) is loaded."""
    del params

    def cilium_seen():
        from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files  # pylint: disable=import-outside-toplevel

        return cni_files.cilium_on_node(sub.get("cni_conf_dir") or "/etc/cni/net.d")[0]

    return cilium_agent_options.skip_reason(sub, cilium_seen)


def applies(fleet):
    return fleet.not_a_node() or fleet.cni_is_not("cilium")


def needs(fleet, sub):
    # the role's cilium_agent_when_not_cilium when set; else a node without Cilium is a skip under triage_cni auto
    sub["when_not_cilium"] = fleet.variables.get("cilium_agent_when_not_cilium") or ("skip" if fleet.auto else "critical")


def details(data):
    """The agent's status, its metrics' drop rates, and the top dropped flows (cilium-health's view, one row
    per node of the cluster, stays in the data: it grows with the fleet)."""
    out = scenario.picked(data, "agent", "metrics")
    flows = (data.get("monitor") or {}).get("flows")
    if isinstance(flows, list):
        out["dropped_flows"] = scenario.top(flows, "packets", ("flow", "reason", "packets", "endpoint", "pod"))
    return out
