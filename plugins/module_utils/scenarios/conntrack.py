# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario conntrack: how full the conntrack table is, how fast it fills and who fills it (module conntrack_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import options as conntrack_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "conntrack"
MODULE = "conntrack_check"
PREFIXES = ("conntrack",)
SAMPLED = True
NODE_NAMED = True
OPTIONS = scenario.options(conntrack_options.CHECK_SPEC)
RULES = rules.fields(**conntrack_options.RULES)
ROLE_VARIABLES = (("warn_ratio", "conntrack_warn_ratio"), ("critical_ratio", "conntrack_critical_ratio"),
                  ("interval", "conntrack_interval"), ("top", "conntrack_top"), ("top_pairs", "conntrack_top_pairs"),
                  ("reader", "conntrack_reader"))


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import check as conntrack  # pylint: disable=import-outside-toplevel

    return conntrack.node_check


def details(data):
    """The table's fill, and the counters' change over the window."""
    out = scenario.picked(data, "usage")
    if "window" in data:
        out["window"] = (data["window"] or {}).get("delta") or {}
    return out
