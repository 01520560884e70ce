# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the pmtu check (pmtu_check, node_triage pmtu)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.doc_fragments.pacing import ModuleDocFragment as Pacing
from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.pmtu_check); paired one-to-one with pmtu_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  targets:
    description: The peers to measure the path to (other nodes, or pod addresses on other nodes).
    type: list
    elements: dict
    required: true
    suboptions:
      address:
        description:
          - IPv4 unicast address of the peer. Not C(0.0.0.0) (nor 0.0.0.0/8), a loopback, multicast, broadcast or
            240.0.0.0/4 address, nor this node's own address; M(k8snet.triage.pmtu_check) refuses them,
            node_triage's pmtu skips them with the finding C(net.pmtu_target_skipped) (info) and measures the others.
        type: str
        required: true
      name:
        description: A label for reports (a node name). Defaults to the address.
        type: str
  min_size:
    description: Smallest total IP size probed (68 to 9000); a peer that does not answer it is not measured.
    type: int
    default: 576
  max_size:
    description:
      - Largest total IP size probed (68 to 65535); by default the MTU of the interface the route to each
        target uses. Never more than that MTU is useful, since the kernel refuses to send it with DF set.
    type: int
  timeout:
    description: Seconds to wait for the answer to one size (more than 0, at most 5).
    type: float
    default: 0.5
  reader:
    description: How routes and links are read (see the collection's netlink readers).
    type: str
    choices: [auto, pyroute2, iproute2]
    default: auto
"""


# The same options as node_triage's pmtu option: built from the DOCUMENTATION above, not written twice
# (set here, after the class, as ansible-test's yamllint reads only the string literals of the class body).
ModuleDocFragment.NODE_TRIAGE = nested("pmtu", [ModuleDocFragment.DOCUMENTATION, Pacing.DOCUMENTATION], targets=[])
