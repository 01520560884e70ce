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
options:
  names:
    description:
      - Names to resolve. Names under O(cluster_domain) are cluster names; the others are external
        names, resolved through the upstreams coredns forwards to.
    type: list
    elements: str
    required: true
  servers:
    description:
      - The DNS servers to ask. Filled by the role from the Kubernetes API (the kube-dns Service and
        the coredns endpoints) or given.
      - Each item is a plain address, as after C(dig @) (V(10.96.0.10)), or a dict with the keys below
        (labels, the node a pod runs on, the role). Both forms can be mixed.
    type: list
    elements: raw
    default: []
    suboptions:
      address:
        description: IP address of the server.
        type: str
        required: true
      name:
        description: A label for reports, for example the coredns pod name. Defaults to the address.
        type: str
      node:
        description: The node the pod runs on, so a failure can name it.
        type: str
      role:
        description: V(service) for the kube-dns ClusterIP, V(pod) for a coredns pod, V(upstream) for another resolver.
        type: str
        choices: [service, pod, upstream]
        default: pod
  protocols:
    description: Transports to test; each server is asked over each.
    type: list
    elements: str
    choices: [udp, tcp]
    default: [udp, tcp]
  record_type:
    description: The record type asked for.
    type: str
    choices: [A, AAAA]
    default: A
  port:
    description: Destination port of every server.
    type: int
    default: 53
  timeout:
    description: Seconds to wait for one answer.
    type: float
    default: 2.0
  retries:
    description: Extra attempts after a timeout (other failures are not retried).
    type: int
    default: 1
  expect:
    description:
      - Expected addresses per name (a name of O(names) mapped to an address or a list). An answer
        without any of them is V(wrong_answer).
    type: dict
    default: {}
  cluster_domain:
    description: The cluster's DNS domain.
    type: str
    default: cluster.local
  host_resolvers:
    description: Also ask the nameservers of the O(resolv_conf) files of this host.
    type: bool
    default: false
  resolv_conf:
    description:
      - resolv.conf files whose nameservers are the host resolvers. With systemd-resolved,
        C(/etc/resolv.conf) names the 127.0.0.53 stub and C(/run/systemd/resolve/resolv.conf) the
        real upstreams. Missing files are skipped.
    type: list
    elements: path
    default: [/etc/resolv.conf, /run/systemd/resolve/resolv.conf]
  backend:
    description: V(auto) uses dnspython when importable, else the standard-library client.
    type: str
    choices: [auto, dnspython, stdlib]
    default: auto
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: read-only.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
requirements:
  - dnspython (optional; without it the built-in standard-library client is used)
author:
  - k8snet.triage contributors (@k8snet)
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
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.k8snet.triage.plugins.module_utils import dns
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils import params as checks


def run(module):
    result = dns.node_check(module.params, module)
    return dict(changed=False, findings=result["findings"], **result["data"])


def main():
    module = checks.new_module(
        AnsibleModule, dns.RULES,
        argument_spec=dict(
            names=dict(type="list", elements="str", required=True),
            servers=dict(type="list", elements="raw", default=[]),
            protocols=dict(type="list", elements="str", choices=["udp", "tcp"], default=["udp", "tcp"]),
            record_type=dict(type="str", choices=["A", "AAAA"], default="A"),
            port=dict(type="int", default=53),
            timeout=dict(type="float", default=2.0),
            retries=dict(type="int", default=1),
            expect=dict(type="dict", default={}),
            cluster_domain=dict(type="str", default="cluster.local"),
            host_resolvers=dict(type="bool", default=False),
            resolv_conf=dict(type="list", elements="path", default=list(dns.RESOLV_CONFS)),
            backend=dict(type="str", choices=list(dns.BACKENDS), default="auto"),
        ),
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except TriageError as exc:
        fail_from(module, exc)


if __name__ == "__main__":
    main()
