from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import objects as kube
from ansible_collections.k8snet.triage.plugins.module_utils.kube import args as kube_args
from ansible_collections.k8snet.triage.plugins.module_utils.kube import auth as kube_auth
from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
from ansible_collections.k8snet.triage.plugins.module_utils.kube import statuses as kube_statuses
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError


# plural -> the typed API class and method stem the official client generates for it (its OpenAPI schema)
TYPED = {
    "nodes": ("CoreV1Api", "node"), "namespaces": ("CoreV1Api", "namespace"), "pods": ("CoreV1Api", "pod"),
    "services": ("CoreV1Api", "service"), "configmaps": ("CoreV1Api", "config_map"),
    "events": ("CoreV1Api", "event"), "endpointslices": ("DiscoveryV1Api", "endpoint_slice"),
    "deployments": ("AppsV1Api", "deployment"),
    "validatingwebhookconfigurations": ("AdmissionregistrationV1Api", "validating_webhook_configuration"),
    "mutatingwebhookconfigurations": ("AdmissionregistrationV1Api", "mutating_webhook_configuration"),
}


def _generated(api, method):
    """(resource path, query parameter names) of one of the client's generated methods, read from its source."""
    import inspect
    import re

    import kubernetes.client

    source = inspect.getsource(getattr(getattr(kubernetes.client, api), "_%s_serialize" % method))
    path = re.search(r"resource_path='([^']*)'", source).group(1)
    return path, set(re.findall(r"_query_params\.append\(\('(\w+)'", source))


def test_resource_paths_are_the_clients_generated_ones():
    """The REST paths Kube requests are the ones the official client generates from the Kubernetes OpenAPI schema
    (read from its generated methods, not written here), and the query parameters sent are ones they know."""
    assert set(TYPED) == set(kube_client.RESOURCES)
    for plural, (api, stem) in TYPED.items():
        namespaced = kube_client.RESOURCES[plural][1]
        cases = ([("list_namespaced_%s" % stem, ("ns-a", None)), ("list_%s_for_all_namespaces" % stem, (None, None)),
                  ("read_namespaced_%s" % stem, ("ns-a", "obj-b"))] if namespaced
                 else [("list_%s" % stem, (None, None)), ("read_%s" % stem, (None, "obj-b"))])
        for method, (namespace, name) in cases:
            path, query = _generated(api, method)
            assert kube_client.resource_path(plural, namespace, name) == path.format(namespace="ns-a", name="obj-b")
            if method.startswith("list"):
                assert {"labelSelector", "fieldSelector", "limit", "continue"} <= query, method
    assert kube_client.resource_path("services", "ns-a", "obj-b") == _generated(
        "CoreV1Api", "patch_namespaced_service")[0].format(namespace="ns-a", name="obj-b")
    assert kube_client.resource_path("pods", "ns-a", "obj-b") == _generated(
        "CoreV1Api", "delete_namespaced_pod")[0].format(namespace="ns-a", name="obj-b")
    path, query = _generated("CoreV1Api", "read_namespaced_pod_log")
    assert kube_client.resource_path("pods", "ns-a", "obj-b", "log") == path.format(namespace="ns-a", name="obj-b")
    assert {"container", "previous", "tailLines", "sinceSeconds", "limitBytes", "timestamps"} <= query
    assert _generated("CustomObjectsApi", "list_custom_object_for_all_namespaces")[0] == \
        "/apis/{group}/{version}/{resource_plural}"
    with pytest.raises(InputError, match="unknown resource"):
        kube_client.Kube._resource("secrets")


def test_paths_quote_each_segment_and_queries_leave_out_none():
    assert kube_client.resource_path("services", "../../x") == "/api/v1/namespaces/..%2F..%2Fx/services"
    assert kube_client.resource_path("nodes", "ignored-ns", "a b") == "/api/v1/nodes/a%20b"
    assert kube_client.query_string({"limit": 500, "continue": None, "labelSelector": "a=b,c in (d)"}) == \
        "?limit=500&labelSelector=a%3Db%2Cc+in+%28d%29"
    assert kube_client.query_string({"previous": False, "timestamps": True}) == "?previous=false&timestamps=true"
    assert kube_client.query_string({"continue": None}) == ""


