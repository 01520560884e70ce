# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The cluster's network facts, read once from the Kubernetes API on the controller (kube_network_info): nodes,
Service frontends, DNS servers, a pod (facts, facts_options).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
