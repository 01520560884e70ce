# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks of Services with ``externalTrafficPolicy: Local``, the checks.

Nodes without a ready local endpoint fail the load balancer's health check by design.  These checks relate the
EndpointSlices (which nodes hold a ready endpoint, ``local_endpoints``) to the probes of every node
(``lb_health_probes``).  Pure: ``local_endpoints``, ``check_service``, ``check_traffic``, ``pool_view``, ``owner``,
``patch_reason`` (whether switching to Cluster would fix something that is not expected) and ``forced_reason``
(the operator asked for the switch explicitly).
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta

TRADE_OFF = ("externalTrafficPolicy: Cluster makes every node pass the health check, but the client "
             "source IP is lost (SNAT to the node) and traffic may take an extra hop to a node with an endpoint")
# The OpenShift ingress operator labels the Services it makes with the IngressController owning them
# (openshift/cluster-ingress-operator pkg/operator/controller/ingress/load_balancer_service.go,
# desiredLoadBalancerService, commit 001aa9373564309644735e5a1e27ff162589a6b7) and owns them through an
# ownerReference to the router Deployment.
OWNER_LABEL = "ingresscontroller.operator.openshift.io/owning-ingresscontroller"
INGRESS_OPERATOR_NAMESPACE = "openshift-ingress-operator"
# Same file and commit: the operator takes externalTrafficPolicy from the platform, not from the
# IngressController (Cluster on IBMCloud and PowerVS platforms, the manifest's Local elsewhere); no field of
# spec.endpointPublishingStrategy.loadBalancer (scope, allowedSourceRanges, providerParameters) sets it.
# Its reconcile (loadBalancerServiceChanged) keeps spec fields it does not manage, but a Service it deletes
# and recreates (auto-delete-load-balancer, a scope change) comes back with the desired policy.
OWNER_NOTE = ("the ingress operator owns %s (IngressController %s/%s): the IngressController has no "
              "externalTrafficPolicy setting (spec.endpointPublishingStrategy.loadBalancer has scope, "
              "allowedSourceRanges and providerParameters, none of them the policy; the operator takes it from the "
              "platform), so the switch is made on the Service itself and may be put back when the operator "
              "recreates the Service or an OpenShift update manages the field: check it after every update "
              "(k8snet.triage.lb_health) and keep the change recorded")


def is_local_lb(service):
    spec = service.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def local_endpoints(slices):
    """{node name: number of ready endpoints} from a Service's EndpointSlices."""
    counts = {}
    for eps in slices:
        for endpoint in eps.get("endpoints") or []:
            ready = (endpoint.get("conditions") or {}).get("ready")
            if ready is False or not endpoint.get("nodeName"):
                continue  # nil means ready (API conventions); an endpoint without nodeName counts nowhere
            counts[endpoint["nodeName"]] = counts.get(endpoint["nodeName"], 0) + 1
    return counts


def owner(service):
    """Who owns the Service and may revert a patch: {kind, namespace, name, owner_references, note} or None."""
    labels = meta(service, "labels") or {}
    refs = ["%s/%s" % (r.get("kind"), r.get("name")) for r in (service.get("metadata") or {}).get("ownerReferences") or []
            if isinstance(r, dict)]
    ref = "%s/%s" % (meta(service, "namespace"), meta(service, "name"))
    if labels.get(OWNER_LABEL):
        return {"kind": "IngressController", "namespace": INGRESS_OPERATOR_NAMESPACE, "name": labels[OWNER_LABEL],
                "owner_references": refs, "label": OWNER_LABEL,
                "note": OWNER_NOTE % (ref, INGRESS_OPERATOR_NAMESPACE, labels[OWNER_LABEL])}
    if refs:
        return {"kind": refs[0].split("/", 1)[0], "namespace": meta(service, "namespace"), "name": refs[0].split("/", 1)[1],
                "owner_references": refs, "label": None,
                "note": "%s is owned by %s: its controller may put the policy back; change it there if it has a setting "
                        "for it" % (ref, ", ".join(refs))}
    return None


