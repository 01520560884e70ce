"""kube_network_info against the real control plane (tests/lab/cluster.py), and the three role hooks that use it:
cilium_maps (live frontends reach bpf_map_usage on the nodes), calico (expected BGP peers from
the Node annotations, InternalIP as fallback) and dns (servers from the kube-dns Service and the
coredns pods, asked from every node).  Every expectation is derived independently from kubectl's
view of the same API (kubectl from the same release), or from the node's own state (bpftool maps, BIRD sessions,
dnsmasq).

The objects are the stand-in's fixtures (cluster.yaml, network.yaml, frontends.yaml), loaded once through the real API
server (tests/lab/cluster_objects.py), with what the real server makes of them: ``default/kubernetes`` is its own;
the dual-stack Service ``web/diameter`` is single-stack IPv4 (the lab's API server has one IPv4 service range, and
refuses an IPv6 cluster IP). What a test changes for its case is changed on the live objects as the component that
owns it would (a Service deleted and created again for another cluster IP: it is immutable; a node's addresses and
annotations written to the Node; a pod's address as its kubelet) and put back after it."""

from __future__ import annotations

import contextlib
import copy
import ipaddress
import threading

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.lab.cluster import ApiError
from tests.lab.cluster_objects import RealApi, audit_requests, object_path
from tests.lab.faults import bgp
from tests.lab.faults import bpf as lb
from tests.lab.faults import dns as lab_dns
from tests.lab.faults import kube as kube_faults

FILES = ("cluster.yaml", "network.yaml", "frontends.yaml")
CALICO = "projectcalico.org/IPv4Address"


def fixture_objects():
    """The fixtures' objects as the real API server takes them: web/diameter single-stack IPv4 (see the docstring)."""
    objects = load_yaml([FIXTURES / n for n in FILES])
    diameter = named(objects, "Service", "diameter")
    diameter["spec"]["clusterIPs"] = diameter["spec"]["clusterIPs"][:1]
    diameter["spec"]["ipFamilies"] = ["IPv4"]
    return objects


def named(objects, kind, name):
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def service_path(namespace, name):
    return "/api/v1/namespaces/%s/services/%s" % (namespace, name)


def delete_service(kube_cluster, namespace, name):
    try:
        kube_cluster.request("DELETE", service_path(namespace, name))
    except ApiError as exc:
        if exc.status != 404:
            raise
    kube_cluster.wait_gone("Service %s/%s" % (namespace, name), service_path(namespace, name))


@contextlib.contextmanager
def service_replaced(api, kube_cluster, name, edit):
    """The fixture Service ``name`` deleted and created again after ``edit(service)`` (its cluster IP is immutable);
    the fixture's own again afterwards."""
    original = named(kube_faults.lab_objects(api.cluster.lab, fixture_objects()), "Service", name)
    changed = copy.deepcopy(original)
    edit(changed)
    namespace = original["metadata"]["namespace"]
    delete_service(kube_cluster, namespace, name)
    api.loader.load([changed])
    try:
        yield
    finally:
        delete_service(kube_cluster, namespace, name)
        api.loader.load([original])


@contextlib.contextmanager
def node_changed(kube_cluster, name, status=None, annotations=None):
    """Node ``name``'s status (as its kubelet reports it) and annotations (as its CNI agent writes them) merged with
    ``status`` / ``annotations``; put back afterwards."""
    path = "/api/v1/nodes/" + name
    before = kube_cluster.request("GET", path)
    if status:
        kube_cluster.patch_status(path, status)
    if annotations:
        kube_cluster.request("PATCH", path, {"metadata": {"annotations": annotations}},
                             content_type="application/merge-patch+json")
    try:
        yield
    finally:
        kube_cluster.patch_status(path, {k: before["status"][k] for k in status or {}})
        if annotations:
            kube_cluster.request("PATCH", path, {"metadata": {"annotations": dict(
                (k, before["metadata"].get("annotations", {}).get(k)) for k in annotations)}},
                content_type="application/merge-patch+json")


