"""The Kubernetes access layer against the stand-in API: paging, kubectl agreement, and clear
errors (API down, token refused, RBAC, bad kubeconfig) through a real module run."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.kube_auth import AUTH_ENV
from ansible_collections.k8snet.triage.plugins.module_utils.kube_client import Kube, resource_path

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


# ------------------------------------------------------------------ overrides, names, credentials
def test_host_and_api_key_beside_a_kubeconfig_are_honoured(lab, api, tmp_path):
    """Regression: host/api_key beside a kubeconfig were ignored (the client's refresh hook put the
    kubeconfig's server and token back before each request) while results named the override."""
    dead = start(lab, "cluster.yaml", label="kube-api-dead")
    kc = dead.kubeconfig(tmp_path / "kc-dead", token="wrong-token")
    dead.stop()
    before = len(api.requests)
    kube = Kube({"kubeconfig": str(kc), "host": api.url, "api_key": api.token, "ca_cert": str(api.certs["ca"])})
    assert kube.server == api.url and kube.credential_source == "kubeconfig"
    assert [n["metadata"]["name"] for n in kube.nodes()] == [n.name for n in lab.nodes]
    assert kube.version()["gitVersion"].startswith("v1.")
    assert [r["token"] for r in api.requests[before:]] == [api.token, api.token]
    # the token alone overrides too (same server as the kubeconfig)
    kube = Kube({"kubeconfig": str(api.kubeconfig(tmp_path / "kc-wrong", token="wrong-token")), "api_key": api.token})
    assert len(kube.nodes()) == len(lab.nodes) and api.requests[-1]["token"] == api.token


def test_path_segments_are_escaped_and_names_checked(ansible, api):
    """Regression: a namespace of ../../x sent a GET to another path."""
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    before = len(api.requests)
    # below the name check, resource_path quotes the segment: the server sees one escaped segment
    assert kube.call("list services", resource_path("services", "../../x"))["items"] == []
    sent = api.requests[before]
    assert sent["path"] == "/api/v1/namespaces/..%2F..%2Fx/services"
    assert sent["parts"] == ["api", "v1", "namespaces", "../../x", "services"]
    # the kube layer refuses such names before any request, through a real module run too
    for call in (lambda: kube.services("../../x"), lambda: kube.get("services", "x", "../../x"),
                 lambda: kube.get("services", "../../nodes", "web"), lambda: kube.pods("kube-system", node="a,b=c")):
        with pytest.raises(InputError, match="is not a Kubernetes"):
            call()
    result = ansible.module("localhost", "kube_network_info", {"kubeconfig": str(api.kubeconfig()),
                                                               "dns_namespace": "../../x", "gather": ["dns_servers"]})["localhost"]
    # refused by the module's option rules, before the kube layer's own check
    assert result["failed"] and result["msg"].startswith("dns_namespace='../../x' is invalid: a Kubernetes name")
    assert not [r for r in api.requests[before + 1:] if ".." in r["path"]]


def test_kubeconfig_that_is_not_one_is_a_clear_error(ansible):
    """Regression: a kubeconfig pointing at /etc/passwd gave a traceback."""
    for path, message in (("/etc/passwd", "kubeconfig /etc/passwd is not a kubeconfig: expected a YAML mapping"),
                          ("/dev/zero", "kubeconfig /dev/zero is not a regular file"),
                          ("/etc", "kubeconfig /etc is not a regular file")):
        assert _fails(ansible, {"kubeconfig": path}).startswith(message)


def test_awx_environment_alone_reaches_the_api(ansible, api, lab, monkeypatch):
    """AWX's bearer-token credential injects only K8S_AUTH_HOST / K8S_AUTH_API_KEY (and friends)."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    probe = ansible.module("localhost", "kube_network_info", {"gather": []})["localhost"]
    assert probe["failed"] is False and probe["credential_source"] is None
    monkeypatch.setenv("K8S_AUTH_HOST", api.url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", api.token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(api.certs["ca"]))
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "true")
    before = len(api.requests)
    probe = ansible.module("localhost", "kube_network_info", {"gather": []})["localhost"]
    assert probe["credential_source"] == "host" and len(api.requests) == before  # answered without a request
    result = ansible.module("localhost", "kube_network_info", {"gather": ["nodes"]})["localhost"]
    assert result["credential_source"] == "host"
    theirs = kubectl(api.kubeconfig(), "get", "nodes")["items"]
    assert [n["name"] for n in result["nodes"]] == sorted(n["metadata"]["name"] for n in theirs)
    assert {r["token"] for r in api.requests[before:before + 1]} == {api.token}
    # K8S_AUTH_KUBECONFIG too
    monkeypatch.delenv("K8S_AUTH_HOST")
    monkeypatch.delenv("K8S_AUTH_API_KEY")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(api.kubeconfig()))
    result = ansible.module("localhost", "kube_network_info", {"gather": ["nodes"]})["localhost"]
    assert result["credential_source"] == "kubeconfig" and len(result["nodes"]) == len(theirs)


def test_credentials_info_answers_on_the_controller_as_the_module_does(ansible, api, tmp_path, monkeypatch):
    """kube_credentials_info answers in the controller's process (triage.yml's probe, no module started)
    exactly as kube_network_info with gather: [] does, for every way of giving credentials and every way
    they can be wrong, and sends no request."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    for name in AUTH_ENV.values():
        monkeypatch.delenv(name, raising=False)
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: [}\n")
    cases = {
        "none": {},
        "awx host and token": {"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": api.token,
                               "K8S_AUTH_SSL_CA_CERT": str(api.certs["ca"]), "K8S_AUTH_VERIFY_SSL": "true"},
        "kubeconfig": {"K8S_AUTH_KUBECONFIG": str(api.kubeconfig())},
        "default kubeconfig": {"KUBECONFIG": str(api.kubeconfig())},
        "unknown context": {"K8S_AUTH_KUBECONFIG": str(api.kubeconfig()), "K8S_AUTH_CONTEXT": "other"},
        "not a kubeconfig": {"K8S_AUTH_KUBECONFIG": "/etc/passwd"},
        "broken kubeconfig": {"K8S_AUTH_KUBECONFIG": str(broken)},
        "relative path": {"K8S_AUTH_KUBECONFIG": "kubeconfig"},
        "host not a URL": {"K8S_AUTH_HOST": "ftp://198.18.0.1", "K8S_AUTH_API_KEY": "x"},
    }
    before = len(api.requests)
    outcomes = {}
    for label, env in cases.items():
        with monkeypatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            info = ansible.module("localhost", "kube_credentials_info")["localhost"]
            module = ansible.module("localhost", "kube_network_info", {"gather": []})["localhost"]
        assert info["answered_by"] == "controller", (label, info)
        assert info["failed"] == module["failed"], (label, info, module)
        if module["failed"]:
            assert info["msg"] == module["msg"], label
        else:
            assert info["credential_source"] == module["credential_source"] and info["findings"] == [], label
        outcomes[label] = "failed" if info["failed"] else info["credential_source"]
    assert outcomes == {"none": None, "awx host and token": "host", "kubeconfig": "kubeconfig",
                        "default kubeconfig": "default_kubeconfig", "unknown context": "failed",
                        "not a kubeconfig": "failed", "broken kubeconfig": "failed", "relative path": "failed",
                        "host not a URL": "failed"}
    assert len(api.requests) == before  # answered without a request


