# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of cilium_agent_restart (one named Cilium / anetd agent pod deleted on one named node): its
argument spec and rules, apart from its code (cilium_restart)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules

AGENT_DAEMONSETS = ("cilium", "anetd")

# The options of cilium_agent_restart, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    pod=dict(type="str", required=True),
    node=dict(type="str", required=True),
    daemonsets=dict(type="list", elements="str", default=list(AGENT_DAEMONSETS)),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    pod=rules.namespaced_name,
    node=rules.node_name,
    daemonsets=rules.each(rules.k8s_name, max_items=16),
)
