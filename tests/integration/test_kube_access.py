"""The Kubernetes access layer against the stand-in API: paging, kubectl agreement, and clear
errors (API down, token refused, RBAC, bad kubeconfig) through a real module run."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import Kube

from tests.kube_api.helpers import kubectl, start


@pytest.fixture(scope="module")
def api(lab):
    server = start(lab, "cluster.yaml", "cni.yaml", label="kube-api-access",
                   tokens={"k8snet-lab-token": {"user": "lab-admin"},
                           "no-pods": {"user": "system:serviceaccount:ops:triage", "deny": ["list pods"]}})
    yield server
    server.stop()


def test_nodes_carry_lab_addresses_and_match_kubectl(lab, api):
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    ours = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in kube.nodes()}
    theirs = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"]
              for n in kubectl(api.kubeconfig(), "get", "nodes")["items"]}
    assert ours == theirs == {n.name: n.ip for n in lab.nodes}


def test_lists_are_paged_and_selectors_sent(api):
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    before = len(api.requests)
    assert len(kube.list("nodes", page_size=2)) == 3
    pages = api.requests[before:]
    assert [r["query"].get("continue") is not None for r in pages] == [False, True]
    pods = kube.pods("kube-system", label_selector="k8s-app=calico-node", node="node2")
    assert [p["metadata"]["name"] for p in pods] == ["calico-node-m4q8z"]
    assert api.requests[-1]["query"]["fieldSelector"] == "spec.nodeName=node2"
    theirs = kubectl(api.kubeconfig(), "get", "pods", "-n", "kube-system", "--field-selector", "spec.nodeName=node2",
                     "-l", "k8s-app=calico-node")
    assert [p["metadata"]["name"] for p in theirs["items"]] == ["calico-node-m4q8z"]


def test_explicit_host_token_and_ca(api):
    kube = Kube({"host": api.url, "api_key": api.token, "ca_cert": str(api.certs["ca"])})
    assert kube.version()["gitVersion"].startswith("v1.")


def _fails(ansible, args):
    result = ansible.module("localhost", "node_network_status", args)["localhost"]
    assert "findings" not in result and result.get("msg"), result  # the record holds status "failed"
    assert "Traceback" not in result.get("module_stderr", "") + result.get("exception", "")
    return result["msg"]


def test_token_refused(ansible, api):
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig(api.workdir / "kc-wrong", token="wrong-token"))})
    assert "refused our credentials (401 Unauthorized) to list nodes" in msg and api.url in msg


def test_rbac_forbidden_names_verb_and_resource(ansible, api):
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig(api.workdir / "kc-nopods", token="no-pods"))})
    assert msg.startswith("RBAC forbids us to list pods in namespace kube-system on %s (403 Forbidden)" % api.url)
    assert 'cannot list resource "pods"' in msg


def test_tls_without_the_ca(ansible, api):
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig(api.workdir / "kc-noca", ca=False))})
    assert "TLS to the Kubernetes API at %s failed to list nodes" % api.url in msg and "ca_cert" in msg


def test_api_down(ansible, lab):
    server = start(lab, "cluster.yaml", label="kube-api-down")
    kubeconfig, url = server.kubeconfig(), server.url
    server.stop()
    msg = _fails(ansible, {"kubeconfig": str(kubeconfig)})
    assert msg.startswith("cannot reach the Kubernetes API at %s to list nodes" % url)
    assert "Connection refused" in msg


def test_bad_kubeconfig_and_context(ansible, api, tmp_path):
    assert "kubeconfig /nonexistent/kc does not exist" in _fails(ansible, {"kubeconfig": "/nonexistent/kc"})
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig()), "context": "other"})
    assert "cannot load the Kubernetes client configuration" in msg and "context other" in msg
