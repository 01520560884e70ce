#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_logs
short_description: Read kubelet's and the container runtime's recent log on a node and match known network signatures
version_added: 0.3.0
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
  - Log files are read only under C(/var/log); a file that resolves (through a symlink) outside C(/var/log), or that
    is not a regular file, is refused with a message naming it.
  - One finding per signature matched (C(log.*)), whose evidence holds a few of the matching lines with their
    timestamps and where they were read (tokens, C(Authorization) headers and passwords masked), the findings the
    line explains, and the signature's upstream source. C(log.no_signature) (info) when lines were read and none
    matched; C(log.nothing_read) (info) when there was nothing to read. Read-only.
author:
  - k8snet.triage contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Read-only; check mode runs the full check.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: Linux nodes, any Python 3.9+ (standard library only); C(journalctl) when journald runs.
options:
  node_log_files:
    description:
      - Log files read when journald is not running (or with O(source=files)), those that exist.
      - Absolute paths under C(/var/log/), at most 32, without V(..) segments.
    type: list
    elements: path
    default: [/var/log/kubelet.log, /var/log/syslog, /var/log/messages]
  units:
    description: The systemd units whose journal is read (at most 32 unit names).
    type: list
    elements: str
    default: [kubelet, containerd, crio, docker]
  kernel:
    description: Also read the kernel's messages from the journal (C(journalctl -k)), for C(nf_conntrack) drops.
    type: bool
    default: true
  source:
    description: V(auto) reads the journal when journald runs and the files otherwise; V(journal) or V(files) force one.
    type: str
    choices: [auto, journal, files]
    default: auto
  since:
    description: How far back to read, in seconds (1 to 604800).
    type: int
    default: 3600
  max_bytes:
    description: The most bytes read from one file or one journal query (1024 to 67108864); the latest ones are kept.
    type: int
    default: 1048576
  max_lines:
    description: The most lines read from one file or one journal query (1 to 1000000); the latest ones are kept.
    type: int
    default: 5000
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
  description: One row per file or journal query (C(origin), C(status) read/missing, C(lines) kept, C(bytes), C(truncated)).
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

from ansible_collections.k8snet.triage.plugins.module_utils import logs
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks

ARGUMENT_SPEC = dict(
    node_log_files=dict(type="list", elements="path", default=list(logs.DEFAULT_FILES)),
    units=dict(type="list", elements="str", default=list(logs.DEFAULT_UNITS)),
    kernel=dict(type="bool", default=True),
    source=dict(type="str", choices=list(logs.SOURCES), default="auto"),
    since=dict(type="int", default=3600),
    max_bytes=dict(type="int", default=1048576),
    max_lines=dict(type="int", default=5000),
    node_name=dict(type="str"),
)


def main():
    module = checks.new_module(AnsibleModule, logs.RULES, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = logs.node_check(module.params, module)
    except TriageError as exc:
        fail_from(module, exc)
    module.exit_json(changed=False, findings=result["findings"], **result["data"])


if __name__ == "__main__":
    main()
