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

The readers and the parser (``parse_metrics``) are in ``cilium_agent_reader``, the checks
(``agent_findings``, ``health_findings``, ``limiter_findings``, ``drop_findings``, pure) in
``cilium_agent_checks``; this file is the node check.  A node that shows nothing of Cilium (no agent socket, no pinned
``cilium_*`` map, no ``cilium-cni`` configuration) is not a Cilium node: the check says it does not
apply (``applicable`` false) and reports nothing.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import monitor as cilium_monitor
from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.agent_checks import (
    COMPONENTS, REMEDIATION, _get, _status, agent_findings, drop_findings, health_findings, limiter_findings)
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.agent_options import (
    AGENT_SOCKET, HEALTH_SOCKET, METRICS_URL, MONITOR_SOCKET, WHEN_NOT_CILIUM, skip_reason, split_url)
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.agent_reader import (
    DROP_METRIC, ENDPOINTS_PATH, HEALTHZ_PATH, HEALTH_STATUS_PATH, Unreachable, get_json, get_metrics, socket_state,
    sum_by)
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample, sort_findings
# imported here, not in node_addresses: the one pass runs this check in a thread while its main thread
# may be importing (a lazy import there raced: ImportError in the AnsiballZ payload)
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink


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


def _read_window(params, agent_path, health_path, url, interval, timeout, read_metrics, sleep, read_monitor, clock):
    """The reads of one window: the metrics twice ``interval`` seconds apart, the agent's and cilium-health's status
    in the window, and the monitor's drop notifications during the wait.  Returns (reads, watched, metrics,
    (before, after, window), monitor_path)."""
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

    return reads, watched, metrics, (before, after, window), monitor_path


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
    reads, watched, metrics, sampled, monitor_path = _read_window(
        params, agent_path, health_path, url, interval, timeout, read_metrics, sleep, read_monitor, clock)
    found = []
    agent = _agent_view(reads, agent_path, subject, found)
    health = _health_view(reads, health_path, subject, params.get("top", 10), found)
    found.extend(_metrics_findings(params, metrics, url, sampled, subject))
    monitor = _monitor_view(watched, monitor_path, agent_path, timeout, subject, params.get("top", 10), found)
    data = {"applicable": True, "skip_reason": "", "agent": agent, "health": health, "metrics": metrics,
            "monitor": monitor}
    return {"data": data, "findings": sort_findings(found)}
