# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of f5_configmap_audit (F5 CIS ConfigMaps audited cluster by cluster): its argument spec and
rules, apart from its code (f5_cluster, f5, f5_parsers, f5_controller)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.f5.controller import DEFAULT_CONTROLLERS

# The options of f5_configmap_audit, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    clusters=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        kubeconfig=dict(type="path"),
        context=dict(type="str"),
    )),
    namespaces=dict(type="list", elements="str", default=[]),
    controller_pods=dict(type="list", elements="str", default=list(DEFAULT_CONTROLLERS)),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    clusters=rules.each(rules.fields(name=rules.short_text, kubeconfig=rules.absolute_path,
                                     context=rules.short_text), max_items=64),
    namespaces=rules.each(rules.k8s_name),
    controller_pods=rules.each(rules.short_text),
)