# ------------------------------------------------------- independent readers (kubectl JSON)
def _is_ip(value):
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def expected_frontends(kube_cluster, node_addresses=False):
    """ip:port/proto of every live frontend form, computed from `kubectl get svc,nodes,pods`; NodePorts and hostPorts
    on every node address only with ``node_addresses`` (the surrogate 0.0.0.0 says them all by default)."""
    kubectl = kube_cluster.kubectl_json
    by_node = {n["metadata"]["name"]: [a["address"] for a in n["status"]["addresses"] if _is_ip(a["address"])]
               for n in kubectl("get", "nodes")["items"]}
    node_ips = sorted({ip for ips in by_node.values() for ip in ips})
    out = set()

    def add(ip, number, proto):
        host = "[%s]" % ip if ":" in ip else ip
        out.add("%s:%d/%s" % (host, number, proto))

    for svc in kubectl("get", "services", "-A")["items"]:
        spec = svc["spec"]
        if spec.get("type") == "ExternalName":
            continue
        vips = [ip for ip in spec.get("clusterIPs", []) if ip != "None"] + spec.get("externalIPs", [])
        vips += [i["ip"] for i in svc.get("status", {}).get("loadBalancer", {}).get("ingress", [])]
        vips += [spec["loadBalancerIP"]] if spec.get("loadBalancerIP") else []
        for port in spec.get("ports", []):
            proto = port.get("protocol", "TCP")
            for ip in vips:
                add(ip, port["port"], proto)
            if port.get("nodePort"):
                for ip in (node_ips if node_addresses else []) + ["0.0.0.0"] + (
                        ["::"] if any(":" in a for a in node_ips + vips) else []):
                    add(ip, port["nodePort"], proto)
    for pod in kubectl("get", "pods", "-A")["items"]:
        if not pod["spec"].get("nodeName") or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        for container in pod["spec"]["containers"]:
            for port in container.get("ports", []):
                if port.get("hostPort"):
                    ips = [port["hostIP"]] if port.get("hostIP") else (
                        by_node[pod["spec"]["nodeName"]] if node_addresses else []) + ["0.0.0.0"]
                    for ip in ips:
                        add(ip, port["hostPort"], port.get("protocol", "TCP"))
    return out


def expected_peers(kube_cluster):
    out = []
    for node in kube_cluster.kubectl_json("get", "nodes")["items"]:
        annotation = node["metadata"].get("annotations", {}).get(CALICO)
        internal = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"][0]
        out.append({"name": node["metadata"]["name"], "address": annotation.split("/")[0] if annotation else internal})
    return sorted(out, key=lambda n: n["name"])


def expected_dns_servers(kube_cluster):
    svc = kube_cluster.kubectl_json("get", "service", "-n", "kube-system", "kube-dns")
    out = [{"address": svc["spec"]["clusterIP"], "name": "kube-dns", "role": "service"}]
    pods = kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns")["items"]
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if pod["status"].get("podIP"):
            out.append({"address": pod["status"]["podIP"], "name": pod["metadata"]["name"],
                        "node": pod["spec"]["nodeName"], "role": "pod"})
    return out


# ------------------------------------------------------------------------------ module
@pytest.fixture(scope="module")
def api(kube_cluster):
    real = RealApi(kube_cluster)
    real.loader.load(fixture_objects())
    return real


