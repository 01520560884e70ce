# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the Cilium agent check (cilium_agent_status, node_triage cilium_agent)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.cilium_agent_status); paired one-to-one with cilium_agent_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  agent_socket:
    description:
      - The Cilium agent's API socket; C(GET /v1/healthz) is read from it.
    type: path
    default: /var/run/cilium/cilium.sock
  health_socket:
    description:
      - cilium-health's API socket; C(GET /v1beta/status) (the node and health-endpoint probes) is read from it.
    type: path
    default: /var/run/cilium/health.sock
  monitor_socket:
    description:
      - The agent's monitor socket (its v1.2 listener protocol, what C(cilium-dbg monitor) reads). During the
        O(interval) window the datapath's drop notifications are read from it, each dropped packet's 5-tuple,
        reason and source endpoint (C(cilium.dropped_flows), the top O(top) flows); the kernel's lost
        notifications are counted. C('') reads no flows.
    type: str
    default: /var/run/cilium/monitor1_2.sock
  metrics_url:
    description:
      - The agent's Prometheus metrics, C(http://ADDRESS:PORT/PATH) with ADDRESS an IP address (or C(localhost)) of
        the node, read twice O(interval) seconds apart for the drop reasons and the API rate limiter.
      - ADDRESS must be loopback or an address the node itself holds (read with netlink); any other is refused.
      - The agent serves them when its C(prometheus-serve-addr) is set (Helm C(prometheus.enabled=true), port 9962).
        When they cannot be read, an info C(cilium.metrics_unavailable) finding says the drops and the rate limiter
        were not checked.
      - An empty string reads no metrics.
    type: str
    default: http://127.0.0.1:9962/metrics
  interval:
    description:
      - Seconds between the two reads of the metrics, 0 to 60; 0 reads them once (the totals since the agent
        started, no growth judged). The agent's and cilium-health's status are read in the window.
    type: float
    default: 5.0
  timeout:
    description: Seconds to wait for each answer (connect, headers and body), more than 0 and at most 60.
    type: float
    default: 5.0
  top:
    description: How many drop reasons, and unreachable nodes of each kind, to report (1 to 50).
    type: int
    default: 10
  warning_pps:
    description: Drops per second of one reason in the window from which C(cilium.drops) is a warning (below, info).
    type: float
    default: 1.0
  critical_pps:
    description: Drops per second of one reason in the window from which C(cilium.drops) is critical.
    type: float
    default: 100.0
  when_not_cilium:
    description:
      - What to return when the agent's socket does not exist and the node shows nothing else of Cilium (no pinned
        C(cilium_*) map under C(/sys/fs/bpf/tc/globals), no C(cilium-cni) configuration under O(cni_conf_dir)).
      - V(skip) returns RV(applicable) false with RV(skip_reason) and no finding (not a Cilium node).
      - V(critical) gives a critical C(cilium.agent_unhealthy) finding (the node is known to run Cilium).
      - An absent socket on a node that shows Cilium is always a critical C(cilium.agent_unhealthy).
    type: str
    choices: [skip, critical]
    default: skip
  cni_conf_dir:
    description: Where to look for a C(cilium-cni) configuration when the agent's socket is absent.
    type: path
    default: /etc/cni/net.d
"""


# The same options as node_triage's cilium_agent option: built from the DOCUMENTATION above, not written twice
# (set here, after the class, as ansible-test's yamllint reads only the string literals of the class body).
ModuleDocFragment.NODE_TRIAGE = nested("cilium_agent", ModuleDocFragment.DOCUMENTATION)
