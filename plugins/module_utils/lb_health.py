# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks of Services with ``externalTrafficPolicy: Local``.

kube-proxy (and Cilium) answer ``http://<node>:<healthCheckNodePort>/`` with JSON
``{"service": {...}, "localEndpoints": N}``: 200 when N > 0, 503 otherwise.  Nodes without a
ready local endpoint fail the load balancer's health check by design.  This module relates the
EndpointSlices (which nodes hold a ready endpoint) to the probes of every node.

Readers: ``probe`` (one HTTP GET of the health check) and ``traffic_probe`` (a TCP connect to the
traffic nodePort and one HTTP request: answered, connected but silent, dropped or refused).  Pure:
``parse_health``, ``local_endpoints``, ``check_service``, ``check_traffic``, ``pool_view``, ``owner``,
``patch_reason`` (whether switching to Cluster would fix something that is not expected) and
``forced_reason`` (the operator asked for the switch explicitly).  Actions: ``set_cluster_policy``
(re-reads the Service, merge-patches with the resourceVersion it read), ``remediate`` (the named Services
in order, up to a cap, stopping at the first failure and saying what was patched, what failed and what was
not attempted) and ``verify_switch`` (the post-check: re-reads the Service and probes every node until all
pass or a total deadline passes).  ``api_run`` is the module's whole run: ``select_services``, then ``run`` (read,
probe and judge each Service, remediate the ``remediation_targets``, verify what was patched).
"""

from __future__ import annotations

import json
import socket
import time

import http.client as http_client

from ansible_collections.k8snet.triage.plugins.module_utils import sockets
from ansible_collections.k8snet.triage.plugins.module_utils.errors import ChangeError, InputError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.kube import meta, node_address
from ansible_collections.k8snet.triage.plugins.module_utils.kube_args import split_ref

MAX_BODY_BYTES = 1024 * 1024  # kube-proxy's answer is a few hundred bytes
TRADE_OFF = ("externalTrafficPolicy: Cluster makes every node pass the health check, but the client "
             "source IP is lost (SNAT to the node) and traffic may take an extra hop to a node with an endpoint")
TRAFFIC_BYTES = 4096  # the status line of the answer is all the traffic probe reads
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


def parse_health(status, body):
    """(local endpoints or None, error or None) from a health-check answer."""
    try:
        doc = json.loads(body)
    except (TypeError, ValueError):
        return None, "HTTP %s with a body that is not JSON: %r" % (status, (body or "")[:80])
    if not isinstance(doc, dict) or not isinstance(doc.get("localEndpoints"), int):
        return None, "HTTP %s without localEndpoints: %r" % (status, (body or "")[:80])
    # kube-proxy fails the check of a node with local endpoints too while its own rules are out of date
    # (serviceProxyHealthy false: an update waited longer than its health timeout, 2 x syncPeriod); Cilium's
    # answer has no serviceProxyHealthy
    unhealthy = doc.get("serviceProxyHealthy") is False
    expected = 200 if doc["localEndpoints"] > 0 and not unhealthy else 503
    if status != expected:
        return doc["localEndpoints"], "HTTP %s with localEndpoints %d%s (kube-proxy answers %d)" % (
            status, doc["localEndpoints"], " and serviceProxyHealthy false" if unhealthy else "", expected)
    if unhealthy and doc["localEndpoints"] > 0:
        return doc["localEndpoints"], (
            "HTTP 503 with localEndpoints %d: kube-proxy reports itself unhealthy (serviceProxyHealthy false: its "
            "rules are out of date, an update waited longer than its health timeout), so the load balancer drops "
            "a node that holds an endpoint" % doc["localEndpoints"])
    return doc["localEndpoints"], None


def probe(address, port, timeout):
    """GET http://address:port/ -> {"status", "local_endpoints", "error"}; never raises."""
    url = "http://%s:%d/" % ("[%s]" % address if ":" in address else address, port)
    try:  # straight to the node (no proxy), one deadline from the connect to the body's last byte
        status, _reason, body = sockets.http_get(sockets.tcp_socket(address, port, timeout), "/", MAX_BODY_BYTES,
                                                 host="[%s]" % address if ":" in address else address)
        body = body.decode("utf-8", "replace")
    except socket.timeout:
        return {"url": url, "status": None, "local_endpoints": None,
                "error": "no answer: no complete answer within the %gs deadline" % timeout}
    except (OSError, http_client.HTTPException) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else (str(exc) or exc.__class__.__name__)
        return {"url": url, "status": None, "local_endpoints": None, "error": "no answer: %s" % reason}
    count, error = parse_health(status, body)
    return {"url": url, "status": status, "local_endpoints": count, "error": error}


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
        passing = [n for n in names if pool[n]["health_check"] == "pass"]
        failing = [n for n in names if pool[n]["health_check"] == "fail"]
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
        pool = pool_view(nodes, endpoints, probes, traffic)
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


