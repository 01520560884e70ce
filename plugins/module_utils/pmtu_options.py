# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the path-MTU check (pmtu_check, node_triage's pmtu): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_pass.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils import params


MIN_SIZE = 576
MAX_SIZE = 65535
MAX_PEERS = 64

# The argument spec of one target (pmtu_check's targets, the one-pass pmtu targets).
TARGET_SPEC = dict(
    address=dict(type="str", required=True),
    name=dict(type="str"),
)

# The options of the path-MTU check: pmtu_check's (with node_name and netns_pid), and node_triage's
# pmtu (targets default to none there). Paired one-to-one with the doc fragment k8snet.triage.pmtu.
CHECK_SPEC = dict(
    targets=dict(type="list", elements="dict", required=True, options=TARGET_SPEC),
    min_size=dict(type="int", default=MIN_SIZE),
    max_size=dict(type="int"),
    timeout=dict(type="float", default=0.5),
    reader=dict(type="str", choices=["auto", "pyroute2", "iproute2"], default="auto"),
)

# The option rules (bounds, shapes) of the pmtu options, used by module pmtu_check and by node_triage.
TARGET_RULE = params.fields(address=params.address(4), name=params.short_text)
RULES = dict(
    targets=params.each(TARGET_RULE, max_items=MAX_PEERS, non_empty=True, what="give at least one peer address"),
    min_size=params.count(68, 9000, "bytes"),
    max_size=params.count(68, MAX_SIZE, "bytes"),
    timeout=params.seconds(0, 5),
    node_name=params.node_name,
    netns_pid=params.count(1, 4194304),
)
# node_triage: no targets is not an error there, the scenario is skipped and says why
PASS_RULES = dict(RULES)
del PASS_RULES["netns_pid"]
PASS_RULES["targets"] = params.each(TARGET_RULE, max_items=MAX_PEERS)
