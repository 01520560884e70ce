# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CNI <-> admission webhook deadlock (controller side, through the Kubernetes API).

The cycle: the CNI agent (calico-node) needs the API server to clear its node's NetworkUnavailable
condition (a PATCH of nodes/status) and the API server needs to create the agent's pod; an admission
webhook with ``failurePolicy: Fail`` on those requests needs its backend; the backend's pods need a
pod network on their node, which the CNI agent cannot bring up.  Nothing recovers by itself.

A webhook can close the cycle when its failurePolicy is Fail (the v1 default), its rules match pods or
nodes / nodes/status, its namespaceSelector / objectSelector do not exclude the CNI's namespace and
pods, and its backing Service has no ready endpoint, or only endpoints on nodes that are
NetworkUnavailable or NotReady.  ``check`` joins that with the nodes without network whose CNI agent
pod is not running and ready: each cycle is one ``webhook.cni_deadlock`` finding naming every link.

On managed platforms the API server reaches in-cluster webhooks through a tunnel whose cluster end is a
pod (IBM Cloud's OpenVPN client, later its konnectivity-agent; Konnectivity on AKS, GKE, HyperShift,
Gardener).  When no tunnel pod is ready on a node with network, every Service-backed webhook is out
of the API server's reach however healthy its own pods are, and the cycle closes through the tunnel:
the tunnel pod waits for the CNI on its node, the CNI waits for the API server, which waits for the
webhook it cannot reach.  ``webhooks_options.TUNNEL_PODS`` lists where those pods are found
(namespace/selector, with the source of each); ``tunnel_pods`` overrides it.  A tunnel that is down
while its pods sit on nodes with network blocks the CNI without a cycle: ``webhook.cni_blocked_by_tunnel``.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import condition, meta
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import SERVICE_NAME_LABEL
from ansible_collections.k8snet.triage.plugins.module_utils.cni.webhooks_options import (
    DEFAULT_TUNNEL_PODS, KINDS, REPAIR_RULES, RULES, parse_tunnel)

# resources as admission rules name them: "*" is every resource (no subresource), "x/*" every subresource of x
POD_RESOURCES = ("pods", "*", "*/*")
NODE_STATUS_RESOURCES = ("nodes/status", "nodes/*", "*/*")
METADATA_NAME = "kubernetes.io/metadata.name"


# ------------------------------------------------------------------ pure helpers
def selector_matches(selector, labels):
    """Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects ``labels``; an empty or
    missing selector selects everything (the admission semantics)."""
    selector = selector or {}
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def _rule_matches(rule, resources, operations):
    groups = rule.get("apiGroups") or []
    if "" not in groups and "*" not in groups:
        return False
    ops = rule.get("operations") or []
    if "*" not in ops and not any(op in ops for op in operations):
        return False
    return any(r in resources for r in rule.get("resources") or [])


def intercepts(webhook):
    """What of the cycle a webhook intercepts: {"pods": bool, "nodes": bool}."""
    found = {"pods": False, "nodes": False}
    for rule in webhook.get("rules") or []:
        if _rule_matches(rule, POD_RESOURCES, ("CREATE",)):
            found["pods"] = True
        if _rule_matches(rule, NODE_STATUS_RESOURCES, ("UPDATE",)):
            found["nodes"] = True
    return found


def namespace_labels(namespace):
    """A namespace's labels as the API server matches them (it always sets kubernetes.io/metadata.name)."""
    labels = dict(meta(namespace, "labels") or {})
    labels[METADATA_NAME] = meta(namespace, "name")
    return labels


def node_down(node):
    """(True, why) for a node without pod network: NetworkUnavailable True or Ready not True."""
    nu = condition(node, "NetworkUnavailable")
    ready = condition(node, "Ready")
    why = []
    if nu and nu.get("status") == "True":
        why.append("NetworkUnavailable (%s)" % (nu.get("reason") or "no reason"))
    if not ready or ready.get("status") != "True":
        why.append("NotReady")
    return bool(why), ", ".join(why)


def pod_running(pod):
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and (condition(pod, "Ready") or {}).get("status") == "True"