def traffic_port(service):
    """The nodePort of the Service's first TCP port (None when it has none)."""
    for item in (service.get("spec") or {}).get("ports") or []:
        if (item.get("protocol") or "TCP") == "TCP" and item.get("nodePort"):
            return item["nodePort"]
    return None


def traffic_probe(address, port, timeout):
    """Connect to ``address``:``port`` (the traffic nodePort) and send one HTTP request; never raises.

    ``state``: ``answered`` (bytes came back: the first line), ``silent`` (the connect succeeded - the
    connection is ESTABLISHED, kept with TCP keepalive - and nothing came back within ``timeout``),
    ``dropped`` (the connect itself got no answer: the SYN was dropped), ``refused`` or ``closed`` (the peer
    closed without a byte).  One deadline for the connect, one for the answer."""
    url = "%s:%d" % ("[%s]" % address if ":" in address else address, port)
    out = {"address": url, "state": None, "detail": None}
    try:
        sock = sockets.tcp_socket(address, port, timeout)
    except socket.timeout:
        return dict(out, state="dropped", detail="no answer to the connect within %gs (SYN dropped)" % timeout)
    except OSError as exc:
        refused = isinstance(exc, ConnectionRefusedError)
        return dict(out, state="refused" if refused else "dropped", detail=exc.strerror or str(exc))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.arm(timeout)
        sock.budget(TRAFFIC_BYTES)
        sock.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % url).encode("ascii"))
        data = sock.recv(TRAFFIC_BYTES)
    except socket.timeout:
        return dict(out, state="silent", detail="connected (ESTABLISHED, keepalive) and no byte back within %gs"
                                                % timeout)
    except OSError as exc:
        return dict(out, state="closed", detail="connected, then %s" % (exc.strerror or exc.__class__.__name__))
    finally:
        sock.close()
    if not data:
        return dict(out, state="closed", detail="connected, then closed without a byte")
    return dict(out, state="answered", detail=data.decode("latin-1").split("\r\n", 1)[0][:120])


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


def node_ips(nodes, address_type="InternalIP"):
    return dict((meta(n, "name"), node_address(n, address_type)) for n in nodes)


# ------------------------------------------------------------------ the lb_health run (reads, remediation, post-check)
MAX_PATCH_LIMIT = 100


def select_services(kube, names, namespaces):
    """The Services ``names`` names (InputError for one that does not exist), else the Local LoadBalancer Services
    of ``namespaces`` (of every namespace when empty)."""
    if names:
        found = []
        for ref in names:
            namespace, name = split_ref(ref)
            svc = kube.get("services", name, namespace)
            if svc is None:
                raise InputError("Service %s does not exist" % ref)
            found.append(svc)
        return found
    services = []
    for namespace in namespaces or [None]:
        services.extend(kube.services(namespace))
    return [s for s in services if is_local_lb(s)]


def remediation_targets(p):
    """The Services remediation may patch (validated, de-duplicated, in order); [] when not remediating."""
    if p["remediate"] == "none":
        return []
    if not p["remediate_services"]:
        raise InputError("remediate: %s needs remediate_services, the Services (namespace/name) it may patch; "
                         "nothing is patched without naming them" % p["remediate"])
    if not 1 <= p["max_patch"] <= MAX_PATCH_LIMIT:
        raise InputError("max_patch must be between 1 and %d, not %s" % (MAX_PATCH_LIMIT, p["max_patch"]))
    targets = []
    for ref in p["remediate_services"]:
        split_ref(ref)
        if ref not in targets:
            targets.append(ref)
    outside = [ref for ref in targets if p["services"] and ref not in p["services"]]
    if outside:
        raise InputError("remediate_services %s are not among services: add them to services, or leave services "
                         "empty" % ", ".join(outside))
    return targets


def _probe_nodes(nodes, addresses, port, probe_one, timeout):
    """{node name: probe_one(address, port, timeout)} of every pool node that has an address."""
    probes = {}
    for node in nodes:
        address = addresses[meta(node, "name")]
        if address:
            probes[meta(node, "name")] = probe_one(address, port, timeout)
    return probes


