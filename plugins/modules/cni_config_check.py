#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_config_check
short_description: Check the CNI configuration and plugin binaries on a node
version_added: 0.1.0
description:
  - Reads the CNI network configuration the container runtime loads first from O(conf_dir) (lexical order of
    C(*.conf), C(*.conflist), C(*.json)), and checks that a binary exists and is executable in O(bin_dir) for
    every plugin C(type) it names.
  - Findings C(node.cni_config_missing), C(node.cni_config_invalid), C(node.cni_binary_missing), or
    C(node.cni_files_ok). Read-only; runs on the node over SSH and needs only the node's Python standard library.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.cni_files
options:
  node_name:
    description: The node's name in findings (at most 253 characters). Defaults to the host's name.
    type: str
"""

EXAMPLES = r"""
- name: Check the CNI files of every node
  k8snet.triage.cni_config_check:
    node_name: "{{ k8s_node_name | default(inventory_hostname) }}"
"""

RETURN = r"""
active:
  description: The configuration the runtime uses (file, network name, plugin types, other files).
  returned: when a configuration file exists
  type: dict
  sample: {file: 10-calico.conflist, network: k8s-pod-network, plugins: [calico, bandwidth, portmap], other_files: []}
cni_detected:
  description:
    - Which CNI the node shows, read in the same pass. C(calico) is true with a BIRD control socket
      (C(/var/run/calico/bird.ctl) or C(/var/run/bird/bird.ctl), and their C(bird6) twins) or a CNI
      configuration using the C(calico) plugin. C(cilium) is true with pinned C(cilium_*) maps under
      C(/sys/fs/bpf/tc/globals), the agent's socket (C(/var/run/cilium/cilium.sock)) or a configuration
      using C(cilium-cni). C(evidence) says what was seen.
  returned: always
  type: dict
  sample: {calico: false, cilium: true, evidence: {calico: {bird_sockets: [], cni_config: false},
           cilium: {pinned_maps: 3, agent_sockets: [], cni_config: false}}}
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files
from ansible_collections.k8snet.triage.plugins.module_utils.cni import files_options as cni_files_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, cni_files.node_check, cni_files_options.RULES, dict(cni_files_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
