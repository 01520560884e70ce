# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the DROP/REJECT counter check (iptables_drops, node_triage firewall_drops)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.iptables_drops); paired one-to-one with iptables_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  backends:
    description: The backends to read; a backend whose tools are not installed is reported and skipped.
    type: list
    elements: str
    choices: [legacy, nft, nftables]
    default: [legacy, nft, nftables]
  interval:
    description:
      - Seconds between the two snapshots. V(0) takes one snapshot and returns totals only.
    type: float
    default: 5
  limit:
    description: How many growing entries (and top totals) to return.
    type: int
    default: 20
  warning_pps:
    description: Packets per second from which a growing drop is a V(warning) (below it, V(info)).
    type: float
    default: 1.0
  critical_pps:
    description: Packets per second from which a growing drop is V(critical).
    type: float
    default: 100.0
"""


# The same options as node_triage's firewall_drops option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("firewall_drops", ModuleDocFragment.DOCUMENTATION)
