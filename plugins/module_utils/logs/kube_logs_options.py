# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of kube_logs (pod logs and events through the Kubernetes API): its argument spec and rules,
apart from its code (kube_logs)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules

# One item of ``targets``: the pods of a namespace and label selector.
TARGET_SPEC = dict(
    name=dict(type="str", required=True),
    namespace=dict(type="str", required=True),
    label_selector=dict(type="str", required=True),
    per_node=dict(type="bool", default=False),
    containers=dict(type="list", elements="str", default=[]),
)
TARGET_RULE = rules.fields(
    name=rules.short_text,
    namespace=rules.k8s_name,
    label_selector=rules.label_selector,
    containers=rules.each(rules.k8s_name, max_items=16),
)

# The options of kube_logs, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    targets=dict(type="list", elements="dict", options=TARGET_SPEC),
    nodes=dict(type="list", elements="str", default=[]),
    events=dict(type="bool", default=True),
    tail_lines=dict(type="int", default=200),
    since_seconds=dict(type="int", default=3600),
    limit_bytes=dict(type="int", default=262144),
    max_pods=dict(type="int", default=20),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    targets=rules.each(TARGET_RULE, max_items=32),
    nodes=rules.each(rules.node_name, max_items=1000),
    tail_lines=rules.count(1, 10000, "lines"),
    since_seconds=rules.count(1, 7 * 86400, "seconds"),
    limit_bytes=rules.count(1024, 16 * 1024 * 1024, "bytes"),
    max_pods=rules.count(1, 500, "pods"),
)
