# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pod logs and events through the Kubernetes API, matched against the log signature table (controller side).

For each target (the CNI agents, coredns, the MetalLB speakers, the F5 controller: a namespace and a label
selector), the pods' containers' last lines (``tailLines``, ``sinceSeconds``, ``limitBytes``: the API
server bounds them) and, for a container that restarted, the previous container's lines; the events of
those pods and of the nodes asked for.  Every line and event goes through ``logs.match``; the findings
are the node-side ones (``logs.findings``), their subject the pod's node and name (``node2/calico-node-x``,
the subject of ``node.cni_pod_crashloop``) or the node of a node event.
"""

from __future__ import annotations

import calendar
import functools
import re
import time

from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import optional_read
from ansible_collections.k8snet.triage.plugins.module_utils.logs.kube_logs_options import RULES

# The agents whose logs explain network symptoms, as their upstream manifests label them.
DEFAULT_TARGETS = (
    {"name": "calico-node", "namespace": "kube-system", "label_selector": "k8s-app=calico-node", "per_node": True},
    {"name": "calico-node", "namespace": "calico-system", "label_selector": "k8s-app=calico-node", "per_node": True},
    {"name": "cilium", "namespace": "kube-system", "label_selector": "k8s-app=cilium", "per_node": True},
    {"name": "coredns", "namespace": "kube-system", "label_selector": "k8s-app=kube-dns", "per_node": False},
    {"name": "metallb-speaker", "namespace": "metallb-system", "label_selector": "component=speaker", "per_node": True},
    {"name": "f5-cis", "namespace": "kube-system", "label_selector": "app=k8s-bigip-ctlr", "per_node": False},
)
EVENTS_SHOWN = 20


def _epoch(stamp):
    """Seconds of an RFC 3339 time as the API writes it (``2026-11-30T10:00:00Z``, fractions allowed)."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return None
    try:
        return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def log_entries(text, subject, origin):
    """Entries of a log fetched with ``timestamps=true`` (each line: an RFC 3339 time, a space, the line)."""
    entries = []
    for line in text.splitlines():
        stamp, _sep, rest = line.partition(" ")
        if _epoch(stamp) is None:
            stamp, rest = logs.line_time(line)[0], line
        entries.append({"text": rest[:logs.MAX_LINE], "time": stamp, "subject": subject, "origin": origin})
    return entries


def event_time(event):
    """The time an event was last seen. An event written through events.k8s.io/v1 (client-go's new recorder) has no
    lastTimestamp in its core/v1 view: its eventTime is its first observation, a recurring one's last is its
    series' lastObservedTime."""
    return (event.get("lastTimestamp") or (event.get("series") or {}).get("lastObservedTime") or event.get("eventTime")
            or event.get("firstTimestamp") or meta(event, "creationTimestamp"))


def event_count(event):
    """How often an event was seen: its count, or (events.k8s.io/v1, no count in the core/v1 view) its series'."""
    return event.get("count") or (event.get("series") or {}).get("count") or 1


def event_entry(event, subject):
    """An event as one line: ``Warning FailedCreatePodSandBox Pod/web-1: <message>``."""
    obj = event.get("involvedObject") or {}
    text = "%s %s %s/%s: %s" % (event.get("type") or "", event.get("reason") or "", obj.get("kind") or "",
                                obj.get("name") or "", event.get("message") or "")
    return {"text": text[:logs.MAX_LINE], "time": event_time(event), "subject": subject,
            "origin": "event %s/%s" % (meta(event, "namespace") or "", meta(event, "name") or "")}


def _restarted(status):
    return bool(status and ((status.get("lastState") or {}).get("terminated") or status.get("restartCount")))


def _started(status):
    state = (status or {}).get("state") or {}
    return bool(state.get("running") or state.get("terminated"))


def _healthy(pod):
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


def _restarts(pod):
    return sum(s.get("restartCount", 0) for s in (pod.get("status") or {}).get("containerStatuses") or [])


def pod_subject(pod):
    node = (pod.get("spec") or {}).get("nodeName")
    return "%s/%s" % (node, meta(pod, "name")) if node else "%s/%s" % (meta(pod, "namespace"), meta(pod, "name"))


