# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the triage makes of its registered Kubernetes API reads (registered with failed_when: false):
whether each ran, was skipped (and why) or failed, and which inventory host a pod's node is."""

from __future__ import annotations


NO_CREDENTIALS = ("no Kubernetes credentials (triage_kubeconfig, module_defaults for group/k8snet.triage.kube, "
                  "K8S_AUTH_*, an in-cluster service account or ~/.kube/config)")


def api_read(result):
    """``(status, message)`` of a registered API read: ``ran``; ``skipped`` (not run, or no credentials at
    all: the message says so); ``failed`` with the module's message (registered with failed_when: false,
    a read that failed keeps failed false but has no findings)."""
    if result and result.get("skipped"):
        # skipped by its when: only the credentials test means there are none; any other is said as it is
        condition = str(result.get("false_condition") or "")
        if condition == "__node_pass_api_wanted":
            return "skipped", "the Kubernetes API was not read (the scenario role's <scenario>_api variable is false)"
        if condition and "triage_api_source" not in condition and "credential_source" not in condition:
            return "skipped", "the Kubernetes API was not read (its step was skipped: %s is false)" % condition[:200]
    if not result or result.get("skipped") or ("credential_source" in result and result["credential_source"] is None):
        return "skipped", NO_CREDENTIALS
    if result.get("failed") or "findings" not in result:
        return "failed", str(result.get("msg") or "")
    return "ran", ""


def pod_host(pod, hosts, hostvars):
    """The inventory host of ``pod``'s node (a kube_network_info ``gather: [pod]`` result's ``pod``): the
    first of ``hosts`` whose k8s_node_name, else whose inventory name, is that node; None if none is."""
    node = (pod or {}).get("node") if isinstance(pod, dict) else None
    for host in hosts if node else ():
        facts = hostvars[host] if host in hostvars else None
        if str((facts or {}).get("k8s_node_name") or host) == node:
            return host
    return None
