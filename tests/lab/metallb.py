"""MetalLB's own controller and speakers (L2 mode, memberlist) on the lab's real cluster (tests/lab/cluster.py).

``MetalLB(cluster).up()`` installs, from the Go module it was built from (go.universe.tf/metallb at
METALLB_VERSION of tests/kubernetes/versions.env, built by ``scripts/build-kubernetes``):

* the CustomResourceDefinitions of ``config/crd/bases`` (IPAddressPool, L2Advertisement, ServiceL2Status, ...)
  and the ServiceAccounts, Roles, ClusterRoles and their bindings of the published manifest
  ``config/manifests/metallb-native.yaml``, as they are; MetalLB's processes authenticate with tokens of its own
  ServiceAccounts (controller, speaker), so the API server authorizes them with MetalLB's RBAC;
* the controller in the control plane's namespace (``--webhook-mode disabled``: no pod network reaches a webhook
  server there), which allocates Service VIPs and creates the memberlist Secret; the Secret is owned by the
  controller's Deployment, so a Deployment ``controller`` with 0 replicas stands for it (no kubelet runs it);
* one speaker per lab node in the node's network and mount namespaces (a speaker runs hostNetwork), memberlist
  bound on the node's address, its secret key read from the Secret the controller made, as the DaemonSet mounts it.

Played by the lab (there is no kubelet): the speaker Pods. A speaker finds its memberlist peers by listing the
Pods labelled ``app=metallb,component=speaker`` and joining their ``status.podIP``; the lab creates one Pod per node,
bound to it, hostNetwork, and writes its status (Running, podIP = the node's address) as the node's kubelet would
(``Cluster.daemonset_pod``). Stopping a speaker (``stop_speaker``) kills its process, as a crash would; its Pod
stays, as a kubelet that has not yet noticed would leave it. A speaker reads its own Pod (``--pod-name``, the
Downward API's in the DaemonSet): the owner of the ServiceL2Status objects it writes.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import yaml

from .cluster import ROOT, binary
from .core import LabError

NAMESPACE = "metallb-system"
SPEAKER_LABELS = {"app": "metallb", "component": "speaker"}
MEMBERLIST_SECRET = "memberlist"
MODULE_DIR = ROOT / "tests" / "kubernetes" / "modules" / "metallb"
RBAC_KINDS = ("ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def module_dir():
    """The directory of go.universe.tf/metallb in Go's module cache, at the version the lab's module pins."""
    env = dict(os.environ, GOFLAGS="-mod=readonly")  # go.sum pins it: nothing is resolved anew
    proc = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "go.universe.tf/metallb"], cwd=MODULE_DIR,
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    path = Path(proc.stdout.strip())
    if proc.returncode != 0 or not (path / "config" / "crd" / "bases").is_dir():
        raise LabError(f"go.universe.tf/metallb is not in Go's module cache ({proc.stderr.strip()}): run "
                       f"scripts/build-kubernetes, which downloads it and builds MetalLB")
    return path


def upstream_objects(source):
    """The CRDs of config/crd/bases and the RBAC objects of config/manifests/metallb-native.yaml."""
    crds = []
    for path in sorted((source / "config" / "crd" / "bases").glob("*.yaml")):
        crds += [d for d in yaml.safe_load_all(path.read_text()) if d]
    manifest = source / "config" / "manifests" / "metallb-native.yaml"
    rbac = [d for d in yaml.safe_load_all(manifest.read_text()) if d and d.get("kind") in RBAC_KINDS]
    return crds, rbac


def controller_deployment():
    """The controller's Deployment with no replica: no kubelet runs it; it is there to own the memberlist Secret,
    as the controller (``--deployment``) requires."""
    labels = {"app": "metallb", "component": "controller"}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "controller", "image": "lab.invalid/metallb-controller:1"}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "controller", "namespace": NAMESPACE},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template}}


class MetalLB:
    """MetalLB's controller and speakers on ``cluster`` (see the module's docstring)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.lab = cluster.lab
        self.dir = cluster.dir / "metallb"
        self.speakers = {}

    def up(self, pool, timeout=120):
        """Install and start MetalLB with an IPAddressPool ``pool`` (its list of addresses or ranges) and an
        L2Advertisement of it; returns self once every speaker has joined the memberlist of all."""
        cluster = self.cluster
        self.dir.mkdir(parents=True, exist_ok=True)
        crds, rbac = upstream_objects(module_dir())
        cluster.apply(crds)
        for crd in crds:
            cluster.kubectl("wait", "--for", "condition=Established", "--timeout", "60s",
                            "crd/" + crd["metadata"]["name"], timeout=90)
        cluster.ensure_namespace(NAMESPACE)
        cluster.apply(rbac)
        cluster.apply([controller_deployment()])
        self._start_controller()
        secret = cluster.wait_for("the memberlist Secret the MetalLB controller creates",
                                  self._secret, timeout=timeout)
        keydir = self.dir / "memberlist"
        keydir.mkdir(exist_ok=True)
        (keydir / "secretkey").write_bytes(secret)
        for node in self.lab.nodes:
            cluster.daemonset_pod(NAMESPACE, "speaker", node, node.ip, labels=SPEAKER_LABELS, host_network=True,
                                  containers=[{"name": "speaker", "image": "lab.invalid/metallb-speaker:1"}])
        for node in self.lab.nodes:
            self.start_speaker(node)
        cluster.apply([
            {"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
             "metadata": {"name": "lab", "namespace": NAMESPACE}, "spec": {"addresses": list(pool)}},
            {"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
             "metadata": {"name": "lab", "namespace": NAMESPACE}, "spec": {"ipAddressPools": ["lab"]}}])
        names = sorted(n.name for n in self.lab.nodes)
        for node in self.lab.nodes:
            cluster.wait_for(f"the speaker of {node.name} in a memberlist of {names}",
                             lambda n=node: self.members(n) == names, timeout=timeout)
        return self

    def _kubeconfig(self, account):
        token = self.cluster.token(NAMESPACE, account, seconds=6 * 3600)
        return self.cluster.token_kubeconfig(f"metallb-{account}", token)

    def _secret(self):
        found = self.cluster.kubectl("get", "secret", "-n", NAMESPACE, MEMBERLIST_SECRET, "-o",
                                     "jsonpath={.data.secretkey}", check=False)
        if found.returncode != 0 or not found.stdout:
            return None
        return base64.b64decode(found.stdout)

    def _start_controller(self):
        kubeconfig = self._kubeconfig("controller")
        self.cluster._spawn("metallb-controller", [
            "env", f"KUBECONFIG={kubeconfig}", binary("metallb-controller"), "--namespace", NAMESPACE,
            "--ml-secret-name", MEMBERLIST_SECRET, "--deployment", "controller", "--webhook-mode", "disabled",
            "--port", "7472", "--log-level", "debug"])

    def start_speaker(self, node):
        node = self.lab.node(node)
        kubeconfig = self.speakers.get("kubeconfig") or self._kubeconfig("speaker")
        self.speakers["kubeconfig"] = kubeconfig
        self.cluster._spawn(f"metallb-speaker-{node.name}", [
            "env", f"KUBECONFIG={kubeconfig}", binary("metallb-speaker"), "--node-name", node.name,
            "--pod-name", f"speaker-{node.name}",
            "--namespace", NAMESPACE, "--ml-bindaddr", node.ip, "--ml-labels", "app=metallb,component=speaker",
            "--ml-secret-key-path", self.dir / "memberlist", "--host", node.ip, "--port", "7472",
            "--log-level", "debug"], node=node)

    def stop_speaker(self, node):
        """Kill the speaker of ``node`` (its process group), as a crash would."""
        self.cluster.stop(f"metallb-speaker-{self.lab.node(node).name}")

    def members(self, node):
        """The memberlist members the speaker of ``node`` knows, itself included, from the node events it logs
        (``node event - forcing sync``: NodeJoin, NodeLeave), sorted: MetalLB's own record."""
        node = self.lab.node(node)
        log = self.cluster.logs / f"metallb-speaker-{node.name}.log"
        members = {node.name}
        if not log.exists():
            return []
        for line in log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "node event - forcing sync" and entry.get("node name"):
                if entry.get("node event") == "NodeLeave":
                    members.discard(entry["node name"])
                else:
                    members.add(entry["node name"])
        return sorted(members)

    def l2_statuses(self):
        """MetalLB's ServiceL2Status objects, as kubectl reads them."""
        return self.cluster.kubectl_json("get", "servicel2statuses.metallb.io", "-n", NAMESPACE)["items"]

    def announcer(self, namespace, name):
        """The node a ServiceL2Status names for Service ``namespace/name``; None when none does."""
        nodes = [s["status"]["node"] for s in self.l2_statuses()
                 if (s.get("status") or {}).get("serviceName") == name
                 and s["status"].get("serviceNamespace") == namespace]
        return nodes[0] if len(nodes) == 1 else None
