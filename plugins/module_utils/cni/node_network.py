# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Node network status from the API: conditions, taints, and the CNI agent pod of each node.

Pure functions over Node and Pod objects (plain dicts).  Times are compared with ``now``
(seconds since the epoch) given by the caller, so checks are testable on fixtures.
"""

from __future__ import annotations

import calendar
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import collapse, finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import condition, meta
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import optional_read
from ansible_collections.k8snet.triage.plugins.module_utils.cni import sandboxes

DEFAULT_CNI_DAEMONSETS = ("calico-node", "cilium", "anetd")
DEFAULT_CNI_NAMESPACES = ("kube-system", "calico-system")
WATCHED_TAINTS = ("node.kubernetes.io/network-unavailable", "node.kubernetes.io/not-ready",
                  "node.kubernetes.io/unreachable", "node.cilium.io/agent-not-ready")
# The agent ConfigMap of Cilium (and of anetd, its GDC build) and its keys that decide whether the agent writes
# the node's CNI configuration: Cilium's Helm chart (templates/cilium-configmap.yaml) documents custom-cni-conf
# ("Users who wish to specify their own custom CNI configuration file must set custom-cni-conf to true, otherwise
# Cilium may overwrite the configuration"); write-cni-conf-when-ready makes the agent write the file only once it
# is ready.
AGENT_CONFIGMAPS = ("cilium-config",)
AGENT_CNI_KEYS = ("custom-cni-conf", "write-cni-conf-when-ready", "cni-exclusive", "cni-chaining-mode")
CNI_NOT_READY_MARKERS = ("NetworkPluginNotReady", "cni plugin not initialized", "Network plugin not installed")
# beyond this many nodes with the same finding, one finding says it for them all (count, the first few): 3,000
# NotReady nodes are one problem to read, not 3,000
COLLAPSE_OVER = 20


def parse_time(value):
    """RFC 3339 ``2026-01-01T10:00:00Z`` -> epoch seconds (None when absent or odd)."""
    if not value:
        return None
    try:
        return calendar.timegm(time.strptime(value.replace("Z", "")[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def _condition_model(cond, now):
    if not cond:
        return None
    since = parse_time(cond.get("lastTransitionTime"))
    return {"status": cond.get("status"), "reason": cond.get("reason"), "message": cond.get("message"),
            "since": cond.get("lastTransitionTime"), "seconds": int(now - since) if since is not None else None}


def _exit_code_between_restarts(statuses):
    """The exit code of a container that failed again after a restart and is not running now (a crash loop between
    two back-offs: the real kubelet shows ``state.terminated`` for a moment before ``waiting: CrashLoopBackOff``),
    else None."""
    for cs in statuses:
        code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
        if cs.get("restartCount", 0) >= 1 and isinstance(code, int) and code != 0:
            return code
    return None


def cni_pod_model(pod):
    """phase / ready / restarts / waiting reason of one CNI agent pod, and the exit code of a container that failed
    again after a restart (only when there is one)."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    waiting = [((cs.get("state") or {}).get("waiting") or {}).get("reason") for cs in statuses]
    model = {
        "name": meta(pod, "name"),
        "namespace": meta(pod, "namespace"),
        "daemonset": owner_daemonset(pod),
        "phase": status.get("phase"),
        "ready": (condition(pod, "Ready") or {}).get("status") == "True",
        "restarts": sum(cs.get("restartCount", 0) for cs in statuses),
        "waiting": next((w for w in waiting if w), None),
    }
    code = _exit_code_between_restarts(statuses)
    if code is not None:
        model["exit_code"] = code
    return model


def owner_daemonset(pod):
    for owner in meta(pod, "ownerReferences") or []:
        if owner.get("kind") == "DaemonSet":
            return owner.get("name")
    return None


