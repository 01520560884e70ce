# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the kernel parameter check (sysctl_check, node_triage sysctl)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.sysctl_check); paired one-to-one with sysctl_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  rp_filter_interfaces:
    description:
      - Shell patterns of the interfaces that must not filter by reverse path (Cilium's endpoint veths and devices);
        at most 32, each an interface name that may hold C(*).
      - The effective value is the larger of C(net.ipv4.conf.all.rp_filter) and the interface's own.
      - An empty list checks no interface.
    type: list
    elements: str
    default: ["lxc*", "cilium_*"]
  neigh_warn_ratio:
    description:
      - Fill of the IPv4 neighbour table (entries / C(gc_thresh3)) from which C(sysctl.neigh_table_full) is a
        warning; more than 0, at most 1. It is critical once the entries reach C(gc_thresh3).
    type: float
    default: 0.8
"""


# The same options as node_triage's sysctl option: built from the DOCUMENTATION above, not written twice
# (set here, after the class, as ansible-test's yamllint reads only the string literals of the class body).
ModuleDocFragment.NODE_TRIAGE = nested("sysctl", ModuleDocFragment.DOCUMENTATION)