def _health_state(result):
    if not result:
        return "not probed", "no probe"
    if result["error"]:
        return "fail", result["error"]
    if result["status"] == 200:
        return "pass", "HTTP 200, localEndpoints %s" % result["local_endpoints"]
    return "fail", "HTTP %s, localEndpoints %s" % (result["status"], result["local_endpoints"])


def pool_view(nodes, endpoints, probes, traffic=None):
    """The load balancer's view of every pool node: {node: {health_check, why, local_endpoints, traffic}}."""
    view = {}
    for node in nodes:
        name = meta(node, "name")
        state, why = _health_state(probes.get(name))
        if state == "fail" and not endpoints.get(name) and not (probes.get(name) or {}).get("error"):
            why += ": no local endpoint, taken out of the pool by design"
        row = {"health_check": state, "why": why, "local_endpoints": endpoints.get(name, 0)}
        if traffic and name in traffic:
            row["traffic"] = traffic[name]["state"]
        view[name] = row
    return view


def _without_summary(ref, names, with_eps, without, replicas, pool, probes):
    """The summary of ``lb.nodes_without_endpoints``: expected when some node has an endpoint, an outage if none."""
    if not with_eps:
        return ("%d of %d nodes have no ready local endpoint of %s (%d replicas): the load balancer marks them "
                "down; no node passes, the Service is unreachable" % (len(without), len(names), ref, replicas))
    summary = ("%d of %d nodes (%s) have no ready local endpoint of %s (%d replicas, on %s) and fail the load "
               "balancer's health check: expected with policy Local: no impact unless the nodes with an "
               "endpoint (%s) fail it too, or a client bypasses the load balancer and connects to a node "
               "without an endpoint on its nodePort (that connection is accepted or dropped and never "
               "answered)" % (len(without), len(names), ", ".join(sample(without)), ref, replicas,
                              ", ".join(sample(with_eps)), ", ".join(sample(with_eps))))
    if probes:
        passing = [n for n in names if n in pool and pool[n]["health_check"] == "pass"]
        failing = [n for n in names if n in pool and pool[n]["health_check"] == "fail"]
        summary += "; pool: %s pass, %s fail" % (", ".join(sample(passing)) or "none",
                                                 ", ".join(sample(failing)) or "none")
    return summary


def _without_remediation(service, ref, who):
    """The remediation of ``lb.nodes_without_endpoints``: the choices, the switch to Cluster, the owner's note."""
    remediation = (
        "nothing to do for the nodes without an endpoint: the load balancer keeps them out of its pool by design "
        "with externalTrafficPolicy Local. For a pool where every node passes: run one replica per pool node "
        "(a DaemonSet or anti-affinity), limit the pool to the nodes with replicas, or switch the Service to "
        "Cluster - %s. The switch: k8snet.triage.lb_health with remediate: cluster, remediate_services: [%s] and "
        "force_policy_switch: true (check mode and --diff first), or by hand: kubectl -n %s patch svc %s -p "
        "'{\"spec\":{\"externalTrafficPolicy\":\"Cluster\"}}'" % (TRADE_OFF, ref, meta(service, "namespace"),
                                                                  meta(service, "name")))
    if who:
        remediation += ". " + who["note"][0].upper() + who["note"][1:]
    return remediation


def _mismatch_findings(ref, port, names, endpoints, probes):
    """``lb.health_probe_mismatch`` per node whose health check failed or disagrees with the API's endpoints."""
    found = []
    for name in names:
        result = probes.get(name)
        if not result:
            continue
        api = endpoints.get(name, 0)
        if result["error"] or result["local_endpoints"] != api:
            found.append(finding(
                "lb.health_probe_mismatch", "critical", "L4", "%s@%s" % (ref, name),
                "health check %s disagrees with the API: %s" % (
                    result["url"], result["error"] or "localEndpoints %s, the API has %d ready endpoint(s) on %s"
                    % (result["local_endpoints"], api, name)),
                {"url": result["url"], "status": result["status"], "probe_local_endpoints": result["local_endpoints"],
                 "api_local_endpoints": api, "error": result["error"]},
                "check kube-proxy (or the Cilium agent) on %s: it serves healthCheckNodePort %s from its own view of "
                "the endpoints" % (name, port)))
    return found