def waiting_pod_model(pod):
    """phase / waiting reason / owner of a pod (not the CNI's, not on the host network) that is not running and ready."""
    status = pod.get("status") or {}
    waiting = [((cs.get("state") or {}).get("waiting") or {}).get("reason")
               for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])]
    owner = next(({"kind": o.get("kind"), "name": o.get("name")} for o in meta(pod, "ownerReferences") or []), None)
    return {"name": meta(pod, "name"), "namespace": meta(pod, "namespace"), "phase": status.get("phase"),
            "waiting": next((w for w in waiting if w), None), "owner": owner}


def _waits_for_network(pod, daemonsets):
    """A pod of the CNI's namespaces that needs the pod network and is not running and ready."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork") or owner_daemonset(pod) in daemonsets:
        return False
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    return not (status.get("phase") == "Running" and (condition(pod, "Ready") or {}).get("status") == "True")


def node_model(node, cni_pods, now, waiting_pods=()):
    """The compact status of one node: conditions, watched taints, its CNI pods, and the other pods of the CNI's
    namespaces on it that wait for the pod network (``waiting_pods``, already filtered)."""
    name = meta(node, "name")
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") in WATCHED_TAINTS]
    return {
        "name": name,
        "ready": _condition_model(condition(node, "Ready"), now),
        "network_unavailable": _condition_model(condition(node, "NetworkUnavailable"), now),
        "taints": ["%s:%s" % (t.get("key"), t.get("effect")) for t in taints],
        "cni_pods": [cni_pod_model(p) for p in cni_pods if (p.get("spec") or {}).get("nodeName") == name],
        "waiting_pods": [waiting_pod_model(p) for p in waiting_pods if (p.get("spec") or {}).get("nodeName") == name],
    }


def _duration(seconds):
    if seconds is None:
        return "an unknown time"
    if seconds < 120:
        return "%ds" % seconds
    if seconds < 7200:
        return "%dm" % (seconds // 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def _is_true(cond):
    """A condition model that is present and True."""
    return bool(cond and cond["status"] == "True")


def _network_unavailable(model, stuck_after):
    """node.network_unavailable while NetworkUnavailable is True (critical once stuck past ``stuck_after``)."""
    name, nu = model["name"], model["network_unavailable"]
    if not _is_true(nu):
        return None
    stuck = nu["seconds"] is None or nu["seconds"] >= stuck_after
    return finding(
        "node.network_unavailable", "critical" if stuck else "warning", "L3", name,
        "NetworkUnavailable has been True for %s (%s: %s)%s" % (
            _duration(nu["seconds"]), nu["reason"], nu["message"],
            "; stuck past %ds" % stuck_after if stuck else "; normal for a few seconds while the CNI agent restarts"),
        {"reason": nu["reason"], "message": nu["message"], "since": nu["since"], "seconds": nu["seconds"],
         "taints": model["taints"], "cni_pods": [p["name"] for p in model["cni_pods"]]},
        "look at the CNI agent pod on %s (logs, restarts); the CNI clears the condition when it is up" % name)


def _cni_not_ready(model):
    """node.cni_not_ready when Ready is not True and kubelet's message says the container network is not ready."""
    name, ready = model["name"], model["ready"]
    if not (ready and ready["status"] != "True" and any(m in (ready["message"] or "") for m in CNI_NOT_READY_MARKERS)):
        return None
    return finding(
        "node.cni_not_ready", "critical", "L3", name,
        "kubelet reports the container network not ready: %s" % ready["message"],
        {"reason": ready["reason"], "since": ready["since"], "seconds": ready["seconds"], "taints": model["taints"]},
        "check the CNI config and binaries on the node (/etc/cni/net.d, /opt/cni/bin: the cni role's "
        "node-side check) and the CNI agent pod on it")


