"""GDC's integrated mode vs F5 CIS alone: the mode, CIS's arguments, AS3 backends, Services served by others."""

from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.f5 import configmaps as f5, controller as f5_controller

from tests.kube_api import fixture_objects as objects, of_kind

CIS = objects("f5_cis/cluster.yaml", "f5_cis/cis.yaml")
GDC_A = objects("f5.yaml")


def checks(found):
    return sorted((f["check"], f["subject"]) for f in found)


def deployment(args, name="k8s-bigip-ctlr", image="registry.example.com/f5networks/k8s-bigip-ctlr:2.18.1@sha256:abc",
               replicas=1, ready=1, labels=None):
    return {"metadata": {"name": name, "namespace": "kube-system", "labels": labels or {}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "busybox"}, {"name": "ctlr", "image": image, "args": args}]}}},
            "status": {"readyReplicas": ready}}


def test_mode_from_the_gdc_controller_or_its_label():
    assert f5_controller.detect_mode([], of_kind(GDC_A, "Pod"), [])[0] == "gdc"
    assert f5_controller.detect_mode([{"metadata": {"name": "load-balancer-f5", "namespace": "kube-system"}}], [], [])[0] == "gdc"
    labelled = {"metadata": {"name": "x", "namespace": "web", "labels": {f5_controller.GDC_LABEL: "true"}}}
    assert f5_controller.detect_mode([], [], [labelled])[0] == "gdc"
    mode, why = f5_controller.detect_mode(of_kind(CIS, "Deployment"), of_kind(CIS, "Pod"), of_kind(CIS, "ConfigMap"))
    assert mode == "cis" and "no load-balancer-f5" in why


def test_cis_found_by_image_or_label_and_its_args_read():
    dep = deployment(["--namespace", "web", "--namespace=shop", "--pool-member-type=cluster",
                      "--bigip-partition", "k8s", "--insecure"])
    [c] = f5_controller.cis_controllers([dep, deployment([], name="other", image="nginx:1.27")])
    assert (c["ref"], c["namespaces"], c["pool_member_type"], c["partitions"]) == (
        "kube-system/k8s-bigip-ctlr", ["web", "shop"], "cluster", ["k8s"])
    assert [c["ref"] for c in f5_controller.cis_controllers([deployment([], image="nginx", labels={"app": "k8s-bigip-ctlr"})])]
    # defaults: all namespaces, nodeport (CIS's flag default)
    [c] = f5_controller.cis_controllers([deployment([])])
    assert (c["watch"], c["pool_member_type"]) == ("all namespaces", "nodeport")
    assert f5_controller.watches(c, "anything")


@pytest.mark.parametrize("image", ["f5networks/k8s-bigip-ctlr", "k8s-bigip-ctlr:2.9", "host:5000/k8s-bigip-ctlr",
                                   "host:5000/f5/k8s-bigip-ctlr:2.18.1@sha256:0123"])
def test_cis_image_names(image):
    assert f5_controller.image_name(image) == "k8s-bigip-ctlr"
    assert f5_controller.image_name(image.replace("k8s-bigip-ctlr", "k8s-bigip-ctlr-operator")) != "k8s-bigip-ctlr"


def test_namespace_label_selects_the_watched_namespaces():
    [c] = f5_controller.cis_controllers([deployment(["--namespace-label=cis=watched"])])
    namespaces = [{"metadata": {"name": "web", "labels": {"cis": "watched"}}}, {"metadata": {"name": "shop"}}]
    f5_controller.resolve_namespace_labels([c], namespaces)
    assert (f5_controller.watches(c, "web"), f5_controller.watches(c, "shop")) == (True, False)


def test_cis_scaled_to_zero_not_ready_or_absent():
    zero, unready = f5_controller.cis_controllers([deployment([], replicas=0, ready=0), deployment([], name="b", ready=0)])
    assert checks(f5_controller.check_cis([zero, unready], [])) == [
        ("f5.controller_not_running", "kube-system/b"), ("f5.controller_scaled_to_zero", "kube-system/k8s-bigip-ctlr")]
    assert checks(f5_controller.check_cis([], [])) == [("f5.controller_not_running", "k8s-bigip-ctlr")]
    # a ready CIS pod without a Deployment (another workload kind) runs CIS; a not-ready one does not
    pod = of_kind(CIS, "Pod")[0]
    assert f5_controller.check_cis([], [pod]) == []
    unready = dict(pod, status=dict(pod["status"], conditions=[{"type": "Ready", "status": "False"}]))
    assert checks(f5_controller.check_cis([], [unready])) == [("f5.controller_not_running", "k8s-bigip-ctlr")]
    assert f5_controller.check_cis(f5_controller.cis_controllers(of_kind(CIS, "Deployment")), of_kind(CIS, "Pod")) == []


