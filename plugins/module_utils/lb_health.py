# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks of Services with ``externalTrafficPolicy: Local``.

kube-proxy (and Cilium) answer ``http://<node>:<healthCheckNodePort>/`` with JSON
``{"service": {...}, "localEndpoints": N}``: 200 when N > 0, 503 otherwise.  Nodes without a
ready local endpoint fail the load balancer's health check by design.  This module relates the
EndpointSlices (which nodes hold a ready endpoint) to the probes of every node.

Readers: ``probe`` (one HTTP GET).  Pure: ``parse_health``, ``local_endpoints``, ``check_service``,
``patch_reason`` (whether switching to Cluster would fix something that is not expected).
Actions: ``set_cluster_policy`` (re-reads the Service, merge-patches with the resourceVersion it read)
and ``remediate`` (the named Services in order, up to a cap, stopping at the first failure and
saying what was patched, what failed and what was not attempted).
"""

from __future__ import annotations

import json
import socket

import http.client as http_client

from ansible_collections.k8snet.triage.plugins.module_utils import sockets
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube import meta, node_address

MAX_BODY_BYTES = 1024 * 1024  # kube-proxy's answer is a few hundred bytes
TRADE_OFF = ("externalTrafficPolicy: Cluster makes every node pass the health check, but the client "
             "source IP is lost (SNAT to the node) and traffic may take an extra hop to a node with an endpoint")


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
    expected = 200 if doc["localEndpoints"] > 0 else 503
    if status != expected:
        return doc["localEndpoints"], "HTTP %s with localEndpoints %d (kube-proxy answers %d)" % (
            status, doc["localEndpoints"], expected)
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


def check_service(service, nodes, endpoints, probes):
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
        found.append(finding(
            "lb.nodes_without_endpoints", "critical" if not with_eps else "warning", "L4", ref,
            "%d of %d nodes have no ready local endpoint of %s (%d replicas): the load balancer marks them down%s"
            % (len(without), len(names), ref, replicas, "; no node passes, the Service is unreachable" if not with_eps
               else " (expected with externalTrafficPolicy Local)"),
            {"nodes_without": sample(without), "nodes_with": sample(with_eps), "replicas": replicas,
             "health_check_node_port": port, "expected": bool(with_eps), "trade_off": TRADE_OFF},
            "expected with externalTrafficPolicy: Local when replicas < nodes; run more replicas (one per pool node, "
            "e.g. a DaemonSet or anti-affinity) or limit the LB pool to nodes with replicas. Switching to Cluster "
            "(remediate: cluster with remediate_services on k8snet.triage.lb_health) is done only when the nodes that "
            "can serve fail the check, not for this alone (%s)" % TRADE_OFF))
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


def set_cluster_policy(kube, namespace, name, check_mode):
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
    diff = {"before_header": "%s/%s" % (namespace, name), "after_header": "%s/%s" % (namespace, name),
            "before": "externalTrafficPolicy: Local\nhealthCheckNodePort: %s\nresourceVersion: %s\n"
                      % (current["spec"].get("healthCheckNodePort"), version),
            "after": "externalTrafficPolicy: Cluster\n"}
    if not check_mode:
        kube.merge_patch("services", name, namespace, {"spec": {"externalTrafficPolicy": "Cluster"}},
                         resource_version=version)
    return True, diff, None


def remediate(kube, targets, max_patch, check_mode):
    """Switch the named Services to Cluster, in order, at most ``max_patch`` of them.

    ``targets``: [(namespace/name, reason or None, why not)] (``patch_reason`` of each).  The first
    failure stops the run: the rest is listed as not attempted.  Returns {patched: [ref],
    failures: [{service, reason, status}], not_attempted: [{service, reason}], diffs: [diff]}."""
    out = {"patched": [], "failures": [], "not_attempted": [], "diffs": []}
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
            changed, diff, why = set_cluster_policy(kube, namespace, name, check_mode)
        except TriageError as exc:
            out["failures"].append({"service": ref, "reason": exc.message, "status": exc.details.get("status")})
            stopped = "not attempted: the run stopped at the failure on %s" % ref
            continue
        if changed:
            out["patched"].append(ref)
            out["diffs"].append(diff)
        else:
            out["not_attempted"].append({"service": ref, "reason": why})
    return out


def node_ips(nodes, address_type="InternalIP"):
    return dict((meta(n, "name"), node_address(n, address_type)) for n in nodes)
