"""The API-side modules against a real control plane and real kube-proxies (tests/lab/cluster.py): kube-apiserver,
kube-controller-manager and etcd built from their own Go modules, kube-proxy in iptables mode on node1 and node3 and
in nftables mode on node2. Nothing here is served by a stand-in: the Services' healthCheckNodePort is the one the
API server allocated, the EndpointSlices are the ones the controller wrote, the health checks and the DNAT are
kube-proxy's own. The lab plays only the kubelet's part (the pods' status, the nodes' heartbeat).

The independent readers are kubectl built from the same release, urllib for the health checks (as a load balancer
probes them), and ``iptables-save`` / ``nft -j`` in the node's namespace for kube-proxy's rules.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.integration.conftest import BIN, ROOT
from tests.kube_api.helpers import checks
from tests.lab.core import LabError
from tests.lab.faults import pods

NS = "web"
LOCAL = "web/web-local"


@pytest.fixture(scope="module")
def web(lab, kube_cluster):
    """web/web-local: a LoadBalancer Service with externalTrafficPolicy Local whose pods run on node1 and node2;
    web/empty: a ClusterIP Service whose selector matches no pod."""
    service = kube_cluster.web_service(NS, "web-local", nodes=("node1", "node2"))
    kube_cluster.apply([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty", "namespace": NS},
                         "spec": {"selector": {"app": "none"}, "ports": [{"name": "http", "port": 80}]}}])
    yield service


def health(address, port):
    """The load balancer's probe of a node: plain urllib; (status, JSON body), or (None, why)."""
    try:
        with urllib.request.urlopen("http://%s:%d/" % (address, port), timeout=3) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError as exc:
        return None, str(exc)


def kube_proxy_rules(lab, node, mode):
    """kube-proxy's rules in the node's namespace, read with the tool of its mode."""
    if mode == "nftables":
        return lab.ns_run(node, ["nft", "list", "table", "ip", "kube-proxy"]).stdout
    return "\n".join(lab.ns_run(node, [tool, "-t", "nat"], check=False).stdout
                     for tool in ("iptables-nft-save", "iptables-legacy-save"))


def test_nodes_registered_and_kube_proxy_programs_each_mode(lab, kube_cluster, web):
    nodes = kube_cluster.kubectl_json("get", "nodes")["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == [n.name for n in lab.nodes]
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        assert ready["status"] == "True"
        internal = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"]
        assert internal == [lab.node(node["metadata"]["name"]).ip]
    assert {n.name: kube_cluster.proxy_mode(n) for n in lab.nodes} == {
        "node1": "iptables", "node2": "nftables", "node3": "iptables"}
    for node in lab.nodes:
        mode = kube_cluster.proxy_mode(node)
        kube_cluster.wait_for("kube-proxy's rules for web-local on %s" % node.name,
                              lambda: "web/web-local" in kube_proxy_rules(lab, node, mode))
        rules = kube_proxy_rules(lab, node, mode)
        if mode == "nftables":
            assert "service-" in rules and web["vip"] in rules
        else:
            assert "KUBE-SVC-" in rules and web["vip"] in rules
    slices = kube_cluster.kubectl_json("get", "endpointslices", "-n", NS, "-l", "kubernetes.io/service-name=web-local")
    addresses = sorted(a for s in slices["items"] for e in s["endpoints"] for a in e["addresses"])
    assert addresses == sorted(p["ip"] for p in web["pods"])


def test_lb_health_reads_real_health_checks(lab, ansible, kube_cluster, web):
    port = web["health_check_node_port"]
    probes = {n.name: health(n.ip, port) for n in lab.nodes}
    assert {n: p[0] for n, p in probes.items()} == {"node1": 200, "node2": 200, "node3": 503}
    assert probes["node1"][1]["localEndpoints"] == 1 and probes["node3"][1]["localEndpoints"] == 0
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                       "namespaces": [NS]})["localhost"]
    assert not result["failed"], result
    assert checks(result["findings"]) == [("lb.nodes_without_endpoints", LOCAL)]
    svc = result["services"][0]
    assert svc["health_check_node_port"] == port
    assert svc["local_endpoints"] == {"node1": 1, "node2": 1}
    assert {n: p["status"] for n, p in svc["probes"].items()} == {"node1": 200, "node2": 200, "node3": 503}


