#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_logs
short_description: Read kubelet's and the container runtime's recent log on a node and match known network signatures
version_added: 0.2.0
description:
  - Reads the recent log of kubelet and the container runtime on the node, bounded by time and size, and matches
    every line against the collection's signature table (Calico C(Failed to set NetworkUnavailable), Cilium
    C(putEndpointIdTooManyRequests), C(BIRD is not ready), C(NetworkPluginNotReady) / C(cni plugin not initialized),
    C(FailedCreatePodSandBox), C(TLS handshake timeout) to the API server, coredns upstream timeouts and SERVFAIL,
    MetalLB announcements and withdrawals, C(nf_conntrack table full)).
  - With journald running (its socket C(/run/systemd/journal/socket)), asks C(journalctl -o json) for the units
    of O(units) over the last O(since) seconds, at most O(max_lines) lines and O(max_bytes) bytes per query, and
    for the kernel's messages (O(kernel)). Otherwise reads the tail (the last O(max_bytes) bytes, at most
    O(max_lines) lines) of each file of O(node_log_files) that exists, and drops lines whose timestamp is older
    than O(since) seconds.
  - Log files are read only under C(/var/log); a file that resolves (through a symlink) outside C(/var/log), that
    is not a regular file (a FIFO, a socket, a device, a directory, never opened) or that cannot be opened is
    skipped, its row in RV(read) and the finding C(log.file_skipped) (info) say why, and the other files are read.
  - A file given twice, or under two names (symlinks or hard links to the same device and inode), is read once;
    its other rows say C(duplicate). Runs of NUL bytes (the hole copytruncate rotation leaves) are skipped, and the
    line after a hole is read whole.
  - One finding per signature matched (C(log.*)), whose evidence holds a few of the matching lines with their
    timestamps and where they were read (tokens, C(Authorization) headers and passwords masked), the findings the
    line explains, and the signature's upstream source. C(log.no_signature) (info) when lines were read and none
    matched; C(log.nothing_read) (info) when there was nothing to read. Read-only.
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.logs
attributes:
  platform:
    details: Linux nodes, any Python 3.9+ (standard library only); C(journalctl) when journald runs.
options:
  node_name:
    description: The node's name in findings (at most 253 characters). Defaults to the host's name.
    type: str
"""

EXAMPLES = r"""
- name: Match kubelet's and the runtime's recent log against the network signatures
  k8snet.triage.node_logs:
    node_name: "{{ k8s_node_name | default(inventory_hostname) }}"
    since: 1800

- name: Read given files only
  k8snet.triage.node_logs:
    source: files
    node_log_files: [/var/log/kubelet.log, /var/log/containerd.log]
"""

RETURN = r"""
source:
  description: What was read, C(journal) or C(files).
  returned: always
  type: str
  sample: files
read:
  description:
    - One row per file or journal query (C(origin), C(status) read/missing/skipped/duplicate, C(lines) kept,
      C(bytes), C(truncated)).
    - C(note) says why a file was skipped, which file a duplicate is (also C(same_as)), or how many NUL bytes
      were skipped.
  returned: always
  type: list
  elements: dict
  sample: [{origin: /var/log/kubelet.log, status: read, lines: 812, bytes: 1048576, truncated: true}]
matches:
  description:
    - One entry per signature matched (C(check), C(subject), C(count), C(first) and C(last) timestamps, C(lines),
      C(targets), C(origins), C(explains) the checks of the findings it explains, C(severity), C(layer)).
  returned: always
  type: list
  elements: dict
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs
from ansible_collections.k8snet.triage.plugins.module_utils.logs import options as logs_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, logs.node_check, logs_options.RULES, dict(logs_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
