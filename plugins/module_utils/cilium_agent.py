# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Cilium agent's own view of this node, read without kubectl (stdlib only).

Readers (bounded: one deadline per request from connect to the last byte, caps on the headers and the body):

* the agent's REST API on its unix socket (``/var/run/cilium/cilium.sock``, base path ``/v1``):
  ``GET /v1/healthz`` answers a ``StatusResponse`` (Cilium's ``api/v1/openapi.yaml``): one
  ``Status`` ``{state: Ok|Warning|Failure|Disabled, msg}`` per component (``cilium``, ``kvstore``,
  ``kubernetes``, ``container-runtime``, ``cni-file``, ``cluster.ciliumHealth``...),
  ``controllers`` (``ControllerStatus``: ``name``, ``status.consecutive-failure-count``,
  ``status.last-failure-msg``), ``ipam`` (``IPAMStatus``: ``ipv4``/``ipv6`` ranges, ``status``),
  ``kube-proxy-replacement`` and ``stale`` (the status probes that did not finish: probe name ->
  start time);
* cilium-health's REST API on its unix socket (``/var/run/cilium/health.sock``, base path
  ``/v1beta``): ``GET /v1beta/status`` answers a ``HealthStatusResponse`` (``api/v1/health/
  openapi.yaml``): per node, ``host`` and ``health-endpoint`` each with a ``primary-address``
  and ``secondary-addresses`` ``PathStatus`` ``{ip, icmp, http}``, whose ``ConnectivityStatus``
  ``status`` is empty when the probe succeeded and the error otherwise;
* the agent's Prometheus metrics (``--prometheus-serve-addr``, port 9962 by default in the Helm
  chart), read twice ``interval`` seconds apart: ``cilium_drop_count_total{reason,direction}``
  and ``cilium_api_limiter_processed_requests_total{api_call,outcome[,return_code]}`` (a
  rate-limited request is counted with ``outcome="fail"``; the API answers it with HTTP 429,
  ``putEndpointIdTooManyRequests`` on endpoint creation).

Parsers (``parse_metrics``) and checks (``agent_findings``, ``health_findings``, ``limiter_findings``,
``drop_findings``) are pure.  A node that shows nothing of Cilium (no agent socket, no pinned
``cilium_*`` map, no ``cilium-cni`` configuration) is not a Cilium node: the check says it does not
apply (``applicable`` false) and reports nothing.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import socket
import stat
import time

from ansible_collections.k8snet.triage.plugins.module_utils import cilium_monitor, cni_files, sockets
# imported here, not in node_addresses: the one pass runs this check in a thread while its main thread
# may be importing (a lazy import there raced: ImportError in the AnsiballZ payload)
from ansible_collections.k8snet.triage.plugins.module_utils.netlink import Netlink
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.cilium_agent_options import (
    AGENT_SOCKET, HEALTH_SOCKET, METRICS_URL, MONITOR_SOCKET, WHEN_NOT_CILIUM, skip_reason, split_url)

import http.client as http_client

HEALTHZ_PATH = "/v1/healthz"
ENDPOINTS_PATH = "/v1/endpoint"
HEALTH_STATUS_PATH = "/v1beta/status"
MAX_JSON_BYTES = 8 * 1024 * 1024
MAX_METRICS_BYTES = 32 * 1024 * 1024

DROP_METRIC = "cilium_drop_count_total"
LIMITER_METRIC = "cilium_api_limiter_processed_requests_total"
LIMITER_RATE = "cilium_api_limiter_rate_limit"
LIMITER_IN_FLIGHT = "cilium_api_limiter_requests_in_flight"
METRICS_READ = (DROP_METRIC, LIMITER_METRIC, LIMITER_RATE, LIMITER_IN_FLIGHT)

# StatusResponse's components that carry a Status {state, msg}; (key path, name in findings)
COMPONENTS = (
    (("cilium",), "cilium"),
    (("kvstore",), "kvstore"),
    (("kubernetes",), "kubernetes"),
    (("container-runtime",), "container-runtime"),
    (("cni-file",), "cni-file"),
    (("cluster", "ciliumHealth"), "cilium-health"),
    (("auth-certificate-provider",), "auth-certificate-provider"),
    (("hubble",), "hubble"),
)
# the status probes whose staleness is a kube-proxy replacement or IPAM problem
PROBE_AREAS = {"kube-proxy-replacement": "kube-proxy replacement", "ipam": "IPAM"}
IPAM_ERROR = re.compile(r"error|fail|unable|exhaust|no (more|available|free)", re.IGNORECASE)
# the API call whose rate limiting blocks pod creation
POD_BLOCKING_CALLS = ("endpoint-create",)