def test_lb_health_switch_end_to_end(lab, ansible, kube_cluster, web):
    """The OpenShift incident with a real kube-proxy: node2 holds a ready pod but its kube-proxy is dead, so the load
    balancer's health check of node2 fails. The switch to Cluster goes through the API server, kube-proxy on the
    other nodes releases the health check port and forwards the traffic nodePort to a pod: the post-check sees it."""
    kc = str(kube_cluster.kubeconfig())
    kube_cluster.stop_proxy("node2")
    try:
        switch_and_verify(lab, ansible, kube_cluster, web, kc)
    finally:
        kube_cluster.start_proxy("node2")
        kube_cluster.kubectl("patch", "svc", "-n", NS, "web-local", "--type", "merge", "-p", json.dumps(
            {"spec": {"externalTrafficPolicy": "Local", "healthCheckNodePort": web["health_check_node_port"]}}))


def switch_and_verify(lab, ansible, kube_cluster, web, kc):
    port, node_port = web["health_check_node_port"], web["node_port"]
    assert health(lab.node("node2").ip, port)[0] is None
    args = {"kubeconfig": kc, "namespaces": [NS], "remediate": "cluster", "remediate_services": [LOCAL],
            "verify_timeout": 60}
    dry = ansible.module("localhost", "lb_health", args, check=True, diff=True)["localhost"]
    assert not dry["failed"], dry
    assert dry["changed"] is True and dry["patched"] == [LOCAL], dry
    assert kube_cluster.kubectl_json("get", "svc", "-n", NS, "web-local")["spec"]["externalTrafficPolicy"] == "Local"
    real = ansible.module("localhost", "lb_health", args, diff=True)["localhost"]
    assert not real["failed"], real
    assert real["changed"] is True and real["patched"] == [LOCAL]
    spec = kube_cluster.kubectl_json("get", "svc", "-n", NS, "web-local")["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster" and "healthCheckNodePort" not in spec
    # kube-proxy reprogrammed: node1 no longer answers the health check, and forwards the nodePort to a pod
    kube_cluster.wait_for("node1's health check port released", lambda: health(lab.node("node1").ip, port)[0] is None,
                          timeout=30)
    with urllib.request.urlopen("http://%s:%d/" % (lab.node("node3").ip, node_port), timeout=5) as response:
        assert response.read().decode() in ("web-local-node1", "web-local-node2")  # node3 has no pod: forwarded with policy Cluster
    verified = real["verification"]
    assert verified, real
    assert all(v["passed"] for v in verified if v["service"] == LOCAL), verified
    again = ansible.module("localhost", "lb_health", args)["localhost"]
    assert again["changed"] is False and again["patched"] == []


def test_firewall_drops_reads_real_kube_proxy_rules(lab, ansible, kube_cluster, web):
    """A Service without endpoints: kube-proxy rejects its ClusterIP in both modes; iptables_drops names it."""
    cluster_ip = kube_cluster.kubectl_json("get", "svc", "-n", NS, "empty")["spec"]["clusterIP"]
    script = ("import socket,time\n"
              "end=time.time()+60\n"
              "while time.time()<end:\n"
              "    s=socket.socket(); s.settimeout(0.3)\n"
              "    try: s.connect((%r,80))\n"
              "    except OSError: pass\n"
              "    s.close(); time.sleep(0.05)\n" % cluster_ip)
    for node in ("node1", "node2"):
        mode = kube_cluster.proxy_mode(node)
        kube_cluster.wait_for("kube-proxy's reject rule for web/empty on %s" % node,
                              lambda: "web/empty" in kube_proxy_rules(lab, node, mode) or
                              "web/empty" in lab.ns_run(node, ["iptables-save"], check=False).stdout)
        proc = subprocess.Popen(["ip", "netns", "exec", lab.node(node).ns, lab.python, "-c", script])
        try:
            result = ansible.module(node, "iptables_drops", {"interval": 2, "node_name": node})[node]
        finally:
            proc.kill()
            proc.wait(timeout=30)
        assert not result["failed"], result
        named = [f for f in result["findings"] if (f.get("evidence") or {}).get("service", "").startswith("web/empty")
                 or "web/empty" in f["summary"]]
        assert named, (mode, result["findings"])
        assert any((f.get("evidence") or {}).get("reason") == "no_endpoints" for f in named), named


def test_forbidden_verb_is_the_real_403(lab, ansible, kube_cluster, web):
    """A ServiceAccount whose ClusterRole may read Services but not EndpointSlices: the API server's own 403."""
    kube_cluster.ensure_namespace("ops")
    kube_cluster.apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "triage", "namespace": "ops"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "triage-partial"},
         "rules": [{"apiGroups": [""], "resources": ["services", "nodes", "pods"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "triage-partial"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "triage-partial"},
         "subjects": [{"kind": "ServiceAccount", "name": "triage", "namespace": "ops"}]},
    ])
    token = kube_cluster.token("ops", "triage")
    kube_cluster.token_kubeconfig("triage", token)
    denied = kube_cluster.kubectl("get", "endpointslices", "-A", user="triage", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(kube_cluster.kubeconfig("triage")),
                                                       "namespaces": [NS]})["localhost"]
    assert result["failed"], result
    message = result["msg"]
    assert "403" in message or "forbidden" in message.lower(), message
    assert "endpointslices" in message, message


