"""A real Kubernetes control plane and kube-proxy in the lab, built from their own Go modules.

``Cluster(lab).up()`` starts, for lab slot ``s``:

* namespace ``k8t<s>-api`` on the lab's bridge at ``.5`` of the node network, holding etcd (on its loopback),
  kube-apiserver (``https://198.18.(32s).5:6443``: its own CA, TLS, ``Node,RBAC`` authorization, ServiceAccount
  tokens, the admission chain with webhooks, ``--enable-aggregator-routing`` so that it reaches webhooks at their
  pods' addresses, routed to the nodes' pod CIDRs as a control-plane node's are) and kube-controller-manager
  (EndpointSlices, ServiceAccounts and their tokens, namespaces, node lifecycle, garbage collection);
* every lab node registered as a Node (name, InternalIP, podCIDR, conditions) whose Lease the lab renews every
  10 s (``tests/lab/kubelet.py``);
* kube-proxy in every node's namespaces under the node's name, in iptables mode on odd nodes and nftables mode
  on even ones (``proxy_modes``), with its healthz and ``healthCheckNodePort`` servers on the node's address.

By default there is no kubelet and no container runtime: the lab plays the kubelet's part for pods (``run_pod``
writes a pod's status: phase, podIP from the lab's pod namespaces, Ready, a container's waiting reason). That is the
one part still played. ``tests.lab.node_agent.NodeAgent`` runs a real kubelet and containerd on a node instead (the
API server reaches it for logs and exec with its ``apiserver-kubelet-client`` certificate). Everything else answers
as a cluster does, because it is one.

The binaries come from ``scripts/build-kubernetes`` (``build/kubernetes/bin``). Every process runs inside a
namespace of the slot, so ``lab.down()`` ends them with the rest; their logs are under ``<lab>/kube/log``.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.kube_api.certs import CA, write_private

from .core import LabError

ROOT = Path(__file__).resolve().parents[2]
KUBE_BIN = ROOT / "build" / "kubernetes" / "bin"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-proxy", "kubectl", "coredns")
NODE_BINARIES = ("kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "pause")  # tests/lab/node_agent.py
API_INDEX = 5  # the API server's address: .5 of the node network (.1 is the controller, nodes from .10)
API_PORT = 6443
PROXY_MODES = ("iptables", "nftables")
WEB_SERVER = ("import http.server,sys\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        body=sys.argv[3].encode(); self.send_response(200)\n"
              "        self.send_header('Content-Length',str(len(body))); self.end_headers(); self.wfile.write(body)\n"
              "    def log_message(self,*a): pass\n"
              "http.server.HTTPServer((sys.argv[1],int(sys.argv[2])),H).serve_forever()\n")


def binary(name):
    path = KUBE_BIN / name
    if not os.access(path, os.X_OK):
        raise LabError(f"{path} is missing: run scripts/build-kubernetes (it builds the lab's Kubernetes from its Go "
                       f"modules into a cache; the first build takes about 20 minutes on 2 cores)")
    return str(path)


def built():
    """Whether every binary the cluster runs is built."""
    return all(os.access(KUBE_BIN / b, os.X_OK) for b in BINARIES + NODE_BINARIES)


def kubeconfig_data(server, ca_pem, user, cert_pem=None, key_pem=None, token=None):
    """A kubeconfig (as a dict) with everything embedded."""
    credentials = {}
    if cert_pem:
        credentials = {"client-certificate-data": base64.b64encode(cert_pem).decode(),
                       "client-key-data": base64.b64encode(key_pem).decode()}
    if token:
        credentials = {"token": token}
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": {"server": server,
                                                 "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": user}}],
    }


class ApiError(LabError):
    def __init__(self, status, reason, body):
        super().__init__(f"API {status} {reason}: {body[:500]}")
        self.status = status
        self.body = body


class Cluster:
    """The lab's control plane and kube-proxies (see the module's docstring)."""

    def __init__(self, lab, proxy_modes=PROXY_MODES, args=None, proxies=True, quiet_users=()):
        """``args``: extra arguments per component ({"etcd": [...], "kube-apiserver": [...],
        "kube-controller-manager": [...]}, after the lab's own, so that they win); ``proxies``: False starts no
        kube-proxy (bench/kube_scale.py: 10,000 Services would keep them busy); ``quiet_users``: users whose requests
        the audit log leaves out (a bulk loader's)."""
        self.lab = lab
        self.args = {k: [str(a) for a in v] for k, v in (args or {}).items()}
        unknown = sorted(set(self.args) - {"etcd", "kube-apiserver", "kube-controller-manager"})
        if unknown:
            raise LabError(f"args for {unknown}: only etcd, kube-apiserver and kube-controller-manager take extra ones")
        self.proxies = proxies
        self.quiet_users = list(quiet_users)
        self.ns = f"{lab.prefix}-api"
        self.ip = str(lab.network[API_INDEX])
        self.server = f"https://{self.ip}:{API_PORT}"
        self.dir = lab.workdir / "kube"
        self.pki = self.dir / "pki"
        self.logs = self.dir / "log"
        bad = [m for m in proxy_modes if m not in PROXY_MODES]
        if not proxy_modes or bad:
            raise LabError(f"proxy_modes={list(proxy_modes)!r}: use a list of {', '.join(PROXY_MODES)}")
        self.proxy_modes = tuple(proxy_modes)
        self.audit_log = self.logs / "audit.jsonl"
        self._ctx = None
        self.ca = None  # the cluster's CA, in the process that made it (to sign a webhook's serving certificate)

    # ------------------------------------------------------------------ facts
    def proxy_mode(self, node):
        """kube-proxy's mode on ``node``: the modes in turn, node1 the first."""
        return self.proxy_modes[(self.lab.node(node).index - 1) % len(self.proxy_modes)]

    def kubeconfig(self, user="admin"):
        return self.dir / f"{user}.kubeconfig"

    @property
    def ca_file(self):
        return self.pki / "ca.crt"

    # --------------------------------------------------------------- lifecycle
    def up(self, timeout=240):
        binaries = {b: binary(b) for b in BINARIES if b != "coredns"}
        t0 = time.monotonic()
        for sub in (self.pki, self.logs, self.dir / "etcd", self.dir / "proxy"):
            sub.mkdir(parents=True, exist_ok=True)
        self._network()
        self._make_pki()
        self._spawn("etcd", [
            binaries["etcd"], "--name", "lab", "--data-dir", self.dir / "etcd",
            "--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
            "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--initial-cluster", "lab=http://127.0.0.1:2380", "--unsafe-no-fsync", "--log-level", "warn",
            "--quota-backend-bytes", str(2 * 1024 ** 3), *self.args.get("etcd", ())])
        p = self.pki
        self._spawn("kube-apiserver", [
            binaries["kube-apiserver"], "--etcd-servers", "http://127.0.0.1:2379",
            "--advertise-address", self.ip, "--bind-address", self.ip, "--secure-port", API_PORT,
            "--service-cluster-ip-range", self.lab.service_network, "--service-node-port-range", "30000-32767",
            "--tls-cert-file", p / "apiserver.crt", "--tls-private-key-file", p / "apiserver.key",
            "--client-ca-file", p / "ca.crt", "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction", "--allow-privileged=true",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", p / "sa.pub", "--service-account-signing-key-file", p / "sa.key",
            "--enable-aggregator-routing=true", "--profiling=false", "--v=1",
            # a node's kubelet (logs, exec) at its InternalIP, as most clusters reach it: the lab's node names resolve
            # nowhere, and a name lookup would go to the machine's resolver, outside the lab
            "--kubelet-preferred-address-types", "InternalIP",
            # its client certificate at a real kubelet (tests/lab/node_agent.py), which authenticates by the CA
            "--kubelet-client-certificate", p / "apiserver-kubelet-client.crt",
            "--kubelet-client-key", p / "apiserver-kubelet-client.key",
            "--audit-policy-file", self._audit_policy(), "--audit-log-path", self.audit_log,
            "--audit-log-format", "json", "--audit-log-mode", "blocking", "--audit-log-maxsize", "200",
            *self.args.get("kube-apiserver", ())])
        self._wait("the API server's /readyz", lambda: self._ready("/readyz"), t0 + timeout)
        self._spawn("kube-controller-manager", [
            binaries["kube-controller-manager"], "--kubeconfig", self.kubeconfig("kube-controller-manager"),
            "--authentication-kubeconfig", self.kubeconfig("kube-controller-manager"),
            "--authorization-kubeconfig", self.kubeconfig("kube-controller-manager"),
            "--bind-address", "127.0.0.1", "--leader-elect=false", "--use-service-account-credentials=true",
            "--service-account-private-key-file", p / "sa.key", "--root-ca-file", p / "ca.crt",
            "--cluster-name", f"lab{self.lab.slot}", "--profiling=false", "--v=1",
            *self.args.get("kube-controller-manager", ())])
        self.register_nodes()
        self._spawn("kubelet-standin", [self.lab.python, "-m", "tests.lab.kubelet", "--server", self.server,
                                        "--ca", p / "ca.crt", "--cert", p / "admin.crt", "--key", p / "admin.key",
                                        "--interval", "10", *[n.name for n in self.lab.nodes]], cwd=ROOT)
        for node in self.lab.nodes if self.proxies else ():
            self._start_proxy(node, binaries["kube-proxy"])
        self._wait("every kube-proxy's /healthz", self._proxies_healthy, t0 + timeout)
        self._wait("the default ServiceAccount", lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
                   t0 + timeout)
        self.lab.remember("cluster", {"server": self.server, "kubeconfig": str(self.kubeconfig()),
                                      "proxy_modes": {n.name: self.proxy_mode(n) for n in self.lab.nodes},
                                      "seconds_to_ready": round(time.monotonic() - t0, 1)})
        return self

    def _audit_policy(self):
        """The API server's audit policy: every request of a client (the tests, kubectl, the modules) at level
        Metadata, once its response is complete; the controllers', kube-proxies' and health probes' none. The log is
        the tests' record of what a module sent (``tests.lab.cluster_objects.audit_requests``)."""
        path = self.dir / "audit-policy.json"
        path.write_text(json.dumps({
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
            "rules": [
                {"level": "None", "users": ["system:kube-controller-manager", "system:kube-proxy", "system:apiserver",
                                            *self.quiet_users]},
                {"level": "None", "userGroups": ["system:serviceaccounts:kube-system", "system:nodes"]},
                {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*"]},
                {"level": "Metadata"},
            ]}, indent=1))
        return path

    def _network(self):
        lab, ns = self.lab, self.ns
        lab.run(["ip", "netns", "add", ns])
        lab.run(["ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", "vapi", "netns",
                 lab.switch_ns])
        lab.run(["ip", "-n", lab.switch_ns, "link", "set", "vapi", "master", "br0", "up"])
        lines = ["link set lo up", "link set eth0 up", f"addr add {self.ip}/{lab.network.prefixlen} dev eth0"]
        # a control-plane host reaches pods (webhooks, aggregated APIs) through the nodes that hold their CIDRs
        lines += [f"route add {n.pod_cidr} via {n.ip} dev eth0" for n in lab.nodes]
        lab.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n")
        # a node reaches ClusterIPs by its default route (kube-proxy's DNAT happens after the route lookup); the lab's
        # nodes have none, so the service range goes to the controller's address, where nothing answers for it
        for node in lab.nodes:
            lab.run(["ip", "-n", node.ns, "route", "replace", str(lab.service_network), "via", lab.controller_ip])

    def _make_pki(self):
        ca = self.ca = CA(name=f"k8snet-lab{self.lab.slot}-kubernetes-ca")
        (self.pki / "ca.crt").write_bytes(ca.pem)
        write_private(self.pki / "ca.key", ca.key.private_bytes(serialization.Encoding.PEM,
                                                                serialization.PrivateFormat.PKCS8,
                                                                serialization.NoEncryption()))
        service_ip = str(self.lab.service_network[1])
        cert, key = ca.issue("kube-apiserver", addresses=[self.ip, service_ip, "127.0.0.1"],
                             names=["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                    "kubernetes.default.svc.cluster.local", "localhost"])
        (self.pki / "apiserver.crt").write_bytes(cert)
        write_private(self.pki / "apiserver.key", key)
        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write_private(self.pki / "sa.key", sa.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()))
        (self.pki / "sa.pub").write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                                       serialization.PublicFormat.SubjectPublicKeyInfo))
        users = {"admin": ("admin", ["system:masters"]),
                 "kube-controller-manager": ("system:kube-controller-manager", []),
                 "kube-proxy": ("system:kube-proxy", []),
                 "apiserver-kubelet-client": ("kube-apiserver-kubelet-client", ["system:masters"])}
        for user, (name, groups) in users.items():
            cert, key = ca.issue(name, organizations=groups, client=True)
            (self.pki / f"{user}.crt").write_bytes(cert)
            write_private(self.pki / f"{user}.key", key)
            self._write_kubeconfig(user, kubeconfig_data(self.server, ca.pem, user, cert, key))
        self._ctx = None

    def _write_kubeconfig(self, user, data):
        return write_private(self.kubeconfig(user), json.dumps(data, indent=1).encode())

    def _spawn(self, name, argv, node=None, netns=None, cwd=None):
        """Start a component inside the API's namespace (or ``node``'s network and mount namespaces, or the network
        namespace ``netns``: a pod's)."""
        if node is not None:
            prefix = ["nsenter", "-t", str(self.lab.node(node).sshd_pid), "-m", "-n", "--"]
        else:
            prefix = ["ip", "netns", "exec", netns or self.ns]
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            proc = subprocess.Popen([*prefix, *[str(a) for a in argv]], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
        finally:
            log.close()
        pids = self.lab.extra.get("cluster_pids", {})
        pids[name] = proc.pid
        self.lab.remember("cluster_pids", pids)
        return proc

    def _start_proxy(self, node, kube_proxy):
        node = self.lab.node(node)
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig("kube-proxy"))},
            "hostnameOverride": node.name, "mode": self.proxy_mode(node),
            "clusterCIDR": str(self.lab.pod_supernet),
            "healthzBindAddress": f"{node.ip}:10256", "metricsBindAddress": "127.0.0.1:10249",
            # the lab's nodes share one kernel: leave its conntrack table size and timeouts as they are
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "iptables": {"localhostNodePorts": False},
        }
        path = self.dir / "proxy" / f"{node.name}.json"
        path.write_text(json.dumps(config, indent=1))
        self._spawn(f"kube-proxy-{node.name}", [kube_proxy, "--config", path, "--v=1"], node=node)

    def stop(self, name):
        """Kill one component the cluster started (its process group), by the name its log has."""
        pid = self.lab.extra.get("cluster_pids", {}).get(name)
        if not pid:
            raise LabError(f"no component {name!r} was started; started: {sorted(self.lab.extra.get('cluster_pids', {}))}")
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass

    def stop_proxy(self, node):
        """Kill kube-proxy on ``node`` (as a crash would: its rules stay, its health servers go)."""
        node = self.lab.node(node)
        self.stop(f"kube-proxy-{node.name}")
        self.wait_for(f"kube-proxy of {node.name} gone", lambda: not self._proxy_healthy(node), timeout=20)

    def start_proxy(self, node):
        node = self.lab.node(node)
        self._start_proxy(node, binary("kube-proxy"))
        self.wait_for(f"kube-proxy of {node.name} healthy", lambda: self._proxy_healthy(node), timeout=60)

    def _proxy_healthy(self, node):
        return _http_status(node.ip, 10256, "/healthz") == 200

    def _proxies_healthy(self):
        return not self.proxies or all(self._proxy_healthy(node) for node in self.lab.nodes)

    def _wait(self, what, ready, deadline):
        last = None
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except (OSError, LabError) as exc:
                last = exc
            time.sleep(0.5)
        raise LabError(f"{what} did not come up ({last or 'not ready'}); the logs are under {self.logs}: "
                       f"{', '.join(sorted(p.name for p in self.logs.glob('*.log')))}")

    # ------------------------------------------------------------------- REST
    def _context(self):
        if self._ctx is None:
            ctx = ssl.create_default_context(cafile=str(self.ca_file))
            ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
            self._ctx = ctx
        return self._ctx

    def request(self, method, path, body=None, content_type="application/json", timeout=15):
        """One request as the cluster's admin; returns the parsed JSON (raises ApiError on a status >= 400)."""
        conn = http.client.HTTPSConnection(self.ip, API_PORT, context=self._context(), timeout=timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": "application/json"})
            response = conn.getresponse()
            text = response.read().decode(errors="replace")
        finally:
            conn.close()
        if response.status >= 400:
            raise ApiError(response.status, response.reason, text)
        if "json" not in (response.getheader("Content-Type") or ""):
            return text
        return json.loads(text) if text else None

    def _ready(self, path):
        try:
            self.request("GET", path, timeout=3)
            return True
        except ApiError:
            return False

    def _exists(self, path):
        try:
            self.request("GET", path, timeout=3)
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    def create(self, obj, path):
        """POST ``obj`` to ``path``, retrying on the conflicts a fresh namespace gives (its ServiceAccount)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                return self.request("POST", path, obj)
            except ApiError as exc:
                if exc.status == 409 and "AlreadyExists" in exc.body:
                    raise
                if time.monotonic() > deadline or exc.status not in (403, 409, 500, 503):
                    raise
                time.sleep(0.5)

    def patch_status(self, path, status):
        return self.request("PATCH", path + "/status", {"status": status},
                            content_type="application/merge-patch+json")

    def kubectl(self, *args, user="admin", input=None, check=True, timeout=60):
        """kubectl built from the same release: the tests' independent client."""
        proc = subprocess.run([binary("kubectl"), "--kubeconfig", str(self.kubeconfig(user)), *map(str, args)],
                              input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise LabError(f"kubectl {' '.join(map(str, args))} failed: {proc.stderr.strip()}")
        return proc

    def kubectl_json(self, *args, **kw):
        return json.loads(self.kubectl(*args, "-o", "json", **kw).stdout)

    def apply(self, objects):
        """``kubectl apply`` of a list of objects (server-side, so that fields the lab owns stay its own)."""
        text = "\n".join(json.dumps(o) for o in objects)
        return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=text)

    # ------------------------------------------------------------------ workloads
    def web_service(self, namespace="web", name="web-local", nodes=("node1", "node2"), vip_index=10,
                    policy="Local", port=8080):
        """A LoadBalancer Service (``policy``: its externalTrafficPolicy) whose pods run on ``nodes``: each a lab pod
        namespace with an HTTP server on ``port`` answering its pod's name, its Pod written as its kubelet would; the
        load balancer's address (``vip_index`` of the lab's VIPs) written to the Service's status as a load-balancer
        controller would (``vip_index`` None: written by the lab's real one, ``tests/lab/metallb.py``). Waits until
        kube-proxy on the first node answers its health check (policy Local). Returns
        {pods, vip, service, health_check_node_port, node_port}."""
        from .faults import pods

        pods.pod_mesh(self.lab)
        backends = []
        for node in nodes:
            pod = pods.pod(self.lab, node, f"{name}-{self.lab.node(node).name}", cni="calico")
            self._spawn(pod["name"], [self.lab.python, "-c", WEB_SERVER, pod["ip"], port, pod["name"]],
                        netns=pod["ns"])
            self.run_pod(namespace, pod["name"], node, pod["ip"], labels={"app": name},
                         containers=[{"name": "web", "image": "lab.invalid/web:1",
                                      "ports": [{"containerPort": port, "name": "http"}]}])
            backends.append(pod)
        self.apply([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
                     "spec": {"type": "LoadBalancer", "externalTrafficPolicy": policy, "selector": {"app": name},
                              "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}}])
        if vip_index is None:  # a real load-balancer controller (tests/lab/metallb.py) writes the status
            svc = self.wait_for(f"a load-balancer IP in the status of {namespace}/{name}",
                                lambda: self._lb_allocated(namespace, name), timeout=60)
            vip = svc["status"]["loadBalancer"]["ingress"][0]["ip"]
        else:
            vip = self.lab.vip(vip_index)
            self.patch_status(f"/api/v1/namespaces/{namespace}/services/{name}",
                              {"loadBalancer": {"ingress": [{"ip": vip, "ipMode": "VIP"}]}})
            svc = self.kubectl_json("get", "svc", "-n", namespace, name)
        hcnp = svc["spec"].get("healthCheckNodePort")
        if hcnp:
            first = self.lab.node(nodes[0])
            self.wait_for(f"kube-proxy's health check of {namespace}/{name} on {first.name}",
                          lambda: _http_status(first.ip, hcnp, "/") == 200, timeout=60)
        return {"pods": backends, "vip": vip, "service": f"{namespace}/{name}", "health_check_node_port": hcnp,
                "node_port": svc["spec"]["ports"][0]["nodePort"]}

    def _lb_allocated(self, namespace, name):
        svc = self.kubectl_json("get", "svc", "-n", namespace, name)
        return svc if (svc.get("status", {}).get("loadBalancer") or {}).get("ingress") else None

    # ------------------------------------------------------------------ CoreDNS
    def start_coredns(self, node="node1", name="coredns-lab"):
        """CoreDNS (built from its module) as the cluster DNS: a pod namespace on ``node`` running it with kubeadm's
        Corefile less ``forward`` and ``loop`` (nothing leaves the lab), its Pod in kube-system written as its kubelet
        would, and the kube-dns Service at .10 of the service range; CoreDNS reads the real API with its
        ServiceAccount's token and ClusterRole (kubeadm's system:coredns). Returns {pod, ip, node, service_ip}."""
        from .faults import pods

        pod = pods.pod(self.lab, node, name, cni="calico")
        self.ensure_namespace("kube-system")
        service_ip = self.lab.service_ip(10)
        self.apply([
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "coredns", "namespace": "kube-system"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
             "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                        "verbs": ["list", "watch"]},
                       {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                        "verbs": ["list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "system:coredns"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
             "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}]},
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
             "spec": {"clusterIP": service_ip, "selector": {"k8s-app": "kube-dns"},
                      "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]}},
        ])
        self.token_kubeconfig("coredns", self.token("kube-system", "coredns", seconds=86400))
        corefile = self.dir / "Corefile"
        corefile.write_text(
            ".:53 {\n    errors\n    health %s:8080\n    ready %s:8181\n"
            "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig %s lab\n        pods insecure\n"
            "        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }\n    cache 30\n    reload\n"
            "    loadbalance\n}\n" % (pod["ip"], pod["ip"], self.kubeconfig("coredns")))
        self._spawn(name, [binary("coredns"), "-conf", corefile], netns=pod["ns"])
        probe = ("import urllib.request,sys\n"
                 "print(urllib.request.urlopen('http://%s:8181/ready', timeout=2).status)" % pod["ip"])
        self.wait_for("CoreDNS ready (its /ready answers 200 once the API is read; probed from its node)",
                      lambda: self.lab.ns_run(node, [self.lab.python, "-c", probe], check=False).stdout.strip() == "200",
                      timeout=60)
        self.run_pod("kube-system", name, node, pod["ip"], labels={"k8s-app": "kube-dns"},
                     containers=[{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.14.6",
                                  "ports": [{"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                            {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"}]}])
        return {"pod": name, "ip": pod["ip"], "node": self.lab.node(node).name, "service_ip": service_ip,
                "ns": pod["ns"]}

    # ------------------------------------------------------------ the kubelet's part
    def register_nodes(self):
        now = _now()
        for node in self.lab.nodes:
            labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
            obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name, "labels": labels},
                   "spec": {"podCIDR": node.pod_cidr, "podCIDRs": [node.pod_cidr]}}
            if "control_plane" in node.groups:
                obj["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
            self.create(obj, "/api/v1/nodes")
            self.patch_status(f"/api/v1/nodes/{node.name}", node_status(node, now))

    def set_node_condition(self, node, kind, status, reason="", message=""):
        """Write one of a node's conditions as its kubelet (or CNI agent, for NetworkUnavailable) would."""
        node = self.lab.node(node)
        current = self.request("GET", f"/api/v1/nodes/{node.name}")
        conditions = [c for c in current["status"].get("conditions", []) if c["type"] != kind]
        now = _now()
        conditions.append({"type": kind, "status": status, "reason": reason, "message": message,
                           "lastHeartbeatTime": now, "lastTransitionTime": now})
        return self.patch_status(f"/api/v1/nodes/{node.name}", {"conditions": conditions})

    def run_pod(self, namespace, name, node, ip, labels=None, ready=True, containers=None, waiting=None,
                restarts=0, host_network=False, spec=None, owner=None):
        """A pod bound to ``node`` whose status the lab writes as the node's kubelet would: Running with ``ip``
        (a lab pod namespace's address), Ready or not, or Pending with a container waiting for ``waiting``
        (``{"reason": ..., "message": ...}``)."""
        node = self.lab.node(node)
        containers = containers or [{"name": name.split("-")[0][:63] or "app", "image": "lab.invalid/app:1"}]
        pod_spec = {"nodeName": node.name, "containers": containers, "hostNetwork": host_network,
                    "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 30}
        pod_spec.update(spec or {})
        obj = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": pod_spec}
        if owner:
            obj["metadata"]["ownerReferences"] = [owner]
        self.ensure_namespace(namespace)
        self.create(obj, f"/api/v1/namespaces/{namespace}/pods")
        return self.write_pod_status(namespace, name, node, ip, ready=ready, waiting=waiting, restarts=restarts,
                                     containers=containers)

    def daemonset_pod(self, namespace, daemonset, node, ip, **kw):
        """A pod of DaemonSet ``daemonset`` on ``node``, its status written as by ``run_pod``. There is no scheduler:
        the DaemonSet is real, but its nodeSelector matches no node (its controller places nothing) and the lab
        places its pods, owned by it (ownerReference, not its controller's, so that the controller neither adopts
        nor removes them; the garbage collector still would, were the DaemonSet deleted)."""
        ds = self.placeholder_daemonset(namespace, daemonset)
        owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": daemonset, "uid": ds["metadata"]["uid"],
                 "controller": False}
        name = f"{daemonset}-{self.lab.node(node).name}"
        spec = dict(kw.pop("spec", {}) or {}, hostNetwork=kw.pop("host_network", False))
        labels = dict(kw.pop("labels", {}) or {}, **{"k8s-app": daemonset})
        self.run_pod(namespace, name, node, ip, labels=labels, spec=spec, owner=owner, **kw)
        return name

    def placeholder_daemonset(self, namespace, name):
        """DaemonSet ``name`` (made once), real but placing nothing: its nodeSelector matches no node, so its pods are
        the ones a test binds to their nodes (owned by it, as a scheduler-placed pod would be). Its object, as read."""
        path = f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}"
        if not self._exists(path):
            self.ensure_namespace(namespace)
            selector = {"k8snet.lab/daemonset": name}
            self.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
                         "spec": {"selector": {"matchLabels": selector},
                                  "template": {"metadata": {"labels": selector},
                                               "spec": {"nodeSelector": {"k8snet.lab/no-node": "true"},
                                                        "containers": [{"name": name, "image": "lab.invalid/%s:1" % name}]}}}},
                        f"/apis/apps/v1/namespaces/{namespace}/daemonsets")
        return self.request("GET", path)

    def write_pod_status(self, namespace, name, node, ip, ready=True, waiting=None, restarts=0, containers=None):
        """The pod's status as its kubelet writes it: Running with ``ip``; with ``waiting`` and no restart, Pending
        with no address (a container never started: ContainerCreating, ImagePullBackOff); with ``waiting`` after
        restarts, still Running with its address, the container waiting (CrashLoopBackOff) and its last run
        terminated, as a kubelet keeps a crash-looping pod."""
        node = self.lab.node(node)
        now = _now()
        if containers is None:
            containers = self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"]["containers"]
        running = waiting is None
        started_once = running or restarts > 0
        statuses = []
        for c in containers:
            state = ({"running": {"startedAt": now}} if running else
                     {"waiting": {"reason": waiting["reason"], "message": waiting.get("message", "")}})
            item = {"name": c["name"], "image": c["image"], "imageID": "", "ready": bool(running and ready),
                    "restartCount": restarts, "started": running, "state": state}
            if restarts and not running:
                item["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now,
                                                    "finishedAt": now}}
            statuses.append(item)
        cond = "True" if running and ready else "False"
        status = {
            "phase": "Running" if started_once else "Pending", "hostIP": node.ip, "hostIPs": [{"ip": node.ip}],
            "podIP": ip if started_once else None, "podIPs": [{"ip": ip}] if started_once and ip else None,
            "startTime": now, "containerStatuses": statuses,
            "conditions": [{"type": t, "status": s, "lastTransitionTime": now} for t, s in (
                ("PodScheduled", "True"), ("Initialized", "True"), ("ContainersReady", cond), ("Ready", cond))],
        }
        return self.patch_status(f"/api/v1/namespaces/{namespace}/pods/{name}", status)

    def ensure_namespace(self, namespace):
        if not self._exists(f"/api/v1/namespaces/{namespace}"):
            try:
                self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                            "/api/v1/namespaces")
            except ApiError as exc:
                if exc.status != 409:
                    raise
        deadline = time.monotonic() + 30
        while not self._exists(f"/api/v1/namespaces/{namespace}/serviceaccounts/default"):
            if time.monotonic() > deadline:
                raise LabError(f"namespace {namespace}: the controller manager made no default ServiceAccount in 30 s")
            time.sleep(0.2)

    def token(self, namespace, service_account, seconds=3600):
        """A ServiceAccount token from the TokenRequest API, as ``kubectl create token`` gets one."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": int(seconds)}}
        reply = self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token", body)
        return reply["status"]["token"]

    def token_kubeconfig(self, name, token):
        """A kubeconfig file that authenticates with ``token`` (AWX's credential, a ServiceAccount's)."""
        return self._write_kubeconfig(name, kubeconfig_data(self.server, self.ca_file.read_bytes(), name, token=token))

    def wait_gone(self, what, path, timeout=60):
        """Wait until GET ``path`` answers 404 (an object deleted, its finalizers and grace period done)."""
        return self.wait_for(f"{what} gone", lambda: not self._exists(path), timeout=timeout)

    def wait_for(self, what, predicate, timeout=60, interval=0.5):
        """Poll ``predicate()`` until it returns something true; returns that."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise LabError(f"{what}: not so after {timeout} s")
            time.sleep(interval)


def _http_status(address, port, path):
    conn = http.client.HTTPConnection(address, port, timeout=2)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def node_status(node, now):
    """A node's status as its kubelet reports it on a healthy node."""
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return {
        "addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname", "address": node.name}],
        "conditions": [{"type": t, "status": s, "reason": r, "message": m, "lastHeartbeatTime": now,
                        "lastTransitionTime": now} for t, s, r, m in conditions],
        "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": os.uname().release,
                     "osImage": "k8snet lab", "containerRuntimeVersion": "none://lab", "kubeletVersion": "v0.0.0-lab",
                     "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
    }