def _pods_waiting_for_network(model):
    """node.pods_waiting_for_network for the node's system pods that wait for the pod network (None: none wait)."""
    name, waiting = model["name"], model.get("waiting_pods") or []
    if not waiting:
        return None
    shown = ", ".join("%s/%s (%s)" % (p["namespace"], p["name"], p["waiting"] or p["phase"] or "not ready")
                      for p in waiting[:5])
    return finding(
        "node.pods_waiting_for_network", "warning", "L3", name,
        "%d system pod%s on %s wait%s for the pod network: %s%s" % (
            len(waiting), "" if len(waiting) == 1 else "s", name, "s" if len(waiting) == 1 else "",
            shown, ", ..." if len(waiting) > 5 else ""),
        {"pods": ["%s/%s" % (p["namespace"], p["name"]) for p in waiting[:20]], "count": len(waiting),
         "phases": dict(("%s/%s" % (p["namespace"], p["name"]), p["waiting"] or p["phase"]) for p in waiting[:20]),
         "owners": dict(("%s/%s" % (p["namespace"], p["name"]), "%s/%s" % (p["owner"]["kind"], p["owner"]["name"]))
                        for p in waiting[:20] if p["owner"])},
        "they start once the CNI agent on %s is up; until then what they serve is missing. When one of them is "
        "the API server's tunnel (vpn, konnectivity-agent) or an admission webhook's backend, the CNI may be "
        "waiting for it in turn (webhook.cni_deadlock); kubectl cordon %s and deleting the pod moves a "
        "Deployment's pod to a node with network" % (name, name))


def _cni_pod(name, pod, restart_threshold, network_unavailable):
    """node.cni_pod_crashloop or node.cni_pod_pending for one CNI agent pod (None: neither)."""
    died = pod.get("exit_code") is not None and not pod["ready"]
    if pod["waiting"] == "CrashLoopBackOff" or died or (not pod["ready"] and pod["restarts"] >= restart_threshold):
        state = pod["waiting"] or ("exited with code %d after a restart" % pod["exit_code"] if died else "not ready")
        return finding(
            "node.cni_pod_crashloop", "critical", "L3", "%s/%s" % (name, pod["name"]),
            "CNI agent pod %s on %s is crash-looping (%d restarts, %s)" % (pod["name"], name, pod["restarts"], state),
            {"phase": pod["phase"], "ready": pod["ready"], "restarts": pod["restarts"], "waiting": pod["waiting"],
             "exit_code": pod.get("exit_code")},
            "kubectl -n %s logs %s --previous; a circular dependency through an admission webhook "
            "shows as the agent failing to reach the API" % (pod["namespace"], pod["name"]))
    if pod["phase"] == "Pending":
        return finding(
            "node.cni_pod_pending", "critical" if network_unavailable else "warning", "L3",
            "%s/%s" % (name, pod["name"]),
            "CNI agent pod %s on %s is Pending (%s)" % (pod["name"], name, pod["waiting"] or "not started"),
            {"phase": pod["phase"], "waiting": pod["waiting"], "restarts": pod["restarts"]},
            "kubectl -n %s describe pod %s (image pull, resources, init containers)" % (pod["namespace"], pod["name"]))
    return None


def _cni_pods(model, restart_threshold, cni_expected):
    """The node's CNI agent pods: none where one is expected, crash-looping or Pending ones."""
    name, pods = model["name"], model["cni_pods"]
    found = []
    if not pods and cni_expected:
        found.append(finding(
            "node.cni_pod_missing", "critical", "L3", name,
            "no CNI agent pod runs on %s" % name,
            {"taints": model["taints"]},
            "check the DaemonSet's nodeSelector, tolerations and affinity against this node's labels and taints"))
    network_unavailable = _is_true(model["network_unavailable"])
    for pod in pods:
        item = _cni_pod(name, pod, restart_threshold, network_unavailable)
        if item is not None:
            found.append(item)
    return found


def check_node(model, stuck_after, restart_threshold, cni_expected=True):
    """Findings for one node model."""
    unavailable = _network_unavailable(model, stuck_after)
    not_ready = _cni_not_ready(model)
    found = [item for item in (unavailable, not_ready) if item is not None]
    if found:  # the node's network is down (network_down)
        waiting = _pods_waiting_for_network(model)
        found.extend([waiting] if waiting is not None else [])
    return found + _cni_pods(model, restart_threshold, cni_expected)