def test_node_network_status_reads_conditions_written_through_the_api(lab, ansible, kube_cluster, web):
    """node3's CNI agent reports NetworkUnavailable (as Calico's does) through the real API."""
    kube_cluster.set_node_condition("node3", "NetworkUnavailable", "True", "NoRouteCreated",
                                    "Calico could not set up routes")
    try:
        result = ansible.module("localhost", "node_network_status",
                                {"kubeconfig": str(kube_cluster.kubeconfig())})["localhost"]
        assert not result["failed"], result
        unavailable = [f for f in result["findings"] if f["check"] == "node.network_unavailable"]
        assert [f["subject"] for f in unavailable] == ["node3"], result["findings"]
        read = kube_cluster.kubectl_json("get", "node", "node3")
        assert [c["status"] for c in read["status"]["conditions"] if c["type"] == "NetworkUnavailable"] == ["True"]
    finally:
        kube_cluster.set_node_condition("node3", "NetworkUnavailable", "False", "CalicoIsUp", "Calico is running")


def test_service_path_info_over_real_endpointslices(lab, ansible, kube_cluster, web):
    result = ansible.module("localhost", "service_path_info", {"kubeconfig": str(kube_cluster.kubeconfig()),
                                                               "service": LOCAL})["localhost"]
    assert not result["failed"], result
    text = json.dumps(result)
    assert web["vip"] in text
    for pod in web["pods"]:
        assert pod["ip"] in text


