# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CNI domain: the node's CNI configuration and binaries (files), node conditions and CNI pods from the API
(node_network), and the CNI / admission webhook deadlock (webhooks), each with its options beside it.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
