# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the peer probes (reachability, node_triage connectivity)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.doc_fragments.pacing import ModuleDocFragment as Pacing
from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.reachability); paired one-to-one with reachability_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  targets:
    description: Where to probe.
    type: list
    elements: dict
    required: true
    suboptions:
      address:
        description: IPv4 address of the target.
        type: str
        required: true
      name:
        description: A label for reports (a node name). Defaults to the address.
        type: str
      port:
        description: TCP port for this target; defaults to O(tcp_port).
        type: int
  probes:
    description: Which probes to send.
    type: list
    elements: str
    choices: [icmp, tcp, arp]
    default: [icmp, tcp]
  tcp_port:
    description: TCP port probed on targets that do not name one.
    type: int
    default: 22
  count:
    description: ICMP echoes, and ARP requests and TCP connects until one is answered, per target.
    type: int
    default: 3
  timeout:
    description: Seconds to wait for each answer.
    type: float
    default: 1.0
"""


# The same options as node_triage's connectivity option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("connectivity", [ModuleDocFragment.DOCUMENTATION, Pacing.DOCUMENTATION],
                                       targets=[], probes=["icmp", "tcp", "arp"], tcp_port=10250, count=2)
