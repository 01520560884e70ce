# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Cilium domain: the agent's view (agent, agent_reader, agent_checks), its load-balancer maps (lb,
lb_analysis, lb_cleanup), the monitor's drops (monitor, drops) and the agent restart (restart), each check
with its options beside it.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
