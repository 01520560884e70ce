# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""service_path: a Service's VIP, port, ready backends and announcer from the stand-in's fixture objects
(validated with the client's models and, for MetalLB's ServiceL2Status, the upstream CRD schema), and who
answers ARP for the VIP from arp_check-shaped results."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import service as service_path
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from tests.kube_api import Store, fixture_objects

CORE = fixture_objects("cluster.yaml", "service_path.yaml")
METALLB = fixture_objects("metallb.yaml")
INVENTORY = {"cp-a": {"k8s_node_name": "node1"}, "node2": {}, "node3": {"k8s_node_name": None}}


class FakeKube(object):
    """The reads api_check makes, answered from a Store (the stand-in's own selection code)."""

    def __init__(self, objects, crd=True):
        self.store, self.crd, self.asked, self.server = Store(objects), crd, [], "https://stand-in"

    def get(self, plural, name, namespace=None):
        self.asked.append(("get", plural, namespace, name))
        return self.store.get(plural, namespace, name)

    def endpoint_slices(self, namespace=None, service=None):
        self.asked.append(("list", "endpointslices", namespace, service))
        return self.store.list("endpointslices", namespace, "kubernetes.io/service-name=%s" % service)[0]

    def nodes(self):
        return self.store.list("nodes")[0]

    def custom_objects(self, group, version, plural):
        self.asked.append(("list", "%s.%s/%s" % (plural, group, version)))
        return self.store.list(plural)[0] if self.crd else None

    def events(self, namespace=None, field_selector=None):
        self.asked.append(("list", "events", namespace, field_selector))
        return self.store.list("events", namespace, field_selector=field_selector)[0]


def run(objects, crd=True, **params):
    fake = FakeKube(objects, crd)
    params.setdefault("service", "default/web")
    params.setdefault("inventory", INVENTORY)
    return service_path.api_check(params, lambda p: fake), fake


def checks(findings):
    return [(f["check"], f["subject"]) for f in findings]


def test_vip_port_backends_and_metallb_announcer():
    out, fake = run(CORE + METALLB)
    data = out["data"]
    svc = data["service"]
    assert (svc["vip"], svc["vip_source"], svc["port"], svc["port_name"], svc["node_port"], svc["target_port"]) == (
        "198.18.0.2", "status.loadBalancer.ingress", 80, "http", 30080, "http")
    assert svc["external_traffic_policy"] == "Cluster"
    # the named targetPort resolves through the slices' port of the same name; not ready and terminating left out
    assert [(e["ip"], e["port"], e["pod"], e["node"], e["host"]) for e in data["endpoints"]] == [
        ("198.19.1.10", 8080, "web-5d8f7-abcde", "node2", "node2"),
        ("198.19.2.10", 8080, "web-5d8f7-fghij", "node3", "node3"),
        ("198.19.3.10", 8080, "web-5d8f7-klmno", "node4", None)]
    assert data["endpoints_count"] == 3
    assert data["announcer"] == {"source": "servicel2status", "nodes": ["node1"], "hosts": ["cp-a"],
                                 "interfaces": ["eth0"], "objects": ["metallb-system/l2-7xk2q"]}
    # node4 holds a backend but is no inventory host: named, not skipped
    assert checks(out["findings"]) == [("service.node_not_in_inventory", "node4")]
    assert "backend web-5d8f7-klmno (198.19.3.10)" in out["findings"][0]["evidence"]["roles"]
    # the ServiceL2Status answered: no event read
    assert not [a for a in fake.asked if a[1] == "events"]
    assert [(n["name"], n["host"]) for n in data["nodes"]] == [("node1", "cp-a"), ("node2", "node2"), ("node3", "node3")]


def test_events_are_the_fallback_when_the_crd_is_not_served():
    out, fake = run(CORE, crd=False)
    assert out["data"]["announcer"]["source"] == "events"
    assert out["data"]["announcer"]["nodes"] == ["node1"] and out["data"]["announcer"]["hosts"] == ["cp-a"]
    [events] = [a for a in fake.asked if a[1] == "events"]
    assert events[3] == "involvedObject.kind=Service,involvedObject.name=web,reason=nodeAssigned"


def test_newest_nodeassigned_event_wins_and_no_announcer_is_info():
    newer = copy.deepcopy([o for o in CORE if o["kind"] == "Event"][0])
    newer["metadata"]["name"] = "web.2"
    newer["message"] = 'announcing from node "node3" with protocol "layer2"'
    newer["lastTimestamp"] = "2026-01-01T11:00:00Z"
    out, dummy = run(CORE + [newer], crd=False)
    assert out["data"]["announcer"]["nodes"] == ["node3"]
    no_events = [o for o in CORE if o["kind"] != "Event"]
    out, dummy = run(no_events, crd=False)
    assert out["data"]["announcer"]["source"] is None
    assert ("service.announcer_unknown", "default/web:80") in checks(out["findings"])