def test_dns_through_real_coredns_and_kube_proxy(lab, ansible, kube_cluster, web):
    """CoreDNS serving from the real API behind the kube-dns Service that kube-proxy DNATs: the dns role finds the
    Service and the pod through kube_network_info, asks both from every node; then CoreDNS dies and every node
    says so. dnspython run in the node's namespace is the independent reader."""
    dns = kube_cluster.start_coredns("node1")
    name = "web-local.web.svc.cluster.local"
    cluster_ip = kube_cluster.kubectl_json("get", "svc", "-n", NS, "web-local")["spec"]["clusterIP"]
    code = ("import dns.message, dns.query, sys\n"
            "r = dns.query.udp(dns.message.make_query(sys.argv[1], 'A'), sys.argv[2], timeout=2)\n"
            "print(' '.join(i.to_text() for a in r.answer for i in a))\n")
    for node in lab.nodes:  # until kube-proxy has the new EndpointSlice, its rules reject the ClusterIP (EPERM)
        kube_cluster.wait_for("%s resolves %s through kube-dns" % (node.name, name), lambda: lab.ns_run(
            node, [lab.python, "-c", code, name, dns["service_ip"]], check=False).stdout.split() == [cluster_ip],
            timeout=30)
    extra = {"dns_kubeconfig": str(kube_cluster.kubeconfig()), "dns_names": [name], "dns_timeout": 1.0,
             "dns_retries": 0, "dns_resolv_conf": ["/run/systemd/resolve/resolv.conf"]}
    run = ansible.playbook("k8snet.triage.dns", extra_vars=extra)
    assert run.rc == 0, run
    read = run.results(task="Read the Node list, Service frontends and DNS servers from the Kubernetes API once")
    servers = {(s.get("role"), s.get("address")) for s in read[0]["result"]["dns_servers"]}
    assert servers == {("service", dns["service_ip"]), ("pod", dns["ip"])}, servers
    for node in lab.nodes:
        facts = run.result("Keep the findings of this host", node.name)["ansible_facts"]
        bad = [f for f in facts["dns_findings"] if f["check"] in ("dns.all_servers_fail", "dns.some_servers_fail")]
        assert not bad, (node.name, bad)
    kube_cluster.stop("coredns-lab")
    run = ansible.playbook("k8snet.triage.dns", extra_vars=extra)
    for node in lab.nodes:
        facts = run.result("Keep the findings of this host", node.name)["ansible_facts"]
        assert "dns.all_servers_fail" in [f["check"] for f in facts["dns_findings"]], (node.name, facts["dns_findings"])


WEBHOOK = ("import json,ssl,sys\n"
           "from http.server import BaseHTTPRequestHandler, HTTPServer\n"
           "class H(BaseHTTPRequestHandler):\n"
           "    def do_POST(self):\n"
           "        review=json.loads(self.rfile.read(int(self.headers.get('Content-Length',0))))\n"
           "        body=json.dumps({'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',\n"
           "                         'response':{'uid':review['request']['uid'],'allowed':True}}).encode()\n"
           "        self.send_response(200); self.send_header('Content-Type','application/json')\n"
           "        self.send_header('Content-Length',str(len(body))); self.end_headers(); self.wfile.write(body)\n"
           "        print('reviewed', review['request']['resource']['resource'], flush=True)\n"
           "    def log_message(self,*a): pass\n"
           "server=HTTPServer((sys.argv[1],8443),H)\n"
           "ctx=ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2],sys.argv[3])\n"
           "server.socket=ctx.wrap_socket(server.socket,server_side=True)\n"
           "print('ready',flush=True)\n"
           "server.serve_forever()\n")
HOOK = "validate.policy-guard.example.com"


