"""The cni role: node conditions and CNI pods from the real control plane (controller), and the CNI files on each node
over SSH.  Each node gets its own /etc/cni/net.d and /opt/cni/bin (overlays in the node's mount namespace); the host's
filesystem is not touched.

The API side is the lab's real API server (tests/lab/cluster.py) with the stand-in's fixtures loaded through it
(tests/lab/cluster_objects.py): the nodes' conditions written as their kubelet / CNI agent would (fresh times), the
calico-node pods bound and their status written as their kubelet's, node4 (a node the lab does not have) created with
the fixture's status. The real node lifecycle controller taints node2 (NetworkUnavailable) and node3 (not Ready) and,
once its grace period is over, marks node4 (no kubelet renews its Lease) unreachable; none of that changes the cni
findings asserted here. Independent reader: kubectl from the same release."""

from __future__ import annotations

import json
import os

import pytest

from tests.kube_api.helpers import checks
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import kube as kube_faults
from tests.unit.plugins.module_utils.test_cni_files import CALICO

HOST_PATHS_BEFORE = {p: os.path.exists(p) for p in ("/etc/cni", "/opt/cni")}


@pytest.fixture(scope="module")
def api(kube_cluster):
    return RealApi(kube_cluster, "cluster.yaml", "cni.yaml", "node4.yaml")


@pytest.fixture()
def node_files(lab):
    kube_faults.cni_files(lab, "node1", config=json.loads(CALICO))
    kube_faults.cni_files(lab, "node3", config=json.loads(CALICO), binaries=("calico", "calico-ipam", "bandwidth"))
    yield
    for node in ("node1", "node3"):
        kube_faults.clear_cni_files(lab, node)
    assert {p: os.path.exists(p) for p in HOST_PATHS_BEFORE} == HOST_PATHS_BEFORE


def test_api_and_node_findings(lab, ansible, api, kube_cluster, node_files):
    # independent readers: the files as an SSH session on each node sees them, the nodes as kubectl sees them
    assert lab.ssh("node1", "ls /etc/cni/net.d /opt/cni/bin").stdout.split() == [
        "/etc/cni/net.d:", "10-calico.conflist", "/opt/cni/bin:", "bandwidth", "calico", "calico-ipam", "portmap"]
    assert lab.ssh("node2", "test -e /etc/cni/net.d", check=False).returncode == 1
    assert not lab.ssh("node3", "ls /opt/cni/bin").stdout.count("portmap")
    nu = {n["metadata"]["name"]: [c["status"] for c in n["status"]["conditions"] if c["type"] == "NetworkUnavailable"]
          for n in kube_cluster.kubectl_json("get", "nodes")["items"]}
    assert nu == {"node1": ["False"], "node2": ["True"], "node3": [], "node4": []}

    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": str(api.kubeconfig())})
    assert run.rc == 0, run
    api_result = run.results(action="node_network_status")
    assert len(api_result) == 1  # run once, on the controller
    assert checks(api_result[0]["result"]["findings"]) == [
        ("node.cni_not_ready", "node3"),
        ("node.cni_pod_crashloop", "node2/calico-node-m4q8z"),
        ("node.cni_pod_missing", "node4"),
        ("node.cni_pod_pending", "node3/calico-node-z9t5r"),
        ("node.network_unavailable", "node2"),
    ]
    # the node side: each node's cni check in the one pass (node_triage), its record's findings
    node = {r["host"]: r["result"]["ansible_facts"]["triage_results"]["cni"]["findings"]
            for r in run.results(action="node_pass")}
    assert checks(node["node1"]) == [("node.cni_files_ok", "node1")]
    assert checks(node["node2"]) == [("node.cni_config_missing", "node2")]
    assert checks(node["node3"]) == [("node.cni_binary_missing", "node3:/opt/cni/bin")]
    assert node["node3"][0]["evidence"]["missing"] == ["portmap"]
    # the role's per-host fact: the node's own files plus what the API says about that node
    fact = run.result("Keep the findings of this host", "node2")["ansible_facts"]["cni_findings"]
    assert checks(fact) == [("node.cni_config_missing", "node2"), ("node.cni_pod_crashloop", "node2/calico-node-m4q8z"),
                            ("node.network_unavailable", "node2")]


def test_node_side_runs_without_the_api(lab, ansible, node_files):
    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_api": False, "cni_kubeconfig": "/nonexistent"})
    assert run.rc == 0, run
    assert not run.results(action="node_network_status") or all(
        r["status"] == "skipped" for r in run.results(action="node_network_status"))
    ran = [r["host"] for r in run.results(action="node_pass")
           if r["result"]["ansible_facts"]["triage_results"]["cni"]["status"] == "ran"]
    assert len(ran) == len(lab.nodes)


def test_bad_input(ansible, api):
    result = ansible.module("localhost", "node_network_status",
                            {"kubeconfig": str(api.kubeconfig()), "stuck_after": -1})["localhost"]
    assert "stuck_after=-1 is invalid: give an integer from 0 to 604800 seconds" in result["msg"]
    result = ansible.module("node2", "cni_config_check", {"conf_dir": "etc/cni/net.d"})["node2"]
    assert result["msg"] == "conf_dir='etc/cni/net.d' is invalid: give an absolute path (starting with /)"


def test_anetd_that_installs_no_cni_conf_is_named(lab, ansible, api, kube_cluster):
    """GDC's runbook: anetd Running, the CNI config missing on the node, because its cilium-config sets
    custom-cni-conf true.  Independent reader: kubectl reads the ConfigMap and the pod. (anetd.yaml is added to the
    module's cluster, beside calico-node: the last test of the module.)"""
    api.load("anetd.yaml")
    kubeconfig = str(api.kubeconfig())
    config = kube_cluster.kubectl_json("get", "configmap", "-n", "kube-system", "cilium-config")
    assert config["data"]["custom-cni-conf"] == "true"
    pod = kube_cluster.kubectl_json("get", "pod", "-n", "kube-system", "anetd-5kx8w")
    assert (pod["status"]["phase"], pod["spec"]["nodeName"]) == ("Running", "node1")
    run = ansible.playbook("k8snet.triage.cni", extra_vars={"cni_kubeconfig": kubeconfig}, limit="node1")
    assert run.rc == 0, run
    [api] = run.results(action="node_network_status")
    found = dict(((f["check"], f["subject"]), f) for f in api["result"]["findings"])
    config_finding = found[("node.cni_conf_by_agent_config", "cluster")]
    assert config_finding["evidence"] == {"configmap": "kube-system/cilium-config", "custom-cni-conf": "true",
                                          "cni-exclusive": "false"}
    assert "writes no CNI configuration" in config_finding["summary"]
    # the node's own side: node1 has no CNI config (nothing wrote it), which the finding above explains
    [node] = run.results(action="node_pass")
    assert ("node.cni_config_missing", "node1") in checks(node["result"]["ansible_facts"]["triage_results"]["cni"]["findings"])
    assert lab.ssh("node1", "test -e /etc/cni/net.d", check=False).returncode == 1
