#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""module: cilium_agent_status
short_description: the Cilium agent's own view of a node, from its API sockets and metrics, without kubectl
version_added: 0.2.0
description:
  - Reads, on the node, the Cilium agent's REST API on its unix socket (C(GET /v1/healthz), the agent's
    C(StatusResponse)) and cilium-health's (C(GET /v1beta/status), the C(HealthStatusResponse) of its
    node and endpoint probes), following Cilium's published OpenAPI specs, as C(cilium-dbg status --all-health)
    shows them; and the agent's Prometheus metrics, twice O(interval) seconds apart.
  - C(cilium.agent_unhealthy); a component (C(cilium), C(kvstore), C(kubernetes), C(container-runtime),
    C(cni-file), C(cilium-health)...) in state Failure (critical) or Warning (warning); controllers failing now
    (their last error); status probes that did not finish, critical when they are the kube-proxy replacement's
    or IPAM's; IPAM with no range or reporting an error; kube-proxy replacement attached to no device; an
    agent that does not answer, or whose socket is absent on a node that shows Cilium (critical).
  - C(cilium.node_unreachable) and C(cilium.endpoint_unreachable); per node whose address (host) or health
    endpoint fails cilium-health's ICMP or HTTP probe; critical when the primary address fails every probe.
  - C(cilium.api_rate_limited); requests the agent's API rate limiter refused (HTTP 429, C(outcome=fail) of
    C(cilium_api_limiter_processed_requests_total)) grew in the window; critical for C(endpoint-create), whose
    refusal is C(putEndpointIdTooManyRequests) and blocks pod creation; info when they only happened since the
    agent started.
  - C(cilium.drops); the top drop reasons of C(cilium_drop_count_total) that grew in the window, by packets per
    second against O(warning_pps) and O(critical_pps).
  - C(cilium.agent), C(cilium.connectivity), C(cilium.api_limiter) and C(cilium.drops) are ok findings saying what
    was read and found healthy; C(cilium.health_unavailable) and C(cilium.metrics_unavailable) say what could not
    be checked. Nothing that was not read is reported ok.
  - A node without the agent's socket that shows nothing else of Cilium is not a Cilium node; RV(applicable)
    false, no finding (see O(when_not_cilium)).
  - Read-only; standard library only; no command runs.
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
  - k8snet.triage.cilium_agent
options:
  node_name:
    description: The node named in the findings; defaults to the host name.
    type: str
notes:
  - The sockets belong to root; run with C(become=true).
  - The agent's metrics are served only when Prometheus is enabled in its configuration.
seealso:
  - module: k8snet.triage.bpf_map_usage
  - module: k8snet.triage.node_logs
author:
  - k8snet.triage contributors (@k8snet)
"""

EXAMPLES = r"""
- name: What does the Cilium agent say about this node?
  k8snet.triage.cilium_agent_status:
    interval: 5
  become: true

- name: Agent and health status only, no metrics
  k8snet.triage.cilium_agent_status:
    metrics_url: ""
  become: true
"""

RETURN = r"""
applicable:
  description: False when the node is not a Cilium node (no agent socket, nothing else of Cilium); nothing was checked.
  returned: always
  type: bool
skip_reason:
  description: Why the check does not apply (empty when it does).
  returned: always
  type: str
agent:
  description: The agent's socket, how it answered, and the state of its components (null fields when not read).
  returned: always
  type: dict
  sample: {socket: /var/run/cilium/cilium.sock, status: ok, components: {cilium: Ok, kubernetes: Ok},
           controllers: 42, kube_proxy_replacement: "True", ipam: [10.244.1.0/24]}
health:
  description: cilium-health's socket, how it answered, the number of nodes it probes and its timestamp (null when
    the agent's socket is absent).
  returned: always
  type: dict
  sample: {socket: /var/run/cilium/health.sock, status: ok, nodes: 3, timestamp: "2026-12-01T03:00:00Z"}
metrics:
  description: The metrics URL, how it answered (C(ok), C(refused), C(timeout), C(http), C(invalid), C(not read)),
    and the window (null when the agent's socket is absent).
  returned: always
  type: dict
  sample: {url: "http://127.0.0.1:9962/metrics", status: ok, samples: 40, seconds: 5.0, drop_reasons: 3}
findings:
  description: The findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent as cilium_agent
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_options as cilium_agent_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.scenario import module_main


def main():
    module_main(AnsibleModule, cilium_agent.node_check, cilium_agent_options.RULES,
                dict(cilium_agent_options.CHECK_SPEC, node_name=dict(type="str")))


if __name__ == "__main__":
    main()
