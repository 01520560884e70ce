"""The agent states the stand-in serves: a healthy agent, and each unhealthy state the checks name.

Field names and enums are those of Cilium's OpenAPI specs (``openapi/``); every builder's output
is validated against them by the server before it is served (and by the unit tests).  Metric names
and labels are those of Cilium's documentation (Documentation/observability/metrics.rst and
Documentation/configuration/api-rate-limiting.rst): ``cilium_drop_count_total{reason,direction}``,
``cilium_api_limiter_processed_requests_total{api_call,outcome,return_code}``.
"""

from __future__ import annotations

import copy
import zlib

TIMESTAMP = "2026-12-01T03:00:00Z"
CONTROLLERS = ("sync-host-ips", "ipcache-inject-labels", "endpoint-gc", "sync-lb-maps-with-k8s-services",
               "cilium-health-ep", "k8s-heartbeat")


def _ok(msg=""):
    return {"state": "Ok", "msg": msg}


def controller(name, failures=0, error=""):
    status = {"success-count": 12, "last-success-timestamp": TIMESTAMP, "failure-count": failures,
              "consecutive-failure-count": failures}
    if failures:
        status.update({"last-failure-timestamp": TIMESTAMP, "last-failure-msg": error})
    return {"name": name, "uuid": "6e0b3b9c-9a55-4f4e-8f4a-%012d" % (zlib.crc32(name.encode()) % 10 ** 12),
            "configuration": {"interval": "1m0s", "error-retry": True, "error-retry-base": "2s"}, "status": status}


def healthz(node="node1", pod_cidr="198.19.1.0/24"):
    """A StatusResponse of a healthy agent (as `cilium-dbg status -o json` shows it)."""
    return {
        "cilium": _ok("OK"),
        "kvstore": {"state": "Disabled", "msg": "Disabled"},
        "kubernetes": {"state": "Ok", "msg": "1.30 (v1.30.2) [linux/amd64]",
                       "k8s-api-versions": ["cilium/v2::CiliumNode", "core/v1::Pods"]},
        "container-runtime": _ok(),
        "cni-file": _ok("successfully wrote CNI configuration file to /host/etc/cni/net.d/05-cilium.conflist"),
        "kube-proxy-replacement": {"mode": "True", "devices": ["eth0"],
                                   "deviceList": [{"name": "eth0", "ip": ["198.18.0.11"]}],
                                   "directRoutingDevice": "eth0",
                                   "features": {"nodePort": {"enabled": True, "mode": "SNAT", "algorithm": "Random",
                                                             "acceleration": "None", "portMin": 30000,
                                                             "portMax": 32767}}},
        "ipam": {"ipv4": [pod_cidr], "allocations": {"198.19.1.10": "kube-system/coredns-1",
                                                     "198.19.1.1": "router"},
                 "status": "2/254 allocated from %s" % pod_cidr},
        "cluster": {"ciliumHealth": _ok(), "self": "default/%s" % node},
        "controllers": [controller(name) for name in CONTROLLERS],
        "nodeMonitor": {"cpus": 2, "npages": 64, "pagesize": 4096, "lost": 0, "unknown": 0},
        "routing": {"inter-host-routing-mode": "Native", "intra-host-routing-mode": "BPF"},
        "attach-mode": "tcx",
        "datapath-mode": "veth",
        "hubble": {"state": "Ok", "msg": "",
                   "observer": {"max-flows": 4095, "current-flows": 100, "seen-flows": 100, "uptime": "1h0m0s"}},
    }


def _path(ip, icmp_error="", http_error=""):
    return {"ip": ip, "icmp": {"latency": 0 if icmp_error else 120000, "status": icmp_error},
            "http": {"latency": 0 if http_error else 450000, "status": http_error}}


def health(local="node1", nodes=(("node1", "198.18.0.11", "198.19.1.100"),)):
    """A HealthStatusResponse where every node and health endpoint answers ICMP and HTTP."""
    return {"timestamp": TIMESTAMP, "local": {"name": "default/%s" % local},
            "nodes": [{"name": "default/%s" % name, "host": {"primary-address": _path(ip)},
                       "health-endpoint": {"primary-address": _path(endpoint)}}
                      for name, ip, endpoint in nodes]}


def metrics(drops=(), refused=(), created=40):
    """Metric samples: ``drops`` [(reason, direction, count, rate)], ``refused`` [(api_call, count, rate)]
    (rate-limited requests, outcome=fail, HTTP 429), beside ``created`` successful endpoint creations."""
    out = [{"name": "cilium_api_limiter_processed_requests_total",
            "labels": {"api_call": "endpoint-create", "outcome": "success", "return_code": "201"}, "value": created},
           {"name": "cilium_api_limiter_rate_limit", "labels": {"api_call": "endpoint-create", "value": "limit"},
            "value": 0.5},
           {"name": "cilium_api_limiter_rate_limit", "labels": {"api_call": "endpoint-create", "value": "burst"},
            "value": 4},
           {"name": "cilium_api_limiter_requests_in_flight",
            "labels": {"api_call": "endpoint-create", "value": "in-flight"}, "value": 0},
           {"name": "cilium_api_limiter_requests_in_flight", "labels": {"api_call": "endpoint-create", "value": "limit"},
            "value": 4},
           # a reason that counted once at start and does not grow
           {"name": "cilium_drop_count_total", "labels": {"direction": "EGRESS", "reason": "Stale or unroutable IP"},
            "value": 3}]
    for reason, direction, count, rate in drops:
        out.append({"name": "cilium_drop_count_total", "labels": {"direction": direction, "reason": reason},
                    "value": count, "rate": rate})
    for call, count, rate in refused:
        out.append({"name": "cilium_api_limiter_processed_requests_total",
                    "labels": {"api_call": call, "outcome": "fail", "return_code": "429"}, "value": count, "rate": rate})
    return out