def read_pod(kube, pod, containers, tail_lines, since_seconds, limit_bytes, kubelets_down=None):
    """(entries, row) for one pod: each container's current log (when it started) and previous log (when it restarted).

    ``kubelets_down``: {node: the error of a log read there the API server could not proxy to the node's kubelet};
    the logs of a pod on such a node are not asked again (each read would wait out the client's retries), and a
    new such failure is added to it."""
    kubelets_down = {} if kubelets_down is None else kubelets_down
    namespace, name = meta(pod, "namespace"), meta(pod, "name")
    subject = pod_subject(pod)
    statuses = dict((s.get("name"), s) for s in (pod.get("status") or {}).get("containerStatuses") or [])
    entries, row = [], {"namespace": namespace, "name": name, "node": (pod.get("spec") or {}).get("nodeName"),
                        "phase": (pod.get("status") or {}).get("phase"), "containers": []}
    for container in (pod.get("spec") or {}).get("containers") or []:
        cname = container.get("name")
        if containers and cname not in containers:
            continue
        status = statuses.get(cname)
        item = {"name": cname, "restarts": (status or {}).get("restartCount", 0), "lines": 0, "previous_lines": 0,
                "errors": []}
        for previous in (False, True):
            if (not previous and not _started(status)) or (previous and not _restarted(status)):
                continue
            origin = "%s/%s %s%s" % (namespace, name, cname, " previous" if previous else "")
            if row["node"] in kubelets_down:
                item["errors"].append("not asked: the API server could not reach the kubelet of %s on an earlier "
                                      "log read" % row["node"])
                continue
            try:
                text = kube.pod_log(namespace, name, cname, previous=previous, tail_lines=tail_lines,
                                    since_seconds=since_seconds, limit_bytes=limit_bytes)
            except (ReadError, PrivilegeError) as exc:
                item["errors"].append(exc.message[:300])
                if row["node"] and kubelet_unreachable(exc.message):
                    kubelets_down[row["node"]] = exc.message
                continue
            got = log_entries(text, subject, origin)
            item["previous_lines" if previous else "lines"] = len(got)
            entries.extend(got)
        row["containers"].append(item)
    return entries, row


LAST_LINES = 10
WAITING = ("ContainerCreating", "PodInitializing")