REMEDIATION = {
    "agent_down": (
        "The agent is not answering on its socket: look at the cilium pod of this node (kubectl -n kube-system get pods "
        "-l k8s-app=cilium -o wide --field-selector spec.nodeName=NODE; kubectl -n kube-system logs POD -c cilium-agent "
        "--previous) and the node's journal; pods cannot get an endpoint while it is down."),
    "component": (
        "Read the component's message in `cilium-dbg status --verbose` on the node; a kvstore or kubernetes failure "
        "is the agent's connectivity to etcd or the API server (check its credentials and the control-plane "
        "addresses), a cni-file failure its write of /etc/cni/net.d."),
    "controllers": (
        "`cilium-dbg status --all-controllers` shows every controller with its last error; a controller failing "
        "repeatedly names the resource it cannot sync (often the API server or the kvstore). Restarting the agent "
        "clears the symptom but not the cause."),
    "stale": (
        "A status probe that does not finish means the subsystem hangs; `cilium-dbg status --verbose` and the agent's "
        "log around the probe's start time name it. A hung kube-proxy replacement leaves Services unprogrammed; "
        "a hung IPAM blocks new pods."),
    "ipam": (
        "IPAM cannot hand out addresses: `cilium-dbg status --verbose` lists the pools and allocations; with "
        "cluster-pool check the node's podCIDRs (kubectl get ciliumnode NODE -o yaml), with ENI/Azure the "
        "operator's log."),
    "node": (
        "Another node does not answer cilium-health's probes: check the path to its node IP (k8snet.triage.reachability "
        "/ the connectivity scenario), a firewall dropping ICMP or the health port 4240/tcp, and whether its agent runs "
        "(`cilium-dbg status --all-health` on both sides)."),
    "endpoint": (
        "The node answers but its health endpoint does not: the pod-network path to that node is broken (routes "
        "or tunnel, MTU, a policy or firewall in between); compare with route_check and pmtu_check between the "
        "two nodes."),
    "limiter": (
        "The agent's API rate limiter refuses requests (HTTP 429; for endpoint-create the CNI fails with "
        "putEndpointIdTooManyRequests and pods stay in ContainerCreating). Raise the limit for that call in the "
        "agent's configuration, e.g. the cilium-config key api-rate-limit: "
        "'endpoint-create=rate-limit:10/s,rate-burst:20,parallel-requests:20' (then restart the agent), and find what "
        "creates pods in bursts; a limiter whose in-flight requests never drain also shows an agent stuck on a lock."),
    "drops": (
        "Name the flows: `cilium-dbg monitor --type drop` on the node or `hubble observe --verdict DROPPED`; "
        "'Policy denied' is a network policy (check the policies selecting the endpoints), 'Stale or unroutable IP' "
        "and 'No mapping for NAT masquerade' are routing/NAT state, 'CT: Map insertion failed' a full conntrack map."),
}


# ------------------------------------------------------------------ the HTTP client over a unix socket


class Unreachable(ReadError):
    """A socket or URL that does not answer: ``reason`` is absent, not a socket, refused, timeout, http, invalid."""

    def __init__(self, message, reason, **details):
        super().__init__(message, reason=reason, **details)
        self.reason = reason


def unix_connect(path):
    """How get_json reaches a unix socket: ``connect(timeout)`` -> a connected sockets.BoundedSocket."""
    return lambda timeout: sockets.unix_socket(path, timeout)


def http_get(connect, path, what, timeout, max_bytes):
    """``GET path`` on the socket ``connect(timeout)`` gives -> the body (bytes) of a 200 answer; Unreachable otherwise.

    One deadline, ``timeout`` seconds, covers the connection, the status line, the headers and the body."""
    try:
        status, reason, body = sockets.http_get(connect(timeout), path, max_bytes)
    except socket.timeout:
        raise Unreachable("%s: no complete answer within the %gs deadline (from connect to the last byte)"
                          % (what, timeout), "timeout", deadline=timeout)
    except sockets.TooLarge as exc:
        raise Unreachable("%s: %s; refusing to read more" % (what, exc), "invalid")
    except PermissionError:
        raise PrivilegeError("%s: permission denied; run as root (become: true)" % what)
    except (ConnectionRefusedError, FileNotFoundError) as exc:
        raise Unreachable("%s: %s (nothing listens)" % (what, exc.strerror or exc), "refused")
    except (OSError, http_client.HTTPException) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            raise Unreachable("%s: %s (nothing listens)" % (what, exc.strerror or exc), "refused")
        raise Unreachable("%s: %s" % (what, exc.__class__.__name__ + (": %s" % exc if str(exc) else "")), "refused")
    if status != 200:
        text = body[:200].decode("utf-8", "replace").strip()
        raise Unreachable("%s: HTTP %d %s%s" % (what, status, reason, (": " + text) if text else ""),
                          "http", status=status)
    return body


