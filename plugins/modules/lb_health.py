#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lb_health
short_description: Load-balancer health checks of Services with externalTrafficPolicy Local
version_added: 0.1.0
description:
  - For Services of type C(LoadBalancer) with C(externalTrafficPolicy=Local), finds which nodes hold a ready local
    endpoint (from EndpointSlices) and which do not, and probes C(http://<node>:<healthCheckNodePort>/) on every
    node the way a load balancer does, parsing kube-proxy's JSON (C(localEndpoints), 200 or 503).
  - Findings C(lb.nodes_without_endpoints) (the nodes, the replica count, and the trade-off of C(Cluster)) and
    C(lb.health_probe_mismatch) (the probe disagrees with the API, or gets no answer).
  - The probes of a run go to at most O(max_probe_nodes) nodes with a local endpoint and as many without per
    Service, O(probe_workers) at a time within O(probe_deadline); what was not probed is said
    (C(lb.probes_limited)), never passed as probed.
  - With O(probe_traffic=true) it also connects to the traffic nodePort (the Service's first TCP port) of every
    node and sends one HTTP request. With policy C(Local) a node without a local endpoint does not forward (the
    connect is dropped, or accepted and never answered), which is expected and shown in the pool view of
    C(lb.nodes_without_endpoints). A node that should forward and does not answer is C(lb.nodeport_silent).
  - C(lb.nodes_without_endpoints) says whether the condition is expected (policy C(Local), some nodes serve), gives
    the load balancer's view of every pool node (passes or fails its check, and why), the trade-off of C(Cluster),
    and the owner of the Service (the OpenShift ingress operator for C(router-default)), which may put a patch back.
  - Only with O(remediate=cluster), and not in check mode, does it merge-patch C(externalTrafficPolicy) to
    C(Cluster), and only on the Services named in O(remediate_services), at most O(max_patch) of them, and only
    where switching fixes something that is not expected. Nodes without a local endpoint failing the health
    check is what C(Local) does by design and is no reason to patch. Reasons are ready endpoints that run only
    on nodes outside the load balancer pool, or nodes with a ready endpoint that fail the probe.
  - O(force_policy_switch=true) is the operator's explicit request to switch the named Services even when the
    module judges the condition expected; the diff and RV(patched) then carry the reason and the trade-off.
    A Service that is not a LoadBalancer with policy C(Local) is still not patched (nothing to switch).
  - No switch, forced or not, while no node answered the health-check probe at all (every probe refused or timed
    out, also on nodes without an endpoint, where kube-proxy answers 503). That points at the probe path (a host
    or execution environment that cannot reach the nodes' ports), not at the Service. RV(not_attempted) says so.
    To switch without probe evidence, set O(probe=false) with O(force_policy_switch=true).
  - When a controller owns a (would-be) patched Service (label
    C(ingresscontroller.operator.openshift.io/owning-ingresscontroller), or C(ownerReferences)), the diff and the
    finding C(lb.owner_may_revert) warn that it may put the policy back. The OpenShift IngressController has no
    externalTrafficPolicy setting, so the Service itself is patched.
  - After a real switch (O(verify=true)) the post-check re-reads each patched Service and probes every pool node
    on the traffic nodePort until all answer or O(verify_timeout) seconds have passed in total (kube-proxy takes
    a moment to reprogram the nodes); RV(verification) and the finding C(lb.policy_switched) (ok or critical)
    report the outcome. A failed post-check rolls nothing back. The switch stays, the module still reports
    C(changed), and the finding and RV(verification) give the command that puts the Service back to C(Local) with
    the C(healthCheckNodePort) it had.
  - Each patch re-reads the Service right before and carries the C(resourceVersion) it read. A Service
    changed in between is refused by the API server (409 Conflict) and reported in RV(failures), not retried.
    The first failure stops the remediation. The result lists what was patched, what failed and why,
    and what was not attempted and why. C(--diff) shows each change.
  - The probes go from the host the module runs on (the controller, or a node with C(delegate_to)).
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.state_change
  - k8snet.triage.kube_auth
attributes:
  check_mode:
    details: With O(remediate=cluster), reports what would be patched (after the same re-read) and patches nothing.
  diff_mode:
    details: The Service's externalTrafficPolicy before and after the patch.
  platform:
    details: Runs on the controller (or a node with C(delegate_to)); talks to the Kubernetes API and probes the nodes.
options:
  services:
    description:
      - Services to check, as C(namespace/name). Empty means every LoadBalancer Service with policy Local.
      - At most 1024, each part 1 to 63 lowercase letters, digits or V(-).
    type: list
    elements: str
    default: []
  namespaces:
    description:
      - Namespaces to look in when O(services) is empty. Empty means all namespaces.
      - At most 1024 Kubernetes names.
    type: list
    elements: str
    default: []
  probe:
    description: Probe the health check node port of every node.
    type: bool
    default: true
  probe_timeout:
    description: Seconds to wait for one health check answer, a finite number more than 0 and at most 60.
    type: float
    default: 2.0
  max_probe_nodes:
    description:
      - Per Service, probe at most this many nodes with a ready local endpoint (where kube-proxy answers 200) and as
        many without (503), spread evenly over the sorted node names, the same in every run; V(0) probes every
        node. At 5,000 nodes and 500 Services every node is 2.5 million probes.
      - The nodes left out are judged from the API's endpoints alone, and said in C(lb.probes_limited) (info).
    type: int
    default: 16
    version_added: 0.3.0
  probe_workers:
    description: How many probes run at once (1 to 256).
    type: int
    default: 32
    version_added: 0.3.0
  probe_deadline:
    description:
      - Seconds for all the probes of the run together (1 to 3600). Those not made by then are not probed, and
        C(lb.probes_limited) (warning) names the first of them; the post-check of a switch has its own
        O(verify_timeout).
    type: float
    default: 120.0
    version_added: 0.3.0
  address_type:
    description: Which Node address to probe.
    type: str
    default: InternalIP
    choices: [InternalIP, ExternalIP]
  remediate:
    description:
      - C(none) only reports. C(cluster) switches C(externalTrafficPolicy) to C(Cluster) on the Services of
        O(remediate_services) that need it (every node then passes the health check; the client source IP is
        lost and traffic may take an extra hop).
    type: str
    default: none
    choices: [none, cluster]
  remediate_services:
    description:
      - The Services, as C(namespace/name), that O(remediate=cluster) may patch, in this order. Required when
        O(remediate) is not C(none). They are checked even when O(services) is empty. When O(services) is
        given, they must be among them.
    type: list
    elements: str
    default: []
  force_policy_switch:
    description:
      - With O(remediate=cluster), switch the Services of O(remediate_services) to C(Cluster) even when the module
        judges that nothing unexpected is wrong (nodes without a local endpoint failing the health check, which is
        what C(Local) does by design). The operator's explicit choice, accepting the trade-off (the client source
        IP is lost, an extra hop). Use check mode and C(--diff) first.
    type: bool
    default: false
  probe_traffic:
    description:
      - Also probe the traffic nodePort (the Service's first TCP port) of every node (a TCP connect and one HTTP
        request). Off by default because a node that accepts and never answers costs O(probe_timeout) seconds.
    type: bool
    default: false
  verify:
    description: After a real switch, run the post-check (re-read the Service, probe every pool node).
    type: bool
    default: true
  verify_timeout:
    description:
      - Total seconds the post-check waits for every pool node to pass, probing about once a second; a finite
        number more than 0 and at most 600.
    type: float
    default: 30.0
  max_patch:
    description:
      - At most this many Services are patched (or, in check mode, would be) in one run. The others are listed
        in RV(not_attempted).
    type: int
    default: 1
"""

EXAMPLES = r"""
- name: Which nodes fail the LB health check of the OpenShift router
  k8snet.triage.lb_health:
    services: [openshift-ingress/router-default]
  register: lb

- name: Switch the router to externalTrafficPolicy Cluster if its serving nodes fail (check mode and --diff first)
  k8snet.triage.lb_health:
    remediate: cluster
    remediate_services: [openshift-ingress/router-default]
    max_patch: 1

- name: The operator wants every pool node healthy - switch although the condition is expected, then verify
  k8snet.triage.lb_health:
    services: [openshift-ingress/router-default]
    probe_traffic: true
    remediate: cluster
    remediate_services: [openshift-ingress/router-default]
    force_policy_switch: true
    verify_timeout: 60
  register: switch
"""

RETURN = r"""
services:
  description:
    - Per Service, its policy, health check node port, ready local endpoints per node and the probes.
    - For a Local LoadBalancer Service, C(nodes_not_probed) counts the pool nodes O(max_probe_nodes) left out.
  returned: always
  type: list
  elements: dict
  sample:
    - service: openshift-ingress/router-default
      external_traffic_policy: Local
      health_check_node_port: 31910
      local_endpoints: {node1: 1, node2: 1}
      probes: {node1: {status: 200, local_endpoints: 1, error: null}, node3: {status: 503, local_endpoints: 0, error: null}}
      nodes_not_probed: 0
patched:
  description: Services whose policy was (or in check mode would be) switched to Cluster, also when a later one failed.
  returned: always
  type: list
  elements: str
  sample: [a/web]
failures:
  description: Services whose patch failed, with the reason and the HTTP status (403, 409 ...). The first failure
    stops the remediation (the module then fails, still returning RV(patched)).
  returned: always
  type: list
  elements: dict
  sample: [{service: b/web, status: 403, reason: "RBAC forbids us to patch services b/web ..."}]
not_attempted:
  description: Services of O(remediate_services) that were not patched, each with the reason (expected condition,
    nothing to patch, O(max_patch) reached, the run stopped at a failure).
  returned: always
  type: list
  elements: dict
  sample: [{service: c/web, reason: "max_patch (1) reached: raise max_patch or run again to patch it"}]
traffic:
  description: Per Service (namespace/name), the traffic nodePort probe of every node (with O(probe_traffic=true)).
  returned: always
  type: dict
  sample: {openshift-ingress/router-default: {node3: {address: "10.0.0.13:30080", state: silent,
           detail: "connected (ESTABLISHED, keepalive) and no byte back within 2s"}}}
owners:
  description: Per (would-be) patched Service, the controller that owns it and may put the policy back.
  returned: always
  type: dict
verification:
  description: The post-check of every Service patched in this run (not in check mode), with its outcome.
  returned: always
  type: list
  elements: dict
  sample:
    - service: openshift-ingress/router-default
      policy: Cluster
      traffic_node_port: 30080
      passed: true
      attempts: 3
      seconds: 2.1
      nodes: {node3: {passes: true, state: answered, detail: "HTTP/1.0 200 OK"}}
      put_back: "kubectl -n openshift-ingress patch svc router-default -p '{\"spec\":{\"externalTrafficPolicy\":\"Local\",\"healthCheckNodePort\":31910}}'"
findings:
  description: Findings (see the collection's findings contract).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.lb import health as lb_health
from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_options as lb_health_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import AUTH_ARG_SPEC
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import Kube
from ansible_collections.k8snet.triage.plugins.module_utils.kube.module import require_kubernetes


def main():
    # not kube_module.api_change_main: lb_health returns its diff with or without --diff
    argument_spec = dict(AUTH_ARG_SPEC, **lb_health_options.CHECK_SPEC)
    module = rules.new_module(AnsibleModule, lb_health_options.RULES, argument_spec=argument_spec,
                              supports_check_mode=True)
    require_kubernetes(module)
    try:
        result = lb_health.api_run(module.params, Kube, check_mode=module.check_mode)
    except TriageError as exc:
        fail_from(module, exc)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
