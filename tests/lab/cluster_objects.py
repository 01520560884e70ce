"""The stand-in's fixtures on the real control plane, and what a test read of the stand-in read of the real one.

``RealApi(cluster, *fixture_files)`` creates the objects of ``tests/kube_api/fixtures`` files (addresses moved into
the lab's slot, as for the stand-in) through the real API server, each as the component that makes it in a cluster
would, and gives a test what it used of the stand-in: ``kubeconfig()``, ``url``, ``token``, ``requests`` (read from
the API server's audit log, not from a server of ours).

How each kind is made (``load``):

* Namespace: created (``default`` and ``kube-system`` exist).
* Node: a node the lab has is the one registered by ``Cluster.up``; the fixture's labels, annotations, taints and
  conditions are written onto it (conditions as its kubelet or CNI agent would, with fresh times, so that the node
  lifecycle controller judges them and not their age). A node the lab does not have is created with the fixture's
  status; no kubelet renews its Lease, so the node lifecycle controller marks it unreachable after its grace
  period, as it does a node whose kubelet is gone (its fixture pods tolerate that: see Pod).
* Pod: created bound to its ``spec.nodeName``, its status the fixture's (written as its kubelet would). A node the
  cluster does not have (neither the lab's nor the fixture's) is made first, as a node whose kubelet is gone (the pod
  garbage collector deletes a pod bound to no Node within a minute). A pod on a node the lab does not have tolerates
  its unreachable and not-ready taints (the taint eviction controller would delete it after 5 minutes). Its owner (a
  DaemonSet or ReplicaSet the fixture names but does not hold) is a real object that places nothing (a DaemonSet
  whose nodeSelector matches no node, a ReplicaSet of 0), referred to by its real uid, not as its controller, so
  that no controller adopts, replaces or deletes the pod.
* Owners of the other kinds (an EndpointSlice's Service, a Service's Deployment): referred to by the real uid of the
  object the fixture names (loaded before it, or already there; a DaemonSet, ReplicaSet or Deployment the fixture
  does not hold is made as a placeholder that places nothing). A reference to an owner that exists nowhere is left
  out: the garbage collector would delete the object at once (a fixture's uids are not the real ones).
* Service: created without status, then its load-balancer status written as a load-balancer controller would.
  ``default/kubernetes`` is the API server's own: the fixture's is not loaded. The lab's cluster is IPv4 only: a
  PreferDualStack Service keeps its IPv4 family and address alone, as such a cluster stores it (it refuses IPv6 ones).
  A clusterIP or nodePort the real API server refuses (outside its range, or one fixture Service's already
  allocated to another) is left for it to allocate.
  A Service with a selector gets its EndpointSlices from the real EndpointSlice controller, from the pods.
* EndpointSlice: the fixture's slices are for Services whose pods the fixture does not hold (or holds elsewhere);
  they are created as another controller's (``endpointslice.kubernetes.io/managed-by: k8snet.lab``) so that the
  EndpointSlice controller leaves them as they are (it keeps its own, possibly empty, slice beside them).
* Event: POSTed as its recorder would, the involved object's uid the real one.
* Custom resources: their CRD (``tests/kube_api/crds``) is created first, then the object and its status.
* Webhook configurations last, so that a failing webhook does not refuse the objects made after it.
* Deployment: created as it is; the real deployment and ReplicaSet controllers make its pods, which stay Pending
  (there is no scheduler); a test that needs them running binds them (see test_f5_real_cluster.py).
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import yaml

from tests.kube_api import FIXTURES, load_yaml
from tests.kube_api.store import CRD_FILES, CRDS, KINDS
from tests.lab.faults.kube import lab_objects

from .cluster import ApiError, kubeconfig_data
from .core import LabError

FIXTURE_MANAGER = "k8snet.lab"
NO_NODE = {"k8snet.lab/no-node": "true"}
# the kinds made after the others: a webhook configuration takes effect at once
LAST = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
VERB_METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
                "delete": "DELETE", "deletecollection": "DELETE"}


def collection_path(kind, namespace=None):
    plural, group_version, namespaced = KINDS[kind][:3]
    base = "/api/v1" if group_version == "v1" else "/apis/" + group_version
    if namespaced:
        return "%s/namespaces/%s/%s" % (base, namespace or "default", plural)
    return "%s/%s" % (base, plural)


def object_path(obj):
    meta = obj["metadata"]
    return "%s/%s" % (collection_path(obj["kind"], meta.get("namespace")), meta["name"])


def _sent(obj):
    """The object as a client sends it: no status, no server-set metadata."""
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in obj["metadata"].items()
                       if k not in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                                    "selfLink", "deletionTimestamp")}
    return out


def _unallocated(service):
    """A Service without the addresses and ports the API server allocates."""
    out = copy.deepcopy(service)
    spec = out.get("spec") or {}
    for key in ("clusterIP", "clusterIPs", "healthCheckNodePort"):
        spec.pop(key, None)
    for port in spec.get("ports") or []:
        port.pop("nodePort", None)
    return out


def _fresh(conditions, now):
    out = []
    for cond in conditions or []:
        cond = dict(cond)
        for stamp in ("lastHeartbeatTime", "lastTransitionTime", "lastProbeTime"):
            if stamp in cond:
                cond[stamp] = now
        out.append(cond)
    return out


class Loader:
    def __init__(self, cluster):
        self.cluster = cluster
        self.uids = {}  # (kind, namespace, name) -> uid of the real object
        self.placeholders = set()  # the nodes made for pods bound to a node the cluster did not have

    def load(self, objects):
        objects = lab_objects(self.cluster.lab, objects)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for kind in sorted({o["kind"] for o in objects} & set(CRD_FILES)):
            self._crd(kind)
        ordered = sorted(objects, key=lambda o: (o["kind"] in LAST, o["kind"] == "Event",
                                                 o["kind"] not in ("Namespace", "Node")))
        for obj in ordered:
            namespace = obj["metadata"].get("namespace")
            if namespace:
                self.cluster.ensure_namespace(namespace)
            made = getattr(self, "_" + obj["kind"].lower(), self._plain)(obj, now)
            if made:
                self.uids[(obj["kind"], namespace, obj["metadata"]["name"])] = made["metadata"]["uid"]
        return self

    # ---------------------------------------------------------------- kinds
    def _plain(self, obj, now):
        made = self.cluster.create(self._owned(_sent(obj)),
                                   collection_path(obj["kind"], obj["metadata"].get("namespace")))
        if obj.get("status") and KINDS[obj["kind"]][3] is None:  # a custom resource's status subresource
            made = self.cluster.request("PUT", object_path(obj) + "/status",
                                        dict(made, status=obj["status"]))
        return made

    def _namespace(self, obj, now):
        self.cluster.ensure_namespace(obj["metadata"]["name"])
        return self.cluster.request("GET", object_path(obj))

    def _node(self, obj, now):
        name = obj["metadata"]["name"]
        try:
            current = self.cluster.request("GET", object_path(obj))
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.cluster.create(_sent(obj), collection_path("Node"))
            self.placeholders.add(name)
            status = dict(obj.get("status") or {})
            status["conditions"] = _fresh(status.get("conditions"), now)
            return self.cluster.patch_status(object_path(obj), status)
        meta = obj["metadata"]
        patch = {"metadata": {"labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}}
        if (obj.get("spec") or {}).get("taints"):
            patch["spec"] = {"taints": obj["spec"]["taints"]}
        self.cluster.request("PATCH", "/api/v1/nodes/" + name, patch, content_type="application/merge-patch+json")
        wanted = {c["type"]: c for c in _fresh((obj.get("status") or {}).get("conditions"), now)}
        conditions = [wanted.pop(c["type"], c) for c in current["status"].get("conditions", [])]
        conditions += list(wanted.values())
        return self.cluster.patch_status(object_path(obj), {"conditions": conditions})

    def _pod(self, obj, now):
        sent = _sent(obj)
        meta = sent["metadata"]
        node = (sent.get("spec") or {}).get("nodeName")
        if node and self._placeholder_node(node, now):
            sent["spec"]["tolerations"] = list(sent["spec"].get("tolerations") or []) + [
                {"key": key, "operator": "Exists", "effect": "NoExecute"}
                for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")]
        refs = []
        for ref in meta.get("ownerReferences") or []:
            owner = self._owner(ref["kind"], meta["namespace"], ref["name"])
            refs.append({"apiVersion": ref["apiVersion"], "kind": ref["kind"], "name": ref["name"],
                         "uid": owner["metadata"]["uid"], "controller": False})
        if refs:
            meta["ownerReferences"] = refs
        made = self.cluster.create(sent, collection_path("Pod", meta["namespace"]))
        if obj.get("status"):
            made = self.cluster.patch_status(object_path(obj), obj["status"])
        return made

    def _placeholder_node(self, name, now):
        """Make Node ``name`` if the cluster has none (returns whether it is such a node, made now or before)."""
        if ("Node", None, name) in self.uids:
            return name in self.placeholders
        try:
            self.cluster.request("GET", "/api/v1/nodes/" + name)
            return False
        except ApiError as exc:
            if exc.status != 404:
                raise
        made = self.cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}},
            collection_path("Node"))
        self.cluster.patch_status("/api/v1/nodes/" + name, {"conditions": _fresh([{
            "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now, "lastTransitionTime": now}], now)})
        self.uids[("Node", None, name)] = made["metadata"]["uid"]
        self.placeholders.add(name)
        return True

    def _owned(self, sent):
        """``sent`` with its ownerReferences' uids the real owners' (see the module's docstring)."""
        meta = sent["metadata"]
        refs = []
        for ref in meta.get("ownerReferences") or []:
            namespace = meta.get("namespace") if KINDS.get(ref["kind"], (None, None, True))[2] else None
            uid = self.uids.get((ref["kind"], namespace, ref["name"]))
            if uid is None and ref["kind"] in ("DaemonSet", "ReplicaSet", "Deployment") and namespace:
                uid = self._owner(ref["kind"], namespace, ref["name"])["metadata"]["uid"]
            if uid is None and ref["kind"] in KINDS:
                try:
                    uid = self.cluster.request("GET", "%s/%s" % (collection_path(ref["kind"], namespace),
                                                                 ref["name"]))["metadata"]["uid"]
                except ApiError as exc:
                    if exc.status != 404:
                        raise
            if uid:
                refs.append(dict(ref, uid=uid))
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        return sent

    def _owner(self, kind, namespace, name):
        key = (kind, namespace, name)
        path = "/apis/apps/v1/namespaces/%s/%ss/%s" % (namespace, kind.lower(), name)
        if key not in self.uids:
            if kind == "DaemonSet":
                return self.cluster.placeholder_daemonset(namespace, name)
            if kind not in ("ReplicaSet", "Deployment"):
                raise LabError("a fixture object's owner %s %s/%s: the loader makes only DaemonSet, ReplicaSet and "
                               "Deployment owners" % (kind, namespace, name))
            if self.cluster._exists(path):
                return self.cluster.request("GET", path)
            selector = {"k8snet.lab/" + kind.lower(): name}
            self.cluster.create({
                "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": 0, "selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": selector},
                                      "spec": {"nodeSelector": NO_NODE,
                                               "containers": [{"name": "app", "image": "lab.invalid/app:1"}]}}}},
                "/apis/apps/v1/namespaces/%s/%ss" % (namespace, kind.lower()))
        return self.cluster.request("GET", path)

    def _service(self, obj, now):
        if (obj["metadata"].get("namespace"), obj["metadata"]["name"]) == ("default", "kubernetes"):
            return self.cluster.request("GET", object_path(obj))  # the API server's own (its first service IP)
        sent = self._owned(_sent(obj))
        spec = sent.get("spec") or {}
        if spec.get("ipFamilyPolicy") == "PreferDualStack":  # the lab's cluster is IPv4 only
            spec["ipFamilies"] = [f for f in spec.get("ipFamilies") or [] if f != "IPv6"] or None
            spec["clusterIPs"] = [ip for ip in spec.get("clusterIPs") or [] if ":" not in ip] or None
        path = collection_path("Service", obj["metadata"]["namespace"])
        try:
            made = self.cluster.create(sent, path)
        except ApiError as exc:
            # a fixed clusterIP or nodePort the real API server refuses (out of its range, or already allocated
            # by another fixture Service: the stand-in allocated nothing): created as a client that names none,
            # the API server allocating them
            if exc.status != 422:
                raise
            made = self.cluster.create(_unallocated(sent), path)
        ingress = (((obj.get("status") or {}).get("loadBalancer")) or {}).get("ingress")
        if ingress:
            made = self.cluster.patch_status(object_path(obj), {"loadBalancer": {"ingress": ingress}})
        return made

    def _endpointslice(self, obj, now):
        sent = self._owned(_sent(obj))
        labels = dict(sent["metadata"].get("labels") or {})
        labels["endpointslice.kubernetes.io/managed-by"] = FIXTURE_MANAGER
        sent["metadata"]["labels"] = labels
        return self.cluster.create(sent, collection_path("EndpointSlice", sent["metadata"]["namespace"]))

    def _event(self, obj, now):
        sent = _sent(obj)
        involved = dict(sent.get("involvedObject") or {})
        uid = self.uids.get((involved.get("kind"), involved.get("namespace"), involved.get("name")))
        if uid:
            involved["uid"] = uid
        sent["involvedObject"] = involved
        return self.cluster.create(sent, collection_path("Event", sent["metadata"]["namespace"]))

    def _crd(self, kind):
        crd = yaml.safe_load((CRDS / CRD_FILES[kind]).read_text())
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        try:
            self.cluster.create(crd, path)
        except ApiError as exc:
            if exc.status != 409:
                raise
        self.cluster.wait_for("CRD %s established" % crd["metadata"]["name"], lambda: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (self.cluster.request("GET", "%s/%s" % (path, crd["metadata"]["name"])).get("status") or {})
            .get("conditions") or []), timeout=30)


