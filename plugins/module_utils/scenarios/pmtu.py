# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario pmtu: the path MTU to a sample of the peers against the interface MTU (module pmtu_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "pmtu"
MODULE = "pmtu_check"
PREFIXES = ("net",)
NODE_NAMED = True
OPTIONS = scenario.options(pmtu_options.CHECK_SPEC, targets=[])
RULES = rules.fields(**pmtu_options.PASS_RULES)
ROLE_VARIABLES = (("min_size", "pmtu_min_size"), ("max_size", "pmtu_max_size"), ("timeout", "pmtu_timeout"),
                  ("rate", "pmtu_rate"))
FLEET_VARIABLES = ("pmtu_targets", "pmtu_group", "pmtu_max_peers")


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu  # pylint: disable=import-outside-toplevel

    return pmtu.node_check


def skip_reason(sub, params):
    del params
    return None if sub.get("targets") else "no peers to measure (pmtu.targets is empty)"


def needs(fleet, sub):
    """pmtu_targets (pod addresses too), else a sample of pmtu_group as connectivity's peers, from its members only."""
    if not sub.get("max_size"):
        sub.pop("max_size", None)  # the role's 0: the interface MTU
    sub["targets"] = list(fleet.variables.get("pmtu_targets") or []) or fleet.peer_sample(
        "pmtu_group", "pmtu_max_peers", "pmtu targets", members_only=True)


def details(data):
    return scenario.picked(data, "peers", "interfaces")