def tunnel_state(tunnel_pods, down):
    """(ready on a node with network, stuck on a node without network, the others not ready) tunnel pods."""
    ready, stuck, other = [], [], []
    for pod in tunnel_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if pod_running(pod) and node not in down:
            ready.append(pod)
        elif node in down:
            stuck.append(pod)
        elif not pod_running(pod):
            other.append(pod)
    return ready, stuck, other


def _pod_text(pods):
    return ", ".join("%s/%s (%s on %s)" % (
        meta(p, "namespace"), meta(p, "name"), (p.get("status") or {}).get("phase") or "no phase",
        (p.get("spec") or {}).get("nodeName") or "no node: not scheduled") for p in pods[:5])


def backends(service, slices, pods):
    """(ready endpoints [(pod name, node)], backend pods [pod]) of a Service from its EndpointSlices, and its
    selector's pods when the slices name none (a Pending pod has no endpoint)."""
    ready, names = [], set()
    for item in slices:
        for endpoint in item.get("endpoints") or []:
            ref = endpoint.get("targetRef") or {}
            if ref.get("name"):
                names.add(ref["name"])
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                ready.append((ref.get("name"), endpoint.get("nodeName")))
    selector = (service.get("spec") or {}).get("selector") or {}
    chosen = [p for p in pods if meta(p, "name") in names]
    if not chosen and selector:
        chosen = [p for p in pods if selector_matches({"matchLabels": selector}, meta(p, "labels"))]
    return ready, chosen


def _remediation(configuration, kind, index, cni_namespaces, tunnel=None):
    plural = "validatingwebhookconfiguration" if kind == "ValidatingWebhookConfiguration" else \
        "mutatingwebhookconfiguration"
    text = ("break the cycle: let the API server admit requests while the webhook is down, "
            "kubectl patch %s %s --type=json -p '[{\"op\":\"replace\",\"path\":\"/webhooks/%d/failurePolicy\","
            "\"value\":\"Ignore\"}]' (k8snet.triage.webhook_failure_policy state=relaxed does it with a dry run and "
            "records the old value; security trade-off: until it is set back to Fail, requests the webhook would have "
            "rejected are admitted unchecked); once the CNI agent and the webhook's pods are up, set failurePolicy back "
            "to Fail (state=restored). Durable fix: exclude the CNI's namespace with a namespaceSelector "
            "(kubernetes.io/metadata.name NotIn [%s]) and do not intercept nodes/status"
            % (plural, meta(configuration, "name"), index, ", ".join(cni_namespaces)))
    if tunnel:
        text += ("; or bring the tunnel back without touching the webhook: kubectl -n %s delete pod %s lets it be "
                 "rescheduled, and kubectl cordon %s first keeps it off the node without network"
                 % (meta(tunnel[0], "namespace"), meta(tunnel[0], "name"),
                    (tunnel[0].get("spec") or {}).get("nodeName") or "<node>"))
    return text


def _node_of(pod):
    """The node a pod is scheduled on (spec.nodeName), None before it is."""
    return (pod.get("spec") or {}).get("nodeName")


def _namespaced(obj):
    """namespace/name of an object, as the evidence names it."""
    return "%s/%s" % (meta(obj, "namespace"), meta(obj, "name"))


def _stuck_agents(down, cni_pods):
    """{node without network: its CNI agent pods not running and ready}, for the nodes whose agent is down or
    missing."""
    cni_by_node = {}
    for pod in cni_pods:
        cni_by_node.setdefault(_node_of(pod), []).append(pod)
    # the nodes without network whose CNI agent is not running and ready: the other end of the cycle
    stuck = dict((name, [p for p in cni_by_node.get(name, []) if not pod_running(p)]) for name in down)
    return dict((name, agents) for name, agents in stuck.items() if agents or not cni_by_node.get(name))


