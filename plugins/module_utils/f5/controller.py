# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""F5 CIS, the controller and the mode: which controller pushes the ConfigMaps (GDC's load-balancer-f5, CIS's
k8s-bigip-ctlr Deployments and their arguments), whether it runs, and which mode a cluster is judged in.  Pure:
Deployments, pods and ConfigMaps (plain dicts) in, controllers, the mode and findings out.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import condition, meta

DEFAULT_CONTROLLERS = ("load-balancer-f5", "k8s-bigip-ctlr")
CONTROLLER_NAMESPACE = "kube-system"
GDC_CONTROLLER = "load-balancer-f5"
# GDC (Anthos on-prem) labels the F5 objects of its integrated mode with this
GDC_LABEL = "onprem.cluster.gke.io/legacy-f5-resource"
CIS_IMAGE = "k8s-bigip-ctlr"
MODES = {"gdc": "GDC integrated mode (load-balancer-f5)", "cis": "F5 CIS without GDC"}


def subject(cluster, ref):
    return "%s:%s" % (cluster, ref) if cluster else ref


def check_controllers(pods, prefixes, cluster=None, mode=None):
    """f5.controller_not_running for every prefix without a Running, ready pod in kube-system (``mode``, when
    given, goes into the evidence)."""
    found = []
    for prefix in prefixes:
        matching = [p for p in pods if (meta(p, "name") or "").startswith(prefix)]
        running = [p for p in matching if _pod_ready(p)]
        if running:
            continue
        states = ["%s: %s" % (meta(p, "name"), _pod_state(p)) for p in matching]
        found.append(finding(
            "f5.controller_not_running", "critical", "control-plane", subject(cluster, "%s/%s" % (CONTROLLER_NAMESPACE, prefix)),
            "no running, ready %s pod in %s: ConfigMap changes are not pushed to the BIG-IP"
            % (prefix, CONTROLLER_NAMESPACE) if matching else
            "no %s pod in %s: nothing pushes ConfigMaps to the BIG-IP" % (prefix, CONTROLLER_NAMESPACE),
            dict({"pods": sample(states), "pod_count": len(matching)}, **({"mode": mode} if mode else {})),
            "kubectl -n %s describe pod and logs of %s; check the bigip-login secret and the BIG-IP's reachability"
            % (CONTROLLER_NAMESPACE, prefix)))
    return found


def _terminating(pod):
    """A pod being deleted (metadata.deletionTimestamp): its status stays Running and Ready until its kubelet has
    stopped it, but its controller is going away (what kubectl shows as Terminating)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _pod_ready(pod):
    return (not _terminating(pod) and (pod.get("status") or {}).get("phase") == "Running"
            and (condition(pod, "Ready") or {}).get("status") == "True")


def _pod_state(pod):
    if _terminating(pod):
        return "Terminating"
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return "%s (%s restarts)" % (waiting.get("reason"), cs.get("restartCount", 0))
    return status.get("phase") or "Unknown"


# ------------------------------------------------------------------ the controller and the mode
def image_name(image):
    """The last path part of an image reference without tag or digest (``host:5000/f5networks/x:1@sha256:..`` -> x)."""
    name = (image or "").split("@")[0].rsplit("/", 1)[-1]
    return name.split(":")[0]


def _is_cis_container(container):
    return image_name(container.get("image")) == CIS_IMAGE


def is_cis(workload):
    """A Deployment (or Pod) running F5 CIS: an image .../k8s-bigip-ctlr, or CIS's own labels."""
    labels = (workload.get("metadata") or {}).get("labels") or {}
    if CIS_IMAGE in (labels.get("app"), labels.get("app.kubernetes.io/name")):
        return True
    spec = workload.get("spec") or {}
    pod_spec = ((spec.get("template") or {}).get("spec") or spec) if "template" in spec else spec
    return any(_is_cis_container(c) for c in pod_spec.get("containers") or [])


