# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The node's kernel, read without the iproute2 text: netlink tables (and the one targeted change to them),
interfaces, and pinned eBPF maps through bpf(2). Uses core only.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
