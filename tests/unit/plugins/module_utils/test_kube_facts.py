from __future__ import annotations

import copy

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts as kf
from ansible_collections.k8snet.triage.plugins.module_utils.core import frontends
from ansible_collections.k8snet.triage.plugins.module_utils.core.frontends import parse as parse_frontend

from tests.kube_api import fixture_objects as objects, of_kind

OBJECTS = objects("cluster.yaml", "network.yaml")
NODES = of_kind(OBJECTS, "Node")
SERVICES = of_kind(OBJECTS, "Service")
PODS = of_kind(OBJECTS, "Pod")
MORE = objects("frontends.yaml")  # loadBalancerIP and hostPort forms


def by_name(objs, name):
    return next(o for o in objs if o["metadata"]["name"] == name)


def test_node_facts_from_annotations_and_fallback():
    facts = kf.nodes_facts(NODES)
    assert facts == [
        {"name": "node1", "internal_ip": "198.18.0.11", "addresses": ["198.18.0.11"], "pod_cidrs": ["198.19.0.0/24"],
         "calico_ipv4_address": "198.18.0.11", "calico_asn": None},
        {"name": "node2", "internal_ip": "198.18.0.12", "addresses": ["198.18.0.12"], "pod_cidrs": ["198.19.1.0/24"],
         "calico_ipv4_address": "198.18.0.12", "calico_asn": None},
        {"name": "node3", "internal_ip": "198.18.0.13", "addresses": ["198.18.0.13"], "pod_cidrs": ["198.19.2.0/24"],
         "calico_ipv4_address": None, "calico_asn": None},
    ]
    assert [kf.calico_address(n) for n in facts] == ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    assert kf.node_findings(facts) == []


def test_calico_annotation_differs_from_internal_ip_and_asn():
    node = copy.deepcopy(by_name(NODES, "node1"))
    node["metadata"]["annotations"].update({"projectcalico.org/IPv4Address": "10.0.0.5/24",
                                            "projectcalico.org/ASNumber": "64512"})
    fact = kf.node_facts(node)
    assert (fact["calico_ipv4_address"], fact["calico_asn"], fact["internal_ip"]) == ("10.0.0.5", 64512, "198.18.0.11")
    assert kf.calico_address(fact) == "10.0.0.5"
    node["metadata"]["annotations"]["projectcalico.org/IPv4Address"] = "not-an-address"
    assert kf.node_facts(node)["calico_ipv4_address"] is None


def test_node_without_pod_cidr_or_internal_ip():
    node = copy.deepcopy(by_name(NODES, "node3"))
    del node["spec"]["podCIDR"], node["spec"]["podCIDRs"]
    node["status"]["addresses"] = [a for a in node["status"]["addresses"] if a["type"] != "InternalIP"]
    fact = kf.node_facts(node)
    assert fact["pod_cidrs"] == [] and fact["internal_ip"] is None
    found = {f["check"]: f for f in kf.node_findings(kf.nodes_facts(NODES[:2] + [node]))}
    assert sorted(found) == ["kube.node_without_internal_ip", "kube.node_without_pod_cidr"]
    assert found["kube.node_without_pod_cidr"]["severity"] == "info"
    assert found["kube.node_without_pod_cidr"]["evidence"] == {"nodes": ["node3"], "count": 1}


def test_podcidr_only_legacy_field():
    node = copy.deepcopy(by_name(NODES, "node2"))
    del node["spec"]["podCIDRs"]
    assert kf.node_facts(node)["pod_cidrs"] == ["198.19.1.0/24"]


NODE_IPS = ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
NODE_FACTS = kf.nodes_facts(NODES)
EXPECTED = sorted({
    "198.18.16.1:443/TCP",
    "198.18.16.10:53/UDP", "198.18.16.10:53/TCP", "198.18.16.10:9153/TCP",
    "198.18.16.70:80/TCP", "198.18.0.230:80/TCP",
    *["%s:30070/TCP" % ip for ip in NODE_IPS + ["0.0.0.0"]],
    "198.18.16.71:443/TCP", "198.18.16.71:443/UDP", "198.18.0.231:443/TCP", "198.18.0.231:443/UDP",
    *["%s:31443/TCP" % ip for ip in NODE_IPS + ["0.0.0.0"]], *["%s:31444/UDP" % ip for ip in NODE_IPS + ["0.0.0.0"]],
    "198.18.16.72:3868/SCTP", "[fd00:18:16::72]:3868/SCTP",
})


# the default list: no NodePort on a node address (NODE_IPS)
COMPACT = sorted(f for f in EXPECTED if f.rsplit(":", 1)[0] not in NODE_IPS)


def test_service_frontends_every_kind_once_sorted():
    got = kf.service_frontends(SERVICES, NODE_FACTS, PODS, node_addresses=True)
    assert sorted(got) == EXPECTED and len(got) == len(set(got))
    # sorted by address (numerically), then port, then protocol; IPv6 last
    assert got[0] == "0.0.0.0:30070/TCP" and got[-1] == "[fd00:18:16::72]:3868/SCTP"
    assert got.index("198.18.16.10:9153/TCP") < got.index("198.18.16.70:80/TCP")
    # every item is accepted by bpf_map_usage's parser
    assert all(parse_frontend(f) for f in got)


