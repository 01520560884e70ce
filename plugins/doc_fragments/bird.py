# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the BGP session check (calico_bgp_status, node_triage calico)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.calico_bgp_status); paired one-to-one with bird_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  sockets:
    description:
      - BIRD control sockets to read. Each one given here must answer.
      - When not set, calicoctl's sockets are read, C(/var/run/calico/bird.ctl) (required)
        and C(/var/run/calico/bird6.ctl) (optional, BIRD 1.6's IPv6 daemon), each falling
        back to the same name under C(/var/run/bird) when absent.
    type: list
    elements: path
  expected_peers:
    description:
      - Addresses of the nodes this node should peer with (Calico's node-to-node mesh).
        The node's own addresses are left out. C(10.0.0.5/24), the form of the
        C(projectcalico.org/IPv4Address) Node annotation, is accepted.
      - When empty, only the sessions themselves are checked (no stale or missing peers). At most 16384 items.
    type: list
    elements: str
    default: []
  node_to_node_mesh:
    description:
      - Whether Calico's node-to-node mesh is on (BGPConfiguration C(nodeToNodeMeshEnabled)).
        When false (route reflectors), O(expected_peers) is not used to find stale or
        missing peers.
      - Global and node-specific peers (BGPPeer resources) are never called stale.
    type: bool
    default: true
  stuck_after:
    description:
      - Seconds a session may be not Established before its finding is critical rather
        than a warning. A session whose C(since) cannot be read is critical, and so is one
        failing on a configuration error (bad peer AS, bad BGP identifier, authentication
        failure, unacceptable hold time), since BIRD restarts such a protocol and its
        C(since) keeps moving.
    type: int
    default: 300
  timeout:
    description:
      - Seconds to wait for BIRD to accept the connection and for each part of its reply.
    type: int
    default: 5
  when_not_calico:
    description:
      - What to return when no BIRD socket exists at all and no CNI configuration under O(cni_conf_dir)
        uses the C(calico) plugin, that is when the node does not look like a Calico node.
      - V(critical) gives a critical C(bgp.bird_down) finding (the node is known to run Calico).
      - V(skip) returns RV(applicable) false with RV(skip_reason) and no finding (for example a Cilium
        node in a triage that detects the CNI per node). A socket that exists but refuses, or a Calico
        CNI configuration without BIRD, is still C(bgp.bird_down).
    type: str
    choices: [critical, skip]
    default: critical
  cni_conf_dir:
    description: Where to look for a Calico CNI configuration when O(when_not_calico=skip).
    type: path
    default: /etc/cni/net.d
"""


# The same options as node_triage's calico option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("calico", ModuleDocFragment.DOCUMENTATION, when_not_calico="skip")