class _Cluster(object):
    """The objects ``check`` read, with what it derives from them once: the nodes without network, the CNI
    agents stuck on them and the state of the API server's tunnel."""

    def __init__(self, namespaces, services, slices, pods, nodes, cni_pods, cni_namespaces, tunnel_pods):
        self.services, self.slices, self.pods = services, slices, pods
        self.cni_pods, self.cni_namespaces, self.tunnel_pods = cni_pods, cni_namespaces, tunnel_pods
        self.ns_labels = dict((meta(ns, "name"), namespace_labels(ns)) for ns in namespaces)
        self.nodes_by_name = dict((meta(n, "name"), n) for n in nodes)
        self.down = dict((name, node_down(n)[1]) for name, n in self.nodes_by_name.items() if node_down(n)[0])
        self.stuck = _stuck_agents(self.down, cni_pods)
        self.tunnel_ready, self.tunnel_stuck, self.tunnel_other = tunnel_state(tunnel_pods, self.down)
        self.tunnel_down = bool(tunnel_pods) and not self.tunnel_ready

    def catches_cni(self, webhook, what):
        """Whether the webhook's selectors let it intercept the CNI agent's pods or its nodes."""
        selected = [ns for ns in self.cni_namespaces if ns in self.ns_labels
                    and selector_matches(webhook.get("namespaceSelector"), self.ns_labels[ns])]
        agent_pods = [p for p in self.cni_pods if meta(p, "namespace") in selected
                      and selector_matches(webhook.get("objectSelector"), meta(p, "labels"))]
        pods_caught = what["pods"] and bool(agent_pods or (selected and not self.cni_pods))
        # nodes are cluster-scoped: the namespaceSelector does not apply to them, the objectSelector does
        nodes_caught = what["nodes"] and (not self.stuck or any(
            selector_matches(webhook.get("objectSelector"), meta(self.nodes_by_name[n], "labels")) for n in self.stuck))
        return bool(pods_caught or nodes_caught)

    def backend(self, service_ref):
        """The webhook's Service: its ready endpoints, those on nodes with network and its pods."""
        svc_ns, svc_name = service_ref.get("namespace"), service_ref.get("name")
        service = next((s for s in self.services if meta(s, "namespace") == svc_ns and meta(s, "name") == svc_name),
                       None)
        svc_slices = [s for s in self.slices if meta(s, "namespace") == svc_ns
                      and (meta(s, "labels") or {}).get(SERVICE_NAME_LABEL) == svc_name]
        svc_pods = [p for p in self.pods if meta(p, "namespace") == svc_ns]
        ready, backend_pods = backends(service or {}, svc_slices, svc_pods)
        healthy = [(name, node) for name, node in ready if node not in self.down]
        return {"ref": "%s/%s" % (svc_ns, svc_name), "ready": ready, "pods": backend_pods, "healthy": healthy,
                "healthy_nodes": ", ".join(sorted(set(str(n) for _p, n in healthy)))}

    def cycle_open(self, backend):
        """Why the cycle through a webhook is open now (its backend reachable, or no CNI agent stuck), else ""."""
        if backend["healthy"] and not self.tunnel_down:
            return "its Service %s has ready endpoints on nodes with network (%s)%s" % (
                backend["ref"], backend["healthy_nodes"],
                " and the API server's tunnel has ready pods (%s)" % ", ".join(
                    meta(p, "name") for p in self.tunnel_ready[:5]) if self.tunnel_pods else "")
        if not self.stuck:
            return "no node is without network with its CNI agent down: the cycle is not closed now"
        return ""

    def cycle_nodes(self, backend):
        """The nodes without network the cycle runs through (every such node when none is named)."""
        tunnel_nodes = [_node_of(p) for p in self.tunnel_stuck]
        if backend["healthy"]:  # only the tunnel is down: the cycle runs through its pods' nodes
            named = tunnel_nodes
        else:
            named = [_node_of(p) for p in backend["pods"] if _node_of(p)] + [n for _p, n in backend["ready"] if n]
            named += tunnel_nodes
        return sorted(set(n for n in named if n in self.stuck)) or sorted(self.stuck)


def _row(kind, configuration, webhook):
    """The compact model of one webhook, before it is judged."""
    return {"configuration": meta(configuration, "name"), "kind": kind, "webhook": webhook.get("name"),
            "failure_policy": webhook.get("failurePolicy") or "Fail", "closes_cycle": False, "why_not": "",
            "via_tunnel": False}