def test_every_node_address_surrogate_load_balancer_ip_and_host_ports():
    """Regression (issue 11): NodePorts were listed on InternalIPs only; Cilium also programs the
    0.0.0.0 surrogate and every node address, and hostPorts and spec.loadBalancerIP are live too."""
    nodes = copy.deepcopy(NODES)
    by_name(nodes, "node2")["status"]["addresses"].append({"type": "ExternalIP", "address": "203.0.113.12"})
    by_name(nodes, "node3")["status"]["addresses"].append({"type": "InternalIP", "address": "fd00:18::13"})
    facts = kf.nodes_facts(nodes)
    assert next(f for f in facts if f["name"] == "node2")["addresses"] == ["198.18.0.12", "203.0.113.12"]  # not Hostname
    got = set(kf.service_frontends(SERVICES + of_kind(MORE, "Service"), facts, PODS + of_kind(MORE, "Pod"),
                                   node_addresses=True))
    for port, proto in ((30070, "TCP"), (31443, "TCP"), (31444, "UDP"), (32080, "TCP")):
        for address in ("0.0.0.0", "[::]", "198.18.0.11", "198.18.0.12", "203.0.113.12", "198.18.0.13",
                        "[fd00:18::13]"):
            assert "%s:%d/%s" % (address, port, proto) in got
    assert {"198.18.16.73:8080/TCP", "198.18.0.232:8080/TCP"} <= got  # ClusterIP and spec.loadBalancerIP
    # hostPort without hostIP: every address of the pod's node (node2) and the surrogate; not other nodes
    assert {"198.18.0.12:9443/TCP", "203.0.113.12:9443/TCP", "0.0.0.0:9443/TCP", "198.18.0.12:8125/UDP",
            "0.0.0.0:8125/UDP"} <= got
    assert "198.18.0.11:9443/TCP" not in got
    # hostPort with hostIP: that address only; finished or unscheduled pods program nothing
    assert "198.18.0.11:9100/TCP" in got and "0.0.0.0:9100/TCP" not in got
    assert not [f for f in got if f.endswith(":7000/TCP") or f.endswith(":7001/TCP")]


def test_headless_and_external_name_have_no_frontends():
    assert kf.service_frontends([by_name(SERVICES, "shop-pods"), by_name(SERVICES, "billing")], NODE_FACTS) == []


def test_nodeports_skip_nodes_without_address_and_default_protocol():
    svc = copy.deepcopy(by_name(SERVICES, "shop"))
    del svc["spec"]["ports"][0]["protocol"]
    nodes = [{"name": "node1", "addresses": ["198.18.0.11"]}, {"name": "node9", "addresses": []}]
    assert kf.service_frontends([svc], nodes, node_addresses=True) == [
        "0.0.0.0:30070/TCP", "198.18.0.11:30070/TCP", "198.18.0.230:80/TCP", "198.18.16.70:80/TCP"]
    assert kf.service_frontends([svc], nodes) == ["0.0.0.0:30070/TCP", "198.18.0.230:80/TCP", "198.18.16.70:80/TCP"]


def test_the_compact_list_keeps_live_every_form_of_the_full_one_and_nothing_more():
    """The default list leaves out <node address>:<nodePort> (and a hostPort on its node's addresses): bpf_map_usage's
    matching must find every form of the full list live against it, and a frontend no Service has still stale."""
    nodes = copy.deepcopy(NODES)
    by_name(nodes, "node3")["status"]["addresses"].append({"type": "InternalIP", "address": "fd00:18::13"})
    facts = kf.nodes_facts(nodes)
    services, pods = SERVICES + of_kind(MORE, "Service"), PODS + of_kind(MORE, "Pod")
    full = kf.service_frontends(services, facts, pods, node_addresses=True)
    compact = kf.service_frontends(services, facts, pods)
    node_ips = set(ip for node in facts for ip in node["addresses"])
    assert set(compact) < set(full)
    assert set(full) - set(compact) == set(
        f for f in full if f.rsplit(":", 1)[0].strip("[]") in node_ips and f not in compact)
    assert len(full) - len(compact) == 18  # 4 NodePorts on 4 node addresses, a hostPort on node2's one
    live = frontends.LiveFrontends(parse_frontend(f) for f in compact)
    assert all(parse_frontend(f) in live for f in full)
    # still stale: a port no Service or hostPort has, on a node address and on the surrogate
    assert parse_frontend("198.18.0.11:30999/TCP") not in live and parse_frontend("0.0.0.0:30999/TCP") not in live
    assert parse_frontend("198.18.16.99:80/TCP") not in live