def test_credentials_info_leaves_other_cases_to_the_module(ansible, api, tmp_path, monkeypatch):
    """An option given (module_defaults alike) or another Python for localhost: the module answers, and
    the result is that module's (here the other Python has no kubernetes client: said, not a green)."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    info = ansible.module("localhost", "kube_credentials_info", {"kubeconfig": str(api.kubeconfig())})["localhost"]
    assert info["answered_by"] == "module: options given (kubeconfig)" and info["credential_source"] == "kubeconfig"
    playbook = tmp_path / "other_python.yml"
    playbook.write_text(OTHER_PYTHON_PLAY)
    run = ansible.playbook(playbook)
    info, module = run.result("Probe", "localhost"), run.result("Module", "localhost")
    assert info["answered_by"].startswith("module: localhost's Python (/usr/bin/python3) is not the controller's"), info
    assert info.get("failed", False) == module.get("failed", False) and info.get("msg") == module.get("msg")
    assert info.get("credential_source") == module.get("credential_source")


OTHER_PYTHON_PLAY = """---
- name: The probe with another Python for localhost
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: /usr/bin/python3
  environment:
    K8S_AUTH_HOST: https://198.18.0.1:6443
    K8S_AUTH_API_KEY: x
  tasks:
    - name: Probe
      k8snet.triage.kube_credentials_info:
      ignore_errors: true
    - name: Module
      k8snet.triage.kube_network_info:
        gather: []
      ignore_errors: true