def _outside_cycle(cluster, webhook, failure_policy, what, service_ref):
    """Why a webhook cannot be a link of the cycle whatever its backend's state, else ""."""
    if failure_policy != "Fail":
        return "failurePolicy %s: the API server admits the request when the webhook fails" % failure_policy
    if not (what["pods"] or what["nodes"]):
        return "its rules match neither pods nor nodes/status"
    if not service_ref:
        return "its backend is a URL outside the cluster, not a pod that needs the pod network"
    if not cluster.catches_cni(webhook, what):
        return "its selectors exclude the CNI's namespaces (%s) and pods" % ", ".join(cluster.cni_namespaces)
    return ""


def _service_state(backend):
    """How the webhook's Service fails the API server, for its link."""
    if not backend["ready"]:
        return "no ready endpoint"
    if backend["healthy"]:
        return "ready endpoints on %s, out of the API server's reach while the tunnel is down" % (
            backend["healthy_nodes"])
    return "ready endpoints only on nodes without network"


def _links(cluster, kind, ref, what, backend, cycle_nodes, agents):
    """The cycle's links, one text each: webhook, tunnel (when down), Service, its pods, nodes, CNI pods."""
    pod_text = ", ".join("%s (%s on %s)" % (
        meta(p, "name"), (p.get("status") or {}).get("phase"), _node_of(p) or "no node")
        for p in backend["pods"][:5])
    links = ["webhook %s %s (failurePolicy Fail, intercepts %s)" % (
        kind, ref, " and ".join(k for k in ("pods", "nodes/status") if what["pods" if k == "pods" else "nodes"]))]
    if cluster.tunnel_down:
        links.append("the API server's tunnel into the cluster: no pod ready on a node with network (%s)" % (
            _pod_text(cluster.tunnel_stuck + cluster.tunnel_other)))
    links.append("Service %s (%s)" % (backend["ref"], _service_state(backend)))
    links += ["pods %s" % (pod_text or "none (no pod selected)"),
              "nodes %s" % ", ".join("%s (%s)" % (n, cluster.down[n]) for n in cycle_nodes),
              "CNI pod %s" % (", ".join(agents) or "missing on %s" % ", ".join(cycle_nodes))]
    return links


def _evidence(cluster, kind, ref, what, backend, cycle_nodes):
    """The evidence of a cycle (or of a CNI blocked by the tunnel) through one webhook."""
    agents = [_namespaced(p) for n in cycle_nodes for p in cluster.stuck[n]]
    evidence = {"links": _links(cluster, kind, ref, what, backend, cycle_nodes, agents), "webhook": ref,
                "kind": kind, "service": backend["ref"],
                "backend_pods": sample(meta(p, "name") for p in backend["pods"]),
                "nodes": cycle_nodes, "cni_pods": sample(agents), "intercepts": what}
    if cluster.tunnel_down:
        evidence["tunnel_pods"] = sample(_namespaced(p) for p in cluster.tunnel_stuck + cluster.tunnel_other)
        evidence["tunnel_nodes"] = sorted(set(n for n in (_node_of(p) for p in cluster.tunnel_stuck) if n))
    return evidence


def _blocked_by_tunnel(cluster, configuration, kind, index, ref, evidence):
    """webhook.cni_blocked_by_tunnel: the tunnel is down without waiting for the CNI, which waits for it."""
    other = cluster.tunnel_other
    return finding(
        "webhook.cni_blocked_by_tunnel", "critical", "control-plane", "webhook:%s" % ref,
        "the CNI cannot recover on %s: its writes go through admission webhook %s (failurePolicy Fail), "
        "which the API server reaches only through its tunnel, and no tunnel pod is ready (%s)" % (
            ", ".join(evidence["nodes"]), ref, _pod_text(other) or "none found"),
        evidence,
        "bring the tunnel back (kubectl -n %s describe pod %s: its events say why it is not ready); "
        "meanwhile %s" % (meta(other[0], "namespace") if other else "kube-system",
                          meta(other[0], "name") if other else "<tunnel pod>",
                          _remediation(configuration, kind, index, cluster.cni_namespaces)))


