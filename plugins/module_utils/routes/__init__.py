# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pod-CIDR route mesh: the node check (mesh), the routing table index (index), the checks and the options.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
