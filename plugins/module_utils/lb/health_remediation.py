# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks, the remediation: the switch of a Service to ``externalTrafficPolicy: Cluster``
and its post-check.

Actions: ``set_cluster_policy`` (re-reads the Service, merge-patches with the resourceVersion it read),
``remediate`` (the named Services in order, up to a cap, stopping at the first failure and saying what was
patched, what failed and what was not attempted) and ``verify_switch`` (the post-check: re-reads the Service and
probes every node until all pass or a total deadline passes).  Their findings: ``owner_finding`` and
``verify_findings``; ``put_back_command``, the command that undoes a switch.
"""

from __future__ import annotations

import json
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_checks import TRADE_OFF, is_local_lb, owner
from ansible_collections.k8snet.triage.plugins.module_utils.lb.health_probes import probe, traffic_port, traffic_probe


def put_back_command(namespace, name, service):
    """The command that puts a Service switched to Cluster back to Local with the healthCheckNodePort it had (the
    API server would otherwise allocate a new one, which the load balancer's health check does not know)."""
    port = (service.get("spec") or {}).get("healthCheckNodePort")
    patch = {"spec": {"externalTrafficPolicy": "Local"}}
    if port:
        patch["spec"]["healthCheckNodePort"] = port
    return "kubectl -n %s patch svc %s -p '%s'" % (namespace, name, json.dumps(patch, separators=(",", ":")))


def set_cluster_policy(kube, namespace, name, check_mode, reason=None):
    """Re-read the Service, then merge-patch externalTrafficPolicy to Cluster with the resourceVersion just
    read (a concurrent change makes the API server answer 409, raised as ChangeError, never retried).

    Returns (changed, diff, why not changed)."""
    current = kube.get("services", name, namespace)
    if current is None:
        return False, None, "the Service no longer exists"
    policy = (current.get("spec") or {}).get("externalTrafficPolicy")
    if policy != "Local":
        return False, None, "externalTrafficPolicy is already %s" % policy
    version = meta(current, "resourceVersion")
    who = owner(current)
    after = "externalTrafficPolicy: Cluster\n# healthCheckNodePort: released by the API server\n"
    after += "# why: %s\n" % (reason or "the load balancer drops nodes that can serve")
    after += "# trade-off: %s\n" % TRADE_OFF
    if who:
        after += "# warning: %s\n" % who["note"]
    diff_owner = who
    diff = {"before_header": "%s/%s" % (namespace, name), "after_header": "%s/%s" % (namespace, name),
            "before": "externalTrafficPolicy: Local\nhealthCheckNodePort: %s\nresourceVersion: %s\n"
                      % (current["spec"].get("healthCheckNodePort"), version),
            "after": after, "owner": diff_owner, "put_back": put_back_command(namespace, name, current)}
    if not check_mode:
        kube.merge_patch("services", name, namespace, {"spec": {"externalTrafficPolicy": "Cluster"}},
                         resource_version=version)
    return True, diff, None


def remediate(kube, targets, max_patch, check_mode):
    """Switch the named Services to Cluster, in order, at most ``max_patch`` of them.

    ``targets``: [(namespace/name, reason or None, why not)] (``patch_reason`` of each).  The first
    failure stops the run: the rest is listed as not attempted.  Returns {patched: [ref],
    failures: [{service, reason, status}], not_attempted: [{service, reason}], diffs: [diff]}."""
    out = {"patched": [], "failures": [], "not_attempted": [], "diffs": [], "owners": {}, "put_back": {}}
    stopped = None
    for ref, reason, why_not in targets:
        if stopped:
            out["not_attempted"].append({"service": ref, "reason": stopped})
            continue
        if not reason:
            out["not_attempted"].append({"service": ref, "reason": why_not})
            continue
        if len(out["patched"]) >= max_patch:
            out["not_attempted"].append({"service": ref, "reason": "max_patch (%d) reached: raise max_patch or run "
                                                                   "again to patch it" % max_patch})
            continue
        namespace, name = ref.split("/", 1)
        try:
            changed, diff, why = set_cluster_policy(kube, namespace, name, check_mode, reason)
        except TriageError as exc:
            out["failures"].append({"service": ref, "reason": exc.message, "status": exc.details.get("status")})
            stopped = "not attempted: the run stopped at the failure on %s" % ref
            continue
        if changed:
            out["patched"].append(ref)
            out["diffs"].append(diff)
            out["put_back"][ref] = diff.pop("put_back")
            owned_by = diff.pop("owner", None)
            if owned_by:
                out["owners"][ref] = owned_by
        else:
            out["not_attempted"].append({"service": ref, "reason": why})
    return out


def _node_passes(service, result):
    """Whether one post-check probe passes for the Service's current policy."""
    if is_local_lb(service):
        return bool(result and not result["error"] and result["status"] == 200)
    return bool(result and result["state"] == "answered")


def verify_switch(kube, namespace, name, nodes, addresses, timeout, deadline, interval=1.0, clock=time.monotonic,
                  sleep=time.sleep):
    """The post-check of a switch: re-read the Service, then probe every pool node until all pass or the total
    ``deadline`` (seconds) passes (kube-proxy may take a moment to reprogram).

    With policy Cluster the healthCheckNodePort is released, and a load balancer checks the traffic nodePort
    (TCP) or kube-proxy's own health port instead (e.g. AKS's ServiceNodePort and Shared probe modes:
    https://learn.microsoft.com/en-us/dotnet/api/azure.resourcemanager.containerservice.models.clusterserviceloadbalancerhealthprobemode):
    every node must answer on the traffic nodePort.  Returns {service, policy, health_check_node_port,
    traffic_node_port, passed, attempts, seconds, deadline, nodes: {node: {passes, state, detail}}, why}."""
    ref = "%s/%s" % (namespace, name)
    start = clock()
    out = {"service": ref, "policy": None, "health_check_node_port": None, "traffic_node_port": None,
           "passed": False, "attempts": 0, "seconds": 0.0, "deadline": deadline, "nodes": {}, "why": None}
    while True:
        out["attempts"] += 1
        current = kube.get("services", name, namespace)
        if current is None:
            out["why"] = "the Service no longer exists"
            break
        spec = current.get("spec") or {}
        out["policy"] = spec.get("externalTrafficPolicy")
        out["health_check_node_port"] = spec.get("healthCheckNodePort")
        out["traffic_node_port"] = traffic_port(current)
        rows = {}
        for node in nodes:
            node_name = meta(node, "name")
            address = addresses.get(node_name)
            if not address:
                rows[node_name] = {"passes": False, "state": "no address", "detail": "the Node has no such address"}
                continue
            left = max(0.1, min(timeout, deadline - (clock() - start)))
            if out["policy"] == "Local" and out["health_check_node_port"]:
                result = probe(address, out["health_check_node_port"], left)
                rows[node_name] = {"passes": _node_passes(current, result), "state": "HTTP %s" % result["status"],
                                   "detail": result["error"] or "localEndpoints %s" % result["local_endpoints"]}
            elif out["traffic_node_port"]:
                result = traffic_probe(address, out["traffic_node_port"], left)
                rows[node_name] = {"passes": _node_passes(current, result), "state": result["state"],
                                   "detail": result["detail"]}
            else:
                rows[node_name] = {"passes": False, "state": "no port", "detail": "the Service has no TCP nodePort"}
        out["nodes"] = rows
        if out["policy"] != "Cluster":
            out["why"] = "externalTrafficPolicy is %s, not Cluster: the switch did not hold" % out["policy"]
        elif rows and all(r["passes"] for r in rows.values()):
            out["passed"], out["why"] = True, None
            break
        else:
            out["why"] = "%s do not answer on the traffic nodePort %s yet" % (
                ", ".join(sample(sorted(n for n, r in rows.items() if not r["passes"]))) or "no pool node",
                out["traffic_node_port"])
        if clock() - start + interval > deadline:
            break
        sleep(interval)
    out["seconds"] = round(clock() - start, 2)
    return out


def owner_finding(ref, who, check_mode):
    """``lb.owner_may_revert``: the Service (would be) patched directly although a controller owns it."""
    return finding(
        "lb.owner_may_revert", "warning", "L4", ref, "%s %s directly although %s %s/%s owns it: %s" % (
            ref, "would be patched" if check_mode else "was patched", who["kind"], who["namespace"], who["name"],
            who["note"]),
        {"owner": who, "check_mode": bool(check_mode)},
        "re-run k8snet.triage.lb_health after every update of the owner (an OpenShift update for the router) and "
        "apply the switch again when it was put back")


def verify_findings(result, who=None, put_back=None):
    """The post-check's finding ``lb.policy_switched``: ok when every node passes, critical when not within the
    deadline; then the switch stays (nothing is rolled back) and the finding says so, with ``put_back``, the
    command that puts the Service back (``put_back_command``)."""
    ref = result["service"]
    namespace, name = ref.split("/", 1)
    put_back = put_back or put_back_command(namespace, name, {})
    evidence = dict(result, owner=who, put_back=put_back)
    if result["passed"]:
        found = [finding("lb.policy_switched", "ok", "L4", ref,
                         "%s now has policy Cluster and all %d pool nodes answer on the traffic nodePort %s (after %d "
                         "attempt(s), %gs): the load balancer's check passes everywhere; %s" % (
                             ref, len(result["nodes"]), result["traffic_node_port"], result["attempts"],
                             result["seconds"], TRADE_OFF), evidence)]
    else:
        found = [finding("lb.policy_switched", "critical", "L4", ref,
                         "%s was switched to Cluster but the post-check failed within %gs (%d attempt(s)): %s; the "
                         "change stayed (nothing was rolled back): %s is still patched" % (
                             ref, result["deadline"], result["attempts"], result["why"], ref), evidence,
                         "kube-proxy (or the dataplane) has not reprogrammed the nodes, something put the policy "
                         "back, or the nodes' ports cannot be reached from where the post-check ran: kubectl -n %s "
                         "get svc %s -o jsonpath='{.spec.externalTrafficPolicy}', then iptables-save -t nat | grep %s "
                         "on the failing nodes. To put the Service back as it was: %s" % (
                             namespace, name, ref, put_back))]
    return found
