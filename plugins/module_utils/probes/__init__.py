# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Probes from a node: ICMP, TCP and ARP reachability (reachability) and path-MTU black holes (pmtu), each with
its options beside it.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