def test_port_by_name_or_number_and_unknown_port():
    out, dummy = run(CORE, port="metrics")
    assert (out["data"]["service"]["port"], out["data"]["service"]["node_port"]) == (9100, 30091)
    assert {e["port"] for e in out["data"]["endpoints"]} == {9100}
    out, dummy = run(CORE, port="9100")
    assert out["data"]["service"]["port_name"] == "metrics"
    with pytest.raises(InputError, match="Service default/web has no port 443; its ports are 80 .http., 9100"):
        run(CORE, port="443")


@pytest.mark.parametrize("value, message", [
    ("web", "give namespace/name"), ("default/../x", "is invalid"), ("Default/web", "is invalid"),
    ("default/web\n", "control and format characters")])
def test_bad_service_names_never_reach_a_url(value, message):
    with pytest.raises(InputError, match=message):
        run(CORE, service=value)


@pytest.mark.parametrize("value", ["0", "65536", "http port", "A", "x" * 16, True])
def test_bad_ports(value):
    with pytest.raises(InputError):
        run(CORE, port=value)


def test_missing_service_is_a_clear_failure():
    with pytest.raises(ReadError, match="Service default/nope not found"):
        run(CORE, service="default/nope")


def test_vip_sources_in_order_and_no_vip():
    svc = copy.deepcopy([o for o in CORE if o["kind"] == "Service"][0])
    svc["status"] = {}
    svc["spec"]["loadBalancerIP"] = "198.18.0.9"
    svc["spec"]["externalIPs"] = ["198.18.0.9", "198.18.0.10"]
    view = service_path.service_view(svc)
    assert (view["vip"], view["vips"], view["vip_source"]) == ("198.18.0.9", ["198.18.0.9", "198.18.0.10"],
                                                               "spec.loadBalancerIP")
    del svc["spec"]["loadBalancerIP"], svc["spec"]["externalIPs"]
    svc["status"] = {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}
    model = service_path.path_model(svc, [], [], None, [], INVENTORY)
    assert checks(model["findings"]) == [("service.no_ready_endpoints", "default/web:80"),
                                         ("service.no_vip", "default/web:80")]
    assert "lb.example.com" in model["findings"][1]["summary"]
    # a NodePort Service has no VIP by design: no service.no_vip (its path goes through nodeIP:nodePort)
    svc["spec"]["type"], svc["status"] = "NodePort", {}
    model = service_path.path_model(svc, [], [], None, [], INVENTORY)
    assert checks(model["findings"]) == [("service.no_ready_endpoints", "default/web:80")]
    assert model["data"]["service"]["node_port"] == 30080


def test_without_inventory_nothing_is_mapped_nor_reported_missing():
    out, dummy = run(CORE + METALLB, inventory=None)
    assert all(e["host"] is None for e in out["data"]["endpoints"]) and out["findings"] == []


# ------------------------------------------------------------------ who answers ARP
MAC1, MAC3, STRANGER = "02:18:07:00:00:0b", "02:18:07:00:00:0d", "02:aa:bb:cc:dd:ee"
VIP = "198.18.0.2"


def node_reads(vip_on=("node1",)):
    """arp_check results on the nodes, asked about the VIP and each node's own address."""
    reads = {}
    for host, mac, ip in (("node1", MAC1, "198.18.0.11"), ("node2", "02:18:07:00:00:0c", "198.18.0.12"),
                          ("node3", MAC3, "198.18.0.13")):
        local = [{"address": ip, "interface": "eth0", "mac": mac}]
        if host in vip_on:
            local.append({"address": VIP, "interface": "eth0", "mac": mac})
        reads[host] = {"local": local, "neighbors": [], "probes": {}, "findings": []}
    return reads


def client(*macs):
    return {"probes": {VIP: [{"mac": m, "vendor": None} for m in macs]}, "local": []}


def test_one_answer_from_the_declared_node_names_the_announcer():
    out = service_path.vip_announcer(VIP, client(MAC1), node_reads(), declared=["node1"])
    assert out["announcer"] == "node1" and out["findings"] == []
    assert out["answering"] == [{"mac": MAC1, "hosts": ["node1"]}] and out["holders"] == ["node1"]


def test_nobody_answers_is_unannounced():
    out = service_path.vip_announcer(VIP, client(), node_reads(vip_on=()), declared=["node1"])
    [f] = out["findings"]
    assert (f["check"], f["severity"], f["layer"]) == ("ingress.vip_unannounced", "critical", "L2")
    assert "node1 should (load balancer status)" in f["summary"] and out["announcer"] is None