def cis_args(container):
    """{flag: [values]} of a CIS container's command and args (``--flag=value`` or ``--flag value``)."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    flags = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            if not sep and i + 1 < len(words) and not words[i + 1].startswith("--"):
                value, i = words[i + 1], i + 1
            flags.setdefault(name, []).append(value.strip("\"'") if sep or value else "true")
        i += 1
    return flags


def cis_controllers(deployments):
    """The CIS Deployments: ref, replicas, watched namespaces / namespace label, pool member type, partitions."""
    out = []
    for dep in deployments:
        if not is_cis(dep):
            continue
        spec = dep.get("spec") or {}
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        cis = [c for c in containers if _is_cis_container(c)] or containers[:1]
        flags = cis_args(cis[0]) if cis else {}
        namespaces = [n for v in flags.get("namespace", []) for n in [v] if n]
        label = (flags.get("namespace-label") or [""])[-1]
        out.append({
            "ref": "%s/%s" % (meta(dep, "namespace"), meta(dep, "name")),
            "replicas": spec.get("replicas", 1),
            "ready": (dep.get("status") or {}).get("readyReplicas") or 0,
            "namespaces": namespaces, "namespace_label": label, "namespace_labels": None,
            "watch": ("namespaces %s" % ", ".join(namespaces)) if namespaces else
                     ("namespaces labelled %s" % label) if label else "all namespaces",
            "pool_member_type": (flags.get("pool-member-type") or ["nodeport"])[-1],
            "partitions": flags.get("bigip-partition", []),
        })
    return out


def label_matches(selector, labels):
    """``key``, ``key=value`` or ``key==value`` (what CIS users put in --namespace-label) against labels."""
    key, sep, value = selector.replace("==", "=").partition("=")
    return key in labels and (not sep or labels[key] == value)


def resolve_namespace_labels(controllers, namespaces):
    """Fill each controller's watched namespaces from its --namespace-label and the cluster's Namespaces."""
    for c in controllers:
        if c["namespace_label"] and not c["namespaces"]:
            c["namespace_labels"] = sorted(meta(n, "name") for n in namespaces
                                           if label_matches(c["namespace_label"], (n.get("metadata") or {}).get("labels") or {}))
    return controllers


def watches(controller, namespace):
    if controller["namespaces"]:
        return namespace in controller["namespaces"]
    if controller["namespace_label"]:
        return namespace in (controller["namespace_labels"] or [])
    return True


def detect_mode(deployments, pods, configmaps):
    """("gdc" or "cis", why): GDC's integrated mode when its load-balancer-f5 exists or labelled the ConfigMaps."""
    for dep in deployments or []:
        if meta(dep, "name") == GDC_CONTROLLER:
            return "gdc", "Deployment %s/%s" % (meta(dep, "namespace"), GDC_CONTROLLER)
    for pod in pods:
        if meta(pod, "namespace") == CONTROLLER_NAMESPACE and (meta(pod, "name") or "").startswith(GDC_CONTROLLER):
            return "gdc", "pod %s/%s" % (CONTROLLER_NAMESPACE, meta(pod, "name"))
    for cm in configmaps:
        if GDC_LABEL in ((cm.get("metadata") or {}).get("labels") or {}):
            return "gdc", "ConfigMap %s/%s labelled %s" % (meta(cm, "namespace"), meta(cm, "name"), GDC_LABEL)
    return "cis", "no %s Deployment or pod, no ConfigMap labelled %s" % (GDC_CONTROLLER, GDC_LABEL)


def check_cis(controllers, pods, cluster=None):
    """In CIS mode: a CIS Deployment exists (or a ready CIS pod in ``pods``), is not scaled to zero, and has a
    ready replica."""
    if not controllers:
        if any(is_cis(p) and _pod_ready(p) for p in pods):
            return []  # CIS runs as a pod that no Deployment of ours owns (a bare pod, another workload kind)
        return [finding(
            "f5.controller_not_running", "critical", "control-plane", subject(cluster, CIS_IMAGE),
            "no Deployment runs F5 CIS (image .../%s or label app=%s): nothing pushes ConfigMaps to the BIG-IP"
            % (CIS_IMAGE, CIS_IMAGE),
            {"mode": "cis", "cis_pods": sample("%s/%s" % (meta(p, "namespace"), meta(p, "name")) for p in pods if is_cis(p))},
            "deploy CIS (F5's k8s-bigip-ctlr Deployment, F5's sample in its docs/config_examples/Install), or check "
            "that it runs: kubectl get pods -A -l app=k8s-bigip-ctlr")]
    found = []
    for c in controllers:
        if c["replicas"] == 0:
            found.append(finding(
                "f5.controller_scaled_to_zero", "critical", "control-plane", subject(cluster, c["ref"]),
                "CIS Deployment %s is scaled to 0 replicas: ConfigMap changes are not pushed to the BIG-IP" % c["ref"],
                {"replicas": 0, "mode": "cis"},
                "kubectl -n %s scale deployment %s --replicas=1" % tuple(c["ref"].split("/"))))
        elif not c["ready"]:
            found.append(finding(
                "f5.controller_not_running", "critical", "control-plane", subject(cluster, c["ref"]),
                "CIS Deployment %s has no ready replica (of %s): ConfigMap changes are not pushed to the BIG-IP"
                % (c["ref"], c["replicas"]),
                {"replicas": c["replicas"], "ready": 0, "mode": "cis"},
                "kubectl -n %s describe deployment %s, and the logs of its pods (bigip-login secret, BIG-IP reachable?)"
                % tuple(c["ref"].split("/"))))
    return found