def network_down(model, stuck_after):
    """Whether check_node finds the node's network down (NetworkUnavailable, or the CNI not ready): then it names
    the system pods that wait on it (node.pods_waiting_for_network)."""
    return _network_unavailable(model, stuck_after) is not None or _cni_not_ready(model) is not None


def check_agent_configs(configs):
    """Findings on the CNI agents' ConfigMaps (``{"namespace/name": data}``): whether the agent writes the node's CNI
    configuration at all, and when."""
    found = []
    for ref, data in sorted(configs.items()):
        data = data or {}
        custom = str(data.get("custom-cni-conf", "")).strip().lower() == "true"
        when_ready = str(data.get("write-cni-conf-when-ready", "")).strip()
        if not (custom or when_ready):
            continue
        evidence = dict((key, data[key]) for key in AGENT_CNI_KEYS if key in data)
        evidence["configmap"] = ref
        if custom:
            summary = ("%s sets custom-cni-conf: true, so the Cilium / anetd agent writes no CNI configuration: on a node "
                       "where /etc/cni/net.d has none (node.cni_config_missing) nothing but the installer that owns it "
                       "will put it back" % ref)
            remediation = ("have the owner of the CNI configuration install it on the nodes that miss it, or set "
                           "custom-cni-conf to false in %s and restart the agents (kubectl -n %s rollout restart "
                           "daemonset of the agent) so that they write it" % (ref, ref.split("/", 1)[0]))
        else:
            summary = ("%s sets write-cni-conf-when-ready (%s): the agent writes the CNI configuration only once it is "
                       "ready, so a node whose agent is not ready has none, by design" % (ref, when_ready))
            remediation = "bring the agent up on that node (its logs and events); the file follows"
        found.append(finding("node.cni_conf_by_agent_config", "info", "L3", "cluster", summary, evidence, remediation))
    return found


def check_nodes(nodes, pods, daemonsets, now, stuck_after=300, restart_threshold=5):
    """(node models, findings) for every node; pods are filtered to the CNI DaemonSets."""
    cni_pods = [p for p in pods if owner_daemonset(p) in daemonsets]
    by_node, waiting = {}, {}
    for pod in cni_pods:
        by_node.setdefault((pod.get("spec") or {}).get("nodeName"), []).append(pod)
    for pod in pods:
        if _waits_for_network(pod, daemonsets):
            waiting.setdefault((pod.get("spec") or {}).get("nodeName"), []).append(pod)
    models = [node_model(n, by_node.get(meta(n, "name"), []), now, waiting.get(meta(n, "name"), []))
              for n in sorted(nodes, key=lambda n: meta(n, "name"))]
    found = []
    if not cni_pods:
        found.append(finding(
            "node.cni_pod_missing", "warning", "L3", "cluster",
            "no pod of the DaemonSets %s was found: the CNI agent is not running anywhere, or it is another one"
            % ", ".join(daemonsets),
            {"daemonsets": list(daemonsets), "nodes": len(models)},
            "set cni_daemonsets / cni_namespaces to the CNI agent of this cluster"))
    per_node = []
    for model in models:
        per_node.extend(check_node(model, stuck_after, restart_threshold, cni_expected=bool(cni_pods)))
    found.extend(collapse(per_node, COLLAPSE_OVER, "nodes"))
    if not found:
        found.append(finding(
            "node.network_ok", "ok", "L3", "cluster",
            "%d nodes: no NetworkUnavailable, CNI ready, one ready CNI agent pod each" % len(models),
            {"nodes": sample(m["name"] for m in models)}))
    return models, found