@pytest.mark.parametrize("value", ["../../x", "..", "a/b", "Web", "-a", "a-", "", "a" * 64, "web\n", "a.b", 7, None])
def test_namespace_must_be_a_dns_label(value):
    with pytest.raises(InputError, match="is not a Kubernetes namespace name: a DNS-1123 label"):
        kube_args.check_namespace(value)


def test_names_and_refs():
    assert kube_args.check_namespace("kube-system") == "kube-system"
    assert kube_args.check_name("node1.example.com") == "node1.example.com"
    for bad in ("..", "../x", "a/b", "a,b=c", "A", "a" * 254, "x\n"):
        with pytest.raises(InputError, match="is not a Kubernetes object name"):
            kube_args.check_name(bad)
    assert kube_args.split_ref("web/a") == ("web", "a")
    with pytest.raises(InputError, match="service 'a' is not namespace/name"):
        kube_args.split_ref("a")
    with pytest.raises(InputError, match="namespace '..' is not"):
        kube_args.split_ref("../../x")


def test_describe():
    assert kube_client.describe("list", "pods") == "list pods (all namespaces)"
    assert kube_client.describe("list", "nodes") == "list nodes"
    assert kube_client.describe("patch", "services", "web", "a") == "patch services web/a"


# Status bodies as kube-apiserver sends them.
FORBIDDEN = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
                        "message": 'pods is forbidden: User "system:serviceaccount:ops:triage" cannot list resource "pods" '
                                   'in API group "" at the cluster scope'})


def test_http_errors_name_the_action():
    err = kube_statuses.http_error(403, FORBIDDEN, "list pods (all namespaces)", "https://api:6443")
    assert isinstance(err, PrivilegeError)
    assert "RBAC forbids us to list pods (all namespaces) on https://api:6443 (403 Forbidden)" in err.message
    assert "cannot list resource" in err.message
    err = kube_statuses.http_error(401, '{"kind":"Status","message":"Unauthorized","code":401}', "list nodes",
                                   "https://api")
    assert isinstance(err, PrivilegeError) and "refused our credentials (401 Unauthorized) to list nodes" in err.message
    # what the triage reads to find the API server down (filter api_down): the status, the request, the server
    assert (err.details["status"], err.details["action"], err.details["server"]) == (401, "list nodes", "https://api")
    err = kube_statuses.http_error(404, "", "get services web/a", "https://api")
    assert isinstance(err, ReadError) and err.details["status"] == 404 and err.message.startswith("not found: get services web/a")
    assert "HTTP 500" in kube_statuses.http_error(500, "<html>", "list nodes", "https://api").message
    err = kube_statuses.http_error(429, json.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests",
                                                    "message": "Too many requests, please try again later."}),
                                   "list nodes", "https://api")
    assert isinstance(err, ReadError) and err.details["status"] == 429
    assert "refused to list nodes: too many requests (429) (Too many requests, please try again later.)" in err.message
    assert "priority and fairness" in err.message and "kubectl get flowschemas" in err.message
    err = kube_statuses.http_error(409, json.dumps({"kind": "Status", "code": 409, "reason": "Conflict", "message":
                                                    'Operation cannot be fulfilled on services "web": the object has '
                                                    'been modified'}),
                                   "patch services a/web", "https://api")
    assert isinstance(err, ChangeError) and err.details["status"] == 409
    assert err.message.startswith("conflict: the Kubernetes API at https://api refused to patch services a/web (409")


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
    assert set(doc) == set(kube_args.AUTH_ARG_SPEC)
    for name, spec in kube_args.AUTH_ARG_SPEC.items():
        assert doc[name]["type"] == spec["type"]
        assert doc[name].get("aliases", []) == spec.get("aliases", [])