def test_module_returns_what_kubectl_shows(lab, ansible, api, kube_cluster):
    kc = str(api.kubeconfig())
    result = ansible.module("localhost", "kube_network_info", {"kubeconfig": kc})["localhost"]
    assert result["changed"] is False
    assert set(result["service_frontends"]) == expected_frontends(kube_cluster)
    full = ansible.module("localhost", "kube_network_info", {"kubeconfig": kc, "gather": ["service_frontends"],
                                                             "node_port_addresses": True})["localhost"]
    # 20 ClusterIP/externalIP/LB/NodePort-on-InternalIP forms, 3 surrogates, 6 of the gateway Service
    # (frontends.yaml), 5 hostPort forms (the stand-in served 35: diameter's IPv6 cluster IP, which the
    # single-stack real API server refuses, was one more; its own kubernetes Service is one form, as the fixture's)
    assert set(full["service_frontends"]) == expected_frontends(kube_cluster, node_addresses=True)
    assert len(full["service_frontends"]) == 34
    # by default the NodePorts and hostPorts are on their surrogates only: 12 NodePort forms and 2 hostPort forms on
    # the three node addresses fewer
    assert len(result["service_frontends"]) == len(expected_frontends(kube_cluster)) == 34 - 14
    keys = [(ipaddress.ip_address(f.rsplit(":", 1)[0].strip("[]")), int(f.rsplit(":", 1)[1].split("/")[0]))
            for f in result["service_frontends"]]
    assert keys == sorted(keys, key=lambda k: (k[0].version, k[0], k[1]))
    assert [n["name"] for n in result["nodes"]] == ["node1", "node2", "node3"]
    assert [(n["internal_ip"], n["pod_cidrs"]) for n in result["nodes"]] == [(n.ip, [n.pod_cidr]) for n in lab.nodes]
    assert [{"name": n["name"], "address": n["calico_ipv4_address"] or n["internal_ip"]} for n in result["nodes"]] \
        == expected_peers(kube_cluster)
    assert result["nodes"][2]["calico_ipv4_address"] is None  # node3 has no Calico annotation
    assert result["dns_servers"] == expected_dns_servers(kube_cluster)
    assert [(f["check"], f["subject"]) for f in result["findings"]] == [
        ("kube.dns_pod_without_ip", "coredns-7db6d8ff4d-pnd4g")]


def test_gather_reads_only_what_is_asked_and_check_mode(ansible, api):
    before = len(api.requests)  # the API server's audit log: this credential's requests
    result = ansible.module("localhost", "kube_network_info", {"kubeconfig": str(api.kubeconfig()),
                                                               "gather": ["dns_servers"]}, check=True)["localhost"]
    paths = sorted({r["path"] for r in api.requests[before:]})
    assert paths == ["/api/v1/namespaces/kube-system/pods", "/api/v1/namespaces/kube-system/services/kube-dns"]
    assert "nodes" not in result and "service_frontends" not in result and result["changed"] is False
    assert [s["role"] for s in result["dns_servers"]] == ["service", "pod", "pod", "pod"]


def test_other_dns_names_give_findings_not_errors(ansible, api):
    result = ansible.module("localhost", "kube_network_info", {
        "kubeconfig": str(api.kubeconfig()), "gather": ["dns_servers"], "dns_service": "coredns",
        "dns_pod_selector": "k8s-app=coredns"})["localhost"]
    assert result["dns_servers"] == []
    assert sorted(f["check"] for f in result["findings"]) == ["kube.dns_pods_missing", "kube.dns_service_missing"]


