# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of node_network_status: its argument spec and rules, apart from its code (node_network)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.cni.node_network import (
    DEFAULT_CNI_DAEMONSETS, DEFAULT_CNI_NAMESPACES)

# The options of node_network_status, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    node_selector=dict(type="str"),
    cni_daemonsets=dict(type="list", elements="str", default=list(DEFAULT_CNI_DAEMONSETS)),
    cni_namespaces=dict(type="list", elements="str", default=list(DEFAULT_CNI_NAMESPACES)),
    stuck_after=dict(type="int", default=300),
    restart_threshold=dict(type="int", default=5),
    pending_pods=dict(type="bool", default=True),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    node_selector=rules.label_selector,
    cni_daemonsets=rules.each(rules.short_text),
    cni_namespaces=rules.each(rules.k8s_name),
    stuck_after=rules.count(0, 604800, "seconds"),
    restart_threshold=rules.count(1, 1000000, "restarts"),
)
