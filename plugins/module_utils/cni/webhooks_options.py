# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the webhook modules (webhook_deadlock, webhook_failure_policy): their argument specs and
rules, apart from their code (webhooks)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import check_name, check_namespace
from ansible_collections.k8snet.triage.plugins.module_utils.cni.node_network import (
    DEFAULT_CNI_DAEMONSETS, DEFAULT_CNI_NAMESPACES)

# Where the cluster end of the API server's tunnel runs: namespace/label selector, and the source.
TUNNEL_PODS = (
    # IBM Cloud Kubernetes Service up to 1.20 (OpenVPN client) and from 1.21 (Konnectivity): IBM Cloud docs,
    # "Why do cluster operations fail due to a broken webhook?" (topic containers-webhooks_update, 2023-01-06)
    ("kube-system/app=vpn", "IBM Cloud OpenVPN client"),
    ("kube-system/app=konnectivity-agent", "konnectivity-agent (IBM Cloud 1.21+, AKS, HyperShift, Gardener)"),
    # the upstream example: kubernetes.io "Set up Konnectivity service" (konnectivity-agent.yaml)
    ("kube-system/k8s-app=konnectivity-agent", "konnectivity-agent (the Kubernetes docs' DaemonSet, GKE)"),
    # AKS before Konnectivity: learn.microsoft.com "Tunnel connectivity issues" names tunnelfront; its pods
    # carry component=tunnel (kubectl describe pod -n kube-system -l component=tunnel in AKS support scripts)
    ("kube-system/component=tunnel", "AKS tunnelfront"),
)
DEFAULT_TUNNEL_PODS = tuple(entry for entry, _what in TUNNEL_PODS)


def parse_tunnel(entry):
    """``namespace/selector`` -> (namespace, selector); the namespace ends at the first ``/`` (label keys may
    hold one, namespaces never)."""
    namespace, _sep, selector = entry.partition("/")
    return namespace, selector


# ----------------------------------------------------------------- webhook_deadlock (the check)
def tunnel_entry(option, value):
    """``namespace/label-selector`` of the API server's tunnel pods, like kube-system/app=konnectivity-agent."""
    rules.label_selector(option, value)
    namespace, selector = parse_tunnel(value)
    if not selector.strip():
        raise InputError("%s: %r is not namespace/selector: give the namespace and a label selector, like "
                         "kube-system/app=konnectivity-agent" % (option, value), option=option)
    try:
        check_namespace(namespace)
    except InputError as exc:
        raise InputError("%s: %s; give namespace/selector, like kube-system/app=konnectivity-agent" % (
            option, exc.message), option=option)
    return value


# The options of webhook_deadlock, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    cni_daemonsets=dict(type="list", elements="str", default=list(DEFAULT_CNI_DAEMONSETS)),
    cni_namespaces=dict(type="list", elements="str", default=list(DEFAULT_CNI_NAMESPACES)),
    tunnel_pods=dict(type="list", elements="str", default=list(DEFAULT_TUNNEL_PODS)),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    cni_daemonsets=rules.each(rules.short_text),
    cni_namespaces=rules.each(rules.k8s_name),
    tunnel_pods=rules.each(tunnel_entry, max_items=64),
)


# ----------------------------------------------------------------- webhook_failure_policy (the opt-in repair)
KINDS = {"validating": ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
         "mutating": ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration")}
STATES = ("relaxed", "restored")


def _object_name(option, value):
    rules.text(option, value, max_len=253)
    check_name(value, option)
    return value


# The options of webhook_failure_policy, beside the API options (kube_args.AUTH_ARG_SPEC).
REPAIR_SPEC = dict(
    configuration=dict(type="str", required=True),
    webhook=dict(type="str", required=True),
    kind=dict(type="str", choices=list(KINDS), default="validating"),
    state=dict(type="str", choices=list(STATES), required=True),
)

REPAIR_RULES = dict(
    rules.KUBE_AUTH_RULES,
    configuration=_object_name,
    webhook=_object_name,
    kind=rules.choice(*KINDS),
    state=rules.choice(*STATES),
)