def endpoint(ep_id, namespace, pod, ipv4, identity, interface):
    """One local endpoint as GET /v1/endpoint lists it (a pod's: its Kubernetes names in external-identifiers)."""
    return {"id": ep_id, "status": {
        "state": "ready",
        "external-identifiers": {"k8s-namespace": namespace, "k8s-pod-name": pod, "pod-name": "%s/%s" % (namespace, pod),
                                 "container-id": "%064x" % ep_id},
        "identity": {"id": identity, "labels": ["k8s:io.kubernetes.pod.namespace=%s" % namespace]},
        "networking": {"addressing": [{"ipv4": ipv4}], "interface-name": interface}}}


def endpoints(local="node1"):
    """The endpoints of the pods on ``local`` (their ids are the ones monitor/gen_drops.go's drops name)."""
    return [endpoint(1201, "default", "web-5d8f7-abcde", "198.19.1.10", 48213, "lxc1a2b3c4d5e6f"),
            endpoint(1202, "default", "client-7c9f4-xk2p8", "198.19.1.11", 48214, "lxc6f5e4d3c2b1a")]


def healthy(local="node1", nodes=None):
    nodes = nodes or ((local, "198.18.0.11", "198.19.1.100"),)
    return {"healthz": healthz(local), "healthz_http_status": 200, "health": health(local, nodes), "metrics": metrics(),
            "endpoints": endpoints(local)}


# --------------------------------------------------------------------------- unhealthy states


def failing_controllers(state, names=("sync-lb-maps-with-k8s-services",), error="context deadline exceeded"):
    state = copy.deepcopy(state)
    for ctl in state["healthz"]["controllers"]:
        if ctl["name"] in names:
            ctl.update(controller(ctl["name"], failures=7, error=error))
    return state


def component_failure(state, component="kvstore", msg="Err: quorum check failed 12 times in a row: timeout"):
    state = copy.deepcopy(state)
    state["healthz"][component] = {"state": "Failure", "msg": msg}
    return state


def stale_probes(state, probes=("kube-proxy-replacement",)):
    state = copy.deepcopy(state)
    state["healthz"]["stale"] = dict((probe, TIMESTAMP) for probe in probes)
    return state


def ipam_exhausted(state):
    state = copy.deepcopy(state)
    state["healthz"]["ipam"] = {"ipv4": [], "allocations": {}, "status": "unable to allocate: no more IPs available"}
    return state


def node_unreachable(state, peer, icmp="Connection timed out", http="Get \"http://198.18.0.12:4240/hello\": "
                     "dial tcp 198.18.0.12:4240: connect: no route to host"):
    state = copy.deepcopy(state)
    for entry in state["health"]["nodes"]:
        if entry["name"].endswith("/" + peer):
            path = entry["host"]["primary-address"]
            entry["host"]["primary-address"] = _path(path["ip"], icmp, http)
    return state


def endpoint_unreachable(state, peer, http="Get \"http://198.19.2.100:4240/hello\": context deadline exceeded"):
    state = copy.deepcopy(state)
    for entry in state["health"]["nodes"]:
        if entry["name"].endswith("/" + peer):
            path = entry["health-endpoint"]["primary-address"]
            entry["health-endpoint"]["primary-address"] = _path(path["ip"], "", http)
    return state


def rate_limited(state, count=37, rate=3.0):
    state = copy.deepcopy(state)
    state["metrics"].append({"name": "cilium_api_limiter_processed_requests_total",
                             "labels": {"api_call": "endpoint-create", "outcome": "fail", "return_code": "429"},
                             "value": count, "rate": rate})
    return state


def dropping(state, reason="Policy denied", direction="INGRESS", count=1000, rate=200.0):
    state = copy.deepcopy(state)
    state["metrics"].append({"name": "cilium_drop_count_total", "labels": {"direction": direction, "reason": reason},
                             "value": count, "rate": rate})
    return state


def dropping_flows(state):
    """The datapath drops packets of three flows (Policy denied, Service backend not found, a denylist): the
    monitor socket sends the stream monitor/gen_drops.go made (monitor/drops.json says what it holds)."""
    state = copy.deepcopy(state)
    state["monitor"] = "drops"
    return state


def agent_error(state, status=500):
    state = copy.deepcopy(state)
    state["healthz_http_status"] = status
    return state