@pytest.mark.parametrize("args,words", [
    ({"kubeconfig": "/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig does not exist"),
    ({"gather": ["pods"]}, "value of gather must be one or more of: nodes, service_frontends, dns_servers, pod"),
])
def test_bad_input_fails_clearly(ansible, api, args, words):
    args = dict({"kubeconfig": str(api.kubeconfig())}, **args)
    result = ansible.module("localhost", "kube_network_info", args)["localhost"]
    assert result["failed"] and words in result["msg"], result.get("msg")


# ------------------------------------------------------------------------- cilium_maps
@pytest.fixture
def lb_node3(lab):
    made = lb.cilium_lb_maps(lab, "node3", services=3, backends_per_service=2)
    yield made
    lb.remove_bpf_maps(lab, "node3")


def test_cilium_maps_live_frontends_from_the_api(lab, ansible, api, kube_cluster, lb_node3):
    live_vip = lb_node3["frontends"][0].split(":")[0]  # Kubernetes still has service 1 (its map VIP, port 80)

    def edit(shop):
        shop["spec"]["clusterIP"], shop["spec"]["clusterIPs"] = live_vip, [live_vip]

    with service_replaced(api, kube_cluster, "shop", edit):
        kc = str(api.kubeconfig())
        run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_kubeconfig": kc}, limit="node3")
        assert run.rc == 0, run
        # the role's one pass reads the live frontends once from the API, and checks node3's maps against them
        gathered = run.result("Read the Node list, Service frontends and DNS servers from the Kubernetes API once",
                              "node3")["service_frontends"]
        assert set(gathered) == expected_frontends(kube_cluster)
        assert "%s:80/TCP" % live_vip in gathered
        facts = run.result("Keep the findings of this host", "node3")["ansible_facts"]
        usage = {"findings": facts["cilium_maps_findings"]}
        stale = [f for f in usage["findings"] if f["check"] == "bpf.stale_frontends"]
        # bpftool (independent) shows the three VIPs; the two Kubernetes lacks are the stale ones
        vips = {".".join(str(b) for b in k[:4]) for k in lb.bpftool_entries(lab, "node3", lb_node3["services"])}
        assert vips == {f.split(":")[0] for f in lb_node3["frontends"]}
        assert stale and stale[0]["evidence"]["count"] == 2
        assert sorted(stale[0]["evidence"]["examples"]) == sorted(lb_node3["frontends"][1:])
        assert all(not r["result"].get("changed") for r in run.records)


# ------------------------------------------- stale cleanup: live is live in every form (issue 11)
def _node_ips(lab):
    return [n.ip for n in lab.nodes]


@pytest.fixture
def clean_node23(lab):
    for node in ("node2", "node3"):
        lb.remove_bpf_maps(lab, node)
    yield
    for node in ("node2", "node3"):
        lb.remove_bpf_maps(lab, node)


def test_stale_cleanup_keeps_every_live_form(lab, ansible, api, kube_cluster, clean_node23):
    """Regression: NodePort frontends were live only on InternalIPs, so Cilium's 0.0.0.0 surrogate,
    the node's other addresses, spec.loadBalancerIP and hostPort frontends were deleted as stale."""
    external = str(lab.network[212])  # node2's ExternalIP, as its kubelet reports it
    addresses = kube_cluster.request("GET", "/api/v1/nodes/node2")["status"]["addresses"]
    addresses = addresses + [{"type": "ExternalIP", "address": external}]

    n1, n2, n3 = _node_ips(lab)

    def fixture(text):
        return kube_faults.lab_address(lab, text)  # the fixtures' addresses in this lab
    live_forms = ["0.0.0.0:30070/TCP", n1 + ":30070/TCP", n2 + ":30070/TCP", external + ":30070/TCP",
                  n3 + ":30070/TCP", fixture("198.18.16.70:80/TCP"),
                  fixture("198.18.0.230:80/TCP"),  # shop: NodePort, externalIP
                  fixture("198.18.0.231:443/UDP"), "0.0.0.0:31444/UDP",  # store: LB ingress, surrogate
                  fixture("198.18.0.232:8080/TCP"), "0.0.0.0:32080/TCP",  # gateway: spec.loadBalancerIP
                  "0.0.0.0:9443/TCP", n2 + ":9443/TCP", external + ":9443/TCP"]  # hostPort of a pod on node2
    stale = "198.18.80.99:80/TCP"
    made = lb.lb_frontends(lab, "node3", live_forms + [stale])
    with node_changed(kube_cluster, "node2", status={"addresses": addresses}):
        kc = str(api.kubeconfig())
        # kubectl's view: every form is live (the role reads the compact list: the node addresses are not in it)
        assert set(live_forms) <= expected_frontends(kube_cluster, node_addresses=True)
        before = lb.bpftool_entries(lab, "node3", made["services"])
        run = ansible.playbook("playbooks/cilium_maps.yml", {
            "cilium_maps_kubeconfig": kc, "cilium_maps_cleanup": True, "cilium_maps_cleanup_mode": "stale"},
            limit="node3")
        assert run.rc == 0, run
        after = lb.bpftool_entries(lab, "node3", made["services"])
        gone = set(before) - set(after)
        assert gone == set(made["keys"][stale]["services"])
        backends = lb.bpftool_entries(lab, "node3", made["backends"])
        assert not set(made["keys"][stale]["backends"]) & set(backends)
        for form in live_forms:
            assert set(made["keys"][form]["services"]) <= set(after), form
            assert set(made["keys"][form]["backends"]) <= set(backends), form
        post = run.result("Fail the host if the cleanup deleted a frontend that is live", "node3")
        assert "none of the 1 deleted frontends is live" in post["msg"]


def test_post_check_fails_the_node_when_the_cleanup_took_a_live_frontend(lab, ansible, api, kube_cluster,
                                                                         clean_node23):
    """A Service created while the cleanup runs: its frontend was stale for the first API read and is
    deleted; the post-check reads the API again, fails node2, and the ramp stops before node3."""
    late = lab.service_ip(74) + ":80/TCP"
    forms = [kube_faults.lab_address(lab, f) for f in ("198.18.16.1:443/TCP", "198.18.16.10:53/UDP",
                                                       "198.18.16.70:80/TCP",
                                                       "198.18.16.71:443/TCP")] + [late]
    made = {node: lb.lb_frontends(lab, node, forms) for node in ("node2", "node3")}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "late", "namespace": "web"},
               "spec": {"type": "ClusterIP", "clusterIP": lab.service_ip(74), "clusterIPs": [lab.service_ip(74)],
                        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}}
    stop, created = threading.Event(), []
    before = len(api.requests)

    def create_after_first_read():
        """Another client creates the Service once the audit log shows the role's first read of the Services."""
        while not stop.wait(0.05):
            if any(r["path"] == "/api/v1/services" for r in audit_requests(kube_cluster, api.username, 0.05)[before:]):
                created.append(kube_cluster.create(service, "/api/v1/namespaces/web/services"))
                return

    watcher = threading.Thread(target=create_after_first_read, daemon=True)
    watcher.start()
    try:
        kc = str(api.kubeconfig())
        run = ansible.playbook("playbooks/cilium_maps.yml", {
            "cilium_maps_kubeconfig": kc, "cilium_maps_cleanup": True, "cilium_maps_cleanup_mode": "stale"},
            limit="node2:node3")
        assert run.rc != 0
        assert created, "the Services were never read"
        assert late in expected_frontends(kube_cluster)  # kubectl: the Service is live now
        failed = [r for r in run.records if r["status"] == "failed"]
        assert [(r["host"], r["task"].rsplit(": ", 1)[-1]) for r in failed] == [
            ("node2", "Fail the host if the cleanup deleted a frontend that is live")]
        assert late in failed[0]["result"]["msg"]
        found = run.result("Read the maps again after the cleanup (post-check)", "node2")["findings"]
        assert [f["evidence"]["examples"] for f in found if f["check"] == "bpf.deleted_live_frontends"] == [[late]]
        # bpftool: node2 lost exactly the late Service's entries; node3 was never touched (the ramp stopped)
        left = lb.bpftool_entries(lab, "node2", made["node2"]["services"])
        assert not set(made["node2"]["keys"][late]["services"]) & set(left)
        assert len(left) == 4 * 3
        assert len(lb.bpftool_entries(lab, "node3", made["node3"]["services"])) == 5 * 3
    finally:
        stop.set()
        watcher.join(30)
        delete_service(kube_cluster, "web", "late")