def test_missing_kubeconfig_is_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        kube_client.Kube({"kubeconfig": str(tmp_path / "nope")})
    bad = tmp_path / "kc"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    with pytest.raises(InputError, match="cannot load the Kubernetes client configuration"):
        kube_client.Kube({"kubeconfig": str(bad), "context": "nope"})


def test_auth_spec_env_fallbacks_are_kubernetes_core_names():
    assert kube_auth.AUTH_ENV == {
        "kubeconfig": "K8S_AUTH_KUBECONFIG", "context": "K8S_AUTH_CONTEXT", "host": "K8S_AUTH_HOST",
        "api_key": "K8S_AUTH_API_KEY", "validate_certs": "K8S_AUTH_VERIFY_SSL", "ca_cert": "K8S_AUTH_SSL_CA_CERT",
        "client_cert": "K8S_AUTH_CERT_FILE", "client_key": "K8S_AUTH_KEY_FILE", "proxy": "K8S_AUTH_PROXY",
        "api_timeout": "K8SNET_API_TIMEOUT"}


def _kubeconfig(path, server="https://198.18.0.1:6443", token="kc-token"):
    import yaml
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "c", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}]}))
    return str(path)


def _service_account(tmp_path, token="sa-token"):
    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    return str(directory)


def test_credential_source_order(tmp_path):
    kc = _kubeconfig(tmp_path / "kc")
    sa = _service_account(tmp_path)
    pod = {"KUBERNETES_SERVICE_HOST": "198.18.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBECONFIG": kc}
    none = {"KUBECONFIG": str(tmp_path / "absent")}
    source = kube_auth.credential_source
    assert source({}, none, sa) is None
    assert source({"kubeconfig": kc, "host": "https://h", "api_key": "t"}, pod, sa) == "kubeconfig"
    assert source({"context": "c"}, none, sa) == "kubeconfig"
    assert source({}, {"K8S_AUTH_KUBECONFIG": kc}, sa) == "kubeconfig"
    # AWX's bearer-token credential: only K8S_AUTH_HOST / K8S_AUTH_API_KEY in the environment
    assert source({}, dict(none, K8S_AUTH_HOST="https://h", K8S_AUTH_API_KEY="t"), sa) == "host"
    assert source({"host": "https://h", "client_cert": "/c", "client_key": "/k"}, pod, sa) == "host"
    assert source({}, pod, sa) == "in_cluster"
    assert source({}, dict(pod, KUBERNETES_SERVICE_PORT=""), sa) == "default_kubeconfig"
    assert source({}, {"KUBECONFIG": "%s:%s" % (tmp_path / "absent", kc)}, sa) == "default_kubeconfig"
    assert source({"host": "https://h"}, none, sa) == "host"  # anonymous
    assert source({}, dict(none, K8S_AUTH_HOST=""), sa) is None


def test_no_credentials_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no Kubernetes API to talk to: set kubeconfig"):
        kube_auth.configuration({}, {"KUBECONFIG": str(tmp_path / "absent")}, str(tmp_path))


@pytest.mark.parametrize("content, message", [
    (open("/etc/passwd").read(), "is not a kubeconfig: expected a YAML mapping"),
    ("key: [unclosed", "is not YAML"),
    ("clusters: x\ncontexts: 3\nusers: []\ncurrent-context: c\n", "it is not a valid kubeconfig"),
    ("[1, 2]", "is not a kubeconfig"),
])
def test_not_a_kubeconfig_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "kc"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        kube_auth.configuration({"kubeconfig": str(path)}, {})
    with pytest.raises(InputError, match="is not a regular file"):
        kube_auth.configuration({"kubeconfig": str(tmp_path)}, {})


