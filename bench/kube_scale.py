"""Benchmark (not a test, never in CI): the API-side modules on a large cluster, on the lab's real API server.

Run as root from the checkout (nice it: the machine is shared):

    K8SNET_LAB_SLOT=6 nice -n 10 .venv/bin/python -m bench.kube_scale --scale 1     # 1 %: 50 nodes, 1,500 pods
    K8SNET_LAB_SLOT=6 nice -n 10 .venv/bin/python -m bench.kube_scale --scale 100   # 5,000 nodes, 150,000 pods

1. ``load``: a lab of two nodes and the real control plane (tests/lab/cluster.Cluster) in a slot of its own, sized for
   the load (below), filled over concurrent keep-alive HTTPS as the admin (audit-logged not at all) with, at 100 %:
   5,000 Nodes (conditions, taints, podCIDRs), 150,000 Pods over 1,000 namespaces bound to nodes, their status written
   through /status as a kubelet would, 10,000 Services and their EndpointSlices (a share LoadBalancer with
   externalTrafficPolicy: Local, a share headless), 2,000 ConfigMaps of which one F5 CIS virtual-server
   ConfigMap per LoadBalancer Service (F5's example-vs-resource v0.1.7 shape; one in 20 names a Service that is gone)
   with a CIS Deployment (pool member type cluster, partition kubernetes) to read them, the cluster's DNS (kube-dns and
   two coredns pods, healthy), and 50,000 Events (one in 25 a FailedCreatePodSandBox of a pod waiting on the CNI).
   The faults planted are counted (``PLANTED``) and printed.
2. ``measure``: each API-side module (ansible ad-hoc, as a user runs it) beside ``kubectl get -A -o json`` of the same
   kinds (build/kubernetes/bin/kubectl, the same release), in the same run: wall time, peak RSS of the process tree
   (wait4's ru_maxrss of the children: the largest one process), requests and bytes (the API server's audit log for
   the measuring ServiceAccount), and the findings.

Sizing (2 cores, 24 GiB): etcd's --quota-backend-bytes 8 GiB (150,000 pods with status and managedFields are about
1 GiB of live keys, twice that before compaction); the API server's --max-requests-inflight 800 and
--max-mutating-requests-inflight 400 (the loader is system:masters, exempt from priority and fairness; the measuring
ServiceAccount gets the workload-low share of it); the controller manager runs only the ServiceAccount and namespace
controllers: no node lifecycle controller (it would mark the 5,000 Nodes no kubelet renews unreachable and evict their
pods: the planted faults would not stay the known ones), no EndpointSlice controller (the loader writes each Service's
slice as another controller's, ``endpointslice.kubernetes.io/managed-by: k8snet.lab``), no pod garbage collector.

Addresses are data (no kube-proxy runs), all inside the slot's ranges, inside 198.18.0.0/15; only the triage's lb_health
sends probes to node addresses, which nothing answers:
the Service range is the slot's node network /19 (8,190 addresses: a quarter of the Services are headless); the nodes'
InternalIPs and podCIDRs (/27) and pod IPs wrap inside the slot's pod /19, so at full scale they repeat.

Measured 2026-12-06 on the 2-core machine (quiet but for the run), 100 %, Kubernetes v1.37.2. The load: 974 s,
383,003 requests (145,000 application pods in 674 s, 215 pods/s; the Services and slices 195 s; the 50,000 Events
71 s). ``peak`` is the largest process's RSS; kubectl reads the same kinds (its commands in MEASURES):

    read                         ours   peak  req | kubectl    peak  req    read | ratio | our output
    kube_network_info nodes,dns  3.4s  142MiB  13 |    4.0s  380MiB   13  21.6MB | 0.86 |  838 kB
    kube_network_info frontends 52.8s  144MiB 332 |  167.9s 10737MiB 332 748.0MB | 0.31 |  187 kB
    node_network_status          9.1s  237MiB  39 |   14.7s  684MiB   38  70.9MB | 0.62 | 2.86 MB
    webhook_deadlock             3.3s  216MiB  31 |    8.2s  675MiB   26  42.0MB | 0.41 |  0.3 kB
    f5_configmap_audit           3.5s  176MiB  33 |    7.8s  326MiB   33  32.5MB | 0.45 |   12 kB
    kube_network_info lb_vips    2.0s   97MiB  21 |    3.8s  229MiB   21  12.2MB | 0.53 |    9 kB
    service_path_info            2.7s  141MiB  15 |    4.8s  380MiB   13  21.6MB | 0.57 |    3 kB
    kube_logs                   70.4s  123MiB  38 |   28.9s  753MiB  111  74.0MB | 2.44 |    5 kB
    triage.yml + 2 lab nodes   116.4s  237MiB 997 |  196.5s  9801MiB 360 840.1MB | 0.59 |   25 kB

The triage's report with all of it: 67 kB of JSON, 103 kB of HTML. At 1 % (50 nodes, 1,500 pods) each module
takes 1.5 to 1.8 s (ansible's own start; kubectl 0.1 to 1.4 s), the triage 51 s, its report 54 kB, and every
planted fault is found with its count as at 100 %.

Before this run's changes the frontends took 206.8 s, 861 MiB and 66.6 MB of output (every NodePort on every node
address); lb_health probed 2.5 million (Service, node) pairs one by one and was stopped at 5.6 GB; the triage's
report was 10.2 MB (15,000 per-probe lb_health findings). kube_logs' time is the API server's wait for the pod logs
of kubelets that do not exist here (no kubelet serves the 5,000 nodes: ``log.not_readable``); kubectl reads no log.
Every planted fault is found once with its count (``planted and found``, the same at --scale 1): 250 NotReady
nodes, 100 NetworkUnavailable, 50 crash-looping and 252 missing CNI agents, 5,800 pods waiting for their sandbox
(one finding), 50 nodes without a pod CIDR, 25 orphan F5 ConfigMaps. The triage's other findings are of pairing
this cluster with the lab's two real nodes (their routes to 5,000 pod CIDRs, DNS to a kube-dns no kube-proxy
serves, lb_health's probes of node addresses that do not exist: one lb.health_probe_mismatch for the nodes, one
lb.probes_limited).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import ssl
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.cluster import API_PORT, Cluster, binary  # noqa: E402
from tests.lab.cluster_objects import audit_requests  # noqa: E402

FULL = {"nodes": 5000, "namespaces": 1000, "pods": 150000, "services": 10000, "configmaps": 2000, "events": 50000}
SHARES = {"node_not_ready": 0.05, "node_network_unavailable": 0.02, "pod_not_ready": 0.05, "pod_cni_waiting": 0.04,
          "cni_agent_crashloop": 0.01, "service_lb_local": 0.05, "service_headless": 0.25}
CNI_DAEMONSET = "calico-node"
CIS = "k8s-bigip-ctlr"
F5_ORPHAN_EVERY = 20  # one F5 ConfigMap in 20 names a Service that is gone
SANDBOX_ERROR = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox '
                 '"%s": plugin type="calico" failed (add): stat /var/lib/calico/nodename: no such file or directory: '
                 'check that the calico/node container is running and has mounted /var/lib/calico/')
NOT_READY_MESSAGE = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                     "message:Network plugin returns error: cni plugin not initialized")
LOADER_USER = "admin"
THREADS = 24


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ------------------------------------------------------------------ HTTP
class Client:
    """Keep-alive HTTPS to the API server, one connection per thread, as the admin."""

    def __init__(self, cluster):
        self.host = cluster.ip
        self.ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
        self.ctx.load_cert_chain(str(cluster.pki / "admin.crt"), str(cluster.pki / "admin.key"))
        self.local = threading.local()
        self.count = 0
        self.lock = threading.Lock()

    def _conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(self.host, API_PORT, context=self.ctx, timeout=120)
        return conn

    def send(self, method, path, body, content_type="application/json"):
        data = json.dumps(body).encode()
        for attempt in range(8):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers={"Content-Type": content_type,
                                                               "Accept": "application/json"})
                response = conn.getresponse()
                text = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                time.sleep(0.2 * (attempt + 1))
                continue
            # 403 at first in a fresh namespace: its default ServiceAccount is not made yet
            conflict = response.status == 409 and b"AlreadyExists" not in text and method == "POST"
            if response.status in (403, 429, 500, 503, 504) or conflict:
                time.sleep(0.2 * (attempt + 1))
                continue
            with self.lock:
                self.count += 1
            if response.status >= 400 and not (response.status == 409 and b"AlreadyExists" in text):
                raise RuntimeError("%s %s: HTTP %d %s" % (method, path, response.status, text[:300]))
            return json.loads(text) if text else None
        raise RuntimeError("%s %s: no answer after 8 attempts" % (method, path))


def run_all(pool, jobs):
    """Run callables concurrently; the first error raised."""
    for future in [pool.submit(job) for job in jobs]:
        future.result()


# ------------------------------------------------------------------ the objects
def counts(scale):
    return {k: max(1, int(round(v * scale / 100.0))) for k, v in FULL.items()}


def picked(index, total, share, offset=0):
    """Whether item ``index`` of ``total`` carries a fault of ``share``: spread evenly, the same at every scale."""
    every = int(round(1 / share))
    return (index + offset) % every == 0


class Plan:
    """The objects of one scale and the faults they carry (``planted``)."""

    def __init__(self, lab, scale):
        self.n = counts(scale)
        self.pod_net = lab.pod_supernet
        self.blocks = list(self.pod_net.subnets(new_prefix=27))
        self.planted = {k: 0 for k in ("node_not_ready", "node_network_unavailable", "node_without_pod_cidr",
                                       "pod_not_ready", "pod_cni_waiting", "cni_agent_crashloop", "cni_agent_missing",
                                       "service_lb_local", "service_headless", "f5_orphan_configmap")}

    def node_name(self, i):
        return "node-%05d" % i

    def node_ip(self, i):
        return str(self.pod_net[16 + i % (self.pod_net.num_addresses - 32)])

    def node_fault(self, i):
        if picked(i, self.n["nodes"], SHARES["node_not_ready"], 3):
            return "not_ready"
        if picked(i, self.n["nodes"], SHARES["node_network_unavailable"], 7):
            return "network_unavailable"
        return None

    def node(self, i):
        cidr = str(self.blocks[i % len(self.blocks)])
        name = self.node_name(i)
        fault = self.node_fault(i)
        taints = []
        if fault == "not_ready":
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
        if fault == "network_unavailable":
            taints.append({"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"})
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                     "topology.kubernetes.io/zone": "zone-%d" % (i % 3)}},
               "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "taints": taints}}
        return obj, self.node_status(i, fault)

    def node_status(self, i, fault):
        t = now()
        ready = ("False", "KubeletNotReady", NOT_READY_MESSAGE) if fault == "not_ready" else \
            ("True", "KubeletReady", "kubelet is posting ready status")
        conditions = [("NetworkUnavailable", "True" if fault == "network_unavailable" else "False",
                       "CalicoIsDown" if fault == "network_unavailable" else "CalicoIsUp",
                       "Calico is shutting down on this node" if fault == "network_unavailable" else
                       "Calico is running on this node"),
                      ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                      ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                      ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                      ("Ready",) + ready]
        return {"addresses": [{"type": "InternalIP", "address": self.node_ip(i)},
                              {"type": "Hostname", "address": self.node_name(i)}],
                "conditions": [{"type": c, "status": s, "reason": r, "message": m, "lastHeartbeatTime": t,
                                "lastTransitionTime": "2026-01-01T00:00:00Z"} for c, s, r, m in conditions],
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "6.1.0",
                             "osImage": "k8snet bench", "containerRuntimeVersion": "containerd://2.1.0",
                             "kubeletVersion": "v1.37.2", "kubeProxyVersion": "", "operatingSystem": "linux",
                             "architecture": "amd64"}}

    def namespace(self, k):
        return "ns-%04d" % k

    def app_pods(self):
        """(namespace index, pod index in it, global index) of the application pods: the pods less one CNI agent
        per node."""
        total = max(self.n["pods"] - self.n["nodes"], self.n["namespaces"])
        per = total // self.n["namespaces"]
        g = 0
        for k in range(self.n["namespaces"]):
            for j in range(per):
                yield k, j, g
                g += 1

    def pod(self, k, j, g):
        node = g % self.n["nodes"]
        name = "app-%d-%05d" % (j % 10, j)
        labels = {"app": "svc-%d" % (j % 10)}
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": self.namespace(k),
                                                               "labels": labels},
               "spec": {"nodeName": self.node_name(node), "automountServiceAccountToken": False,
                        "containers": [{"name": "app", "image": "registry.example/app:1.0",
                                        "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}}
        fault = None
        if picked(g, 0, SHARES["pod_cni_waiting"], 1):
            fault = "cni_waiting"
        elif picked(g, 0, SHARES["pod_not_ready"], 2):
            fault = "not_ready"
        return obj, fault, node

    def pod_ip(self, node, slot):
        block = self.blocks[node % len(self.blocks)]
        return str(block[1 + slot % (block.num_addresses - 2)])

    def pod_status(self, obj, fault, node, slot):
        t = now()
        # a pod planted waiting for its sandbox has waited an hour (past node_network_status's stuck_after), at
        # every scale, however soon after the load it is measured
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
        waiting = fault == "cni_waiting"
        ready = "False" if fault else "True"
        state = ({"waiting": {"reason": "ContainerCreating"}} if waiting else {"running": {"startedAt": t}})
        status = {"phase": "Pending" if waiting else "Running", "hostIP": self.node_ip(node),
                  "hostIPs": [{"ip": self.node_ip(node)}], "startTime": t,
                  "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": not fault,
                                         "restartCount": 0, "started": not waiting, "state": state}
                                        for c in obj["spec"]["containers"]],
                  "conditions": [{"type": c, "status": s, "lastTransitionTime": since if waiting else t}
                                 for c, s in (("PodReadyToStartContainers", "False" if waiting else "True"),
                                              ("PodScheduled", "True"), ("Initialized", "True"),
                                              ("ContainersReady", ready), ("Ready", ready))]}
        if not waiting:
            ip = self.pod_ip(node, slot)
            status.update(podIP=ip, podIPs=[{"ip": ip}])
        return status

    def agent_fault(self, i):
        if self.node_fault(i) == "not_ready":
            return None  # its agent pod is what is missing
        return "crashloop" if picked(i, 0, SHARES["cni_agent_crashloop"], 5) else "ok"

    def services(self):
        """(namespace index, service index in it, global index) of every Service."""
        per = max(1, self.n["services"] // self.n["namespaces"])
        return [(k, s, k * per + s) for k in range(self.n["namespaces"]) for s in range(per)]

    def count(self, lab_nodes):
        """The faults this plan plants, counted (``planted``) from the plan alone, before or without loading it."""
        for i in range(self.n["nodes"]):
            fault = self.node_fault(i)
            if fault:
                self.planted["node_" + fault] += 1
            self.planted["node_without_pod_cidr"] += i % 100 == 42
            agent = self.agent_fault(i)
            if agent != "ok":
                self.planted["cni_agent_" + ("missing" if agent is None else agent)] += 1
        # the lab's own nodes (Cluster.up registers them, healthy) run no CNI agent either
        self.planted["cni_agent_missing"] += lab_nodes
        for k, j, g in self.app_pods():
            fault = self.pod(k, j, g)[1]
            if fault:
                self.planted["pod_" + fault] += 1
        for k, s, g in self.services():
            kind = self.service(k, s, g)[1]
            if kind:
                self.planted["service_" + kind] += 1
        self.planted["f5_orphan_configmap"] = len([n for n in range(len(self.f5_services()))
                                                   if n % F5_ORPHAN_EVERY == 7])
        return self.planted

    def f5_services(self):
        """(namespace index, service index, global index) of the LoadBalancer Services: one F5 ConfigMap each."""
        return [(k, s, g) for k, s, g in self.services() if self.service(k, s, g)[1] == "lb_local"]

    def f5_configmap(self, n, k, s, g):
        """F5 CIS's virtual-server ConfigMap (the shape of F5's example-vs-resource_v0.1.7) of LoadBalancer Service
        ``n``; one in ``F5_ORPHAN_EVERY`` names a Service that is gone (f5.orphan_configmap)."""
        svc = "svc-retired" if n % F5_ORPHAN_EVERY == 7 else "svc-%d" % s
        data = {"virtualServer": {"frontend": {"balance": "round-robin", "mode": "http", "partition": "kubernetes",
                                               "virtualAddress": {"bindAddr": self.vip(g), "port": 80}},
                                  "backend": {"serviceName": svc, "servicePort": 80}}}
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "f5-vs-svc-%d" % s, "namespace": self.namespace(k),
                             "labels": {"f5type": "virtual-server"}},
                "data": {"schema": "f5schemadb://bigip-virtual-server_v0.1.7.json", "data": json.dumps(data)}}

    def vip(self, g):
        return str(self.pod_net[-(2 + g % 200)])

    def service(self, k, s, g):
        name = "svc-%d" % s
        spec = {"selector": {"app": name},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
        kind = None
        if picked(g, 0, SHARES["service_lb_local"], 3):
            spec.update(type="LoadBalancer", externalTrafficPolicy="Local")
            kind = "lb_local"
        elif picked(g, 0, SHARES["service_headless"], 1):
            spec["clusterIP"] = "None"
            kind = "headless"
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": self.namespace(k)},
                "spec": spec}, kind


# ------------------------------------------------------------------ the load
def load(cluster, plan, client, pool):
    t0 = time.monotonic()
    n = plan.n
    stamp = {}

    def step(what, jobs):
        start = time.monotonic()
        run_all(pool, jobs)
        stamp[what] = round(time.monotonic() - start, 1)
        print("  %-34s %8.1f s  (%d requests so far)" % (what, stamp[what], client.count), flush=True)

    def node_job(i):
        def job():
            obj, status = plan.node(i)
            if i % 100 == 42:  # one node in 100 without a pod CIDR (Calico or Cilium IPAM give their own)
                obj["spec"] = {"taints": obj["spec"]["taints"]}
            client.send("POST", "/api/v1/nodes", obj)
            client.send("PATCH", "/api/v1/nodes/%s/status" % obj["metadata"]["name"], {"status": status},
                        "application/merge-patch+json")
        return job

    plan.count(len(cluster.lab.nodes))
    step("%d nodes" % n["nodes"], [node_job(i) for i in range(n["nodes"])])

    step("%d namespaces" % n["namespaces"], [
        (lambda k=k: client.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": plan.namespace(k)}}))
        for k in range(n["namespaces"])])
    ds = client.send("POST", "/apis/apps/v1/namespaces/kube-system/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": CNI_DAEMONSET, "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"k8s-app": CNI_DAEMONSET}},
                 "template": {"metadata": {"labels": {"k8s-app": CNI_DAEMONSET}},
                              "spec": {"nodeSelector": {"k8snet.lab/no-node": "true"},
                                       "containers": [{"name": "calico-node", "image": "calico/node:v3.31.0"}]}}}})
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": CNI_DAEMONSET, "uid": ds["metadata"]["uid"],
             "controller": False}
    cluster_dns(plan, client)
    step("%d CNI agent pods" % n["nodes"], [agent_job(plan, client, owner, i) for i in range(n["nodes"])
                                            if plan.agent_fault(i)])
    apps = list(plan.app_pods())
    step("%d application pods" % len(apps), [pod_job(plan, client, k, j, g) for k, j, g in apps])
    services = plan.services()
    step("%d services + slices" % len(services), [service_job(plan, client, k, s, g) for k, s, g in services])
    f5_services = plan.f5_services()
    cis_controller(client)
    step("%d F5 CIS configmaps" % len(f5_services), [
        (lambda n=n, k=k, s=s, g=g: client.send("POST", "/api/v1/namespaces/%s/configmaps" % plan.namespace(k),
                                                plan.f5_configmap(n, k, s, g)))
        for n, (k, s, g) in enumerate(f5_services)])
    others = max(0, n["configmaps"] - len(f5_services))
    step("%d other configmaps" % others, [configmap_job(plan, client, c) for c in range(others)])
    step("%d events" % n["events"], [event_job(plan, client, e, apps) for e in range(n["events"])])
    print("loaded in %.0f s, %d requests" % (time.monotonic() - t0, client.count), flush=True)
    return stamp


def agent_job(plan, client, owner, i):
    def job():
        name = "%s-%05d" % (CNI_DAEMONSET, i)
        obj = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "kube-system", "labels": {"k8s-app": CNI_DAEMONSET},
                            "ownerReferences": [owner]},
               "spec": {"nodeName": plan.node_name(i), "hostNetwork": True, "automountServiceAccountToken": False,
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "calico-node", "image": "calico/node:v3.31.0"}]}}
        client.send("POST", "/api/v1/namespaces/kube-system/pods", obj)
        t = now()
        crash = plan.agent_fault(i) == "crashloop"
        state = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}} \
            if crash else {"running": {"startedAt": t}}
        ready = "False" if crash else "True"
        status = {"phase": "Running", "hostIP": plan.node_ip(i), "podIP": plan.node_ip(i),
                  "podIPs": [{"ip": plan.node_ip(i)}], "startTime": t,
                  "containerStatuses": [{"name": "calico-node", "image": "calico/node:v3.31.0", "imageID": "",
                                         "ready": not crash, "restartCount": 12 if crash else 0, "started": not crash,
                                         "state": state}],
                  "conditions": [{"type": c, "status": s, "lastTransitionTime": t} for c, s in (
                      ("PodScheduled", "True"), ("Initialized", "True"), ("ContainersReady", ready),
                      ("Ready", ready))]}
        client.send("PATCH", "/api/v1/namespaces/kube-system/pods/%s/status" % name, {"status": status},
                    "application/merge-patch+json")
    return job


def pod_job(plan, client, k, j, g):
    def job():
        obj, fault, node = plan.pod(k, j, g)
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        client.send("POST", "/api/v1/namespaces/%s/pods" % ns, obj)
        client.send("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (ns, name),
                    {"status": plan.pod_status(obj, fault, node, g // plan.n["nodes"])}, "application/merge-patch+json")
    return job


def service_job(plan, client, k, s, g):
    def job():
        obj, kind = plan.service(k, s, g)
        ns = obj["metadata"]["namespace"]
        got = client.send("POST", "/api/v1/namespaces/%s/services" % ns, obj)
        if kind == "lb_local":
            vip = plan.vip(g)
            client.send("PATCH", "/api/v1/namespaces/%s/services/%s/status" % (ns, obj["metadata"]["name"]),
                        {"status": {"loadBalancer": {"ingress": [{"ip": vip, "ipMode": "VIP"}]}}},
                        "application/merge-patch+json")
        per = max(1, (plan.n["pods"] - plan.n["nodes"]) // plan.n["namespaces"])
        endpoints = []
        for j in range(s, per, 10):
            pod_g = k * per + j
            obj_pod, fault, node = plan.pod(k, j, pod_g)
            if fault == "cni_waiting":
                continue
            endpoints.append({"addresses": [plan.pod_ip(node, pod_g // plan.n["nodes"])],
                              "conditions": {"ready": not fault, "serving": not fault, "terminating": False},
                              "nodeName": plan.node_name(node),
                              "targetRef": {"kind": "Pod", "namespace": ns, "name": obj_pod["metadata"]["name"]}})
        client.send("POST", "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns, {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "%s-lab" % obj["metadata"]["name"], "namespace": ns,
                         "labels": {"kubernetes.io/service-name": obj["metadata"]["name"],
                                    "endpointslice.kubernetes.io/managed-by": "k8snet.lab"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": obj["metadata"]["name"],
                                              "uid": got["metadata"]["uid"]}]},
            "endpoints": endpoints, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
    return job


def cluster_dns(plan, client):
    """The cluster's DNS as kubeadm installs it (Service kube-system/kube-dns, two coredns pods Running and Ready on
    the first nodes), healthy: a cluster without DNS would be a fault the loader did not mean to plant."""
    labels = {"k8s-app": "kube-dns"}
    client.send("POST", "/api/v1/namespaces/kube-system/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system",
                                                            "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                               {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}})
    for i in range(2):
        name = "coredns-7db6d8ff4d-%d" % i
        client.send("POST", "/api/v1/namespaces/kube-system/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
            "spec": {"nodeName": plan.node_name(i + 1), "automountServiceAccountToken": False,
                     "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.0"}]}})
        t = now()
        status = {
            "phase": "Running", "podIP": plan.pod_ip(i + 1, 0), "podIPs": [{"ip": plan.pod_ip(i + 1, 0)}],
            "hostIP": plan.node_ip(i + 1), "startTime": t,
            "containerStatuses": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                                   "imageID": "", "ready": True, "restartCount": 0, "started": True,
                                   "state": {"running": {"startedAt": t}}}],
            "conditions": [{"type": c, "status": "True", "lastTransitionTime": t}
                           for c in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]}
        client.send("PATCH", "/api/v1/namespaces/kube-system/pods/%s/status" % name, {"status": status},
                    "application/merge-patch+json")


def cis_controller(client):
    """F5 CIS's Deployment as F5's sample installs it (all namespaces, pool member type cluster, partition
    kubernetes), its status one ready replica as the Deployment controller (not run here) would write it."""
    labels = {"app": CIS}
    client.send("POST", "/apis/apps/v1/namespaces/kube-system/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": CIS, "namespace": "kube-system"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                     "name": CIS, "image": "f5networks/k8s-bigip-ctlr:2.19.1",
                     "args": ["--bigip-url=198.18.0.1", "--bigip-partition=kubernetes", "--pool-member-type=cluster",
                              "--insecure=true"]}]}}}})
    client.send("PATCH", "/apis/apps/v1/namespaces/kube-system/deployments/%s/status" % CIS,
                {"status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}},
                "application/merge-patch+json")


def configmap_job(plan, client, c):
    def job():
        ns = plan.namespace(c % plan.n["namespaces"])
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config-%04d" % c, "namespace": ns},
               "data": {"app.properties": "key=value\n" * 20}}
        client.send("POST", "/api/v1/namespaces/%s/configmaps" % ns, obj)
    return job


def event_job(plan, client, e, apps):
    def job():
        k, j, g = apps[e % len(apps)]
        obj, fault, node = plan.pod(k, j, g)
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        if fault == "cni_waiting":
            reason, kind, message = "FailedCreatePodSandBox", "Warning", SANDBOX_ERROR % ("%064x" % e)
        else:
            reason, kind, message = "Pulled", "Normal", 'Container image "registry.example/app:1.0" already present'
        t = now()
        client.send("POST", "/api/v1/namespaces/%s/events" % ns, {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "%s.%08x" % (name, e), "namespace": ns},
            "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": kind, "count": 1, "firstTimestamp": t, "lastTimestamp": t,
            "source": {"component": "kubelet", "host": plan.node_name(node)}})
    return job


# ------------------------------------------------------------------ the measures
def measured(argv, env):
    """Run ``argv`` in a fresh wrapper process that waits for it and reports its RUSAGE_CHILDREN ru_maxrss: the peak RSS
    of the largest process of the tree (ansible's controller, the module's process), in the wrapper's own account."""
    wrapper = [sys.executable, "-c", (
        "import resource,subprocess,sys,time,json\n"
        "t=time.perf_counter(); p=subprocess.run(sys.argv[1:],capture_output=True,text=True)\n"
        "s=time.perf_counter()-t\n"
        "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "sys.stderr.write(p.stderr); sys.stdout.write(json.dumps({'seconds':s,'rss_kib':r,'rc':p.returncode,"
        "'out':p.stdout}))\n"), *argv]
    proc = subprocess.run(wrapper, capture_output=True, text=True, timeout=3600, env=env, check=False)
    try:
        return json.loads(proc.stdout), proc.stderr
    except ValueError:
        return {"seconds": 0, "rss_kib": 0, "rc": -1, "out": proc.stdout}, proc.stderr


def audit_since(cluster, user, mark):
    reqs = audit_requests(cluster, user, settle=0.5)
    return reqs[mark:], len(reqs)


def module_argv(name, args, inventory):
    return ["ansible", "localhost", "-i", inventory, "-m", "k8snet.triage." + name, "-a", json.dumps(args), "-o"]


def module_result(out):
    if " => " not in out:
        return None
    try:
        return json.loads(out.split(" => ", 1)[1])
    except ValueError:
        return None


MEASURES = [
    # (label, module, its arguments, the kubectl commands (arguments after ``get``; ``-o json`` added) that read the
    # same objects: what an operator runs by hand for the same answer)
    ("kube_network_info nodes,dns", "kube_network_info", {"gather": ["nodes", "dns_servers"]},
     [["nodes"], ["services", "-n", "kube-system", "kube-dns"],
      ["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"]]),
    ("kube_network_info frontends", "kube_network_info", {"gather": ["service_frontends"]},
     [["nodes,services,pods", "-A"]]),
    ("node_network_status", "node_network_status", {},
     [["nodes,pods", "-n", "kube-system"], ["pods", "-A", "--field-selector", "status.phase=Pending"],
      ["events", "-A", "--field-selector", "reason=FailedCreatePodSandBox"]]),
    ("webhook_deadlock", "webhook_deadlock", {},
     [["validatingwebhookconfigurations,mutatingwebhookconfigurations,namespaces,nodes,pods", "-n", "kube-system"]]),
    ("f5_configmap_audit", "f5_configmap_audit", {},
     [["services", "-A"], ["configmaps", "-A", "-l", "f5type=virtual-server"], ["pods", "-n", "kube-system"],
      ["deployments", "-A"]]),
    ("kube_network_info lb_vips", "kube_network_info", {"gather": ["lb_vips"]}, [["services", "-A"]]),
    # a LoadBalancer Service (externalTrafficPolicy Local) and its 14 endpoints on 14 nodes
    ("service_path_info", "service_path_info", {"service": "ns-0001/svc-7"},
     [["services", "-n", "ns-0001", "svc-7"],
      ["endpointslices", "-n", "ns-0001", "-l", "kubernetes.io/service-name=svc-7"], ["nodes"]]),
    ("kube_logs", "kube_logs", {"nodes": ["node-00003", "node-00005"], "max_pods": 5},
     [["pods", "-A", "-l", "k8s-app in (calico-node,cilium,kube-dns)"], ["events", "-A"]]),
]
# the triage's API half: triage.yml on the lab's two nodes (their node side is real and small) with the large
# cluster's credentials; beside it kubectl of the kinds its API reads list in all namespaces
TRIAGE_MANUAL = [["nodes,pods,services,endpointslices", "-A"],
                 ["events", "-A", "--field-selector", "reason=FailedCreatePodSandBox"],
                 ["configmaps", "-A", "-l", "f5type=virtual-server"], ["deployments", "-A"]]


def measure(cluster, lab, token_kubeconfig, user, only=None):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               PATH="%s:%s" % (ROOT / ".venv" / "bin", os.environ["PATH"]))
    rows = []
    mark = len(audit_requests(cluster, user, settle=0.5))
    for label, module, args, manual_args in MEASURES:
        if only and label not in only:
            continue
        argv = module_argv(module, dict(args, kubeconfig=str(token_kubeconfig), api_timeout=1800),
                           str(lab.inventory_path))
        ours, err = measured(argv, env)
        reqs, mark = audit_since(cluster, user, mark)
        result = module_result(ours["out"]) or {}
        manual = kubectl_side(token_kubeconfig, manual_args, env)
        kreqs, mark = audit_since(cluster, user, mark)
        rows.append({"label": label, "ours": ours, "manual": manual, "requests": len(reqs),
                     "manual_requests": len(kreqs), "manual_bytes": len(manual["out"]),
                     "output_bytes": len(ours["out"]), "failed": result.get("msg") if result.get("failed") else None,
                     "findings": sorted("%s x%s" % (f["check"], (f.get("evidence") or {}).get("count", 1))
                                        for f in result.get("findings") or []),
                     "stderr": err[-500:] if ours["rc"] else ""})
        print_row(rows[-1])
    if not only or "triage" in only:
        row, mark = measure_triage(cluster, lab, token_kubeconfig, user, env, mark)
        rows.append(row)
    return rows


def kubectl_side(kubeconfig, commands, env):
    """The manual way: ``kubectl get <command> -o json`` one after the other; time summed, the largest peak."""
    manual = {"seconds": 0, "rss_kib": 0, "out": "", "commands": 0}
    for command in commands:
        one = measured([binary("kubectl"), "--kubeconfig", str(kubeconfig), "get", *command, "-o", "json",
                        "--request-timeout=0"], env)[0]
        manual = {"seconds": manual["seconds"] + one["seconds"], "rss_kib": max(manual["rss_kib"], one["rss_kib"]),
                  "out": manual["out"] + one["out"], "commands": manual["commands"] + 1}
    return manual


def measure_triage(cluster, lab, kubeconfig, user, env, mark):
    """triage.yml as an operator runs it in an incident, with the report; (row, audit mark)."""
    out = lab.workdir / "kube_scale-report"
    out.mkdir(exist_ok=True)
    extra = {"triage_kubeconfig": str(kubeconfig), "report_output_dir": str(out), "report_fail_on_critical": False,
             "connectivity_probes": ["icmp", "arp"]}
    argv = [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.inventory_path),
            "k8snet.triage.triage", "-e", json.dumps(extra)]
    ours, err = measured(argv, env)
    reqs, mark = audit_since(cluster, user, mark)
    manual = kubectl_side(kubeconfig, TRIAGE_MANUAL, env)
    kreqs, mark = audit_since(cluster, user, mark)
    report = out / "triage-report.json"
    html = out / "triage-report.html"
    findings = []
    if report.exists():
        doc = json.loads(report.read_text())
        for item in doc.get("findings") or []:
            evidence = item.get("evidence") or {}
            findings.append("%s x%s" % (item.get("check"), evidence.get("count", 1)))
    row = {"label": "triage.yml (API half + 2 lab nodes)", "ours": ours, "manual": manual, "requests": len(reqs),
           "manual_requests": len(kreqs), "manual_bytes": len(manual["out"]), "output_bytes": len(ours["out"]),
           "report_bytes": report.stat().st_size if report.exists() else None,
           "report_html_bytes": html.stat().st_size if html.exists() else None,
           "failed": None if ours["rc"] == 0 else "rc %s: %s" % (ours["rc"], ours["out"][-600:]),
           "findings": sorted(findings), "stderr": err[-500:] if ours["rc"] else ""}
    print_row(row)
    print("    report: %s bytes JSON, %s bytes HTML" % (row["report_bytes"], row["report_html_bytes"]), flush=True)
    return row, mark


# each planted fault: the row that must find it, the check, and how the count is read (the evidence's count of a
# finding said once for many, else the number of findings); compared at every scale
FOUND_AS = [
    ("node_not_ready", "node_network_status", "node.cni_not_ready"),
    ("node_network_unavailable", "node_network_status", "node.network_unavailable"),
    ("cni_agent_crashloop", "node_network_status", "node.cni_pod_crashloop"),
    ("cni_agent_missing", "node_network_status", "node.cni_pod_missing"),
    ("pod_cni_waiting", "node_network_status", "node.pods_waiting_for_sandbox"),
    ("node_without_pod_cidr", "kube_network_info nodes,dns", "kube.node_without_pod_cidr"),
    ("f5_orphan_configmap", "f5_configmap_audit", "f5.orphan_configmap"),
]


def tally(row):
    """{check: count} of one row's findings ("check xN" each)."""
    out = {}
    for item in row["findings"]:
        check, count = item.rsplit(" x", 1)
        out[check] = out.get(check, 0) + int(count)
    return out


def compare(planted, rows):
    """Lines that say, for each planted fault, what was found; and the checks found that nothing planted."""
    by_label = dict((row["label"], tally(row)) for row in rows)
    lines, expected = [], {}
    for fault, label, check in FOUND_AS:
        if label not in by_label:
            continue
        expected.setdefault(label, set()).add(check)
        found = by_label[label].get(check, 0)
        lines.append("  %-26s planted %6d  found %6d as %s (%s)%s" % (
            fault, planted.get(fault, 0), found, check, label, "" if found == planted.get(fault, 0) else "  MISMATCH"))
    for label, counts in by_label.items():
        extra = sorted(c for c in counts if c not in expected.get(label, set()))
        if extra:
            lines.append("  %s also found: %s" % (label, ", ".join("%s x%d" % (c, counts[c]) for c in extra)))
    return lines


def print_row(row):
    ours, manual = row["ours"], row["manual"]
    ratio = ours["seconds"] / manual["seconds"] if manual["seconds"] else 0
    print("%-30s ours %7.1fs %6.0f MiB %5d req | kubectl %7.1fs %6.0f MiB %4d req %6.1f MB | x%.2f | out %.0f kB"
          % (row["label"], ours["seconds"], ours["rss_kib"] / 1024, row["requests"], manual["seconds"],
             manual["rss_kib"] / 1024, row["manual_requests"], row["manual_bytes"] / 1e6, ratio,
             row["output_bytes"] / 1e3), flush=True)
    if row["failed"]:
        print("    FAILED: %s" % row["failed"][:400])
    if row["stderr"]:
        print("    stderr: %s" % row["stderr"])
    print("    findings: %s" % ", ".join(row["findings"]), flush=True)


def start(scale):
    lab = Lab(nodes=2).up()
    cluster = Cluster(lab, proxies=False, quiet_users=[LOADER_USER], args={
        "etcd": ["--quota-backend-bytes", str(8 * 1024 ** 3)],
        "kube-apiserver": ["--max-requests-inflight", "800", "--max-mutating-requests-inflight", "400",
                           "--service-cluster-ip-range", str(lab.slot_ranges[0])],
        "kube-controller-manager": ["--controllers", "serviceaccount-controller,serviceaccount-token-controller,"
                                    "namespace-controller,garbage-collector-controller"]})
    cluster.up()
    return lab, cluster


def reader(cluster):
    """A ServiceAccount that may read everything (ClusterRole view + nodes), its token kubeconfig and user name."""
    cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench-reader"}})
    cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "bench-reader"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}]})
    cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "bench-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench-reader", "namespace": "default"}]})
    path = cluster.token_kubeconfig("bench-reader", cluster.token("default", "bench-reader", seconds=86400))
    return path, "system:serviceaccount:default:bench-reader"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--scale", type=float, default=1.0, help="percent of the full size (1: 50 nodes)")
    parser.add_argument("--keep", action="store_true", help="leave the lab up (K8SNET_LAB_SLOT's) after the run")
    parser.add_argument("--only", action="append", help="measure only this label (repeatable)")
    parser.add_argument("--reuse", action="store_true", help="measure the lab of K8SNET_LAB_SLOT loaded by a run with "
                        "--keep at the same --scale, without loading again")
    args = parser.parse_args()
    if not 0 < args.scale <= 100:
        parser.error("--scale is a percent from 0 (excluded) to 100")
    if args.reuse:
        lab = Lab.load()
        cluster = Cluster(lab)
        state = lab.workdir / "kube_scale.json"
        saved = json.loads(state.read_text()) if state.exists() else {"scale": args.scale}
        if saved["scale"] != args.scale:
            parser.error("the lab was loaded at --scale %g" % saved["scale"])
    else:
        lab, cluster = start(args.scale)
    try:
        plan = Plan(lab, args.scale)
        print("scale %g%%: %s" % (args.scale, plan.n), flush=True)
        if args.reuse:
            plan.count(len(lab.nodes))
            cluster_dns(plan, Client(cluster))  # a lab loaded before the loader made the cluster's DNS
        else:
            with ThreadPoolExecutor(THREADS) as pool:
                load(cluster, plan, Client(cluster), pool)
            kubeconfig, user = reader(cluster)
            (lab.workdir / "kube_scale.json").write_text(json.dumps({"scale": args.scale, "planted": plan.planted}))
        print("planted: %s" % json.dumps(plan.planted), flush=True)
        if not cluster.kubeconfig("bench-reader").exists():  # a load stopped before its end
            reader(cluster)
        kubeconfig, user = cluster.kubeconfig("bench-reader"), "system:serviceaccount:default:bench-reader"
        rows = measure(cluster, lab, kubeconfig, user, args.only)
        print("planted and found:")
        for line in compare(plan.planted, rows):
            print(line)
        out = ROOT / "tests" / "output" / ("kube_scale-%g.json" % args.scale)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"scale": args.scale, "counts": plan.n, "planted": plan.planted,
                                   "rows": [dict(r, ours=dict(r["ours"], out=None), manual=dict(r["manual"], out=None))
                                            for r in rows]}, indent=1))
        print("written: %s" % out)
    finally:
        if not args.keep:
            lab.down(quiet=True)


if __name__ == "__main__":
    main()
