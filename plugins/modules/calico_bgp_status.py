#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: calico_bgp_status
short_description: Read Calico's BIRD BGP sessions on a node and find the broken and stale ones
version_added: 0.1.0
description:
  - Reads every BGP session of the node's BIRD (Calico's C(calico-node)) over BIRD's control
    socket, speaking BIRD's reply-code protocol itself, so neither C(birdc) nor C(calicoctl)
    is needed on the node. Both BIRD 1.6 (Calico's fork) and BIRD 2 are understood.
  - Returns one item per BGP protocol with its type (from Calico's C(Mesh_)/C(Global_)/C(Node_)
    names), peer address, state, since and last error, and findings.
  - C(bgp.not_established) for a session that is not Established (critical once it has been
    down for O(stuck_after) seconds), with the cause (connection refused, no route to host,
    bad peer AS, hold timer expired ...).
  - C(bgp.stale_peer) for a node-to-node mesh peer whose address belongs to no node of
    O(expected_peers) (a leftover Node resource of a decommissioned host);
    C(bgp.missing_peer) for an expected node this node has no session with.
  - "C(bgp.bird_down) when BIRD's socket is missing or refuses (Calico's
    C(BIRD is not ready: Error querying BIRD)); this is a finding, not a module failure."
  - Read-only; never changes the host.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.bird
attributes:
  platform:
    details: Linux nodes running Calico with BIRD (BIRD 1.6 or 2). Needs root to open BIRD's socket (C(become=true)).
notes:
  - Needs read access to BIRD's socket, which is root's; use C(become) when not connecting as root.
  - The node's own addresses are read with C(ip -json), or with pyroute2 where C(ip) is missing.
seealso:
  - name: Calico troubleshooting (stale Node resources)
    description: Decommission inactive Node resources configured for the node-to-node mesh.
    link: https://docs.tigera.io/calico/latest/operations/troubleshoot/troubleshooting
"""

EXAMPLES = r"""
- name: Read the BGP sessions of every node
  k8snet.triage.calico_bgp_status:
  become: true

- name: Find stale and missing mesh peers against the inventory's nodes
  k8snet.triage.calico_bgp_status:
    expected_peers: "{{ groups['k8s_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    stuck_after: 120

- name: Read a BIRD started with a non-Calico socket
  k8snet.triage.calico_bgp_status:
    sockets:
      - /run/bird/bird.ctl
"""

RETURN = r"""
applicable:
  description: False when O(when_not_calico=skip) and the node shows no BIRD socket and no Calico CNI configuration.
  returned: always
  type: bool
  sample: true
skip_reason:
  description: Why the check did not apply (empty when RV(applicable) is true).
  returned: always
  type: str
  sample: "not a Calico node: no BIRD socket (/var/run/calico/bird.ctl, /var/run/calico/bird6.ctl) and no Calico CNI configuration"
peers:
  description: One item per BGP protocol of every socket read.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: BIRD protocol name (C(Mesh_10_0_0_2), C(Global_10_0_0_254_port_1179) ...).
      type: str
      sample: Mesh_10_0_0_2
    type:
      description: C(mesh), C(global) or C(node specific) (from the name), C(other) for non-Calico names.
      type: str
      sample: mesh
    address:
      description: Peer address (the C(Neighbor address) BIRD reports, else taken from the name).
      type: str
      sample: 10.0.0.2
    port:
      description: Peer port when the name carries C(_port_N), else null.
      type: int
    state:
      description: BIRD protocol state (C(up), C(start), C(down) ...).
      type: str
      sample: start
    bgp_state:
      description: BGP state (C(Established), C(Active), C(Connect), C(Passive), C(Idle), C(Down) ...).
      type: str
      sample: Active
    since:
      description: When the protocol state last changed, as BIRD prints it (node local time or date).
      type: str
      sample: "17:19:38"
    info:
      description: BIRD's info column, whitespace collapsed.
      type: str
      sample: "Active Socket: Connection refused"
    last_error:
      description: Last error (class and message), empty when none.
      type: str
      sample: "Socket: Connection refused"
    cause:
      description: The cause in short words, empty when Established.
      type: str
      sample: connection refused
    neighbor_as:
      description: Peer AS as configured (only when BIRD reports it).
      type: int
      returned: when BIRD reports it
    local_as:
      description: Local AS (BIRD 2 only).
      type: int
      returned: when BIRD reports it
    socket:
      description: The socket this protocol was read from.
      type: str
    stale:
      description:
        - A mesh peer whose address belongs to no expected node (the peer a C(bgp.stale_peer) finding names).
        - Always false without O(expected_peers) (nothing to compare with).
      type: bool
    stale_cause:
      description: For a stale peer, the cause in short words.
      type: str
      returned: for a stale peer
established:
  description: Number of BGP sessions Established.
  returned: always
  type: int
  sample: 2
sockets:
  description:
    - The sockets tried, with C(status) C(ok), C(absent), C(refused) or C(not a socket), and the BIRD version.
    - C(down) is true for a socket the check reports as BIRD down (a C(bgp.bird_down) finding); an optional
      socket that is absent (C(bird6.ctl)) is not down.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/var/run/calico/bird.ctl", "status": "ok", "version": "1.6.8", "down": false}]
findings:
  description:
    - Findings (the collection's findings contract) C(bgp.not_established), C(bgp.stale_peer), C(bgp.missing_peer),
      C(bgp.bird_down), or one C(bgp.sessions) of severity ok.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird
from ansible_collections.k8snet.triage.plugins.module_utils.calico import options as bird_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, bird.node_check, bird_options.RULES, bird_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
