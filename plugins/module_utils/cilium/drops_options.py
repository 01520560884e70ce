# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of cilium_agent_drops (the dropped flows of named nodes' agents, through the API's exec): its
argument spec and rules, apart from its code (cilium_drops)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.restart_options import AGENT_DAEMONSETS

MAX_NODES = 100
MAX_SECONDS = 60.0
MAX_TOP = 100

# The options of cilium_agent_drops, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    nodes=dict(type="list", elements="str", required=True),
    namespace=dict(type="str", default="kube-system"),
    daemonsets=dict(type="list", elements="str", default=list(AGENT_DAEMONSETS)),
    container=dict(type="str", default="cilium-agent"),
    seconds=dict(type="float", default=5.0),
    top=dict(type="int", default=10),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    nodes=rules.each(rules.node_name, max_items=MAX_NODES, non_empty=True, what="name the nodes whose agents to read"),
    namespace=rules.k8s_name,
    daemonsets=rules.each(rules.k8s_name, max_items=16, non_empty=True),
    container=rules.k8s_name,
    seconds=rules.seconds(0, MAX_SECONDS),
    top=rules.count(1, MAX_TOP, "flows"),
)