def test_f5_examples_on_plain_cis_are_clean():
    controllers = f5_controller.cis_controllers(of_kind(CIS, "Deployment"))
    found, parsed = f5.audit(of_kind(CIS, "Service"), of_kind(CIS, "ConfigMap"), mode="cis", controllers=controllers)
    assert found == []
    assert sorted((p["ref"], p["kind"]) for p in parsed) == [
        ("default/as3cm", "as3"), ("default/example-udp-vs", "virtual-server"), ("default/example-vs", "virtual-server"),
        ("default/example-vs-iapp", "virtual-server")]


def test_gdc_rule_skips_services_served_by_others_and_applies_in_gdc_mode_only():
    services = of_kind(CIS, "Service")
    found, dummy = f5.audit(services, [], mode="gdc")
    # metallb-web (MetalLB's annotation) and classed-web (loadBalancerClass) owe GDC's F5 nothing
    assert found == []
    plain = [dict(s, metadata={"name": s["metadata"]["name"], "namespace": "default"},
                  spec=dict(s["spec"], loadBalancerClass=None)) for s in services]
    found, dummy = f5.audit(plain, [], mode="gdc")
    assert checks(found) == [("f5.missing_configmap", "default/classed-web:80"), ("f5.missing_configmap", "default/metallb-web:80")]
    assert f5.audit(plain, [], mode="cis")[0] == []


def as3(members, tenant="t1"):
    template = {"class": "AS3", "declaration": {"class": "ADC", tenant: {"class": "Tenant", "app": {
        "class": "Application", "vs": {"class": "Service_TCP", "virtualAddresses": ["198.18.0.230"], "pool": "p"},
        "p": {"class": "Pool", "members": members}}}}}
    return {"metadata": {"name": "as3-" + tenant, "namespace": "default", "labels": {"f5type": "virtual-server", "as3": "true"}},
            "data": {"template": json.dumps(template)}}


@pytest.mark.parametrize("members, expected", [
    ([{"servicePort": 80, "serviceName": "example-vs-iapp"}], []),
    ([{"servicePort": 81, "serviceName": "example-vs-iapp"}], [("f5.port_mismatch", "default/as3-t1")]),
    ([{"servicePort": 80, "serviceName": "gone"}], [("f5.orphan_configmap", "default/as3-t1")]),
    ([{"servicePort": 80, "serverAddresses": []}], [("f5.orphan_configmap", "default/as3-t1")]),
])
def test_as3_pool_members_need_their_service_and_port(members, expected):
    found, dummy = f5.audit(of_kind(CIS, "Service"), [as3(members)], mode="cis")
    assert checks(found) == expected
    if expected and expected[0][0] == "f5.port_mismatch":
        assert found[0]["evidence"]["service_ports"] == [80]


def test_as3_tenant_used_by_two_clusters():
    dummy, pa = f5.audit([], [as3([], tenant="shared")], mode="cis")
    dummy, pb = f5.audit([], [as3([], tenant="shared")], mode="cis")
    [found] = f5.shared_partitions({"a": f5.partitions_of(pa), "b": f5.partitions_of(pb)})
    assert (found["check"], found["subject"]) == ("f5.shared_partition", "partition shared")


def test_partition_not_managed_by_cis():
    controllers = f5_controller.cis_controllers([deployment(["--bigip-partition=k8s"])])
    found, dummy = f5.audit(of_kind(CIS, "Service"), of_kind(CIS, "ConfigMap"), mode="cis", controllers=controllers)
    assert checks(found) == [("f5.partition_not_managed", "default/example-udp-vs"), ("f5.partition_not_managed", "default/example-vs"),
                             ("f5.partition_not_managed", "default/example-vs-iapp")]


def test_as3_false_and_override_configmaps_have_no_pools_to_check():
    """as3: "false" removes what the ConfigMap declared; overrideAS3 amends CIS's own objects."""
    removed = as3([{"servicePort": 80, "serviceName": "gone"}])
    removed["metadata"]["labels"]["as3"] = "false"
    override = as3([{"servicePort": 80, "serviceName": "gone"}], tenant="t2")
    del override["metadata"]["labels"]["as3"]
    override["metadata"]["labels"]["overrideAS3"] = "true"
    found, parsed = f5.audit(of_kind(CIS, "Service"), [removed, override], mode="cis")
    assert found == [] and f5.partitions_of(parsed) == {}
    override["data"]["template"] = "{"
    assert checks(f5.audit([], [override], mode="cis")[0]) == [("f5.invalid_configmap", "default/as3-t2")]