"""


def test_in_cluster_service_account(api, lab, tmp_path):
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(api.token)
    (directory / "ca.crt").write_bytes(api.certs["ca"].read_bytes())
    host, port = api.url[len("https://"):].rsplit(":", 1)
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "KUBECONFIG": "/nonexistent"}
    before = len(api.requests)
    kube = Kube({}, environ=environ, service_account_dir=str(directory))
    assert kube.credential_source == "in_cluster" and kube.server == api.url
    assert len(kube.nodes()) == len(lab.nodes) and api.requests[before]["token"] == api.token


# ------------------------------------------------------------------ module_defaults
# kubernetes.core 5.4.1's own action groups (meta/runtime.yml), for a minimal copy of that collection:
# enough for Ansible to resolve group/kubernetes.core.k8s.
KUBERNETES_CORE_RUNTIME = """---
requires_ansible: '>=2.15.0'
action_groups:
  helm: [helm, helm_info, helm_repository]
  k8s: [k8s, k8s_exec, k8s_info, k8s_log, k8s_scale, k8s_service, k8s_cp, k8s_drain]
"""

MODULE_DEFAULTS_PLAY = """---
- name: API options set once for every API module of the collection
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/k8snet.triage.kube:
      kubeconfig: "{{ kc }}"
  tasks:
    - name: Facts
      k8snet.triage.kube_network_info:
        gather: [nodes]
    - name: Facts by the deprecated name
      k8snet.triage.kube_network_facts:
        gather: [nodes]
    - name: LB health
      k8snet.triage.lb_health:
        probe: false
    - name: F5
      k8snet.triage.f5_configmap_audit:
    - name: Node status
      k8snet.triage.node_network_status:
        cni_namespaces: [kube-system]

- name: kubernetes.core's group does not reach our modules
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ kc }}"
  tasks:
    - name: Facts through kubernetes.core's group
      k8snet.triage.kube_network_info:
        gather: [nodes]
      ignore_errors: true
      register: other
"""


def test_deprecated_name_is_redirected_with_a_warning():
    """kube_network_facts (the name before 0.2.0) resolves to kube_network_info and says it is deprecated."""
    from tests.integration.conftest import BIN, ROOT

    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_DEPRECATION_WARNINGS="1", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(BIN / "ansible-doc"), "k8snet.triage.kube_network_facts"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "MODULE k8snet.triage.kube_network_info " in proc.stdout
    warning = " ".join(proc.stderr.split())
    assert "k8snet.triage.kube_network_facts has been deprecated" in warning
    assert "removed from collection 'k8snet.triage' version 1.0.0" in warning


def test_module_defaults_group(ansible, api, tmp_path, monkeypatch):
    from tests.integration.conftest import ROOT

    core = tmp_path / "collections" / "ansible_collections" / "kubernetes" / "core" / "meta"
    core.mkdir(parents=True)
    (core / "runtime.yml").write_text(KUBERNETES_CORE_RUNTIME)
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", "%s:%s" % (ROOT / "build", tmp_path / "collections"))
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    playbook = tmp_path / "defaults.yml"
    playbook.write_text(MODULE_DEFAULTS_PLAY)
    before = len(api.requests)
    run = ansible.playbook(playbook, extra_vars={"kc": str(api.kubeconfig())})
    assert run.rc == 0, run
    facts = run.result("Facts", "localhost")
    assert facts["credential_source"] == "kubeconfig" and len(facts["nodes"]) == 3
    # the old name is redirected to kube_network_info, warns, and is still in the group
    old = run.results(task="Facts by the deprecated name", host="localhost")[0]
    assert old["action"] == "k8snet.triage.kube_network_facts"
    assert old["result"]["credential_source"] == "kubeconfig" and old["result"]["nodes"] == facts["nodes"]
    for task in ("LB health", "F5", "Node status"):
        assert run.results(task=task, host="localhost")[0]["status"] == "ok", task
    # every module's reads reached the stand-in with the kubeconfig's token
    sent = api.requests[before:]
    assert {r["token"] for r in sent} == {api.token}
    paths = {r["path"] for r in sent}
    assert {"/api/v1/nodes", "/api/v1/services", "/api/v1/configmaps", "/api/v1/namespaces/kube-system/pods"} <= paths
    other = run.result("Facts through kubernetes.core's group", "localhost")
    assert other["msg"].startswith("no Kubernetes API to talk to")
