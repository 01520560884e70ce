from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.f5 import configmaps as f5
from ansible_collections.k8snet.triage.plugins.module_utils.f5 import controller as f5_controller
from ansible_collections.k8snet.triage.plugins.module_utils.f5 import parsers as f5_parsers

from tests.kube_api import fixture_objects as objects, of_kind

A = objects("f5.yaml")
B = objects("f5_cluster_b/f5.yaml")


def audit(objs, cluster=None):
    found, parsed = f5.audit(of_kind(objs, "Service"), of_kind(objs, "ConfigMap"), cluster=cluster)
    return {(f["check"], f["subject"]): f for f in found}, parsed


def test_every_configmap_finding_on_cluster_a():
    found, dummy = audit(A)
    assert set(found) == {
        ("f5.vip_mismatch", "web/web-a-443"),
        ("f5.invalid_configmap", "web/web-b-8080"),
        ("f5.port_mismatch", "web/web-c-9000"),
        ("f5.missing_configmap", "web/web-d:80"),
        ("f5.duplicate_configmap", "web/web-e:80"),
        ("f5.orphan_configmap", "web/gone-80"),
    }
    invalid = found[("f5.invalid_configmap", "web/web-b-8080")]
    assert invalid["evidence"]["path"] == "virtualServer.backend.healthMonitors.0.interval"
    assert "less than the minimum of 1" in invalid["evidence"]["error"]
    assert found[("f5.vip_mismatch", "web/web-a-443")]["evidence"] == {"bind_addr": "198.18.0.201", "load_balancer_ip": "198.18.0.200"}
    assert found[("f5.duplicate_configmap", "web/web-e:80")]["evidence"]["configmaps"] == ["web/web-e-80", "web/web-e-80-old"]


def test_cluster_b_is_clean_and_route_domain_is_accepted():
    found, parsed = audit(B, cluster="b")
    assert found == {}
    assert parsed[0]["bind_addr"] == "198.18.0.210%0"


def test_shared_partition_across_clusters():
    dummy, pa = audit(A)
    dummy, pb = audit(B)
    found = f5.shared_partitions({"a": f5.partitions_of(pa), "b": f5.partitions_of(pb)})
    assert [f["check"] for f in found] == ["f5.shared_partition"]
    assert found[0]["evidence"]["clusters"] == ["a", "b"]
    assert f5.shared_partitions({"a": f5.partitions_of(pa)}) == []


def test_controller_not_running():
    found = f5_controller.check_controllers(of_kind(A, "Pod"), f5_controller.DEFAULT_CONTROLLERS)
    assert [(f["check"], f["subject"]) for f in found] == [("f5.controller_not_running", "kube-system/load-balancer-f5")]
    assert "CrashLoopBackOff (23 restarts)" in found[0]["evidence"]["pods"][0]
    assert f5_controller.check_controllers(of_kind(B, "Pod"), f5_controller.DEFAULT_CONTROLLERS) == []
    none = f5_controller.check_controllers([], ["k8s-bigip-ctlr"])
    assert none[0]["evidence"]["pod_count"] == 0


def test_a_terminating_controller_pod_is_not_running():
    """A pod being deleted keeps phase Running and Ready until its kubelet stops it (a real API server shows it so
    while a Deployment scales to zero): its controller is going away, not running."""
    [pod] = [p for p in of_kind(B, "Pod") if p["metadata"]["name"].startswith("k8s-bigip-ctlr")]
    stopping = dict(pod, metadata=dict(pod["metadata"], deletionTimestamp="2026-01-01T10:00:30Z"))
    found = f5_controller.check_controllers([stopping], ["k8s-bigip-ctlr"])
    assert [f["check"] for f in found] == ["f5.controller_not_running"]
    assert found[0]["evidence"]["pods"] == ["%s: Terminating" % pod["metadata"]["name"]]
    assert f5_controller.check_cis([], [pod]) == [] and [f["check"] for f in f5_controller.check_cis([], [stopping])] == [
        "f5.controller_not_running"]


@pytest.mark.parametrize("bind, ok", [
    ("10.1.2.3", True), ("10.1.2.3%12", True), ("10.1.2.3%x", False), ("bad%0", False), ("", False),
    ("fd00::1", True), ("10.1.2", False),
])
def test_bigip_address_formats(bind, ok):
    data = {"virtualServer": {"backend": {"serviceName": "s", "servicePort": 80},
                              "frontend": {"partition": "p", "virtualAddress": {"bindAddr": bind, "port": 80}}}}
    assert (f5_parsers.schema_errors(data) == []) is ok


def test_wrong_schema_and_bad_json_are_invalid():
    cm = {"metadata": {"name": "x", "namespace": "web"}, "data": {"schema": "f5schemadb://bigip-virtual-server_v0.1.3.json", "data": "{"}}
    parsed = f5_parsers.parse_configmap(cm)
    assert [e[0] for e in parsed["errors"]] == ["schema", "data"]


def test_additional_property_is_reported_with_its_path():
    data = {"virtualServer": {"backend": {"serviceName": "s", "servicePort": 80, "port": 1},
                              "frontend": {"partition": "p", "virtualAddress": {"port": 80}}}}
    errors = f5_parsers.schema_errors(data)
    assert errors[0][0] == "virtualServer.backend"
    assert "'port' was unexpected" in errors[0][1]
    assert json.dumps(errors)


def test_cluster_unreachable_is_critical_and_names_the_cluster():
    found = f5.cluster_unreachable("b", "https://198.18.0.2:6443", "cannot reach the Kubernetes API at https://198.18.0.2:6443")
    assert (found["check"], found["severity"], found["subject"]) == ("f5.cluster_unreachable", "critical", "cluster b")
    assert found["evidence"] == {"cluster": "b", "server": "https://198.18.0.2:6443",
                                 "error": "cannot reach the Kubernetes API at https://198.18.0.2:6443"}
    assert "not audited" in found["summary"]


class _ClusterA(object):
    """The reads audit_cluster makes, answered from cluster A's fixture objects (``services`` replaces them)."""
    name, server = "a", "https://198.18.0.1:6443"

    def __init__(self, services):
        self._services = services

    def services(self, namespace):
        return self._services

    def config_maps(self, namespace, label_selector=None):
        return of_kind(A, "ConfigMap")

    def pods(self, namespace):
        return of_kind(A, "Pod")

    def list(self, plural, namespace=None, **query):
        assert plural == "deployments", plural  # the one list audit_cluster makes through Kube.list
        return of_kind(A, "Deployment")

    def namespaces(self):
        return of_kind(A, "Namespace")


def test_audit_cluster_counts_no_port_for_a_service_without_spec():
    """A Service whose spec reads null (a partial object from a proxy or an aggregated API) has no port to
    count: the audit goes on instead of failing the cluster with an AttributeError."""
    from ansible_collections.k8snet.triage.plugins.module_utils.f5 import cluster as f5_cluster
    services = of_kind(A, "Service")
    lb_ports = sum(len(s["spec"].get("ports") or []) for s in services if s["spec"].get("type") == "LoadBalancer")
    broken = dict(services[0], spec=None)
    found, summary, dummy, dummy = f5_cluster.audit_cluster(_ClusterA(services + [broken]), [], [])
    assert summary["load_balancer_ports"] == lb_ports > 0
    assert found  # the fixture's findings are still given
