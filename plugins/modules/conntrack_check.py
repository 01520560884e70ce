#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""module: conntrack_check
short_description: conntrack table pressure of a node, its drop counters and the flows that fill it
version_added: 0.2.0
description:
  - Reads C(nf_conntrack_count) against C(nf_conntrack_max) from C(/proc/sys/net/netfilter), and the
    per-CPU counters of C(/proc/net/stat/nf_conntrack) (summed), of the host's network namespace.
  - Samples C(drop), C(early_drop), C(insert_failed), C(invalid) and C(search_restart) before and
    after a window of O(interval) seconds; C(drop) or C(early_drop) growing means new flows were
    refused or evicted because the table was full.
  - When the table is past O(warn_ratio), names the source/destination pairs holding the most
    entries, from one read of the kernel's table (C(/proc/net/nf_conntrack), else one
    C(conntrack -L -o extended) call), never a command per entry.
  - Findings; C(conntrack.table_full) (critical; the table is full now or the drop counters grew
    in the window; info when only the counters since boot show it was full once),
    C(conntrack.pressure) (warning past O(warn_ratio), critical past O(critical_ratio), ok below,
    info when conntrack is not loaded). The remediation names the sysctl and its trade-off.
  - Read-only; standard library only (pyroute2 only with O(reader=pyroute2)).
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.conntrack
options:
  node_name:
    description: The node named in the findings; defaults to "this node".
    type: str
notes:
  - The count and the table are those of the network namespace the module runs in; C(nf_conntrack_max) is the limit
    the kernel holds each namespace to.
  - Reading C(/proc/net/nf_conntrack) needs root (CAP_NET_ADMIN); run with C(become=true).
author:
  - k8snet.triage contributors (@k8snet)
"""

EXAMPLES = r"""
- name: Is the conntrack table filling up?
  k8snet.triage.conntrack_check:
    interval: 5
  become: true

- name: Name the top 20 flows' pairs whatever the fill
  k8snet.triage.conntrack_check:
    top: 20
    top_pairs: always
    interval: 0
  become: true
"""

RETURN = r"""
usage:
  description: The table's fill (null when conntrack is not loaded).
  returned: always
  type: dict
  sample: {count: 212000, max: 262144, buckets: 65536, ratio: 0.8087}
stats:
  description: The counters of C(/proc/net/stat/nf_conntrack), summed over the CPUs (the set depends on the kernel).
  returned: always
  type: dict
  sample: {entries: 212000, insert_failed: 0, drop: 0, early_drop: 0, invalid: 3}
window:
  description: The counters before and after the window and their growth (null when conntrack is not loaded).
  returned: always
  type: dict
  sample: {seconds: 5.0, before: {drop: 0}, after: {drop: 12}, delta: {drop: 12}}
top_pairs:
  description: The commonest source/destination pairs, the protocols and the reader (null when not read).
  returned: always
  type: dict
  sample: {entries: 212000, reader: proc, protos: {udp: 211990, tcp: 10},
           pairs: [{src: 198.18.64.11, dst: 198.18.64.12, count: 200000}]}
findings:
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import check as conntrack
from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import options as conntrack_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, conntrack.node_check, conntrack_options.RULES, dict(conntrack_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
