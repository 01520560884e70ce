# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The reader option of the netlink checks (routes, neighbors), apart from the netlink code (see node_pass)."""

from __future__ import annotations

READERS = ("auto", "pyroute2", "iproute2")
# Paired with the doc fragment k8snet.triage.netlink
NETLINK_ARGUMENT_SPEC = {"reader": {"type": "str", "choices": list(READERS), "default": "auto"}}