def agent_configs(kube, pods, daemonsets):
    """The agents' ConfigMaps (``AGENT_CONFIGMAPS``) in the namespaces where a Cilium or anetd agent pod runs, read
    optionally: ``({"namespace/name": data}, [kube.read_skipped findings])``."""
    configs, skipped = {}, []
    namespaces = sorted(set(meta(p, "namespace") for p in pods if owner_daemonset(p) in daemonsets
                            and owner_daemonset(p) in ("cilium", "anetd")))
    for namespace in namespaces:
        for name in AGENT_CONFIGMAPS:
            obj, failed = optional_read(lambda ns=namespace, n=name: kube.get("configmaps", n, ns),
                                        "the ConfigMap %s/%s" % (namespace, name), "cluster", "the agent's CNI settings")
            skipped.extend([failed] if failed else [])
            if obj is not None:
                configs["%s/%s" % (namespace, name)] = obj.get("data") or {}
    return configs, skipped


# ----------------------------------------------------------------- the check (one shape)


def api_check(params, kube_factory, now=None):
    """The whole node_network_status run: ``params`` (its options, a plain dict) in,
    ``{"data": {"nodes": [...]}, "findings": [...]}`` out.  It reads the Kubernetes API, so it
    runs on the controller; ``kube_factory(params)`` builds the API client (``kube.Kube``), only
    once the options are known to be valid."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sort_findings

    stuck_after, restart_threshold = params.get("stuck_after", 300), params.get("restart_threshold", 5)
    if stuck_after < 0 or restart_threshold < 1:
        raise InputError("stuck_after must be >= 0 and restart_threshold >= 1 (got %s and %s)"
                         % (stuck_after, restart_threshold))
    kube = kube_factory(params)
    nodes = kube.nodes(label_selector=params.get("node_selector"))
    pods = []
    for namespace in params.get("cni_namespaces", list(DEFAULT_CNI_NAMESPACES)):
        pods.extend(kube.pods(namespace))
    daemonsets = params.get("cni_daemonsets", list(DEFAULT_CNI_DAEMONSETS))
    models, found = check_nodes(nodes, pods, daemonsets, time.time() if now is None else now, stuck_after,
                                restart_threshold)
    configs, skipped = agent_configs(kube, pods, daemonsets)
    found += check_agent_configs(configs) + skipped
    data = {"nodes": models}
    if params.get("pending_pods", True):
        data["pending_pods"], more = pending_pods(kube, params.get("cni_namespaces", list(DEFAULT_CNI_NAMESPACES)),
                                                  models, time.time() if now is None else now, stuck_after)
        found += more
    return {"data": data, "findings": sort_findings(found)}


def pending_pods(kube, cni_namespaces, models, now, stuck_after):
    """(what was read, findings) of the pods of all namespaces that wait for their sandbox (``sandboxes``): the
    Pending pods (filtered by the API server) and, only when some wait, the FailedCreatePodSandBox Events."""
    namespaces = set(cni_namespaces)
    down = set(m["name"] for m in models if network_down(m, stuck_after))
    waiting, failed = optional_read(
        lambda: kube.pods(field_selector=sandboxes.PENDING, keep=lambda p: sandboxes.waiting_pod(p, namespaces, down)),
        "the Pending pods of all namespaces", "cluster", "the pods waiting for their sandbox")
    if failed:
        return {"read": False, "waiting_for_sandbox": None}, [failed]
    found, events = [], None
    if waiting:
        events, failed = optional_read(
            lambda: kube.list("events", field_selector=sandboxes.SANDBOX_EVENTS, keep=sandboxes.sandbox_event),
            "the FailedCreatePodSandBox Events", "cluster", "the kubelet's error for the pods waiting for their sandbox")
        found.extend([failed] if failed else [])
    agents_down = [m["name"] for m in models if not any(p["ready"] for p in m["cni_pods"])]
    waits = sandboxes.check_waiting(waiting, events, now, stuck_after, parse_time, agents_down)
    found.extend([waits] if waits else [])
    return {"read": True, "waiting_for_sandbox": waits["evidence"]["count"] if waits else 0,
            "events_read": events is not None if waiting else None}, found