def audit_requests(cluster, user=None, settle=0.2):
    """The requests the API server's audit log holds (``Cluster._audit_policy``), oldest first, each as the stand-in
    kept them: {method, path, parts, query, user, code}; only ``user``'s when given. Waits until the log stopped
    growing for ``settle`` seconds (the server writes an entry once the response is complete)."""
    from urllib.parse import parse_qs, unquote, urlsplit

    size = -1
    while True:
        now = cluster.audit_log.stat().st_size if cluster.audit_log.exists() else 0
        if now == size:
            break
        size = now
        time.sleep(settle)
    out = []
    events = [json.loads(line) for line in (cluster.audit_log.read_text().splitlines()
                                            if cluster.audit_log.exists() else ())]
    # a long-running request (a pod log, a watch) is logged when its response starts and when it ends: the end
    # stands for it (a request refused before it was authenticated is logged once, when its response started)
    completed = {e.get("auditID") for e in events if e.get("stage") == "ResponseComplete"}
    for event in events:
        if event.get("stage") == "ResponseStarted" and event.get("auditID") in completed:
            continue
        who = (event.get("user") or {}).get("username")
        if user is not None and who != user:
            continue
        url = urlsplit(event.get("requestURI", ""))
        out.append({"method": VERB_METHODS.get(event.get("verb"), (event.get("verb") or "").upper()),
                    "path": url.path, "parts": [unquote(p) for p in url.path.split("/") if p],
                    "query": {k: v[-1] for k, v in parse_qs(url.query).items()}, "user": who,
                    "code": (event.get("responseStatus") or {}).get("code"), "verb": event.get("verb")})
    return out


