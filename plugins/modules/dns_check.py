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
  - With O(pod_ip), the pod's view as well (run it on the pod's node, as root) - the pod's network namespace
    is found by that IP (no PID or container runtime needed; C(crictl) is only a fast path when installed),
    its C(/etc/resolv.conf) is read through the pod's root, and every name of O(names) is looked up as the
    pod's glibc would (search list, ndots, the order of the tries, the next nameserver after a timeout,
    SERVFAIL or REFUSED) from inside that namespace - of each nameserver of the pod (a NodeLocal DNS
    address included) and each server of O(servers) - and the same lookups from the node. Findings
    C(dns.dead_nameserver) (a resolv.conf entry that never answers the pod), C(dns.pod_only_failure)
    (fails from the pod, works from the node), C(dns.search_amplification) (one lookup costs 3 or more
    queries that return NXDOMAIN, no data or time out) and C(dns.pod_ok).
  - When O(pod_ip) is this node's own address (the namespace found is the node's), a pod with it runs on the
    host network (C(hostNetwork=true)) and which pod cannot be told by the IP; its DNS path is the node's and its
    resolv.conf follows its dnsPolicy (C(ClusterFirstWithHostNet) the cluster DNS, C(Default) the node's). The
    info finding C(dns.pod_host_network) says so, with the node's nameservers, and no pod-only verdict is given
    (the node's resolvers are judged by O(host_resolvers)); O(repeat) then goes from the node to the first of
    O(servers), else to the node's first nameserver.
  - With O(repeat), that many queries (no retries) of the first name to the pod's first nameserver (without
    O(pod_ip), to the first of O(servers) from the node), with the node's conntrack counters
    (C(/proc/net/stat/nf_conntrack)) read before and after. Findings C(dns.intermittent_timeout) (a share
    of the queries time out; rate, p50 and p99 latency) and C(conntrack.insert_failed) (the counter grew).
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

- name: The pod's view from its node, with 200 repeated queries
  k8snet.triage.dns_check:
    names: [web, kubernetes.default.svc.cluster.local]
    servers: [{address: 10.96.0.10, name: kube-dns, role: service}]
    pod_ip: 10.244.1.17
    repeat: 200
  become: true

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
pod:
  description:
    - The pod's view (with O(pod_ip)), else null. C(resolv_conf) as its glibc reads it, C(costs) (per name, the
      names tried in order and the number of queries one lookup costs, twice that with AAAA, and the seconds
      one name waits when no nameserver answers), C(lookups) (each name over the pod's nameservers, as its
      glibc walks them), C(pod_matrix) and C(node_matrix) (each name of each server alone, from the pod and
      from the node), C(repeat) and C(conntrack) (with O(repeat)), C(pid) (the process whose namespace and
      root were used) and C(found_by).
    - C(host_network) true when O(pod_ip) is this node's own address; then only C(ip), C(netns_inode), C(found_by),
      C(resolv_conf) (the node's), C(repeat) and C(conntrack) are given, C(pid) is null.
  returned: always
  type: dict
  sample:
    ip: 198.19.0.5
    pid: 4242
    found_by: scan
    resolv_conf: {nameservers: [198.18.0.61, 10.96.0.10], search: [default.svc.cluster.local, svc.cluster.local,
                  cluster.local], ndots: 5, timeout: 1, attempts: 2}
    costs: [{name: web, queries: 4, queries_a_aaaa: 8, candidates: [web.default.svc.cluster.local,
             web.svc.cluster.local, web.cluster.local, web]}]
repeat:
  description: With O(repeat) and no O(pod_ip), the repeated queries from this node (as C(repeat) of RV(pod)), else null.
  returned: always
  type: dict
  sample: {count: 200, timeouts: 3, timeout_rate: 0.015, p50_ms: 1, p99_ms: 4, max_ms: 9, server: 10.96.0.10}
findings:
  description:
    - Findings (the collection's findings contract) with checks C(dns.all_servers_fail), C(dns.some_servers_fail),
      C(dns.upstream), C(dns.host_resolver) and C(dns.ok); with O(pod_ip) C(dns.dead_nameserver),
      C(dns.pod_only_failure), C(dns.search_amplification), C(dns.pod_ok) and C(dns.pod_host_network); with O(repeat)
      C(dns.intermittent_timeout) and C(conntrack.insert_failed).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.dns import check as dns
from ansible_collections.k8snet.triage.plugins.module_utils.dns import options as dns_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, dns.node_check, dns_options.RULES, dns_options.CHECK_SPEC)


if __name__ == "__main__":
    main()