def test_webhook_deadlock_with_a_real_webhook_and_the_api_servers_own_error(lab, ansible, kube_cluster, web, tmp_path):
    """The IBM Cloud cycle on a real API server: a ValidatingWebhookConfiguration (failurePolicy Fail on pods and
    nodes/status) whose server runs in a pod on node3. While it answers, the API server calls it (the server logs the
    reviews). Then node3 loses its network: calico-node crash-loops there, NetworkUnavailable, the webhook's pod
    cannot start. The API server now refuses every pod and every node status update in its own words, which is the
    cycle; the cni scenario names it. The webhook configuration is removed afterwards whatever happens."""
    ns, svc = "policy-guard", "policy-guard-webhook"
    for node in lab.nodes:
        kube_cluster.daemonset_pod("kube-system", "calico-node", node, node.ip, host_network=True)
    pod = pods.pod(lab, "node3", "policy-guard-0", cni="calico")
    cert, key = kube_cluster.ca.issue(svc, names=["%s.%s.svc" % (svc, ns)])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    server = subprocess.Popen(["ip", "netns", "exec", pod["ns"], lab.python, "-c", WEBHOOK, pod["ip"],
                               str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    assert server.stdout.readline().strip() == "ready"
    kube_cluster.run_pod(ns, "policy-guard-0", "node3", pod["ip"], labels={"app": "policy-guard"},
                         containers=[{"name": "webhook", "image": "lab.invalid/policy-guard:1",
                                      "ports": [{"containerPort": 8443, "name": "https"}]}])
    kube_cluster.apply([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc, "namespace": ns},
                         "spec": {"selector": {"app": "policy-guard"},
                                  "ports": [{"name": "https", "port": 443, "targetPort": "https"}]}}])
    hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "policy-guard"},
            "webhooks": [{"name": HOOK, "failurePolicy": "Fail", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
                          "clientConfig": {"service": {"namespace": ns, "name": svc, "port": 443, "path": "/validate"},
                                           "caBundle": base64.b64encode(kube_cluster.ca.pem).decode()},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                     "resources": ["pods", "nodes/status"], "scope": "*"}]}]}
    try:
        kube_cluster.wait_for("the webhook's EndpointSlice ready", lambda: [
            e for s in kube_cluster.kubectl_json("get", "endpointslices", "-n", ns)["items"]
            for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")])
        kube_cluster.apply([hook])
        # the API server calls the webhook: a pod is admitted, and the webhook saw it
        kube_cluster.wait_for("a pod admitted through the webhook", lambda: kube_cluster.kubectl(
            "run", "admitted", "-n", NS, "--image=lab.invalid/x:1", "--restart=Never",
            "--overrides", json.dumps({"spec": {"nodeName": "node1"}}), check=False).returncode == 0, timeout=30)
        assert server.stdout.readline().split() == ["reviewed", "pods"]
        # node3 loses its network: NetworkUnavailable (admitted while the webhook still answers), the agent
        # crash-loops, the webhook's server dies and its pod waits for the network
        kube_cluster.set_node_condition("node3", "NetworkUnavailable", "True", "CalicoIsDown", "Calico is shutting down")
        server.kill()
        server.wait(timeout=10)
        kube_cluster.write_pod_status("kube-system", "calico-node-node3", "node3", lab.node("node3").ip, restarts=7,
                                      waiting={"reason": "CrashLoopBackOff",
                                               "message": "back-off 5m0s restarting failed container=calico-node"})
        kube_cluster.write_pod_status(ns, "policy-guard-0", "node3", pod["ip"], waiting={
            "reason": "ContainerCreating", "message": ""})
        # the API server's own words: every pod and every node status update is refused

        def create_refused():
            proc = kube_cluster.kubectl("run", "refused", "-n", NS, "--image=lab.invalid/x:1", "--restart=Never",
                                        "--overrides", json.dumps({"spec": {"nodeName": "node1"}}), check=False)
            return proc if proc.returncode else None
        refused = kube_cluster.wait_for("the API server refusing a pod", create_refused, timeout=30)
        assert 'failed calling webhook "%s"' % HOOK in refused.stderr, refused.stderr
        with pytest.raises(LabError) as status_update:
            kube_cluster.set_node_condition("node3", "NetworkUnavailable", "False", "CalicoIsUp", "Calico is running")
        assert HOOK in str(status_update.value)

        run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(kube_cluster.kubeconfig())})
        assert run.rc == 0, run
        hooks = run.results(action="webhook_deadlock")
        found = hooks[0]["result"]["findings"]
        assert checks(found) == [("webhook.cni_deadlock", "webhook:policy-guard/" + HOOK)], found
        assert found[0]["evidence"]["nodes"] == ["node3"]
        assert found[0]["evidence"]["cni_pods"] == ["kube-system/calico-node-node3"]
        assert found[0]["evidence"]["backend_pods"] == ["policy-guard-0"]
    finally:
        if server.poll() is None:
            server.kill()
        kube_cluster.kubectl("delete", "validatingwebhookconfiguration", "policy-guard", "--ignore-not-found", check=False)
        kube_cluster.set_node_condition("node3", "NetworkUnavailable", "False", "CalicoIsUp", "Calico is running")


