# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The DNS domain: the node's check (check), its options, the wire format (wire), resolv.conf as glibc reads it
(resolv_conf) and a pod's view of DNS (pod_view).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
