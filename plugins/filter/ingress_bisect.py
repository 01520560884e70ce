# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role ingress_path: the first hop where the probes vanished."""

from __future__ import annotations

DOCUMENTATION = """
name: ingress_bisect
short_description: find the first hop of the ingress path where the probes were not seen
version_added: 0.1.0
description:
  - Walks client -> LB node (received, then translated to the pod) -> worker -> pod veth -> pod reply
    over C(k8snet.triage.packet_capture) results taken at the same time on each hop, and returns the
    hops, the hop where the packets vanished and one finding with the runbook step for it
    (C(ingress.client_network), C(ingress.arp), C(ingress.fabric), C(ingress.nat), C(ingress.between_nodes),
    C(ingress.pod_forwarding), C(ingress.backend), C(ingress.return_path) or C(ingress.ok)).
  - Behind a direct-server-return load balancer (O(lb_mode=dsr), Seesaw) the LB node translates nothing. Its
    second hop is the probes leaving it still addressed to the VIP (C(lb_forwarded); vanished there,
    C(ingress.lb_forward)), and the worker receives them addressed to the VIP.
options:
  _input:
    description: >-
      The captures, C({client: result, lb: [results], worker: result}) where each result is a
      packet_capture result with a C(host) key added, or C({client: {host: result}, lb: {host: result, ...},
      worker: {host: result}}). Any hop may be missing.
    type: dict
    required: true
  vip:
    description: The LoadBalancer VIP the client probes.
    type: str
    required: true
  port:
    description: The Service port on the VIP.
    type: int
    required: true
  pod_ip:
    description: The pod the VIP is translated to.
    type: str
    required: true
  pod_port:
    description: The pod's target port.
    type: int
    required: true
  probe:
    description: The client's C(k8snet.triage.reachability) result (to tell a broken return path).
    type: dict
  pod_interface:
    description: The pod's host-side veth; by default the one the worker's capture resolved from O(pod_ip).
    type: str
  backends:
    description:
      - >-
        Every ready backend, C([{ip, port, pod, node, host}]) (M(k8snet.triage.service_path_info)'s C(endpoints)).
        With it the input also holds C(workers), C({host: result}) of every backend's node, O(pod_ip) and
        O(pod_port) are not used, and each probe is attributed to the backend the LB node translated it to; the
        finding names the backend (pod, node) where its probes vanished, and a probe that went to another
        backend is never C(ingress.nat).
    type: list
    elements: dict
  lb_mode:
    description:
      - C(nat), the LB node translates the VIP to the pod (kube-proxy, MetalLB, kube-vip, Cilium); C(dsr), direct
        server return (Seesaw), the LB node forwards the packets with the VIP kept and the worker translates it.
      - C(dsr) walks one backend (O(pod_ip)); with O(backends) it is refused (a DSR LB node's packets cannot be
        told apart by backend).
    type: str
    choices: [nat, dsr]
    default: nat
  arp_answering:
    description:
      - The MACs that answered the client's ARP probe for the VIP, each with the inventory hosts that own it,
        C([{mac, hosts}]) (the C(answering) of the C(k8snet.triage.vip_announcer) filter).
      - When exactly one MAC answered and it belongs to LB nodes that were captured, the client's probes left it
        and the client's own ARP for the VIP was answered (or it used its cached entry), probes that never reach
        the LB node are C(ingress.fabric) (the network between them, the physical switch or the SDN, with each
        side's packets in C(evidence.fabric)), not C(ingress.arp).
    type: list
    elements: dict
"""

EXAMPLES = """
- name: Where do the packets vanish?
  ansible.builtin.set_fact:
    bisect: "{{ captures | k8snet.triage.ingress_bisect(vip='198.18.0.202', port=80, pod_ip='10.244.1.5', pod_port=8080) }}"
"""

RETURN = """
_value:
  description: C(hops) (hop, host, packets seen), C(vanished_at) (null when every hop saw the probes) and C(findings).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.analysis import ingress_bisect as _bisect
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.analysis import ingress_bisect_backends as _bisect_backends
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def ingress_bisect(captures, vip, port, pod_ip, pod_port, probe=None, pod_interface=None, backends=None, lb_mode="nat",
                   arp_answering=None):
    if not isinstance(captures, dict):
        raise AnsibleFilterError("ingress_bisect expects a dict {client, lb, worker} of capture results, got %s"
                                 % params.kind(captures))
    try:
        vip, pod_ip = params.address()("vip", vip), params.address()("pod_ip", pod_ip)
        port, pod_port = params.port("port", _int(port)), params.port("pod_port", _int(pod_port))
        if pod_interface is not None:
            params.interface("pod_interface", pod_interface)
        lb_mode = params.choice("nat", "dsr")("lb_mode", lb_mode)
        if lb_mode == "dsr" and backends:
            raise InputError("lb_mode=dsr walks one backend: give pod_ip and pod_port, not backends (a direct-server-"
                             "return LB node forwards every probe to the VIP, so its packets cannot be told apart "
                             "by backend)")
        if backends is not None:
            backends = params.each(params.fields(ip=params.address(), port=lambda o, v: params.port(o, _int(v)),
                                                 pod=params.short_text, node=params.node_name, host=params.node_name),
                                   max_items=1024)("backends", backends)
            for index, backend in enumerate(backends):
                if not backend.get("ip") or not backend.get("port"):
                    raise InputError("backends[%d] needs ip and port" % index)
        if arp_answering is not None:
            arp_answering = params.each(params.fields(mac=params.short_text, hosts=params.each(params.node_name)),
                                        max_items=64)("arp_answering", arp_answering)
    except InputError as exc:
        raise AnsibleFilterError("ingress_bisect: %s" % exc.message)
    if backends:
        return _bisect_backends(_normalize(captures), vip, port, backends, probe, arp_answering)
    return _bisect(_normalize(captures), vip, port, pod_ip, pod_port, probe, pod_interface, lb_mode, arp_answering)


def _int(value):
    """A port given as text by a template (``"80"``) is a port; anything else is left to the check."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _normalize(captures):
    """Accept results keyed by host ({hop: {host: result}}, what a role builds from hostvars) too."""
    def one(value):
        if isinstance(value, dict) and "flows" not in value and value:
            host, result = sorted(value.items())[0]
            return dict(result, host=host) if isinstance(result, dict) else None
        return value or None

    out = {"client": one(captures.get("client")), "worker": one(captures.get("worker"))}
    lbs = captures.get("lb") or []
    if isinstance(lbs, dict):
        lbs = [dict(result, host=host) for host, result in sorted(lbs.items()) if isinstance(result, dict)]
    out["lb"] = lbs
    workers = captures.get("workers") or {}
    out["workers"] = dict((host, dict(result, host=host)) for host, result in workers.items()
                          if isinstance(result, dict)) if isinstance(workers, dict) else {}
    return out


class FilterModule(object):
    def filters(self):
        return guard_all({"ingress_bisect": ingress_bisect})
