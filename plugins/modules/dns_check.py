#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: dns_check
short_description: ask the kube-dns Service and each coredns pod separately, and the host's resolvers
version_added: 0.1.0
description:
  - Queries every name in O(names) against every server in O(servers) (the kube-dns Service IP and
    each coredns pod IP), over UDP and TCP, with a timeout and retries, and classifies each answer as
    V(ok), V(nodata), V(nxdomain), V(servfail), V(refused), V(timeout), V(unreachable),
    V(wrong_answer) (against O(expect)) or V(error).
  - From the matrix it derives the findings C(dns.all_servers_fail), C(dns.some_servers_fail) (which
    pods on which nodes fail from this node; silence from pods on other nodes is an in-cluster
    connectivity problem, not a DNS one), C(dns.upstream) (cluster names resolve, external ones do
    not) and, with O(host_resolvers=true), C(dns.host_resolver) (the nameservers of the host's
    resolv.conf files, where the cluster domain is expected to fail).
  - Runs on a node (the interesting vantage point) or on the controller. It uses dnspython when the
    Python running it has it, and otherwise a minimal DNS client built on the standard library
    (A/AAAA, UDP with TCP fallback on truncation, TCP), so nodes need nothing installed.
  - Read-only; queries run in parallel inside the module.
requirements:
  - dnspython (optional; without it the built-in standard-library client is used)
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.dns
"""

EXAMPLES = r"""
- name: Ask kube-dns and every coredns pod from each node
  k8snet.triage.dns_check:
    names: [kubernetes.default.svc.cluster.local, www.example.com]
    servers:
      - {address: 10.96.0.10, name: kube-dns, role: service}
      - {address: 10.244.1.3, name: coredns-7db6d8ff4d-2xk9p, node: worker-1}
      - {address: 10.244.2.7, name: coredns-7db6d8ff4d-tq5lm, node: worker-2}
    expect:
      kubernetes.default.svc.cluster.local: 10.96.0.1

- name: Plain addresses, as after dig @
  k8snet.triage.dns_check:
    names: [kubernetes.default.svc.cluster.local]
    servers: [10.96.0.10, 10.244.1.3]

- name: Test the host network's upstream resolvers only
  k8snet.triage.dns_check:
    names: [www.example.com]
    host_resolvers: true
    resolv_conf: [/run/systemd/resolve/resolv.conf]
"""

RETURN = r"""
backend:
  description: The DNS client that was used (V(dnspython) or V(stdlib)).
  returned: always
  type: str
matrix:
  description: One row per server, name and protocol.
  returned: always
  type: list
  elements: dict
  sample:
    - {server: 10.96.0.10, name: kubernetes.default.svc.cluster.local, protocol: udp, status: ok,
       rcode: NOERROR, answers: [10.96.0.1], cnames: [], error: null, attempts: 1, elapsed_ms: 2}
host_matrix:
  description: Rows for the host resolvers (O(host_resolvers=true)), same shape as RV(matrix).
  returned: always
  type: list
  elements: dict
resolv_conf:
  description: The nameservers found per resolv.conf file.
  returned: always
  type: dict
summary:
  description: Count of rows per status.
  returned: always
  type: dict
  sample: {ok: 8, timeout: 4}
findings:
  description:
    - Findings (the collection's findings contract) with checks C(dns.all_servers_fail), C(dns.some_servers_fail),
      C(dns.upstream), C(dns.host_resolver) and C(dns.ok).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.k8snet.triage.plugins.module_utils import dns
from ansible_collections.k8snet.triage.plugins.module_utils.scenario import module_main


def main():
    module_main(AnsibleModule, dns.node_check, dns.RULES, dns.CHECK_SPEC)


if __name__ == "__main__":
    main()