def socket_state(path):
    """``ok`` | ``absent`` | ``not a socket`` for a unix socket path (PermissionError: PrivilegeError)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "absent"
    except PermissionError:
        raise PrivilegeError("cannot look at %s: permission denied; run as root (become: true)" % path, socket=path)
    return "ok" if stat.S_ISSOCK(mode) else "not a socket"


def get_json(path, url_path, timeout=5.0, max_bytes=MAX_JSON_BYTES, connect=unix_connect, kind=dict):
    """The JSON answer of ``GET url_path`` on the unix socket ``path`` (an object, or a ``kind`` such as list)."""
    what = "GET %s on %s" % (url_path, path)
    state = socket_state(path)
    if state != "ok":
        raise Unreachable("%s: the socket is %s" % (what, state), state)
    body = http_get(connect(path), url_path, what, timeout, max_bytes)
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError as exc:
        raise Unreachable("%s: the answer is not JSON (%s)" % (what, exc), "invalid")
    if not isinstance(data, kind):
        raise Unreachable("%s: the answer is a JSON %s, not %s" % (
            what, type(data).__name__, "an object" if kind is dict else "a " + kind.__name__), "invalid")
    return data


def get_metrics(url, timeout=5.0, max_bytes=MAX_METRICS_BYTES, names=METRICS_READ):
    """The samples of ``names`` in the Prometheus text answer of ``url``."""
    host, port, path = split_url(url)
    body = http_get(lambda seconds: sockets.tcp_socket(host, port, seconds), path, "GET %s" % url, timeout, max_bytes)
    return parse_metrics(body.decode("utf-8", "replace"), names)


# ------------------------------------------------------------------ the Prometheus text parser (pure)

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?[0-9]+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _labels(text):
    out, pos = {}, 0
    text = text.strip()
    while pos < len(text):
        match = _LABEL.match(text, pos)
        if not match:
            return None
        out[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], match.group(2))
        pos = match.end()
    return out


def _value(text):
    lowered = text.lower()
    if lowered in ("nan", "+inf", "inf", "-inf"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_metrics(text, names=None):
    """Prometheus text exposition -> [(name, {label: value}, float)] (pure).

    Comments (``# HELP``/``# TYPE``) and blank lines are skipped, as are samples whose labels or
    value cannot be read and NaN/Inf values; ``names`` (a collection) keeps only those metrics."""
    wanted = set(names) if names is not None else None
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match or (wanted is not None and match.group(1) not in wanted):
            continue
        labels = _labels(match.group(3) or "")
        value = _value(match.group(4))
        if labels is None or value is None:
            continue
        out.append((match.group(1), labels, value))
    return out


def sum_by(samples, name, keys, where=None):
    """{(label values of ``keys``): sum} of metric ``name`` (``where``: {label: value} to keep) (pure)."""
    out = {}
    for metric, labels, value in samples:
        if metric != name or any(labels.get(k) != v for k, v in (where or {}).items()):
            continue
        key = tuple(labels.get(k, "") for k in keys)
        out[key] = out.get(key, 0.0) + value
    return out


def growth(before, after):
    """{key: after - before} of counters (a counter that went down was reset: its growth is its new value)."""
    out = {}
    for key, value in after.items():
        old = before.get(key, 0.0)
        out[key] = value - old if value >= old else value
    return out


# ------------------------------------------------------------------ checks (pure)


def _get(data, path):
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _status(value):
    return value if isinstance(value, dict) else {}


def _component_findings(healthz, subject):
    """({component: state} of the components that report one, a finding per component in Failure or Warning)."""
    components, out = {}, []
    for path, name in COMPONENTS:
        status = _status(_get(healthz, path))
        if not status.get("state"):
            continue
        components[name] = status["state"]
        if status["state"] in ("Failure", "Warning"):
            out.append(finding(
                "cilium.agent_unhealthy", "critical" if status["state"] == "Failure" else "warning", "control-plane",
                "%s cilium-agent %s" % (subject, name),
                "the Cilium agent reports %s in state %s: %s" % (name, status["state"], status.get("msg") or "(no message)"),
                {"component": name, "state": status["state"], "msg": (status.get("msg") or "")[:500]},
                REMEDIATION["component"]))
    return components, out


def _failing_controllers(controllers):
    """The controllers failing now (``consecutive-failure-count`` > 0), most consecutive failures first."""
    failing = []
    for ctl in controllers:
        st = _status(ctl.get("status"))
        if (st.get("consecutive-failure-count") or 0) > 0:
            failing.append({"name": ctl.get("name"), "consecutive_failures": st.get("consecutive-failure-count"),
                            "failures": st.get("failure-count"),
                            "last_failure": st.get("last-failure-timestamp"),
                            "last_error": (st.get("last-failure-msg") or "")[:300]})
    failing.sort(key=lambda c: -(c["consecutive_failures"] or 0))
    return failing


def _controllers_finding(controllers, subject):
    """The finding about the controllers failing now (None when none is)."""
    failing = _failing_controllers(controllers)
    if not failing:
        return None
    return finding(
        "cilium.agent_unhealthy", "warning", "control-plane", "%s cilium-agent controllers" % subject,
        "%d of %d Cilium agent controllers are failing (%s%s)" % (
            len(failing), len(controllers), ", ".join("%s: %s" % (c["name"], c["last_error"] or "failed")
                                                      for c in failing[:3]), ", ..." if len(failing) > 3 else ""),
        {"failing": sample(failing), "failing_count": len(failing), "controllers": len(controllers)},
        REMEDIATION["controllers"])


def _stale_finding(healthz, subject):
    """The finding about status probes that did not finish, critical when kube-proxy replacement's or IPAM's."""
    stale = healthz.get("stale") if isinstance(healthz.get("stale"), dict) else {}
    if not stale:
        return None
    named = sorted(PROBE_AREAS[p] for p in stale if p in PROBE_AREAS)
    return finding(
        "cilium.agent_unhealthy", "critical" if named else "warning", "control-plane",
        "%s cilium-agent status probes" % subject,
        "the agent's status probes %s did not finish%s" % (
            ", ".join(sorted(stale)), (": %s hangs" % " and ".join(named)) if named else ""),
        {"stale": dict(sorted(stale.items())[:10]), "areas": named}, REMEDIATION["stale"])


def _ipam_finding(ipam, subject):
    """The finding about IPAM (a dict) reporting an error, or with neither an address range nor an allocation."""
    ranges = list(ipam.get("ipv4") or []) + list(ipam.get("ipv6") or [])
    text = ipam.get("status") or ""
    if not (IPAM_ERROR.search(text) or (not ranges and not ipam.get("allocations"))):
        return None
    return finding(
        "cilium.agent_unhealthy", "critical", "control-plane", "%s cilium-agent ipam" % subject,
        "the agent's IPAM %s" % (
            ("reports: %s" % text[:300]) if IPAM_ERROR.search(text)
            else "has no address range and no allocation: new pods get no address"),
        {"ranges": sample(ranges), "status": text[:300],
         "allocations": len(ipam.get("allocations") or {})}, REMEDIATION["ipam"])


def _kpr_finding(kpr, subject):
    """The finding about kube-proxy replacement on but attached to no device (None when not so)."""
    if not (isinstance(kpr, dict) and kpr.get("mode") == "True" and not (kpr.get("devices") or kpr.get("deviceList"))):
        return None
    return finding(
        "cilium.agent_unhealthy", "warning", "control-plane", "%s cilium-agent kube-proxy-replacement" % subject,
        "kube-proxy replacement is on but the agent attached it to no device: NodePort and LoadBalancer "
        "Services are not served on this node's addresses",
        {"mode": kpr.get("mode"), "devices": []},
        "Check the agent's devices option (cilium-config `devices`, auto-detection needs a default route) and "
        "its log for 'No devices'.")


def agent_findings(healthz, subject, now=None):
    """Findings from the agent's ``/v1/healthz`` answer (a StatusResponse) (pure).

    ``cilium.agent_unhealthy``: a component in Failure (critical) or Warning (warning); controllers
    failing now (``consecutive-failure-count`` > 0); status probes that did not finish (``stale``), named
    when they are the kube-proxy replacement's or IPAM's; IPAM without an address range or reporting an
    error.  ``cilium.agent`` ok when none of these, saying what was read."""
    components, out = _component_findings(healthz, subject)
    controllers = [c for c in healthz.get("controllers") or [] if isinstance(c, dict)]
    ipam = healthz.get("ipam")
    more = [_controllers_finding(controllers, subject), _stale_finding(healthz, subject),
            _ipam_finding(ipam, subject) if isinstance(ipam, dict) else None,
            _kpr_finding(healthz.get("kube-proxy-replacement"), subject)]
    out.extend(found for found in more if found)
    if not out:
        out.append(finding(
            "cilium.agent", "ok", "control-plane", "%s cilium-agent" % subject,
            "the Cilium agent is healthy: %s; %d controllers, none failing" % (
                ", ".join("%s %s" % item for item in sorted(components.items())) or "no component state reported",
                len(controllers)),
            {"components": components, "controllers": len(controllers),
             "ipam": sample((ipam or {}).get("ipv4") or []) if isinstance(ipam, dict) else None}))
    return out


def _path_failures(path_status):
    """{probe: error} of a PathStatus's failed probes (icmp, http); a probe not run is not a failure."""
    out = {}
    for probe in ("icmp", "http"):
        result = _status(_status(path_status).get(probe))
        if result and result.get("status"):
            out[probe] = result["status"][:300]
    return out


def _paths(status, legacy=None):
    """The PathStatus objects of a HostStatus / EndpointStatus (primary first), or the deprecated single one."""
    status = _status(status)
    out = []
    if status.get("primary-address"):
        out.append(("primary", status["primary-address"]))
    for extra in status.get("secondary-addresses") or []:
        out.append(("secondary", extra))
    if not out and legacy:
        out.append(("primary", legacy))
    return out


def _reach(paths):
    """(failed paths [{ip, kind, errors}], probes run, whether the primary failed on every probe it ran)."""
    failed, probes, primary_dead = [], 0, False
    for kind, path in paths:
        ran = [p for p in ("icmp", "http") if _status(_status(path).get(p))]
        probes += len(ran)
        errors = _path_failures(path)
        if errors:
            failed.append({"ip": _status(path).get("ip"), "kind": kind, "errors": errors})
            if kind == "primary" and len(errors) == len(ran):
                primary_dead = True
    return failed, probes, primary_dead


def health_findings(status, subject, limit=20):
    """Findings from cilium-health's ``/v1beta/status`` (a HealthStatusResponse) (pure).

    ``cilium.node_unreachable`` per node whose node IP (``host``) fails ICMP or HTTP; critical when
    the primary address fails every probe that ran.  ``cilium.endpoint_unreachable`` per node whose
    health endpoint (``health-endpoint``, else the deprecated ``endpoint``) fails.  ``cilium.connectivity``
    ok when every node and endpoint answered.  At most ``limit`` findings of each kind; the rest is counted."""
    nodes = [n for n in status.get("nodes") or [] if isinstance(n, dict)]
    host_bad, ep_bad, probes = [], [], 0
    for node in nodes:
        name = node.get("name") or "?"
        failed, ran, dead = _reach(_paths(node.get("host")))
        probes += ran
        if failed:
            host_bad.append((name, failed, dead))
        failed, ran, dead = _reach(_paths(node.get("health-endpoint"), node.get("endpoint")))
        probes += ran
        if failed:
            ep_bad.append((name, failed, dead))
    local = _status(status.get("local")).get("name")
    out = []
    for check, bad, what, remediation in (
            ("cilium.node_unreachable", host_bad, "node", REMEDIATION["node"]),
            ("cilium.endpoint_unreachable", ep_bad, "health endpoint of node", REMEDIATION["endpoint"])):
        for name, failed, dead in bad[:limit]:
            first = failed[0]
            out.append(finding(
                check, "critical" if dead else "warning", "L3", "%s -> %s" % (subject, name),
                "cilium-health on %s cannot reach the %s %s (%s): %s" % (
                    local or subject, what, name, first["ip"],
                    "; ".join("%s %s" % item for item in sorted(first["errors"].items()))),
                {"node": name, "failed_paths": sample(failed), "timestamp": status.get("timestamp"),
                 "more_nodes": max(0, len(bad) - limit)},
                remediation))
    if not nodes:
        out.append(finding(
            "cilium.health_unavailable", "info", "L3", "%s cilium-health" % subject,
            "cilium-health answered but lists no node yet (its first probe round may not have finished): node and "
            "endpoint reachability were not checked", {"timestamp": status.get("timestamp")},
            "Run the check again after the probe interval (about a minute)."))
    elif not out:
        out.append(finding(
            "cilium.connectivity", "ok", "L3", "%s cilium-health" % subject,
            "cilium-health reaches all %d nodes and their health endpoints (%d ICMP/HTTP probes)" % (len(nodes), probes),
            {"nodes": len(nodes), "probes": probes, "timestamp": status.get("timestamp")}))
    return out


def limiter_findings(before, after, window, subject):
    """Findings from the API rate limiter's counters (pure); ``before`` is None when read once.

    ``cilium.api_rate_limited``: requests refused by the limiter (``outcome="fail"``, HTTP 429) grew
    in the window (critical for endpoint-create: pods cannot start; warning for other calls), or only
    happened since the agent started (info).  ``cilium.api_limiter`` ok when no request was refused."""
    keys = ("api_call", "return_code")
    total = sum_by(after, LIMITER_METRIC, keys, {"outcome": "fail"})
    if not sum_by(after, LIMITER_METRIC, ("api_call",)):
        return []  # no rate-limited API call has been made yet (or this agent has no limiter metrics)
    grown = dict((k, v) for k, v in growth(sum_by(before, LIMITER_METRIC, keys, {"outcome": "fail"}), total).items()
                 if v > 0) if before is not None else {}
    limits = dict(((k[0], k[1]), v) for k, v in sum_by(after, LIMITER_RATE, ("api_call", "value")).items())
    in_flight = dict(((k[0], k[1]), v) for k, v in sum_by(after, LIMITER_IN_FLIGHT, ("api_call", "value")).items())

    def rows(counts):
        out = []
        for (call, code), value in sorted(counts.items(), key=lambda item: -item[1]):
            out.append({"api_call": call, "return_code": code or None, "refused": int(value),
                        "rate_limit": limits.get((call, "limit")), "burst": limits.get((call, "burst")),
                        "in_flight": in_flight.get((call, "in-flight")), "parallel_limit": in_flight.get((call, "limit"))})
        return out

    if grown:
        calls = sorted(set(call for call, _code in grown))
        blocking = [c for c in calls if c in POD_BLOCKING_CALLS]
        return [finding(
            "cilium.api_rate_limited", "critical" if blocking else "warning", "control-plane", "%s cilium-agent API" % subject,
            "the agent's API rate limiter refused %d requests in %gs (%s)%s" % (
                int(sum(grown.values())), window, ", ".join(calls),
                ": pod creation fails with putEndpointIdTooManyRequests (HTTP 429)" if blocking else ""),
            {"window": {"seconds": window, "refused": rows(grown)}, "since_start": sample(rows(total))},
            REMEDIATION["limiter"])]
    refused = dict((k, v) for k, v in total.items() if v > 0)
    if refused:
        return [finding(
            "cilium.api_rate_limited", "info", "control-plane", "%s cilium-agent API" % subject,
            "the agent's API rate limiter refused %d requests since the agent started (%s)%s" % (
                int(sum(refused.values())), ", ".join(sorted(set(c for c, _code in refused))),
                ", none in the %gs window" % window if before is not None else " (interval 0: totals only)"),
            {"since_start": sample(rows(refused))}, REMEDIATION["limiter"])]
    return [finding("cilium.api_limiter", "ok", "control-plane", "%s cilium-agent API" % subject,
                    "the agent's API rate limiter refused no request since the agent started",
                    {"api_calls": sorted(set(k[0] for k in sum_by(after, LIMITER_METRIC, ("api_call",))))})]


def drop_findings(before, after, window, subject, top=10, warning_pps=1.0, critical_pps=100.0):
    """Findings from ``cilium_drop_count_total`` (pure); ``before`` is None when read once.

    ``cilium.drops``: one finding per reason and direction whose count grew in the window (top ``top``),
    critical from ``critical_pps``, warning from ``warning_pps``, info below; ok when none grew; info with
    the totals since the agent started when read once."""
    keys = ("reason", "direction")
    total = sum_by(after, DROP_METRIC, keys)
    ranked_total = [{"reason": r, "direction": d, "packets": int(v)}
                    for (r, d), v in sorted(total.items(), key=lambda item: -item[1]) if v > 0][:top]
    if before is None:
        return [finding("cilium.drops", "info", "L3", "%s cilium datapath" % subject,
                        "the datapath dropped %d packets since the agent started (interval 0: totals only, no growth "
                        "judged)" % int(sum(total.values())), {"top_totals": ranked_total})]
    grown = sorted(((k, v) for k, v in growth(sum_by(before, DROP_METRIC, keys), total).items() if v > 0),
                   key=lambda item: -item[1])
    out = []
    for (reason, direction), packets in grown[:top]:
        pps = packets / window if window > 0 else None
        severity = "critical" if pps and pps >= critical_pps else "warning" if pps and pps >= warning_pps else "info"
        out.append(finding(
            "cilium.drops", severity, "L3", "%s cilium datapath %s %s" % (subject, direction.lower() or "-", reason),
            "the Cilium datapath dropped %d packets (%s, %s) in %gs (%.1f/s)" % (
                packets, reason, direction or "no direction", window, pps or 0),
            {"reason": reason, "direction": direction, "packets": int(packets), "pps": round(pps or 0, 3),
             "packets_total": int(total.get((reason, direction), 0)), "rank": len(out) + 1,
             "reasons_grown": len(grown)},
            REMEDIATION["drops"]))
    if not out:
        out.append(finding("cilium.drops", "ok", "L3", "%s cilium datapath" % subject,
                           "no Cilium drop counter grew in %gs (%d reasons counted since the agent started)" % (
                               window, len(ranked_total)), {"top_totals": ranked_total}))
    return out


# ------------------------------------------------------------------ the node check (one shape)


def sample_metrics(url, interval, timeout, read=get_metrics, sleep=time.sleep, clock=time.monotonic, during=None):
    """The metrics read before and after ``interval`` seconds (``during()`` runs in between, its time
    counted in the window); (before, after, seconds).  ``before`` is None when ``interval`` is 0."""
    started = clock()
    before = read(url, timeout) if interval > 0 else None
    if during is not None:
        during()
    if interval > 0:
        left = interval - (clock() - started)
        if left > 0:
            sleep(left)
    after = read(url, timeout)
    return before, after, round(clock() - started, 3) if interval > 0 else 0.0


def validate(params_):
    interval, timeout = params_.get("interval", 5.0), params_.get("timeout", 5.0)
    if params_.get("warning_pps", 1.0) > params_.get("critical_pps", 100.0):
        raise InputError("warning_pps (%s) must not be above critical_pps (%s)" % (
            params_.get("warning_pps"), params_.get("critical_pps")))
    for name in ("agent_socket", "health_socket"):
        path = params_.get(name)
        if path and not os.path.isabs(path):
            raise InputError("%s must be an absolute path, got %r" % (name, path))
    if params_.get("metrics_url"):
        split_url(params_["metrics_url"])
    if params_.get("when_not_cilium", "skip") not in WHEN_NOT_CILIUM:
        raise InputError("when_not_cilium must be one of %s" % ", ".join(WHEN_NOT_CILIUM))
    return interval, timeout


def node_addresses(runner):
    """The IP addresses this node holds (every interface, lo included), read with netlink."""
    with Netlink(runner) as netlink:
        return [a["address"] for a in netlink.addresses()]


def check_metrics_host(url, own_addresses):
    """Refuse a ``metrics_url`` whose host is neither loopback nor an address this node holds: the check
    reads this node's agent, and must not be pointed at another host (``own_addresses()`` is only read then)."""
    host = split_url(url)[0]
    if host == "localhost" or ipaddress.ip_address(host).is_loopback:
        return
    try:
        own = sorted(set(str(ipaddress.ip_address(a.split("%")[0])) for a in own_addresses()))
    except ReadError as exc:
        raise InputError("metrics_url %r: cannot check that %s is this node's own address (%s); give a loopback "
                         "URL such as %s" % (url, host, exc.message, METRICS_URL))
    if str(ipaddress.ip_address(host)) not in own:
        raise InputError("metrics_url %r: %s is not an address of this node (it holds %s): the agent's metrics are "
                         "read on the node itself; give a loopback URL such as %s, an address the node holds, or '' "
                         "to read no metrics" % (url, host, ", ".join(own[:12]) or "none", METRICS_URL),
                         metrics_url=url, node_addresses=own)


def _agent_absent(params, subject, agent_path):
    """The result where nothing is at the agent socket: skipped on a node that shows nothing of Cilium
    (with when_not_cilium=skip), else the agent is down on a Cilium node."""
    seen, evidence = cni_files.cilium_on_node(params.get("cni_conf_dir") or "/etc/cni/net.d")
    reason = skip_reason(params, lambda: seen)
    if reason:
        return {"data": {"applicable": False, "agent": {"socket": agent_path, "status": "absent"}, "health": None,
                         "metrics": None, "skip_reason": reason},
                "findings": []}
    return {"data": {"applicable": True, "skip_reason": "", "agent": {"socket": agent_path, "status": "absent"},
                     "health": None, "metrics": None},
            "findings": [finding(
                "cilium.agent_unhealthy", "critical", "control-plane", "%s cilium-agent" % subject,
                "the Cilium agent is not running on %s: its socket %s does not exist%s" % (
                    subject, agent_path, " although the node shows Cilium (%s)" % ", ".join(
                        "%s: %s" % (k, v) for k, v in sorted(evidence.items()) if v) if seen else ""),
                {"socket": agent_path, "cilium_seen": evidence}, REMEDIATION["agent_down"])]}


def _agent_view(reads, agent_path, subject, found):
    """The agent's part of the data (its findings added to ``found``)."""
    agent = {"socket": agent_path, "status": "ok"}
    if "agent_error" in reads:
        exc = reads["agent_error"]
        agent.update(status=exc.reason, error=exc.message)
        found.append(finding(
            "cilium.agent_unhealthy", "critical", "control-plane", "%s cilium-agent" % subject,
            "the Cilium agent does not answer its API: %s" % exc.message, {"socket": agent_path, "reason": exc.reason},
            REMEDIATION["agent_down"]))
    else:
        healthz = reads["agent"]
        found.extend(agent_findings(healthz, subject))
        agent.update(components=dict((name, _status(_get(healthz, path)).get("state"))
                                     for path, name in COMPONENTS if _status(_get(healthz, path)).get("state")),
                     controllers=len(healthz.get("controllers") or []),
                     kube_proxy_replacement=_status(healthz.get("kube-proxy-replacement")).get("mode"),
                     ipam=sample(_status(healthz.get("ipam")).get("ipv4") or []))

    return agent


def _health_view(reads, health_path, subject, top, found):
    """cilium-health's part of the data (its findings added to ``found``)."""
    health = {"socket": health_path, "status": "ok"}
    if "health_error" in reads:
        exc = reads["health_error"]
        health.update(status=exc.reason, error=exc.message)
        disabled = _status(_get(reads.get("agent") or {}, ("cluster", "ciliumHealth"))).get("state") == "Disabled"
        found.append(finding(
            "cilium.health_unavailable", "info" if disabled else "warning", "L3", "%s cilium-health" % subject,
            "cilium-health cannot be read (%s): node and endpoint reachability were not checked%s" % (
                exc.message, " (the agent reports cilium-health Disabled)" if disabled else ""),
            {"socket": health_path, "reason": exc.reason},
            "cilium-health runs inside the agent when enable-health-checking is true (the default); "
            "`cilium-dbg status --all-health` reads the same API."))
    else:
        status = reads["health"]
        found.extend(health_findings(status, subject, limit=top))
        health.update(nodes=len(status.get("nodes") or []), timestamp=status.get("timestamp"),
                      local=_status(status.get("local")).get("name"))

    return health


def _metrics_findings(params, metrics, url, sampled, subject):
    """The rate limiter's and the drop reasons' findings from the two samples ``sampled`` (before, after, window)."""
    before, after, window = sampled
    found = []
    if metrics["status"] == "ok":
        top = params.get("top", 10)
        found.extend(limiter_findings(before, after, window, subject))
        found.extend(drop_findings(before, after, window, subject, top, params.get("warning_pps", 1.0),
                                   params.get("critical_pps", 100.0)))
        metrics["drop_reasons"] = len(sum_by(after, DROP_METRIC, ("reason", "direction")))
    elif url:
        found.append(finding(
            "cilium.metrics_unavailable", "info", "L3", "%s cilium-agent metrics" % subject,
            "the agent's metrics could not be read (%s): the API rate limiter and the drop reasons were not checked"
            % metrics["error"], {"url": url, "reason": metrics["status"]},
            "Expose the agent's metrics (Helm prometheus.enabled=true, agent flag --prometheus-serve-addr=:9962) or "
            "give metrics_url the address they are served on; metrics_url '' skips them."))
    return found


def _monitor_view(watched, monitor_path, agent_path, timeout, subject, top, found):
    """The monitor's part of the data: the dropped flows read in the window (their findings added to ``found``)."""
    monitor = {"socket": monitor_path or None, "status": "not read"}
    if "summary" in watched:
        summary = watched["summary"]
        pods = {}
        if summary["flows"]:
            # the endpoints the flows name, as pods: the agent's own endpoint list
            try:
                pods = cilium_monitor.pod_names(get_json(agent_path, ENDPOINTS_PATH, timeout, kind=list))
            except Unreachable as exc:
                summary["endpoints_error"] = exc.message
        found.extend(cilium_monitor.flow_findings(summary, subject, top, pods))
        monitor.update(status="ok", seconds=summary["seconds"], drops=summary["drops"], lost=summary["lost"],
                       flows=[cilium_monitor.flow_row(f, pods) for f in summary["flows"][:top]])
    elif "error" in watched:
        exc = watched["error"]
        absent = isinstance(exc, FileNotFoundError)
        monitor.update(status="absent" if absent else "error", error=str(exc)[:300])
        found.append(finding(
            "cilium.monitor_unavailable", "info" if absent else "warning", "L3", "%s cilium-agent monitor" % subject,
            "the agent's monitor socket %s could not be read (%s): the dropped packets' flows were not read" % (
                monitor_path, "it does not exist" if absent else exc),
            {"socket": monitor_path, "error": str(exc)[:300]},
            "The agent serves it at /var/run/cilium/monitor1_2.sock (cilium-dbg monitor reads it); give "
            "monitor_socket its path on this node, or '' to read no flows."))
    return monitor


def node_check(params, runner=None, read_metrics=get_metrics, sleep=time.sleep, own_addresses=None,
               read_monitor=cilium_monitor.read_drops, clock=time.monotonic):
    """The Cilium agent check of this node: ``params`` (cilium_agent_status' options) in,
    ``{"data": {applicable, skip_reason, agent, health, metrics}, "findings": [...]}`` out.

    The metrics are read twice ``interval`` seconds apart; the agent's and cilium-health's status
    are read in the window.  ``runner`` reads the node's addresses (netlink) when ``metrics_url`` is not
    loopback, to refuse a URL outside the node."""
    interval, timeout = validate(params)
    subject = params.get("node_name") or socket.gethostname()
    agent_path = params.get("agent_socket") or AGENT_SOCKET
    health_path = params.get("health_socket") or HEALTH_SOCKET
    url = params.get("metrics_url")
    if url is None:
        url = METRICS_URL
    if url:
        check_metrics_host(url, own_addresses or (lambda: node_addresses(runner)))
    if socket_state(agent_path) == "absent":
        return _agent_absent(params, subject, agent_path)
    found = []
    reads = {}

    def read_status():
        try:
            reads["agent"] = get_json(agent_path, HEALTHZ_PATH, timeout)
        except Unreachable as exc:
            reads["agent_error"] = exc
        try:
            reads["health"] = get_json(health_path, HEALTH_STATUS_PATH, timeout)
        except Unreachable as exc:
            reads["health_error"] = exc

    monitor_path = params.get("monitor_socket")
    monitor_path = MONITOR_SOCKET if monitor_path is None else monitor_path
    watched = {}

    def watch(seconds):
        """The interval's wait, spent reading the agent's drop notifications (the wait is kept when it fails)."""
        started = clock()
        try:
            watched["summary"] = read_monitor(monitor_path, seconds)
        except (OSError, cilium_monitor.GobError) as exc:
            watched["error"] = exc
        left = seconds - (clock() - started)
        if left > 0:
            sleep(left)

    wait = watch if monitor_path and interval > 0 else sleep
    metrics = {"url": url or None, "status": "not read"}
    before = after = None
    window = 0.0
    if url:
        try:
            before, after, window = sample_metrics(url, interval, timeout, read=read_metrics, sleep=wait,
                                                   during=read_status)
            metrics.update(status="ok", samples=len(after), seconds=window)
        except Unreachable as exc:
            metrics.update(status=exc.reason, error=exc.message)
            if "agent" not in reads and "agent_error" not in reads:
                read_status()
    else:
        read_status()
        if wait is watch:
            watch(interval)
    if "summary" not in watched and "error" not in watched and wait is watch:
        watch(interval)  # the metrics failed before their window: the flows still get theirs

    agent = _agent_view(reads, agent_path, subject, found)
    health = _health_view(reads, health_path, subject, params.get("top", 10), found)
    found.extend(_metrics_findings(params, metrics, url, (before, after, window), subject))
    monitor = _monitor_view(watched, monitor_path, agent_path, timeout, subject, params.get("top", 10), found)
    data = {"applicable": True, "skip_reason": "", "agent": agent, "health": health, "metrics": metrics,
            "monitor": monitor}
    return {"data": data, "findings": sort_findings(found)}