# beyond this many pool nodes, a finding's pool view shows the nodes probed (else the first with and without an
# endpoint), not every node: 5,000 rows for each of 500 Services is no evidence anyone reads
POOL_VIEW_NODES = 40


def _pool_shown(nodes, endpoints, probes):
    """The nodes a finding's pool view shows: all of them up to POOL_VIEW_NODES, else those probed, else the first
    with a local endpoint and the first without."""
    if len(nodes) <= POOL_VIEW_NODES:
        return nodes
    probed = [n for n in nodes if meta(n, "name") in probes]
    if probed:
        return probed
    half = POOL_VIEW_NODES // 2
    return ([n for n in nodes if endpoints.get(meta(n, "name"))][:half]
            + [n for n in nodes if not endpoints.get(meta(n, "name"))][:half])


def probes_limited(local, planned, late, pool, p):
    """``lb.probes_limited``: the (Service, node) probes not made, said plainly (None when every node of every
    Service was probed): the nodes ``max_probe_nodes`` left out, and the probes ``probe_deadline`` cut off."""
    if not p["probe"] and not p["probe_traffic"]:
        return None
    skipped = sum(item[4] for item in local)
    if not skipped and not late:
        return None
    done = planned - len(late)
    parts = []
    if skipped:
        parts.append("%d Service x node pairs were not probed: at most %d nodes with a local endpoint and %d without "
                     "per Service (max_probe_nodes) of %d pool nodes" % (
                         skipped, p["max_probe_nodes"], p["max_probe_nodes"], pool))
    if late:
        parts.append("%d of the %d probes planned were not made before probe_deadline (%gs), the first: %s" % (
            len(late), planned, p["probe_deadline"], ", ".join("%s@%s" % (k[0], k[2]) for k in late[:5])))
    return finding(
        "lb.probes_limited", "warning" if late else "info", "L4", "%d Services" % len(local),
        "the health checks of %d Local LoadBalancer Services were probed on part of the nodes (%d probes made): %s; "
        "a node not probed is judged from the API's endpoints alone" % (len(local), done, "; ".join(parts)),
        {"services": len(local), "pool_nodes": pool, "planned": planned, "made": done, "not_chosen": skipped,
         "late": len(late), "late_first": ["%s@%s (%s)" % (k[0], k[2], k[1]) for k in late[:20]],
         "max_probe_nodes": p["max_probe_nodes"], "probe_deadline": p["probe_deadline"],
         "probe_workers": p["probe_workers"]},
        "raise max_probe_nodes (0: every node) or probe_deadline, or name the Services to check (services: "
        "[namespace/name])")


def by_node(mismatches):
    """``lb.health_probe_mismatch`` findings (one per Service and node) with those of one node said once: a node
    whose kube-proxy does not answer fails the health check of every Service, one problem of that node (its count of
    Services, the first Services and errors)."""
    nodes, out = {}, []
    for item in mismatches:
        nodes.setdefault(item["subject"].rsplit("@", 1)[-1], []).append(item)
    for node, items in nodes.items():
        if len(items) == 1:
            out.append(items[0])
            continue
        refs = [item["subject"].rsplit("@", 1)[0] for item in items]
        errors = sorted(set(item["evidence"]["error"] or "disagrees" for item in items))
        out.append(finding(
            "lb.health_probe_mismatch", "critical", "L4", node,
            "the health checks of %d Services on %s disagree with the API (%s): %s" % (
                len(items), node, ", ".join(sample(refs, 5)), "; ".join(errors[:3])),
            {"count": len(items), "services": sample(refs), "errors": errors[:5],
             "first": [item["evidence"] for item in items[:3]]},
            items[0]["remediation"]))
    return out