def test_overrides_beside_a_kubeconfig_survive_the_refresh_hook(tmp_path):
    """The client's kubeconfig loader rewrites host and token before every request (its refresh hook):
    the explicit options must still be what is sent."""
    kc = _kubeconfig(tmp_path / "kc")
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    config, source = kube_auth.configuration({"kubeconfig": kc, "host": "https://198.18.0.9:6443/",
                                              "api_key": "override", "ca_cert": str(ca), "validate_certs": True}, {})
    assert source == "kubeconfig"
    for dummy in range(2):
        assert config.auth_settings()["BearerToken"]["value"] == "Bearer override"
        assert config.host == "https://198.18.0.9:6443"
        assert config.ssl_ca_cert == str(ca) and config.verify_ssl is True
    # without overrides the kubeconfig's values are used
    config, source = kube_auth.configuration({"kubeconfig": kc}, {})
    assert config.auth_settings()["BearerToken"]["value"].lower() == "bearer kc-token"
    assert config.host == "https://198.18.0.1:6443"


def test_default_kubeconfig_is_the_one_of_the_environ_checked(tmp_path, monkeypatch):
    """configuration() decides on the environ it is given (a task's environment in an action plugin): the
    kubeconfig loaded must be the one that environ names, not the process's KUBECONFIG (which the
    client library fixes when it is imported)."""
    process = _kubeconfig(tmp_path / "process", server="https://198.18.0.2:6443", token="process")
    task = _kubeconfig(tmp_path / "task", server="https://198.18.0.3:6443", token="task")
    monkeypatch.setenv("KUBECONFIG", process)
    monkeypatch.setenv("HOME", str(tmp_path))
    config, source = kube_auth.configuration({}, {"KUBECONFIG": "%s:%s" % (tmp_path / "absent", task)},
                                             str(tmp_path / "no-sa"))
    assert source == "default_kubeconfig"
    assert config.host == "https://198.18.0.3:6443"
    assert config.auth_settings()["BearerToken"]["value"].lower() == "bearer task"
    # a context without a kubeconfig option reads the same default files
    config, source = kube_auth.configuration({"context": "c"}, {"KUBECONFIG": task}, str(tmp_path / "no-sa"))
    assert source == "kubeconfig" and config.host == "https://198.18.0.3:6443"


def test_env_fallbacks_and_in_cluster(tmp_path):
    config, source = kube_auth.configuration({}, {"K8S_AUTH_HOST": "https://198.18.0.7:6443", "K8S_AUTH_API_KEY": "awx",
                                                  "K8S_AUTH_VERIFY_SSL": "false", "KUBECONFIG": str(tmp_path / "x")})
    assert source == "host" and config.host == "https://198.18.0.7:6443" and config.verify_ssl is False
    assert config.auth_settings()["BearerToken"]["value"] == "Bearer awx"
    sa = _service_account(tmp_path, "pod-token")
    pod = {"KUBERNETES_SERVICE_HOST": "198.18.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    config, source = kube_auth.configuration({}, pod, sa)
    assert source == "in_cluster" and config.host == "https://198.18.0.1:6443"
    assert config.auth_settings()["BearerToken"]["value"] == "bearer pod-token"
    assert config.ssl_ca_cert == sa + "/ca.crt"


@pytest.mark.parametrize("params, message", [
    ({"host": "198.18.0.1:6443"}, "host '198.18.0.1:6443' is not the URL of an API server"),
    ({"host": "https://h", "validate_certs": "maybe"}, "validate_certs 'maybe' is not a boolean"),
    ({"host": "https://h", "ca_cert": "/nonexistent/ca"}, "ca_cert /nonexistent/ca does not exist"),
    ({"host": "https://h", "proxy": "proxy:3128"}, "proxy 'proxy:3128' is not a proxy URL"),
])
def test_bad_overrides(params, message):
    with pytest.raises(InputError, match=message):
        kube_auth.configuration(params, {})
