# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the CNI files check (cni_config_check, node_triage cni)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.cni_config_check); paired one-to-one with cni_files_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  conf_dir:
    description: The CNI configuration directory (an absolute path without V(..) segments).
    type: path
    default: /etc/cni/net.d
  bin_dir:
    description: The CNI plugin binary directory (an absolute path without V(..) segments).
    type: path
    default: /opt/cni/bin
"""


# The same options as node_triage's cni option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("cni", ModuleDocFragment.DOCUMENTATION)
