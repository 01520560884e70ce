# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the probes (reachability, node_triage's connectivity): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.pacing import RATE_SPEC, rate_rule


PROBES = ("icmp", "tcp", "arp")

# The argument spec of one target (reachability's targets, the one-pass connectivity targets).
TARGET_SPEC = dict(
    address=dict(type="str", required=True),
    name=dict(type="str"),
    port=dict(type="int"),
)

# The options of the probes: reachability's, and node_triage's connectivity (with the triage's
# defaults). Paired one-to-one with the doc fragment k8snet.triage.reachability.
CHECK_SPEC = dict(
    targets=dict(type="list", elements="dict", required=True, options=TARGET_SPEC),
    probes=dict(type="list", elements="str", choices=list(PROBES), default=["icmp", "tcp"]),
    tcp_port=dict(type="int", default=22),
    count=dict(type="int", default=3),
    timeout=dict(type="float", default=1.0),
    **RATE_SPEC
)


# The option rules (bounds, shapes) of the reachability options, used by module reachability and by node_triage.
TARGET_RULE = params.fields(address=params.address(4), name=params.short_text, port=params.port)
MAX_TARGETS = 256
RULES = dict(
    targets=params.each(TARGET_RULE, max_items=MAX_TARGETS, non_empty=True, what="give at least one target address"),
    probes=params.each(params.choice("icmp", "tcp", "arp"), max_items=3, non_empty=True,
                       what="give icmp, tcp and/or arp"),
    tcp_port=params.port,
    count=params.count(1, 20, "probes"),
    timeout=params.seconds(0, 10),
    rate=rate_rule,
    netns_pid=params.count(1, 4194304),
    pod_ip=params.address(),
)
