# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Cilium agent's view, the checks (pure): the agent's status (components, controllers, stale probes, IPAM, kube-
proxy replacement), cilium-health's paths, the API rate limiter and the drop counters into findings.
"""

from __future__ import annotations

import re

from ansible_collections.k8snet.triage.plugins.module_utils.cilium.agent_reader import (
    DROP_METRIC, LIMITER_IN_FLIGHT, LIMITER_METRIC, LIMITER_RATE, growth, sum_by)
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample

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
