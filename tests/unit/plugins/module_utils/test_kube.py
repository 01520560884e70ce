from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import kube
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, PrivilegeError, ReadError


def test_resource_paths():
    assert kube.resource_path("nodes") == "/api/v1/nodes"
    assert kube.resource_path("pods", "kube-system") == "/api/v1/namespaces/kube-system/pods"
    assert kube.resource_path("endpointslices", "web", "x") == "/apis/discovery.k8s.io/v1/namespaces/web/endpointslices/x"
    assert kube.resource_path("nodes", "ignored", "node1") == "/api/v1/nodes/node1"
    with pytest.raises(InputError):
        kube.resource_path("deployments")


def test_describe():
    assert kube.describe("list", "pods") == "list pods (all namespaces)"
    assert kube.describe("list", "nodes") == "list nodes"
    assert kube.describe("patch", "services", "web", "a") == "patch services web/a"


# Status bodies as kube-apiserver sends them.
FORBIDDEN = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
                        "message": 'pods is forbidden: User "system:serviceaccount:ops:triage" cannot list resource "pods" '
                                   'in API group "" at the cluster scope'})


def test_http_errors_name_the_action():
    err = kube.http_error(403, FORBIDDEN, "list pods (all namespaces)", "https://api:6443")
    assert isinstance(err, PrivilegeError)
    assert "RBAC forbids us to list pods (all namespaces) on https://api:6443 (403 Forbidden)" in err.message
    assert "cannot list resource" in err.message
    err = kube.http_error(401, '{"kind":"Status","message":"Unauthorized","code":401}', "list nodes", "https://api")
    assert isinstance(err, PrivilegeError) and "refused our credentials (401 Unauthorized) to list nodes" in err.message
    err = kube.http_error(404, "", "get services web/a", "https://api")
    assert isinstance(err, ReadError) and err.details["status"] == 404 and err.message.startswith("not found: get services web/a")
    assert "HTTP 500" in kube.http_error(500, "<html>", "list nodes", "https://api").message


def test_object_helpers():
    node = {"metadata": {"name": "n"}, "status": {"addresses": [{"type": "InternalIP", "address": "198.18.0.11"}],
                                                  "conditions": [{"type": "Ready", "status": "True"}]}}
    assert kube.node_address(node) == "198.18.0.11" and kube.node_address(node, "ExternalIP") is None
    assert kube.condition(node, "Ready")["status"] == "True" and kube.condition(node, "X") is None
    assert kube.ref({"metadata": {"name": "a", "namespace": "b"}}) == "b/a" and kube.ref(node) == "n"


def test_auth_spec_matches_doc_fragment():
    import yaml
    from ansible_collections.k8snet.triage.plugins.doc_fragments.kube_auth import ModuleDocFragment
    doc = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(doc) == set(kube.AUTH_ARG_SPEC)
    for name, spec in kube.AUTH_ARG_SPEC.items():
        assert doc[name]["type"] == spec["type"]
        assert doc[name].get("aliases", []) == spec.get("aliases", [])


def test_missing_kubeconfig_is_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        kube.Kube({"kubeconfig": str(tmp_path / "nope")})
    bad = tmp_path / "kc"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    with pytest.raises(InputError, match="cannot load the Kubernetes client configuration"):
        kube.Kube({"kubeconfig": str(bad), "context": "nope"})