def test_dns_servers_service_then_pods_with_ip():
    kube_dns = by_name(SERVICES, "kube-dns")
    dns_pods = [p for p in PODS if p["metadata"]["labels"].get("k8s-app") == "kube-dns"]
    assert kf.dns_servers(kube_dns, dns_pods) == [
        {"address": "198.18.16.10", "name": "kube-dns", "role": "service"},
        {"address": "198.19.0.2", "name": "coredns-7db6d8ff4d-4xk2a", "role": "pod", "node": "node1"},
        {"address": "198.19.1.2", "name": "coredns-7db6d8ff4d-9wq7b", "role": "pod", "node": "node2"},
        {"address": "198.19.2.2", "name": "coredns-7db6d8ff4d-c6t3c", "role": "pod", "node": "node3"},
    ]
    found = kf.dns_findings(kube_dns, dns_pods)
    assert [(f["check"], f["subject"], f["severity"]) for f in found] == [
        ("kube.dns_pod_without_ip", "coredns-7db6d8ff4d-pnd4g", "warning")]


@pytest.mark.parametrize("service,pods,check", [
    (None, "all", "kube.dns_service_missing"),
    ("headless", "all", "kube.dns_service_headless"),
    ("kube-dns", [], "kube.dns_pods_missing"),
])
def test_dns_findings_when_something_is_missing(service, pods, check):
    svc = None
    if service == "kube-dns":
        svc = by_name(SERVICES, "kube-dns")
    elif service == "headless":
        svc = copy.deepcopy(by_name(SERVICES, "kube-dns"))
        svc["spec"]["clusterIP"], svc["spec"]["clusterIPs"] = "None", ["None"]
    pods = PODS[:3] if pods == "all" else pods
    found = kf.dns_findings(svc, pods)
    assert [f["check"] for f in found] == [check]
    roles = [s["role"] for s in kf.dns_servers(svc, pods)]
    assert roles == (["service"] if svc and service == "kube-dns" else []) + ["pod"] * (3 if pods else 0)


class FakeKube(object):
    """Records what is read; serves the fixture objects."""

    def __init__(self):
        self.calls = []

    def nodes(self):
        self.calls.append("nodes")
        return NODES

    def services(self):
        self.calls.append("services")
        return SERVICES

    def get(self, plural, name, namespace=None):
        self.calls.append("get %s %s/%s" % (plural, namespace, name))
        return next((s for s in SERVICES if s["metadata"]["name"] == name and s["metadata"]["namespace"] == namespace), None)

    def pods(self, namespace=None, label_selector=None, keep=None):
        """As kube_client.Kube.pods: ``keep`` of each pod, those it drops left out."""
        self.calls.append("pods %s %s" % (namespace, label_selector))
        got = [p for p in PODS if namespace is None or (p["metadata"]["namespace"] == namespace
               and "k8s-app=%s" % p["metadata"]["labels"].get("k8s-app") == label_selector)]
        return [k for k in map(keep or (lambda p: p), got) if k is not None]


@pytest.mark.parametrize("what,calls,keys", [
    (["nodes"], ["nodes"], ["findings", "nodes"]),
    (["service_frontends"], ["nodes", "services", "pods None None"], ["findings", "service_frontends"]),
    (["dns_servers"], ["get services kube-system/kube-dns", "pods kube-system k8s-app=kube-dns"], ["dns_servers", "findings"]),
    (list(kf.GATHER), ["nodes", "services", "pods None None", "get services kube-system/kube-dns",
                       "pods kube-system k8s-app=kube-dns"],
     ["dns_servers", "findings", "nodes", "service_frontends"]),
])
def test_gather_reads_only_what_is_asked(what, calls, keys):
    kube = FakeKube()
    result = kf.gather(kube, what)
    assert kube.calls == calls and sorted(result) == keys
    if "service_frontends" in what:
        assert sorted(result["service_frontends"]) == COMPACT
        full = kf.gather(FakeKube(), what, node_port_addresses=True)
        assert sorted(full["service_frontends"]) == EXPECTED


def test_gather_other_dns_names():
    kube = FakeKube()
    result = kf.gather(kube, ["dns_servers"], dns_namespace="dns", dns_service="coredns", dns_pod_selector="k8s-app=coredns")
    assert result["dns_servers"] == []
    assert [f["check"] for f in result["findings"]] == ["kube.dns_service_missing", "kube.dns_pods_missing"]


def test_lb_vips_are_the_load_balancer_services_addresses_not_their_external_ips():
    store = copy.deepcopy(by_name(SERVICES, "store"))
    store["spec"]["externalIPs"] = ["198.18.0.240"]
    shared = copy.deepcopy(store)
    shared["metadata"]["name"] = "store-udp"
    cluster = by_name(SERVICES, "kubernetes")
    vips = kf.lb_vips([store, shared, cluster, by_name(of_kind(MORE, "Service"), "gateway")])
    # web/store's ingress IP (both Services share it), web/gateway's spec.loadBalancerIP; no externalIP, no ClusterIP
    assert vips == [{"address": "198.18.0.231", "services": ["web/store", "web/store-udp"]},
                    {"address": "198.18.0.232", "services": ["web/gateway"]}]


def test_gather_lb_vips_reads_the_services_only():
    kube = FakeKube()
    result = kf.gather(kube, ["lb_vips"])
    assert kube.calls == ["services"] and sorted(result) == ["findings", "lb_vips"]
    assert [v["address"] for v in result["lb_vips"]] == ["198.18.0.231"]