# ------------------------------------------------------------------------------ calico
@pytest.fixture(scope="module")
def mesh(lab):
    info = bgp.bgp_mesh(lab)
    try:
        for peer in lab.nodes[1:3]:
            bgp.wait_for(lab, lab.nodes[0], bgp.protocol_name(peer.ip),
                         lambda state, info: info.startswith("Established"))
        yield info
    finally:
        bgp.bgp_down(lab)


def test_calico_expected_nodes_from_annotations(lab, ansible, api, kube_cluster, mesh):
    moved = str(lab.network[77])  # node2's Calico address is not its InternalIP; node3 has no annotation

    with node_changed(kube_cluster, "node2", annotations={CALICO: moved + "/24"}):
        kc = str(api.kubeconfig())
        run = ansible.playbook("k8snet.triage.calico", {"calico_kubeconfig": kc})
        assert run.rc == 0, run
        peers = expected_peers(kube_cluster)
        assert [p["address"] for p in peers] == [lab.nodes[0].ip, moved, lab.nodes[2].ip]
        for node in lab.nodes:
            facts = run.result("Build the nodes this node should peer with", node.name)["ansible_facts"]
            assert facts["__calico_nodes"] == facts["__calico_resources"] == peers
        # node1's BIRD (read independently) peers with node2's InternalIP: stale for the API, and
        # node2's Calico address has no session: missing
        sessions = {name[len("Mesh_"):].replace("_", ".") for name in bgp.protocols(lab, lab.nodes[0])}
        assert lab.nodes[1].ip in sessions and moved not in sessions
        # node1's calico check in the role's one pass: its whole result (the module's), with its findings
        status = run.result("Keep this node's sessions", "node1")["ansible_facts"]["calico_bgp"]
        found = {(f["check"], f["evidence"].get("address")) for f in status["findings"]}
        assert ("bgp.stale_peer", lab.nodes[1].ip) in found and ("bgp.stale_peer", mesh["stale"]) in found
        missing = [f for f in status["findings"] if f["check"] == "bgp.missing_peer"]
        assert missing and moved in missing[0]["subject"]