class RealApi:
    """What tests used of the stand-in, on the real control plane: the fixture files' objects loaded, a kubeconfig
    whose credential is the token of ServiceAccount ``k8snet-lab/<user>`` (bound to ``cluster-admin`` unless
    ``role`` names a ClusterRole), and the requests that credential sent."""

    def __init__(self, cluster, *fixture_files, user="triage", role="cluster-admin"):
        self.cluster = cluster
        self.workdir = cluster.dir / ("api-" + user)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.username = "system:serviceaccount:k8snet-lab:" + user
        self.loader = Loader(cluster)
        if fixture_files:
            self.load(*fixture_files)
        cluster.ensure_namespace("k8snet-lab")
        try:
            cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": user, "namespace": "k8snet-lab"}},
                           "/api/v1/namespaces/k8snet-lab/serviceaccounts")
            cluster.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                            "metadata": {"name": "k8snet-lab-" + user},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                            "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": "k8snet-lab"}]},
                           "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")
        except ApiError as exc:
            if exc.status != 409:
                raise
        self.token = cluster.token("k8snet-lab", user, seconds=6 * 3600)

    def load(self, *fixture_files):
        """Load more fixture files (names under tests/kube_api/fixtures, or paths)."""
        self.loader.load(load_yaml([Path(f) if Path(f).is_absolute() else FIXTURES / f for f in fixture_files]))
        return self

    def load_objects(self, objects):
        """Load objects shaped as fixtures (e.g. a fixture file's objects a test changed: a pod's address, a slice's
        endpoints), made as ``load`` makes them. Addresses already in the lab's slot stay as they are."""
        self.loader.load(list(objects))
        return self

    @property
    def url(self):
        return self.cluster.server

    @property
    def requests(self):
        return audit_requests(self.cluster, self.username)

    def kubeconfig(self, path=None, token=None, context="lab", ca=True):
        """Write a kubeconfig for the real API server (the token defaults to this user's)."""
        data = kubeconfig_data(self.cluster.server, self.cluster.ca_file.read_bytes(), context,
                               token=token or self.token)
        data["contexts"][0]["name"] = data["current-context"] = context
        data["contexts"][0]["context"]["user"] = context
        if not ca:
            del data["clusters"][0]["cluster"]["certificate-authority-data"]
        path = Path(path or self.workdir / "kubeconfig")
        path.write_text(yaml.safe_dump(copy.deepcopy(data)))
        path.chmod(0o600)
        return path
