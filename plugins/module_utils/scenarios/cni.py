# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario cni: the node's CNI configuration and plugin binaries (module cni_config_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cni import files_options as cni_files_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "cni"
MODULE = "cni_config_check"
PREFIXES = ("node",)
NODE_NAMED = True
OPTIONS = scenario.options(cni_files_options.CHECK_SPEC)
RULES = rules.fields(**cni_files_options.RULES)
ROLE_VARIABLES = (("conf_dir", "cni_conf_dir"), ("bin_dir", "cni_bin_dir"))
# the fleet half: the API half of the scenario, node conditions, taints and CNI pods, and the admission webhooks
# that would deadlock with the CNI, published as its fleet record
API_READS = ("node_network_status", "webhook_deadlock")


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files  # pylint: disable=import-outside-toplevel

    return cni_files.node_check
