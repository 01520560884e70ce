# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario logs: kubelet's and the container runtime's network errors in the node's logs (module node_logs)."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.k8snet.triage.plugins.module_utils.logs import options as logs_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "logs"
MODULE = "node_logs"
PREFIXES = ("log",)
NODE_NAMED = True
OPTIONS = scenario.options(logs_options.CHECK_SPEC)
RULES = rules.fields(**logs_options.RULES)
# node_log_files (the inventory's name for the node's log files) wins over the role's logs_node_log_files
ROLE_VARIABLES = (("node_log_files", "logs_node_log_files"), ("node_log_files", "node_log_files"),
                  ("units", "logs_units"), ("source", "logs_source"), ("since", "logs_since"),
                  ("max_bytes", "logs_max_bytes"))
# the fleet half: the network agents' pod logs and events, and the nodes' events, published as its fleet record
API_READS = ("kube_logs",)
FLEET_VARIABLES = ("logs_node",)


def applies(fleet):
    # the logs role's logs_node: false reads only what the API shows (its pass still runs the API reads)
    if fleet.nodes is not None and not boolean(fleet.variables.get("logs_node", True), strict=False):
        return "logs_node is false: the node's own log was not read (only the API's pod logs and events)"
    return fleet.not_a_node()


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs  # pylint: disable=import-outside-toplevel

    return logs.node_check


def fleet(context):
    """On the controller, once after the pass: its API read's record with the log lines the API reads matched as
    its data (None: no read, or nothing matched)."""
    # plugin_utils exists on the controller only, and only the controller calls this (see scenarios/__init__)
    from ansible_collections.k8snet.triage.plugins.plugin_utils import fleet_results  # pylint: disable=import-outside-toplevel

    return fleet_results.logs(context)