def _pod_state(pod):
    """(phase, waiting reasons, last termination) of a pod, as kubectl describe shows them."""
    status = pod.get("status") or {}
    waiting, last = [], None
    for item in status.get("containerStatuses") or []:
        reason = ((item.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            waiting.append(reason)
        ended = (item.get("lastState") or {}).get("terminated")
        if ended and last is None:
            last = {"container": item.get("name"), "reason": ended.get("reason"), "exit_code": ended.get("exitCode"),
                    "finished": ended.get("finishedAt")}
    return status.get("phase"), waiting, last


def _state_text(phase, waiting, restarts, last):
    """A pod's state in one line: ``phase Pending; waiting: ContainerCreating; 3 restarts; last exit 1 (Error)``."""
    parts = ["phase %s" % phase if phase else "",
             "waiting: %s" % ", ".join(sorted(set(waiting))) if waiting else "",
             "%d restart%s" % (restarts, "" if restarts == 1 else "s") if restarts else "",
             "last exit %s (%s)" % (last["exit_code"], last["reason"]) if last else ""]
    return "; ".join(part for part in parts if part)


def _about(pod, state):
    """What the findings of one pod say of it: subject, namespace/name, node, where it runs and its state."""
    node = (pod.get("spec") or {}).get("nodeName")
    return {"subject": pod_subject(pod), "name": "%s/%s" % (meta(pod, "namespace"), meta(pod, "name")),
            "node": node, "where": " on %s" % node if node else " (not scheduled)", "state": state}


def _crash_unexplained(pod, lines, about, last):
    """``log.crash_unexplained`` with the pod's last lines (the previous container's first), or None without lines."""
    previous = [e for e in lines if e["origin"].endswith(" previous")]
    shown = (previous or lines)[-LAST_LINES:]
    if not shown:
        return None
    name, node, state = about["name"], about["node"], about["state"]
    texts = [{"time": e["time"], "text": logs.excerpt(e["text"]), "origin": e["origin"]} for e in shown]
    return finding(
        "log.crash_unexplained", "info", "control-plane", about["subject"],
        "%s%s is not running and ready (%s) and none of its %d log lines matches a known network "
        "signature; its last line: %s" % (name, about["where"], state, len(lines), texts[-1]["text"]),
        {"pod": name, "node": node, "state": state, "last_termination": last, "last_lines": texts,
         "lines_read": len(lines)},
        "read the last lines below (kubectl logs -n %s %s%s) for the cause the signatures do not "
        "know" % (meta(pod, "namespace"), meta(pod, "name"), " --previous" if previous else ""))


def _not_started_events(pod, events, about):
    """``log.pod_not_started`` (warning) with the pod's Warning ``events``, latest first."""
    name, node, state = about["name"], about["node"], about["state"]
    events = sorted(events, key=lambda e: event_time(e) or "", reverse=True)
    latest = events[0]
    rows = [{"time": event_time(e), "reason": e.get("reason"), "count": event_count(e),
             "message": logs.excerpt(e.get("message") or "", 300)} for e in events[:LAST_LINES]]
    return finding(
        "log.pod_not_started", "warning", "control-plane", about["subject"],
        "%s%s has not started (%s): %s %s" % (
            name, about["where"], state, latest.get("reason") or "", logs.excerpt(latest.get("message") or "", 300)),
        {"pod": name, "node": node, "state": state, "events": rows, "events_count": len(events)},
        "the events say why the pod cannot start (kubectl describe pod -n %s %s): a sandbox the CNI could "
        "not set up, a volume, an image, or no node that fits" % (meta(pod, "namespace"), meta(pod, "name")))


def _not_started_silent(pod, about):
    """``log.pod_not_started`` (info) of a pod none of whose events (read) says why it has not started."""
    name, state = about["name"], about["state"]
    return finding(
        "log.pod_not_started", "info", "control-plane", about["subject"],
        "%s%s has not started (%s): no Warning event of it says why" % (name, about["where"], state or "no status"),
        {"pod": name, "node": about["node"], "state": state, "events": [], "events_count": 0},
        "kubectl describe pod -n %s %s; on the node, the runtime's view (crictl pods, crictl ps -a) and "
        "kubelet's log" % (meta(pod, "namespace"), meta(pod, "name")))


def unexplained(pod, lines, events, events_read=True):
    """Findings for a pod that is not running and ready, or restarted, and whose lines and events matched no
    signature: ``log.crash_unexplained`` (info: its last lines as they are, previous container first) and
    ``log.pod_not_started`` (warning: the Warning events of a Pending or ContainerCreating pod, latest first;
    info when the events were read and none says why).  A healthy pod that never restarted gives nothing."""
    phase, waiting, last = _pod_state(pod)
    restarts = _restarts(pod)
    if _healthy(pod) and not restarts:
        return []
    about = _about(pod, _state_text(phase, waiting, restarts, last))
    crash = _crash_unexplained(pod, lines, about, last)
    found = [crash] if crash else []
    starting = phase == "Pending" or bool(set(waiting) & set(WAITING))
    if events and starting:
        found.append(_not_started_events(pod, events, about))
    elif starting and not lines and events_read:
        found.append(_not_started_silent(pod, about))
    return found


def _pod_events(kube, namespace, pods, pod_events):
    """(events as (event, subject), the read_skipped finding or None) of the pods read in ``namespace``; their
    Warning events are also kept per pod in ``pod_events``."""
    read = functools.partial(kube.events, namespace, field_selector="involvedObject.kind=Pod")
    got, failed = optional_read(read, "the events of namespace %s" % namespace, namespace, "pod events")
    events = []
    for event in got or []:
        name = (event.get("involvedObject") or {}).get("name")
        if name in pods:
            events.append((event, pod_subject(pods[name])))
            if event.get("type") == "Warning":
                pod_events.setdefault((namespace, name), []).append(event)
    return events, failed


def _controller_events(kube, namespace):
    """(events as (event, subject), the read_skipped finding or None) of the FailedCreate events of the
    controllers (not pods) of ``namespace``."""
    # a pod its controller could not create has no events of its own: the controller's FailedCreate
    # events say why (an admission webhook that did not answer, a quota)
    read = functools.partial(kube.events, namespace, field_selector="reason=FailedCreate")
    got, failed = optional_read(read, "the FailedCreate events of namespace %s" % namespace, namespace,
                                "controller events")
    events = []
    for event in got or []:
        obj = event.get("involvedObject") or {}
        if obj.get("kind") != "Pod":
            events.append((event, "%s/%s/%s" % (namespace, obj.get("kind"), obj.get("name"))))
    return events, failed


def _node_events(kube, nodes):
    """(events as (event, node name), the read_skipped finding or None) of the ``nodes`` (namespace default)."""
    got, failed = optional_read(lambda: kube.events("default", field_selector="involvedObject.kind=Node"),
                                "the node events (namespace default)", "default", "node events")
    events = []
    for event in got or []:
        name = (event.get("involvedObject") or {}).get("name")
        if name in nodes:
            events.append((event, name))
    return events, failed


def _event_entries(events, oldest):
    """(entries, Warning rows) of the (event, subject) pairs newer than ``oldest`` (or without a time)."""
    entries, warnings = [], []
    for event, subject in events:
        stamp = _epoch(event_time(event))
        if stamp is not None and stamp < oldest:
            continue
        entries.append(event_entry(event, subject))
        if event.get("type") == "Warning":
            warnings.append({"time": event_time(event), "subject": subject, "reason": event.get("reason"),
                             "count": event_count(event),
                             "message": logs.excerpt(event.get("message") or "", 200)})
    return entries, warnings


def _read_events(kube, pods_by_namespace, nodes, oldest):
    """The events of the pods read (and their controllers' FailedCreate events) and of the nodes, newer than
    ``oldest``: ``{"entries", "warnings", "skipped", "pod_events", "failed"}``.  Events are optional: a 403, a
    timeout or a malformed answer is a ``kube.read_skipped`` warning and the logs still count."""
    skipped, pod_events, events_failed, events = [], {}, set(), []
    for namespace, pods in sorted(pods_by_namespace.items()):
        got, failed = _pod_events(kube, namespace, pods, pod_events)
        skipped.extend([failed] if failed else [])
        if failed:
            events_failed.add(namespace)
        events.extend(got)
        got, failed = _controller_events(kube, namespace)
        skipped.extend([failed] if failed else [])
        events.extend(got)
    if nodes:
        got, failed = _node_events(kube, nodes)
        skipped.extend([failed] if failed else [])
        events.extend(got)
    entries, warnings = _event_entries(events, oldest)
    return {"entries": entries, "warnings": warnings, "skipped": skipped, "pod_events": pod_events,
            "failed": events_failed}


def _settings(checked, params):
    """The options of a run, checked, with their defaults (the default targets when none are given)."""
    targets = checked.get("targets")
    return {
        "targets": [dict(t) for t in DEFAULT_TARGETS] if targets is None else targets,
        "nodes": checked.get("nodes") or [],
        "tail_lines": checked.get("tail_lines", 200),
        "since_seconds": checked.get("since_seconds", 3600),
        "limit_bytes": checked.get("limit_bytes", 262144),
        "max_pods": checked.get("max_pods", 20),
        "events": params.get("events", True),
    }


def _target_pods(kube, target, nodes, max_pods):
    """The pods of one target (those on ``nodes`` for a per-node target), the ones that explain most first,
    at most ``max_pods``."""
    pods = kube.pods(target["namespace"], label_selector=target["label_selector"])
    if nodes and target.get("per_node"):
        pods = [p for p in pods if (p.get("spec") or {}).get("nodeName") in nodes]
    # the pods that explain most first: not running and ready, then the most restarted (a crash loop)
    return sorted(pods, key=lambda p: (_healthy(p), -_restarts(p), meta(p, "name")))[:max_pods]


def _read_logs(kube, settings):
    """The logs of every target's pods, each pod read once: ``{"entries", "pods", "errors", "lines",
    "by_namespace"}`` (the rows of the pods read, the container logs that could not be read, the entries
    per pod, the pods read per namespace and name)."""
    entries, pods_read, errors, seen, pod_lines, kubelets_down = [], [], [], set(), {}, {}
    pods_by_namespace = {}
    for target in settings["targets"]:
        for pod in _target_pods(kube, target, settings["nodes"], settings["max_pods"]):
            key = (meta(pod, "namespace"), meta(pod, "name"))
            if key in seen:
                continue
            seen.add(key)
            pods_by_namespace.setdefault(key[0], {})[key[1]] = pod
            got, row = read_pod(kube, pod, target.get("containers") or [], settings["tail_lines"],
                                settings["since_seconds"], settings["limit_bytes"], kubelets_down)
            row["target"] = target["name"]
            entries.extend(got)
            pods_read.append(row)
            pod_lines[key] = got
            errors.extend("%s/%s %s: %s" % (key[0], key[1], c["name"], e) for c in row["containers"] for e in c["errors"])
    return {"entries": entries, "pods": pods_read, "errors": errors, "lines": pod_lines,
            "by_namespace": pods_by_namespace}


def _unexplained_pods(read, events, explained, want_events):
    """``unexplained`` of every pod read whose subject no signature matched, in namespace and name order."""
    found = []
    for namespace, pods in sorted(read["by_namespace"].items()):
        for name, pod in sorted(pods.items()):
            if pod_subject(pod) not in explained:
                found.extend(unexplained(pod, read["lines"].get((namespace, name)) or [],
                                         events["pod_events"].get((namespace, name)) or [],
                                         events_read=want_events and namespace not in events["failed"]))
    return found


# the API server's error when its proxy to a node's kubelet fails: a 5xx naming the kubelet's log endpoint
SERVER_ERROR = re.compile(r"HTTP 5\d\d")
KUBELET_LOG_URL = re.compile(r":(\d+)/containerLogs/")


def kubelet_unreachable(error):
    """The kubelet port of a log read the API server answered with a 5xx naming the kubelet's log endpoint (its
    proxy to the node's kubelet failed), else None."""
    match = KUBELET_LOG_URL.search(error)
    return int(match.group(1)) if match and SERVER_ERROR.search(error) else None


def _kubelets_unreachable(rows):
    """{node: kubelet port} of the pods whose log read failed because the API server could not reach the kubelet."""
    out = {}
    for row in rows:
        for container in row["containers"]:
            for error in container["errors"]:
                port = kubelet_unreachable(error)
                if port and row.get("node"):
                    out[row["node"]] = port
    return out


def _summary_findings(read, groups, targets, want_events, entries):
    """``log.not_readable`` (container logs that could not be read) and ``log.no_signature`` (nothing matched)."""
    found = []
    errors = read["errors"]
    if errors:
        kubelets = _kubelets_unreachable(read["pods"])
        summary = "%d container log%s could not be read through the API" % (len(errors), "" if len(errors) == 1 else "s")
        evidence = {"errors": sample(errors)}
        advice = "the errors name the cause: RBAC needs get on pods/log; a container that never started has no log"
        if kubelets:
            ports = sorted(set(kubelets.values()))
            summary += "; the API server could not reach the kubelet of %s" % ", ".join(sorted(kubelets))
            evidence["kubelets_unreachable"] = [{"node": n, "port": kubelets[n]} for n in sorted(kubelets)]
            advice = ("the API server reads a pod's log from its node's kubelet: on %s check that the kubelet runs "
                      "and that port %s on the node's address is reachable from the control plane (a firewall, "
                      "a security group, the node's address or name as the API server resolves it); then %s" % (
                          ", ".join(sorted(kubelets)), "/".join(str(port) for port in ports), advice))
        found.append(finding("log.not_readable", "warning", "control-plane", "cluster", summary, evidence, advice))
    if not groups:
        found.append(_no_signature(read, targets, want_events, entries))
    return found


def _no_signature(read, targets, want_events, entries):
    """``log.no_signature``: what was read, and the pods' lines a reader should see - the newest at error or
    warning level, else the last ones (bounded, masked) - since no signature says what they mean."""
    pod_lines = [e for key in sorted(read["lines"]) for e in read["lines"][key]]
    shown, kind = logs.unmatched_lines(pod_lines)
    summary = "%d pods of %s and %s read (%d lines and events): none matches a known network signature" % (
        len(read["pods"]), ", ".join(sorted(set(t["name"] for t in targets))) or "no target",
        "their events" if want_events else "no events", len(entries))
    if shown and kind == "errors":
        summary += "; %s at error or warning level, the latest (%s): %s" % (
            "%d lines" % len(shown) if len(shown) > 1 else "one line", shown[-1]["origin"], shown[-1]["text"])
    return finding(
        "log.no_signature", "info", "control-plane", "cluster", summary,
        {"pods": len(read["pods"]), "lines": len(entries), "shown": shown, "shown_kind": kind},
        "read the lines shown (evidence.shown: %s) for a cause the signatures do not know (kubectl logs -n "
        "<namespace> <pod> names the rest)" % ("the newest at error or warning level" if kind == "errors"
                                               else "the last lines read") if shown else "")


def api_check(params, kube_factory, now=None):
    """The whole kube_logs run: ``params`` in, ``{"data": {"pods", "events", "matches"}, "findings": [...]}`` out."""
    checked = rules.validate(params, RULES)
    now = time.time() if now is None else now
    settings = _settings(checked, params)
    want_events = settings["events"]
    kube = kube_factory(params)

    read = _read_logs(kube, settings)
    entries = read["entries"]
    events = {"warnings": [], "skipped": [], "pod_events": {}, "failed": set()}
    if want_events:
        events = _read_events(kube, read["by_namespace"], settings["nodes"], now - settings["since_seconds"])
        entries.extend(events["entries"])

    groups = logs.match(entries)
    found = logs.findings(groups) + events["skipped"]
    found.extend(_unexplained_pods(read, events, set(g["subject"] for g in groups), want_events))
    found.extend(_summary_findings(read, groups, settings["targets"], want_events, entries))
    warnings = sorted(events["warnings"], key=lambda w: w["time"] or "", reverse=True)
    return {"data": {"pods": read["pods"], "events": warnings[:EVENTS_SHOWN], "events_count": len(warnings),
                     "matches": [logs.group_data(g) for g in groups]},
            "findings": sort_findings(found)}
