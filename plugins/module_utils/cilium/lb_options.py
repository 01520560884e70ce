# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the Cilium load-balancing map check (bpf_map_usage, node_triage's cilium_maps): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params

# The options of the map check: bpf_map_usage's (which adds its cleanup options), and node_triage's
# cilium_maps. Paired one-to-one with the doc fragment k8snet.triage.cilium_lb.
CHECK_SPEC = dict(
    bpffs=dict(type="path", default="/sys/fs/bpf"),
    maps=dict(type="list", elements="str", default=[]),
    warn_ratio=dict(type="float", default=0.8),
    critical_ratio=dict(type="float", default=0.95),
    live_frontends=dict(type="list", elements="str"),
)


# The option rules (bounds, shapes) of the cilium_lb options, used by module bpf_map_usage and by node_triage.
RULES = dict(
    bpffs=params.absolute_path,
    maps=params.each(params.relative_path),
    warn_ratio=params.ratio(),
    critical_ratio=params.ratio(),
    live_frontends=params.each(lambda option, value: params.text(option, value, max_len=64), max_items=65536),
    max_delete=params.count(1, 65536, "keys"),
)
