# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pods of the whole cluster that wait for their sandbox: the CNI gave them no network.

Read at cluster scale: the Pending pods only (the API server filters them with the field selector
``status.phase=Pending``; of a pod only what the check needs stays in memory) and the ``FailedCreatePodSandBox``
Events only (field selector ``reason=``), never every pod or every Event.  Judged as one finding however many pods
wait: 20,000 pods waiting on the same CNI are one problem, said with its counts, the nodes and namespaces with the
most, the first pods and the CNI's own error.
"""

from __future__ import annotations

import re

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import condition, meta

PENDING = "status.phase=Pending"
SANDBOX_EVENTS = "reason=FailedCreatePodSandBox"
# the kubelet's condition (Kubernetes 1.29 and later) that the pod's sandbox and its network are set up
SANDBOX_CONDITION = "PodReadyToStartContainers"
# how many nodes, namespaces and error texts the evidence names (the counts are whole)
TOP = 10
# what makes two kubelet messages the same error: sandbox and container ids, pod names and uids are not
_IDS = ((re.compile(r'(sandbox|pod|container) "[^"]*"'), r'\1 "..."'), (re.compile(r"\b[0-9a-f]{64}\b"), "..."),
        (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "..."))
COMBINED = "(combined from similar events): "
_NETWORK = ("failed to setup network", "failed to set up sandbox container", "plugin type=", "cni plugin",
            "failed to find plugin", "NetworkPlugin")


def _since(pod):
    """When the pod began to wait: its sandbox condition's transition, else its scheduling, else its creation."""
    for name in (SANDBOX_CONDITION, "PodScheduled"):
        cond = condition(pod, name)
        if cond and cond.get("lastTransitionTime"):
            return cond["lastTransitionTime"]
    return meta(pod, "creationTimestamp")


def waiting_pod(pod, namespaces=(), down=()):
    """What the check keeps of a Pending pod that waits for its sandbox (``{"ref", "node", "since"}``), or None: not
    scheduled yet, on the host network, in one of ``namespaces`` (the CNI's) on a node of ``down`` (its network
    down: node.pods_waiting_for_network says them), or with its sandbox ready (pulling its image, waiting on a
    volume: not the network's doing)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node = spec.get("nodeName")
    if not node or spec.get("hostNetwork") or status.get("phase") != "Pending" or (
            meta(pod, "namespace") in namespaces and node in down):
        return None
    ready = condition(pod, SANDBOX_CONDITION)
    if ready is not None:
        if ready.get("status") != "False":
            return None
    else:  # a kubelet older than 1.29: no sandbox condition; no pod IP and every container still being created
        statuses = status.get("containerStatuses") or []
        if status.get("podIP") or not statuses or any(
                ((cs.get("state") or {}).get("waiting") or {}).get("reason") != "ContainerCreating" for cs in statuses):
            return None
    return {"ref": "%s/%s" % (meta(pod, "namespace"), meta(pod, "name")), "node": node, "since": _since(pod)}


def sandbox_event(event):
    """What the check keeps of a FailedCreatePodSandBox Event: the pod it is about, its message, its count."""
    involved = event.get("involvedObject") or {}
    if involved.get("kind") != "Pod":
        return None
    return {"ref": "%s/%s" % (involved.get("namespace"), involved.get("name")), "message": event.get("message") or "",
            "count": event.get("count") or 1}


def error_key(message):
    """A kubelet message with its ids and names replaced, so that the same error on 20,000 pods is one."""
    message = message.strip()
    if message.startswith(COMBINED):  # the kubelet's event aggregation says so before the message it kept
        message = message[len(COMBINED):]
    for pattern, replacement in _IDS:
        message = pattern.sub(replacement, message)
    return message.strip()


def _top(counts):
    return [{"name": name, "pods": n} for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]]


def check_waiting(waiting, events, now, stuck_after, parse_time, agents_down=()):
    """node.pods_waiting_for_sandbox: one finding for every pod past ``stuck_after`` seconds without its sandbox
    (``waiting``, from waiting_pod), with the errors of their Events (``events``, from sandbox_event; None when they
    could not be read); ``agents_down`` names the nodes whose CNI agent is not ready. None when no pod waits."""
    stuck = []
    for pod in waiting:
        since = parse_time(pod["since"])
        if since is None or now - since >= stuck_after:
            stuck.append(dict(pod, seconds=None if since is None else int(now - since)))
    if not stuck:
        return None
    stuck.sort(key=lambda p: (-(p["seconds"] or 0), p["ref"]))
    refs = set(p["ref"] for p in stuck)
    by_node, by_namespace, errors = {}, {}, {}
    for pod in stuck:
        by_node[pod["node"]] = by_node.get(pod["node"], 0) + 1
        namespace = pod["ref"].split("/", 1)[0]
        by_namespace[namespace] = by_namespace.get(namespace, 0) + 1
    for event in events or []:
        if event["ref"] in refs:
            entry = errors.setdefault(error_key(event["message"]), {"pods": set(), "events": 0,
                                                                    "first": event["message"]})
            entry["pods"].add(event["ref"])
            entry["events"] += 1
    told = sorted(errors.items(), key=lambda kv: (-len(kv[1]["pods"]), kv[0]))
    network = any(marker.lower() in key.lower() for key, dummy in told for marker in _NETWORK)
    down = sorted(set(by_node) & set(agents_down))
    oldest = max(p["seconds"] or 0 for p in stuck)
    error_text = ("; the kubelet's error (%d pod%s): %s" % (len(told[0][1]["pods"]), "" if len(told[0][1]["pods"]) == 1
                                                            else "s", told[0][1]["first"][:300])) if told else (
        "; no FailedCreatePodSandBox Event names them (expired after an hour, or not readable)")
    return finding(
        "node.pods_waiting_for_sandbox", "critical" if network or down else "warning", "L3",
        "%d pod%s on %d node%s" % (len(stuck), "" if len(stuck) == 1 else "s", len(by_node),
                                   "" if len(by_node) == 1 else "s"),
        "%d pod%s in %d namespace%s on %d node%s wait%s for the sandbox the CNI sets up (the oldest for %ds)%s"
        % (len(stuck), "" if len(stuck) == 1 else "s", len(by_namespace), "" if len(by_namespace) == 1 else "s",
           len(by_node), "" if len(by_node) == 1 else "s", "s" if len(stuck) == 1 else "", oldest, error_text),
        {"count": len(stuck), "nodes_count": len(by_node), "namespaces_count": len(by_namespace),
         "pods": sample(p["ref"] for p in stuck), "nodes": _top(by_node), "namespaces": _top(by_namespace),
         "errors": [{"error": key[:500], "pods": len(entry["pods"]), "events": entry["events"]}
                    for key, entry in told[:TOP]],
         "errors_count": len(told), "events_read": events is not None,
         "nodes_with_cni_agent_down": sample(down), "oldest_seconds": oldest},
        "the kubelet's error names the cause (a CNI binary or configuration missing on the node, the CNI agent not "
        "running there, its IPAM out of addresses); on one of the nodes: kubectl get events -A --field-selector "
        "reason=FailedCreatePodSandBox,source=kubelet and the CNI agent pod on it (kubectl -n kube-system get pods -o "
        "wide --field-selector spec.nodeName=NODE). The pods start by themselves once their node's CNI works")
