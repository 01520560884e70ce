# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the CNI files check (cni_config_check, node_triage's cni): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params

# The options of the CNI files check: cni_config_check's, and node_triage's cni.
# Paired one-to-one with the doc fragment k8snet.triage.cni_files.
CHECK_SPEC = dict(
    conf_dir=dict(type="path", default="/etc/cni/net.d"),
    bin_dir=dict(type="path", default="/opt/cni/bin"),
)


# The option rules (bounds, shapes) of the cni_files options, used by module cni_config_check and by node_triage.
RULES = dict(
    conf_dir=params.absolute_path,
    bin_dir=params.absolute_path,
    node_name=params.node_name,
)