def check_service(service, nodes, endpoints, probes, traffic=None):
    """Findings for one eTP=Local Service.

    ``nodes``: the candidate LB pool members (Node objects); ``endpoints``: node -> ready local
    endpoints (``local_endpoints``); ``probes``: node -> ``probe`` result (empty when not probed).
    """
    ref = "%s/%s" % (meta(service, "namespace"), meta(service, "name"))
    port = (service.get("spec") or {}).get("healthCheckNodePort")
    names = [meta(n, "name") for n in nodes]
    with_eps = [n for n in names if endpoints.get(n)]
    without = [n for n in names if not endpoints.get(n)]
    replicas = sum(endpoints.values())
    found = []
    if without:
        pool = pool_view(_pool_shown(nodes, endpoints, probes), endpoints, probes, traffic)
        who = owner(service)
        found.append(finding(
            "lb.nodes_without_endpoints", "critical" if not with_eps else "warning", "L4", ref,
            _without_summary(ref, names, with_eps, without, replicas, pool, probes),
            {"nodes_without": sample(without), "nodes_with": sample(with_eps), "replicas": replicas,
             "health_check_node_port": port, "expected": bool(with_eps), "trade_off": TRADE_OFF,
             "pool": pool, "owner": who},
            _without_remediation(service, ref, who)))
    found.extend(_mismatch_findings(ref, port, names, endpoints, probes))
    found.extend(check_traffic(service, nodes, endpoints, traffic or {}))
    return found


def check_traffic(service, nodes, endpoints, traffic):
    """Findings from the traffic nodePort probes: a node that should forward and does not answer.

    With policy Local a node without a local endpoint does not forward (kube-proxy drops it:
    kubernetes/kubernetes pkg/proxy/iptables/proxier.go, externalTrafficFilterTarget DROP "has no local
    endpoints", commit 092dddd12ca4cc5e66597de66a81fc77fdd3f29b; other dataplanes accept the connect and never
    answer): expected, part of lb.nodes_without_endpoints' pool view.  A node with a local endpoint (Local) or
    any node (Cluster) that does not answer is ``lb.nodeport_silent``."""
    if not traffic:
        return []
    ref = "%s/%s" % (meta(service, "namespace"), meta(service, "name"))
    local = (service.get("spec") or {}).get("externalTrafficPolicy") == "Local"
    found = []
    for node in nodes:
        name = meta(node, "name")
        result = traffic.get(name)
        if not result or result["state"] == "answered" or (local and not endpoints.get(name)):
            continue
        found.append(finding(
            "lb.nodeport_silent", "critical", "L4", "%s@%s" % (ref, name),
            "the traffic nodePort %s of %s on %s is %s (%s) although the node should forward it (%s)" % (
                result["address"], ref, name, result["state"], result["detail"],
                "%d local endpoint(s) with policy Local" % endpoints.get(name, 0) if local else "policy Cluster"),
            {"address": result["address"], "state": result["state"], "detail": result["detail"],
             "local_endpoints": endpoints.get(name, 0), "policy": "Local" if local else "Cluster"},
            "on %s: iptables-save -t nat | grep %s (kube-proxy's rules for the nodePort) and the router pod's "
            "readiness; kube-proxy (or the OVN / Cilium dataplane) forwards the nodePort from its own view of the "
            "endpoints" % (name, ref)))
    return found


def pool_nodes(nodes):
    """Nodes a cloud LB puts in its pool (excluding those labelled out of external LBs)."""
    return [n for n in nodes
            if "node.kubernetes.io/exclude-from-external-load-balancers" not in (meta(n, "labels") or {})]


