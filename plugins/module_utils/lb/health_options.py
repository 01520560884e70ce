# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of lb_health (load-balancer health of Services with ``externalTrafficPolicy: Local``, and the
opt-in switch to Cluster): its argument spec and rules, apart from its code (lb_health)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules

# The options of lb_health, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    services=dict(type="list", elements="str", default=[]),
    namespaces=dict(type="list", elements="str", default=[]),
    probe=dict(type="bool", default=True),
    probe_timeout=dict(type="float", default=2.0),
    address_type=dict(type="str", default="InternalIP", choices=["InternalIP", "ExternalIP"]),
    remediate=dict(type="str", default="none", choices=["none", "cluster"]),
    remediate_services=dict(type="list", elements="str", default=[]),
    max_patch=dict(type="int", default=1),
    force_policy_switch=dict(type="bool", default=False),
    probe_traffic=dict(type="bool", default=False),
    verify=dict(type="bool", default=True),
    verify_timeout=dict(type="float", default=30.0),
    max_probe_nodes=dict(type="int", default=16),
    probe_workers=dict(type="int", default=32),
    probe_deadline=dict(type="float", default=120.0),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    services=rules.each(rules.namespaced_name),
    namespaces=rules.each(rules.k8s_name),
    probe_timeout=rules.seconds(0, 60),
    verify_timeout=rules.seconds(0, 600),
    max_probe_nodes=rules.count(0, 100000, "nodes"),
    probe_workers=rules.count(1, 256, "threads"),
    probe_deadline=rules.seconds(1, 3600),
    remediate_services=rules.each(rules.namespaced_name),
)