# --------------------------------------------------------------------------------- dns
@pytest.fixture(scope="module")
def cluster_dns(lab):
    info = lab_dns.dns_cluster(lab)
    yield info
    lab_dns.dns_repair(lab)


def test_dns_servers_from_the_api(lab, ansible, api, kube_cluster, cluster_dns):
    pod_ip = {pod["node"]: pod["ip"] for pod in cluster_dns["pods"].values()}
    # the lab's DNS pods: the coredns pods' addresses, as their kubelets report them; kube-dns's cluster IP is theirs
    assert kube_cluster.kubectl_json("get", "svc", "-n", "kube-system", "kube-dns")["spec"]["clusterIP"] \
        == cluster_dns["kube_dns"]
    before = {}
    for pod in kube_cluster.kubectl_json("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns")["items"]:
        if pod["spec"].get("nodeName"):
            path = object_path(dict(pod, kind="Pod"))
            before[path] = {"podIP": pod["status"]["podIP"], "podIPs": pod["status"]["podIPs"]}
            ip = pod_ip[pod["spec"]["nodeName"]]
            kube_cluster.patch_status(path, {"podIP": ip, "podIPs": [{"ip": ip}]})
    try:
        kc = str(api.kubeconfig())
        run = ansible.playbook("k8snet.triage.dns", {
            "dns_kubeconfig": kc, "dns_names": ["kubernetes.default.svc.cluster.local"], "dns_timeout": 1.0,
            "dns_retries": 0, "dns_host_resolvers": False})
        assert run.rc == 0, run
        servers = run.result("Read the Node list, Service frontends and DNS servers from the Kubernetes API once",
                             "node1")
        assert servers["dns_servers"] == expected_dns_servers(kube_cluster)
        assert {s["address"] for s in servers["dns_servers"]} == {cluster_dns["kube_dns"], *pod_ip.values()}
        node3_pod = next(s["name"] for s in servers["dns_servers"] if s.get("node") == "node3")
        node2_pod = next(s["name"] for s in servers["dns_servers"] if s.get("node") == "node2")
        for node in ("node1", "node2"):
            facts = run.result("Keep the findings of this host", node)["ansible_facts"]
            some = [f for f in facts["dns_findings"] if f["check"] == "dns.some_servers_fail"]
            assert some, facts["dns_findings"]
            text = " ".join(run.result("Show the findings", node)["msg"])
            # the isolated pod on node3 is silent from other nodes; the broken one on node2 refuses
            assert node3_pod in text and node2_pod in text
        # independently: dnspython from node1 to each pod
        assert _rcode(lab, "node1", pod_ip["node1"]) == "NOERROR"
        assert _rcode(lab, "node1", pod_ip["node3"]) == "timeout"
    finally:
        for path, status in before.items():
            kube_cluster.patch_status(path, status)


def _rcode(lab, node, server):
    code = ("import dns.message, dns.query, dns.rcode, dns.exception, sys\n"
            "q = dns.message.make_query('kubernetes.default.svc.cluster.local', 'A')\n"
            "try:\n"
            "    print(dns.rcode.to_text(dns.query.udp(q, sys.argv[1], timeout=1).rcode()))\n"
            "except (dns.exception.Timeout, OSError):\n"
            "    print('timeout')\n")
    return lab.ns_run(node, [lab.python, "-c", code, server]).stdout.strip()


def test_role_with_a_bad_kubeconfig_fails_once_before_asking_anything(ansible):
    run = ansible.playbook("k8snet.triage.dns", {"dns_kubeconfig": "/nonexistent/kubeconfig"})
    assert run.rc != 0
    failed = run.results("Read the Node list, Service frontends and DNS servers from the Kubernetes API once")
    assert len(failed) == 1 and "kubeconfig /nonexistent/kubeconfig does not exist" in failed[0]["result"]["msg"]
    assert run.results(action="node_pass") == []  # nothing was asked
