# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of kube_network_info (network facts read from the Kubernetes API): its argument spec and
rules, apart from its code (kube_facts)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.cluster.facts import (
    DNS_NAMESPACE, DNS_POD_SELECTOR, DNS_SERVICE, GATHER, GATHER_CHOICES)

# The options of kube_network_info, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    gather=dict(type="list", elements="str", choices=list(GATHER_CHOICES), default=list(GATHER)),
    dns_namespace=dict(type="str", default=DNS_NAMESPACE),
    dns_service=dict(type="str", default=DNS_SERVICE),
    dns_pod_selector=dict(type="str", default=DNS_POD_SELECTOR),
    pod=dict(type="str"),
    node_port_addresses=dict(type="bool", default=False),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    gather=rules.each(rules.choice(*GATHER_CHOICES), max_items=len(GATHER_CHOICES)),
    dns_namespace=rules.k8s_name,
    dns_service=rules.k8s_name,
    dns_pod_selector=rules.label_selector,
    pod=rules.namespaced_name,
)