def _deadlock(cluster, configuration, kind, index, ref, evidence):
    """webhook.cni_deadlock: the cycle closed through one webhook, link by link."""
    via_tunnel = cluster.tunnel_down
    summary = "admission webhook %s closes a cycle with the CNI%s: %s" % (
        ref, " through the API server's tunnel" if via_tunnel else "", " -> ".join(evidence["links"]))
    return finding(
        "webhook.cni_deadlock", "critical", "control-plane", "webhook:%s" % ref, summary, evidence,
        _remediation(configuration, kind, index, cluster.cni_namespaces,
                     cluster.tunnel_stuck if via_tunnel else None))


def _judge(cluster, kind, configuration, index, row):
    """Fill ``row``'s verdict on the webhook at ``index`` of ``configuration``; its finding when it closes the
    cycle or blocks the CNI, else None.  The index is the webhook's position (the JSON patch path of the
    remediation), never found by equality: two identical entries are two positions."""
    webhook = configuration["webhooks"][index]
    what = intercepts(webhook)
    service_ref = (webhook.get("clientConfig") or {}).get("service")
    why_not = _outside_cycle(cluster, webhook, row["failure_policy"], what, service_ref)
    backend = None if why_not else cluster.backend(service_ref)
    why_not = why_not or cluster.cycle_open(backend)
    if why_not:
        row["why_not"] = why_not
        return None
    row["via_tunnel"] = cluster.tunnel_down
    ref = "%s/%s" % (meta(configuration, "name"), webhook.get("name"))
    evidence = _evidence(cluster, kind, ref, what, backend, cluster.cycle_nodes(backend))
    if backend["healthy"] and not cluster.tunnel_stuck:
        # the tunnel is down for another reason (its pods on nodes with network, or not scheduled): the
        # CNI waits for it, but the tunnel does not wait for the CNI
        row["why_not"] = "the API server's tunnel is down but its pods are not on a node without network"
        return _blocked_by_tunnel(cluster, configuration, kind, index, ref, evidence)
    row["closes_cycle"] = True
    return _deadlock(cluster, configuration, kind, index, ref, evidence)


def check(configurations, namespaces, services, slices, pods, nodes, cni_pods, cni_namespaces, tunnel_pods=()):
    """Findings (and the compact model of each webhook looked at) from the objects read.  ``tunnel_pods`` are the
    pods of the API server's tunnel into the cluster (empty where the API server reaches pods directly)."""
    found, model = [], []
    cluster = _Cluster(namespaces, services, slices, pods, nodes, cni_pods, cni_namespaces, tunnel_pods)
    for kind, configuration in configurations:
        for index, webhook in enumerate(configuration.get("webhooks") or []):
            row = _row(kind, configuration, webhook)
            model.append(row)
            item = _judge(cluster, kind, configuration, index, row)
            if item is not None:
                found.append(item)
    return model, found


# ----------------------------------------------------------------- the check (one shape)
def _configurations(kube):
    """[(kind, configuration)] of every validating, then every mutating, webhook configuration."""
    validating, mutating = kube.webhook_configurations()
    return [("ValidatingWebhookConfiguration", c) for c in validating] + \
        [("MutatingWebhookConfiguration", c) for c in mutating]


def _read_cni_pods(kube, cni_namespaces, daemonsets):
    """The CNI agent pods: the pods of ``cni_namespaces`` owned by one of ``daemonsets``."""
    cni_pods = []
    for namespace in cni_namespaces:
        cni_pods.extend(p for p in kube.pods(namespace) if node_network.owner_daemonset(p) in daemonsets)
    return cni_pods


def _backend_namespaces(configurations):
    """The namespaces of the Services behind the webhooks with failurePolicy Fail, sorted."""
    wanted = set()
    for _kind, configuration in configurations:
        for webhook in configuration.get("webhooks") or []:
            service = (webhook.get("clientConfig") or {}).get("service") or {}
            if service.get("namespace") and (webhook.get("failurePolicy") or "Fail") == "Fail":
                wanted.add(service["namespace"])
    return sorted(wanted)


