# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the pinned bpf map check (bpf_map_usage, node_triage cilium_maps)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.bpf_map_usage); paired one-to-one with cilium_lb_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  bpffs:
    description:
      - Mount point of the bpf filesystem to read. It must be a bpf filesystem.
      - Cilium's fallback mount is C(/run/cilium/bpffs).
      - An absolute path without V(..) segments.
    type: path
    default: /sys/fs/bpf
  maps:
    description:
      - Pinned maps to read, as paths relative to O(bpffs) or base names; shell globs are allowed
        (V(tc/globals/cilium_lb4_*), V(cilium_ct*)).
      - A literal name that matches nothing fails the module; a glob that matches nothing is reported.
      - Default is every pinned map under O(bpffs), recursively.
      - At most 1024 items, each relative to O(bpffs) (no leading V(/), no V(..) segments).
    type: list
    elements: str
    default: []
  warn_ratio:
    description:
      - Fill ratio (entries / max_entries) at or above which a map gets a warning.
      - A finite number, more than 0 and at most 1, and at most O(critical_ratio).
    type: float
    default: 0.8
  critical_ratio:
    description:
      - Fill ratio at or above which the finding is critical.
      - A finite number, more than 0 and at most 1.
    type: float
    default: 0.95
  live_frontends:
    description:
      - Frontends Kubernetes knows, as C(ip:port/proto) (proto V(TCP), V(UDP), V(SCTP) or V(ANY); V(TCP) when
        absent), e.g. every ClusterIP, external IP and LoadBalancer IP with its port, each NodePort and HostPort
        on the node addresses and on C(0.0.0.0). Enables the C(bpf.stale_frontends) check.
        M(k8snet.triage.kube_network_info) returns every such form as C(service_frontends).
      - "A frontend C(A:P/X) in the maps counts as live when (1) the list has C(A:P/X), port 0 and protocol
        V(ANY) matching any port or protocol; or (2) C(A) is C(0.0.0.0) or C(::) (Cilium's surrogate
        NodePort/HostPort frontend) and the list has any address with port C(P) and a matching protocol (a
        NodePort given for one node address covers the surrogate); or (3) the list has C(0.0.0.0:P/X) (or
        C([::]:P/X)): C(P) is then a NodePort or HostPort, live on every address, including node addresses the
        list does not name. The rule errs toward keeping: a stale frontend that shares a port with a live
        NodePort is kept."
      - Gather them once on the controller (the C(cilium_maps) role takes them as a variable).
      - At most 65536 items.
    type: list
    elements: str
"""

    # node_triage's own option of the scenario (paired with its entry in node_triage.ARGUMENT_SPEC).
    _TRIAGE_ONLY = r"""
options:
  when_not_cilium:
    description:
      - V(skip) (the triage's C(triage_cni=auto)) records the scenario as skipped, "not a Cilium node",
        when the node shows no pinned C(cilium_*) maps, no Cilium agent socket and no C(cilium-cni)
        configuration; V(check) reads the maps anyway (C(triage_cni=cilium)).
    type: str
    choices: [check, skip]
    default: skip
"""


# The same options as node_triage's cilium_maps option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("cilium_maps", ModuleDocFragment.DOCUMENTATION, extra=ModuleDocFragment._TRIAGE_ONLY)