def _read_service(kube, svc, nodes, addresses, p):
    """(local endpoints, health-check probes, traffic probes or None when not probed) of one Local LoadBalancer
    Service: its EndpointSlices, its healthCheckNodePort on every node (``probe``) and its traffic nodePort
    (``probe_traffic``)."""
    endpoints = local_endpoints(kube.endpoint_slices(meta(svc, "namespace"), service=meta(svc, "name")))
    port = svc["spec"].get("healthCheckNodePort")
    probes = {}
    if p["probe"] and port:
        probes = _probe_nodes(nodes, addresses, port, probe, p["probe_timeout"])
    traffic = None
    node_port = traffic_port(svc)
    if p["probe_traffic"] and node_port:
        traffic = _probe_nodes(nodes, addresses, node_port, traffic_probe, p["probe_timeout"])
    return endpoints, probes, traffic


def _judge_services(kube, services, nodes, addresses, p, targets):
    """(Service models, findings, {ref: patch reason}, {ref: traffic probes}) of the selected Services."""
    models, found, reasons, traffic_all = [], [], {}, {}
    for svc in services:
        ref = "%s/%s" % (meta(svc, "namespace"), meta(svc, "name"))
        if not is_local_lb(svc):
            models.append(service_model(svc, {}, {}))
            reasons[ref] = patch_reason(svc, nodes, {}, {})
            continue
        endpoints, probes, traffic = _read_service(kube, svc, nodes, addresses, p)
        if traffic is None:
            traffic = {}
        else:
            traffic_all[ref] = traffic
        found.extend(check_service(svc, nodes, endpoints, probes, traffic))
        models.append(service_model(svc, endpoints, probes))
        reasons[ref] = patch_reason(svc, nodes, endpoints, probes)
        if p["force_policy_switch"] and ref in targets:
            reasons[ref] = forced_reason(svc, reasons[ref], probes)
    return models, found, reasons, traffic_all


def _verify_patched(kube, outcome, nodes, addresses, p, check_mode):
    """The post-check of every Service patched (``verify``, never in check mode): ``outcome["verification"]``
    filled, its findings returned."""
    found = []
    outcome["verification"] = []
    if p["verify"] and not check_mode:
        for ref in outcome["patched"]:
            namespace, name = split_ref(ref)
            result = verify_switch(kube, namespace, name, nodes, addresses, p["probe_timeout"], p["verify_timeout"])
            result["put_back"] = outcome["put_back"].get(ref)
            outcome["verification"].append(result)
            found.extend(verify_findings(result, outcome["owners"].get(ref), outcome["put_back"].get(ref)))
    return found


def run(p, kube, targets, check_mode=False):
    """(Service models, findings, remediation outcome) of one lb_health run through ``kube``: the Services
    selected, read, probed and judged, the ``targets`` remediated, the Services patched verified."""
    services = select_services(kube, p["services"] or targets, p["namespaces"])
    nodes = pool_nodes(kube.nodes())
    addresses = node_ips(nodes, p["address_type"])
    models, found, reasons, traffic_all = _judge_services(kube, services, nodes, addresses, p, targets)
    outcome = remediate(kube, [(ref,) + reasons[ref] for ref in targets], p["max_patch"], check_mode)
    for ref, who in outcome["owners"].items():
        found.append(owner_finding(ref, who, check_mode))
    found.extend(_verify_patched(kube, outcome, nodes, addresses, p, check_mode))
    outcome["traffic"] = traffic_all
    return models, found, outcome


def _module_result(models, found, outcome):
    """The module's result of a run (RV(diff) only when a Service was patched or would be)."""
    patched = outcome["patched"]
    result = dict(changed=bool(patched), services=models, patched=patched, failures=outcome["failures"],
                  not_attempted=outcome["not_attempted"], traffic=outcome["traffic"], owners=outcome["owners"],
                  verification=outcome["verification"], findings=sort_findings(found))
    if outcome["diffs"]:
        result["diff"] = outcome["diffs"] if len(outcome["diffs"]) > 1 else outcome["diffs"][0]
    return result


def api_run(params, kube_factory, check_mode=False):
    """The whole lb_health run: ``params`` (the module's options) in, the module's result out; the API client
    (``kube_factory(params)``) is built once the remediation targets are known to be valid.  A remediation that
    failed raises ChangeError, whose details are the whole result (what was patched, what failed, what was not
    attempted)."""
    targets = remediation_targets(params)
    models, found, outcome = run(params, kube_factory(params), targets, check_mode)
    result = _module_result(models, found, outcome)
    if outcome["failures"]:
        patched = outcome["patched"]
        first = outcome["failures"][0]
        raise ChangeError(
            "lb_health patched %d Service(s)%s, then failed on %s: %s" % (
                len(patched), " (%s)" % ", ".join(patched) if patched else "", first["service"], first["reason"]),
            **result)
    return result
