# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Controller side of role ingress_path for a NodePort (or a ManualLB VIP outside the cluster)."""

from __future__ import annotations

DOCUMENTATION = """
name: nodeport_bisect
short_description: find, for each node, where probes to its nodeIP:nodePort vanished
version_added: 0.1.0
description:
  - The client probed C(nodeIP:nodePort) of every entry node while C(k8snet.triage.packet_capture) ran on the
    client, the entry nodes and the backends' nodes. Each entry node is walked on its own, as
    C(k8snet.triage.ingress_bisect) with O(k8snet.triage.ingress_bisect#filter:backends) walks a VIP (received, translated
    to a backend, on the backend's node, the pod's veth, the pod's reply), with only its own probes and
    without the packets another entry node translated (told apart by the source address of its SNAT).
  - Returns C(entries) (per entry node the hop where its probes vanished and the backend), C(hops) and
    C(findings), each naming its entry node in C(evidence.entry_node).
options:
  _input:
    description: >-
      The captures, C({client: {host: result}, lb: {host: result, ...}, workers: {host: result, ...}}): the client,
      the entry nodes and the backends' nodes.
    type: dict
    required: true
  entries:
    description: The entry nodes, C([{host, ip}]) (inventory name and node IP), at most 1024.
    type: list
    elements: dict
    required: true
  port:
    description: The nodePort.
    type: int
    required: true
  backends:
    description: Every ready backend, C([{ip, port, pod, node, host}]) (M(k8snet.triage.service_path_info)'s C(endpoints)).
    type: list
    elements: dict
    required: true
  probe:
    description: The client's C(k8snet.triage.reachability) result, one target per entry node's C(ip:port).
    type: dict
  policy:
    description:
      - The Service's C(externalTrafficPolicy). With C(Local) an entry node without a backend does not forward the
        nodePort by design; its probes are C(ingress.nodeport_no_local_endpoint) (info, expected), not C(ingress.nat).
    type: str
    choices: [Local, Cluster]
"""

EXAMPLES = """
- name: Where do probes to each node's nodePort vanish?
  ansible.builtin.set_fact:
    bisect: >-
      {{ captures | k8snet.triage.nodeport_bisect([{'host': 'node1', 'ip': '198.18.0.11'}], 30080,
                                                  [{'ip': '10.244.1.5', 'port': 8080, 'pod': 'web-1', 'host': 'node2'}]) }}
"""

RETURN = """
_value:
  description: C(entries), C(hops) and C(findings).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.analysis import nodeport_bisect as _bisect
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all


def _int(value):
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _keyed(value, what):
    if not isinstance(value, dict):
        raise InputError("%s must be a dict {host: packet_capture result}, got %s" % (what, params.kind(value)))
    return dict((host, dict(result, host=host)) for host, result in value.items() if isinstance(result, dict))


def nodeport_bisect(captures, entries, port, backends, probe=None, policy=None):
    try:
        if not isinstance(captures, dict):
            raise InputError("the input must be a dict {client, lb, workers} of capture results, got %s"
                             % params.kind(captures))
        port = params.port("port", _int(port))
        entries = params.each(params.fields(host=params.node_name, ip=params.address()), max_items=1024,
                              non_empty=True, what="give the entry nodes")("entries", entries)
        backends = params.each(params.fields(ip=params.address(), port=lambda o, v: params.port(o, _int(v)),
                                             pod=params.short_text, node=params.node_name, host=params.node_name),
                               max_items=1024)("backends", backends)
        for index, item in enumerate(entries):
            if not item.get("ip"):
                raise InputError("entries[%d] needs ip" % index)
        for index, backend in enumerate(backends):
            if not backend.get("ip") or not backend.get("port"):
                raise InputError("backends[%d] needs ip and port" % index)
        if policy not in (None, "", "Local", "Cluster"):
            raise InputError("policy must be Local or Cluster (the Service's externalTrafficPolicy), got %r" % (policy,))
        if probe is not None and not isinstance(probe, dict):
            raise InputError("probe must be a reachability result (a dict), got %s" % params.kind(probe))
        client = _keyed(captures.get("client") or {}, "client")
        normalized = {"client": sorted(client.values(), key=lambda r: r["host"])[0] if client else None,
                      "lb": list(_keyed(captures.get("lb") or {}, "lb").values()),
                      "workers": _keyed(captures.get("workers") or {}, "workers")}
    except InputError as exc:
        raise AnsibleFilterError("nodeport_bisect: %s" % exc.message)
    return _bisect(normalized, entries, port, backends, probe, policy or None)


class FilterModule(object):
    def filters(self):
        return guard_all({"nodeport_bisect": nodeport_bisect})