def _read_backends(kube, namespaces):
    """(Services, EndpointSlices, pods) of ``namespaces``, read namespace by namespace."""
    services, slices, pods = [], [], []
    for namespace in namespaces:
        services.extend(kube.services(namespace))
        slices.extend(kube.endpoint_slices(namespace))
        pods.extend(kube.pods(namespace))
    return services, slices, pods


def _read_tunnel_pods(kube, entries):
    """The tunnel pods of every ``namespace/selector`` entry, each pod once, in the order read."""
    tunnel_pods, tunnel_seen = [], set()
    for entry in entries:
        namespace, selector = parse_tunnel(entry)
        for pod in kube.pods(namespace, label_selector=selector):
            key = (meta(pod, "namespace"), meta(pod, "name"))
            if key not in tunnel_seen:
                tunnel_seen.add(key)
                tunnel_pods.append(pod)
    return tunnel_pods


def _no_deadlock(model):
    """webhook.no_cni_deadlock: ok when webhooks were read and none closes the cycle, info when there is none."""
    closing = [m for m in model if m["failure_policy"] == "Fail"]
    return finding(
        "webhook.no_cni_deadlock", "ok" if model else "info", "control-plane", "cluster",
        "%d admission webhooks read, %d with failurePolicy Fail: none closes a cycle with the CNI now" % (
            len(model), len(closing)) if model else "no admission webhook is configured",
        {"webhooks": len(model), "fail": len(closing)}, "")


def api_check(params, kube_factory):
    """The whole webhook_deadlock run: reads the webhook configurations, namespaces, the webhooks' Services,
    EndpointSlices and pods, the nodes and the CNI pods; ``{"data": {"webhooks": [...]}, "findings": [...]}``."""
    checked = rules.validate(params, RULES)
    daemonsets = checked.get("cni_daemonsets") or list(node_network.DEFAULT_CNI_DAEMONSETS)
    cni_namespaces = checked.get("cni_namespaces") or list(node_network.DEFAULT_CNI_NAMESPACES)
    kube = kube_factory(params)
    configurations = _configurations(kube)
    namespaces = kube.namespaces()
    nodes = kube.nodes()
    cni_pods = _read_cni_pods(kube, cni_namespaces, daemonsets)
    services, slices, pods = _read_backends(kube, _backend_namespaces(configurations))
    tunnel_pods = _read_tunnel_pods(kube, checked.get("tunnel_pods", list(DEFAULT_TUNNEL_PODS)))
    model, found = check(configurations, namespaces, services, slices, pods, nodes, cni_pods, cni_namespaces,
                         tunnel_pods)
    if not found:
        found.append(_no_deadlock(model))
    return {"data": {"webhooks": model}, "findings": sort_findings(found)}


# ----------------------------------------------------------------- the opt-in repair (one webhook, named)
RESTORE_ANNOTATION = "k8snet.triage/failure-policy-restore"


def _record(obj, label):
    import json

    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

    text = (meta(obj, "annotations") or {}).get(RESTORE_ANNOTATION)
    if not text:
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or not all(v in ("Fail", "Ignore") for v in record.values()):
        raise ReadError("the annotation %s of %s is not the record this module writes (a JSON object of webhook "
                        "name -> Fail/Ignore): %r; fix or remove it by hand" % (RESTORE_ANNOTATION, label, text[:200]))
    return record


def _named_hook(kube, plural, kind, name, hook_name):
    """(the configuration read right before acting, its webhooks, the index of ``hook_name`` among them)."""
    obj = kube.get(plural, name)  # read right before acting
    if obj is None:
        raise InputError("there is no %s named %s: give the name from kubectl get %s" % (kind, name, plural))
    hooks = obj.get("webhooks") or []
    names = [h.get("name") for h in hooks]
    if hook_name not in names:
        label = "%s %s" % (kind, name)
        raise InputError("%s has no webhook %s (it has: %s)" % (label, hook_name, ", ".join(map(str, names)) or "none"))
    return obj, hooks, names.index(hook_name)