def test_two_macs_or_the_wrong_node_is_a_mismatch():
    out = service_path.vip_announcer(VIP, client(MAC1, MAC3), node_reads(vip_on=("node1", "node3")), ["node1"])
    [f] = out["findings"]
    assert f["check"] == "ingress.announcer_mismatch" and "2 MACs answer" in f["summary"]
    assert out["announcer"] is None and out["holders"] == ["node1", "node3"]
    out = service_path.vip_announcer(VIP, client(MAC3), node_reads(vip_on=("node3",)), ["node1"])
    [f] = out["findings"]
    assert f["check"] == "ingress.announcer_mismatch" and f["summary"].startswith("node3 answers ARP")
    # without a load balancer status, the node holding the VIP is expected
    out = service_path.vip_announcer(VIP, client(MAC3), node_reads(vip_on=("node1",)))
    assert [f["check"] for f in out["findings"]] == ["ingress.announcer_mismatch"]
    assert out["findings"][0]["evidence"]["expected_from"] == "VIP on an interface"


def test_metallb_status_behind_its_election_is_a_stale_status():
    """What MetalLB 0.15's speakers did in the lab (test_real_metallb.py): after the announcing speaker died, the
    node elected instead answers ARP without holding the VIP on an interface, and the ServiceL2Status still names
    the dead speaker's node (the new speaker patched its labels and owners, not status.node, which is immutable)."""
    out = service_path.vip_announcer(VIP, client(MAC3), node_reads(vip_on=()), ["node1"])
    [f] = out["findings"]
    assert (f["check"], f["severity"]) == ("ingress.announcer_mismatch", "warning")
    assert f["summary"].startswith("node3 answers ARP") and "ServiceL2Status still names node1" in f["summary"]
    assert "whose status.node is node1" in f["remediation"] and out["announcer"] == "node3"
    # a node holding the VIP on an interface is not MetalLB's way: the mismatch stays critical
    out = service_path.vip_announcer(VIP, client(MAC3), node_reads(vip_on=("node3",)), ["node1"])
    assert out["findings"][0]["severity"] == "critical"


def test_unknown_mac_and_unread_nodes():
    reads = node_reads(vip_on=())
    reads["node2"] = {"unreachable": True, "msg": "ssh: timeout"}
    out = service_path.vip_announcer(VIP, client(STRANGER), reads)
    [f] = out["findings"]
    assert f["check"] == "ingress.announcer_unknown" and f["evidence"]["not_read"] == ["node2"]
    out = service_path.vip_announcer(VIP, {"failed": True, "msg": "CAP_NET_RAW"}, reads)
    assert [f["check"] for f in out["findings"]] == ["ingress.announcer_not_checked"]


def test_only_serving_terminating_endpoints_are_a_warning_not_no_ready_endpoints():
    """A real cluster's EndpointSlice controller keeps a pod being deleted (its Ready condition still true) with
    ready false, serving true, terminating true (the fixture's web-5d8f7-uvwxy in slice web-q9m4z); kube-proxy
    forwards to such endpoints when none is ready: the Service still answers."""
    svc = [o for o in CORE if o["kind"] == "Service"][0]
    [slice_] = [o for o in CORE if o["kind"] == "EndpointSlice" and o["metadata"]["name"] == "web-q9m4z"]
    only = copy.deepcopy(slice_)
    only["endpoints"] = [e for e in only["endpoints"] if (e.get("conditions") or {}).get("terminating")]
    assert [e["conditions"] for e in only["endpoints"]] == [{"ready": False, "serving": True, "terminating": True}]
    model = service_path.path_model(svc, [only], [], None, [], INVENTORY)
    assert model["data"]["endpoints"] == [] and model["data"]["endpoints_count"] == 0
    assert [f["check"] for f in model["findings"]] == ["service.only_terminating_endpoints",
                                                       "service.announcer_unknown"]
    warning = model["findings"][0]
    assert warning["severity"] == "warning"
    assert warning["evidence"]["serving_terminating"] == [{"ip": "198.19.2.11", "pod": "web-5d8f7-uvwxy",
                                                           "node": "node3"}]
    # terminating and no longer serving (its pod's Ready went false): nothing answers, critical as before
    only["endpoints"][0]["conditions"]["serving"] = False
    model = service_path.path_model(svc, [only], [], None, [], INVENTORY)
    assert [f["check"] for f in model["findings"]] == ["service.no_ready_endpoints", "service.announcer_unknown"]
