# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the conntrack check (conntrack_check, node_triage's conntrack): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params


READERS = ("auto", "proc", "pyroute2", "conntrack")
MAX_TOP = 50

# The options of the conntrack check: conntrack_check's (with node_name), and node_triage's conntrack.
# Paired one-to-one with the doc fragment k8snet.triage.conntrack.
CHECK_SPEC = dict(
    warn_ratio=dict(type="float", default=0.75),
    critical_ratio=dict(type="float", default=0.9),
    interval=dict(type="float", default=5.0),
    top=dict(type="int", default=10),
    top_pairs=dict(type="str", choices=["pressure", "always", "never"], default="pressure"),
    reader=dict(type="str", choices=list(READERS), default="auto"),
)


# The option rules (bounds, shapes) of the conntrack options, used by module conntrack_check and by node_triage.
RULES = dict(
    node_name=params.node_name,
    warn_ratio=params.ratio(),
    critical_ratio=params.ratio(),
    interval=lambda option, value: params.number(option, value, 0, 60, unit="seconds"),
    top=params.count(0, MAX_TOP, "pairs"),
    top_pairs=params.choice("pressure", "always", "never"),
    reader=params.choice(*READERS),
)