def _unchanged(state, name, hook_name, current, record):
    """The result when ``state`` holds already (failurePolicy Ignore, or nothing recorded to restore), else None."""
    if state == "relaxed" and current == "Ignore":
        return {"changed": False, "diff": {}, "failure_policy": current, "previous": record.get(hook_name),
                "msg": "%s/%s already has failurePolicy Ignore%s" % (
                    name, hook_name, "" if hook_name in record else " (no previous value recorded by this module)")}
    if state != "relaxed" and hook_name not in record:
        return {"changed": False, "diff": {}, "failure_policy": current, "previous": None,
                "msg": "nothing to restore: no previous failurePolicy of %s/%s is recorded in %s" % (
                    name, hook_name, RESTORE_ANNOTATION)}
    return None


def _target(state, hook_name, current, record):
    """(the failurePolicy to set, the record to store): relaxed records the current value, restored takes it back."""
    if state == "relaxed":
        return "Ignore", dict(record, **{hook_name: current})
    record = dict(record)
    return record.pop(hook_name), record


def _policy_diff(plural, name, hook_name, before, after):
    """The --diff of one webhook's failurePolicy and recorded value."""
    import json

    return {"before": "%s/%s: %s\n" % (name, hook_name, json.dumps(before, sort_keys=True)),
            "after": "%s/%s: %s\n" % (name, hook_name, json.dumps(after, sort_keys=True)),
            "before_header": "%s %s" % (plural, name), "after_header": "%s %s" % (plural, name)}


def _store_policy(kube, plural, name, obj, hooks, index, target, record):
    """Merge-patch the configuration read (at its resourceVersion): the one webhook's failurePolicy set to
    ``target`` and the record annotation (removed when empty); the configuration stored is returned."""
    import copy
    import json

    new_hooks = copy.deepcopy(hooks)
    new_hooks[index]["failurePolicy"] = target
    patch = {"metadata": {"annotations": {RESTORE_ANNOTATION: json.dumps(record, sort_keys=True) if record else None}},
             "webhooks": new_hooks}
    return kube.merge_patch(plural, name, None, patch, resource_version=meta(obj, "resourceVersion"))


def set_failure_policy(params, kube_factory, check_mode=False):
    """``state: relaxed`` sets failurePolicy Ignore on one named webhook and records its previous value in the
    configuration's annotation; ``state: restored`` puts the recorded value back and removes the record.
    Nothing else changes: the patch carries the other webhooks as read and the resourceVersion read (409 if the
    object changed meanwhile).  Returns ``{"changed", "diff", "failure_policy", "previous", "msg"}``."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError

    checked = rules.validate(params, REPAIR_RULES)
    for option in ("configuration", "webhook", "state"):
        if not checked.get(option):
            raise InputError("%s is required: name the one webhook to change" % option)
    plural, kind = KINDS[checked.get("kind") or "validating"]
    name, hook_name, state = checked["configuration"], checked["webhook"], checked["state"]
    kube = kube_factory(params)
    obj, hooks, index = _named_hook(kube, plural, kind, name, hook_name)
    current = hooks[index].get("failurePolicy") or "Fail"
    record = _record(obj, "%s %s" % (kind, name))
    before = {"failurePolicy": current, "recorded": record.get(hook_name)}
    unchanged = _unchanged(state, name, hook_name, current, record)
    if unchanged is not None:
        return unchanged
    target, record = _target(state, hook_name, current, record)
    after = {"failurePolicy": target, "recorded": record.get(hook_name)}
    result = {"changed": True, "diff": _policy_diff(plural, name, hook_name, before, after), "failure_policy": target,
              "previous": current,
              "msg": "%s/%s: failurePolicy %s -> %s%s" % (name, hook_name, current, target,
                                                          " (check mode: nothing changed)" if check_mode else "")}
    if check_mode:
        return result
    stored = _store_policy(kube, plural, name, obj, hooks, index, target, record)
    got = [h.get("failurePolicy") for h in stored.get("webhooks") or [] if h.get("name") == hook_name]
    if got != [target]:
        raise ChangeError("the API server stored failurePolicy %s for %s/%s, not %s" % (got, name, hook_name, target),
                          changed=True)
    return result
