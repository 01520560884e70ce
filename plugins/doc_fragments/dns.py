# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the DNS check (dns_check, node_triage dns)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.dns_check); paired one-to-one with dns_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  names:
    description:
      - Names to resolve. Names under O(cluster_domain) are cluster names; the others are external
        names, resolved through the upstreams coredns forwards to.
      - A server is asked a name as it is. A name of one label (V(web)) means something only through a
        search list, so it is looked up only in M(k8snet.triage.dns_check)'s pod view (through the pod's
        search list), and refused when there is none.
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
  external_names:
    description:
      - External names the host resolvers (O(host_resolvers=true)) are asked, besides the names of O(names) outside
        O(cluster_domain). The host resolvers are what coredns forwards external names to; cluster names fail
        there by design, so without an external name they are not tested, and C(dns.host_resolver) says so as a
        warning, never ok.
      - At most 16 fully qualified DNS names (more than one label). The default is the registry every node pulls the
        Kubernetes images from; give a name your nodes resolve (e.g. a mirror) on an air-gapped network, or V([]) to
        ask only O(names).
    type: list
    elements: str
    default: [registry.k8s.io]
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
  pod_ip:
    description:
      - The IP of a pod on this host whose view to add (an IPv4 or IPv6 address). Its network namespace is
        found by this IP (no PID needed), its own resolv.conf is read through its root, and each name is
        looked up as its glibc would, from inside it and from the node. Needs root (entering another
        network namespace needs CAP_SYS_ADMIN).
      - The role C(k8snet.triage.dns) and the triage set it from C(dns_pod), on the pod's node only.
    type: str
  repeat:
    description:
      - Number of repeated queries measuring the timeout share and latency (0 to 1000; 0 sends none), to
        the pod's first nameserver with O(pod_ip), else to the first of O(servers), with the kernel's
        conntrack counters sampled before and after.
      - O(repeat) times (O(repeat_interval) + O(timeout)) may not exceed 600 seconds.
    type: int
    default: 0
  repeat_interval:
    description: Seconds between two repeated queries (0 to 10).
    type: float
    default: 0.05
"""


# The same options as node_triage's dns option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("dns", ModuleDocFragment.DOCUMENTATION, names=["kubernetes.default.svc.cluster.local"], host_resolvers=True)
