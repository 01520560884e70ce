# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The core layer, which every other package uses and which uses none of them: domain errors, option bounds
(params), the findings contract, the scenario contract, running commands, the module payload, addresses, MACs,
deadlines, pacing, bounded sockets, Service frontends as text and the inventory-node contract.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