def service_model(service, endpoints, probes):
    return {
        "service": "%s/%s" % (meta(service, "namespace"), meta(service, "name")),
        "external_traffic_policy": (service.get("spec") or {}).get("externalTrafficPolicy"),
        "health_check_node_port": (service.get("spec") or {}).get("healthCheckNodePort"),
        "local_endpoints": endpoints,
        "probes": dict((n, {"status": p["status"], "local_endpoints": p["local_endpoints"], "error": p["error"]})
                       for n, p in probes.items()),
    }


def patch_reason(service, nodes, endpoints, probes):
    """(reason, None) when switching ``service`` to Cluster fixes what is not expected, else (None, why not).

    Nodes without a local endpoint failing the health check is what Local does by design: no reason.
    Reasons: the ready endpoints run only on nodes outside the load balancer pool (no pool node can
    pass), or nodes that hold a ready endpoint fail the probe (the load balancer drops nodes that can
    serve).  Zero ready endpoints anywhere is no reason either: Cluster has no backend to send to."""
    if not is_local_lb(service):
        return None, "not a LoadBalancer Service with externalTrafficPolicy Local: nothing to patch"
    unanswered = no_node_answered(probes)
    if unanswered:
        return None, unanswered
    names = [meta(n, "name") for n in nodes]
    with_eps = [n for n in names if endpoints.get(n)]
    without = [n for n in names if not endpoints.get(n)]
    if not sum(endpoints.values()):
        return None, "no ready endpoint on any node: Cluster would not help, the Service has no backend"
    if not with_eps:
        return ("its ready endpoints run only on nodes outside the load balancer pool: no pool node passes the health "
                "check, with Cluster every pool node forwards to them"), None
    failing = [n for n in with_eps if probes.get(n) and (probes[n]["error"] or not probes[n]["local_endpoints"])]
    if failing:
        return ("%d node(s) with a ready endpoint fail the health check (%s): the load balancer drops nodes that can "
                "serve" % (len(failing), ", ".join(sample(failing)))), None
    if without:
        return None, ("expected with externalTrafficPolicy Local: %d of %d nodes have no local endpoint and fail the "
                      "health check by design while %d serve; not a reason to switch to Cluster"
                      % (len(without), len(names), len(with_eps)))
    return None, "every pool node has a ready endpoint: nothing to patch"


def no_node_answered(probes):
    """Why the health-check probes cannot justify a switch (None when some node answered, or nothing was probed).

    Every probe refused or timed out, also on nodes without an endpoint, where kube-proxy answers 503: the probe
    path is at fault (a host, an execution environment, that cannot reach the nodes' ports), not the Service, and
    the post-check would fail from the same place."""
    if not probes or any(result["status"] is not None for result in probes.values()):
        return None
    return ("no node answered the health check at all (%d probed, %s: %s): that points at the probe path - the host "
            "lb_health runs on cannot reach the nodes' port - not at the Service, so nothing justifies a switch; run "
            "from a host that reaches the nodes (the controller on the node network, or delegate_to a node), or, to "
            "switch without any probe evidence, probe: false with force_policy_switch: true"
            % (len(probes), ", ".join(sample(sorted(probes))),
               "; ".join(sorted(set(r["error"] for r in probes.values() if r["error"]))[:3])))


def forced_reason(service, judged, probes=None):
    """(reason, None) for a switch the operator asked for explicitly (``force_policy_switch``), whatever the
    module's own judgement ``judged`` ((reason, why not) of ``patch_reason``); a Service that is not
    LoadBalancer with policy Local is still refused (there is nothing to switch), and so is a switch while no node
    answered the health-check ``probes`` at all (``no_node_answered``: the probe path is broken, and the
    post-check could not verify the switch)."""
    reason, why_not = judged
    if not is_local_lb(service):
        return None, why_not
    unanswered = no_node_answered(probes or {})
    if unanswered:
        return None, unanswered
    return ("asked explicitly (force_policy_switch): %s; the trade-off is accepted: %s" % (
        reason or why_not, TRADE_OFF)), None
