# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the BGP session check (calico_bgp_status, node_triage's calico): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_pass.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils import params

# The options of the BGP session check: calico_bgp_status', and node_triage's calico (with the
# triage's defaults). Paired one-to-one with the doc fragment k8snet.triage.bird.
CHECK_SPEC = dict(
    sockets=dict(type="list", elements="path"),
    expected_peers=dict(type="list", elements="str", default=[]),
    node_to_node_mesh=dict(type="bool", default=True),
    stuck_after=dict(type="int", default=300),
    timeout=dict(type="int", default=5),
    when_not_calico=dict(type="str", choices=["critical", "skip"], default="critical"),
    cni_conf_dir=dict(type="path", default="/etc/cni/net.d"),
)


# The option rules (bounds, shapes) of the bird options, used by module calico_bgp_status and by node_triage.
RULES = dict(
    sockets=params.each(params.absolute_path, max_items=16),
    expected_peers=params.each(params.address_or_network, max_items=4096),
    stuck_after=params.count(0, 86400, "seconds"),
    timeout=params.count(1, 60, "seconds"),
    cni_conf_dir=params.absolute_path,
)
