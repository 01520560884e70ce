# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario sysctl: the kernel parameters the pod network depends on (module sysctl_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario
from ansible_collections.k8snet.triage.plugins.module_utils.sysctl import options as sysctl_options

NAME = "sysctl"
MODULE = "sysctl_check"
PREFIXES = ("sysctl",)
NODE_NAMED = True
OPTIONS = scenario.options(sysctl_options.CHECK_SPEC)
RULES = rules.fields(**sysctl_options.RULES)
ROLE_VARIABLES = (("rp_filter_interfaces", "sysctl_rp_filter_interfaces"), ("neigh_warn_ratio", "sysctl_neigh_warn_ratio"))


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.sysctl import check as sysctl  # pylint: disable=import-outside-toplevel

    return sysctl.node_check


def details(data):
    return scenario.picked(data, "ip_forward", "neigh")