def test_awx_credential_environment_and_module_defaults(lab, kube_cluster, web, tmp_path):
    """What AWX's Kubernetes credential gives a job: K8S_AUTH_HOST, K8S_AUTH_API_KEY (a ServiceAccount's token) and
    K8S_AUTH_SSL_CA_CERT (the cluster's real CA), no kubeconfig; the modules take it through the action group's
    module_defaults. A token the API server rejects is its real 401."""
    kube_cluster.ensure_namespace("awx")
    kube_cluster.apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "triage", "namespace": "awx"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "awx-triage"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "ServiceAccount", "name": "awx", "namespace": "awx"},
                      {"kind": "ServiceAccount", "name": "triage", "namespace": "awx"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "awx-triage-nodes"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
                   {"apiGroups": ["admissionregistration.k8s.io"],
                    "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
                    "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "awx-triage-nodes"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "awx-triage-nodes"},
         "subjects": [{"kind": "ServiceAccount", "name": "triage", "namespace": "awx"}]},
    ])
    token = kube_cluster.token("awx", "triage")
    playbook = tmp_path / "awx.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n"
        "  module_defaults:\n    group/k8snet.triage.kube:\n      api_timeout: 20\n      validate_certs: true\n"
        "  tasks:\n"
        "    - name: LB health with the credential's environment\n      k8snet.triage.lb_health:\n"
        "        namespaces: [web]\n"
        "      register: lb\n"
        "    - name: Service path\n      k8snet.triage.service_path_info:\n        service: web/web-local\n"
        "      register: path\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("K8S_AUTH_", "KUBECONFIG"))}
    env.update({"K8S_AUTH_HOST": kube_cluster.server, "K8S_AUTH_API_KEY": token,
                "K8S_AUTH_SSL_CA_CERT": str(kube_cluster.ca_file), "HOME": str(tmp_path),
                "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook), "-v",
                           "-e", "ansible_python_interpreter=" + sys.executable],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "lb.nodes_without_endpoints" in proc.stdout
    assert web["vip"] in proc.stdout
    env["K8S_AUTH_API_KEY"] = token[:-4] + "AAAA"
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
                           "-e", "ansible_python_interpreter=" + sys.executable],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "401" in proc.stdout, proc.stdout[-3000:]


def test_a_concurrent_writer_gets_the_api_servers_own_409(kube_cluster, web):
    """lb_health's switch carries the resourceVersion it just read; a writer in between (an operator's kubectl, an
    ingress operator) makes the real API server refuse the patch with 409 Conflict: the client raises ChangeError
    naming it, and nothing is changed."""
    from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client  # pylint: disable=import-outside-toplevel
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError  # pylint: disable=import-outside-toplevel

    kube = kube_client.Kube({"kubeconfig": str(kube_cluster.kubeconfig())})
    read = kube.get("services", "web-local", NS)
    before = read["spec"]["externalTrafficPolicy"]
    kube_cluster.kubectl("annotate", "svc", "-n", NS, "web-local", "example.com/touched=by-another-writer", "--overwrite")
    flipped = "Cluster" if before == "Local" else "Local"
    with pytest.raises(ChangeError) as refused:
        kube.merge_patch("services", "web-local", NS, {"spec": {"externalTrafficPolicy": flipped}},
                         resource_version=read["metadata"]["resourceVersion"])
    message = str(refused.value)
    assert "409 Conflict" in message and "changed since" in message, message
    now = kube_cluster.kubectl_json("get", "svc", "-n", NS, "web-local")
    assert now["spec"]["externalTrafficPolicy"] == before
    assert now["metadata"]["annotations"]["example.com/touched"] == "by-another-writer"
