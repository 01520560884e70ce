"""The Kubernetes access layer against the real API server (tests/lab/cluster.py, the stand-in's cluster.yaml and
cni.yaml loaded through it by tests/lab/cluster_objects.py): paging and selectors (read back from the API server's
audit log), kubectl's agreement, and clear errors through a real module run: a token the server refuses (401), RBAC
forbidden (the real 403 of a ServiceAccount whose ClusterRole lacks the verb), TLS without the CA, the API down (a lab
address where nothing listens), a bad kubeconfig or context; host/api_key beside a kubeconfig, path escaping, AWX's
K8S_AUTH_* environment, kube_credentials_info, and a pod's ServiceAccount (a real token and the cluster's CA mounted
where the module looks, in a mount namespace of the module's run).

Nothing here stays on the stand-in. Independent reader: kubectl built from the same release, and the audit log."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.kube.auth import AUTH_ENV, SERVICE_ACCOUNT_DIR
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import Kube, resource_path

from tests.lab.cluster_objects import RealApi

NODES_ONLY = "k8snet-lab-nodes-only"  # a ClusterRole that reads nodes and nothing else


@pytest.fixture(scope="module")
def api(kube_cluster):
    return RealApi(kube_cluster, "cluster.yaml", "cni.yaml")


@pytest.fixture(scope="module")
def no_pods(kube_cluster, api):
    """A ServiceAccount whose ClusterRole lists nodes but not pods: the API server's own 403."""
    kube_cluster.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": NODES_ONLY},
                         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]},
                        "/apis/rbac.authorization.k8s.io/v1/clusterroles")
    return RealApi(kube_cluster, user="no-pods", role=NODES_ONLY)


def dead_url(kube_cluster):
    """A lab address where nothing listens: the API server's own address, another port (refused at once)."""
    return "https://%s:6444" % kube_cluster.ip


def kubectl(kube_cluster, *args):
    return kube_cluster.kubectl_json(*args)


def test_nodes_carry_lab_addresses_and_match_kubectl(lab, api, kube_cluster):
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    ours = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in kube.nodes()}
    theirs = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"]
              for n in kubectl(kube_cluster, "get", "nodes")["items"]}
    assert ours == theirs == {n.name: n.ip for n in lab.nodes}


def test_lists_are_paged_and_selectors_sent(api, kube_cluster):
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    before = len(api.requests)
    assert len(kube.list("nodes", page_size=2)) == 3
    pages = api.requests[before:]
    assert [(r["path"], r["query"].get("limit"), r["query"].get("continue") is not None, r["code"])
            for r in pages] == [("/api/v1/nodes", "2", False, 200), ("/api/v1/nodes", "2", True, 200)], pages
    pods = kube.pods("kube-system", label_selector="k8s-app=calico-node", node="node2")
    assert [p["metadata"]["name"] for p in pods] == ["calico-node-m4q8z"]
    sent = api.requests[-1]
    assert sent["path"] == "/api/v1/namespaces/kube-system/pods", sent
    assert sent["query"]["fieldSelector"] == "spec.nodeName=node2", sent
    assert sent["query"]["labelSelector"] == "k8s-app=calico-node", sent
    theirs = kubectl(kube_cluster, "get", "pods", "-n", "kube-system", "--field-selector", "spec.nodeName=node2",
                     "-l", "k8s-app=calico-node")
    assert [p["metadata"]["name"] for p in theirs["items"]] == ["calico-node-m4q8z"]


def test_explicit_host_token_and_ca(api, kube_cluster):
    before = len(api.requests)
    kube = Kube({"host": api.url, "api_key": api.token, "ca_cert": str(kube_cluster.ca_file)})
    assert kube.version()["gitVersion"] == kubectl(kube_cluster, "version")["serverVersion"]["gitVersion"]
    assert [(r["path"], r["code"]) for r in api.requests[before:]] == [("/version", 200)]


def _fails(ansible, args):
    result = ansible.module("localhost", "node_network_status", args)["localhost"]
    assert "findings" not in result and result.get("msg"), result  # the record holds status "failed"
    assert "Traceback" not in result.get("module_stderr", "") + result.get("exception", "")
    return result["msg"]


def test_token_refused(ansible, api):
    before = len(_audit(api))
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig(api.workdir / "kc-wrong", token="wrong-token"))})
    assert "refused our credentials (401 Unauthorized) to list nodes" in msg and api.url in msg
    # the API server refused it itself: its audit log has the 401, of no user
    refused = [r for r in _audit(api)[before:] if r["path"] == "/api/v1/nodes"]
    assert refused and {r["code"] for r in refused} == {401}, refused


def _audit(api):
    from tests.lab.cluster_objects import audit_requests

    return audit_requests(api.cluster)


def test_rbac_forbidden_names_verb_and_resource(ansible, no_pods):
    msg = _fails(ansible, {"kubeconfig": str(no_pods.kubeconfig())})
    assert msg.startswith("RBAC forbids us to list pods in namespace kube-system on %s (403 Forbidden)"
                          % no_pods.url), msg
    # the API server's own words
    assert ('pods is forbidden: User "%s" cannot list resource "pods" in API group "" in the namespace "kube-system"'
            % no_pods.username) in msg, msg
    sent = no_pods.requests
    assert [(r["path"], r["code"]) for r in sent if r["code"] == 403] == \
        [("/api/v1/namespaces/kube-system/pods", 403)], sent
    assert ("/api/v1/nodes", 200) in [(r["path"], r["code"]) for r in sent], sent


def test_tls_without_the_ca(ansible, api):
    before = len(api.requests)
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig(api.workdir / "kc-noca", ca=False))})
    assert "TLS to the Kubernetes API at %s failed to list nodes" % api.url in msg and "ca_cert" in msg
    assert "CERTIFICATE_VERIFY_FAILED" in msg, msg
    assert len(api.requests) == before  # refused in the handshake: no request reached the server


def test_api_down(ansible, api, kube_cluster, tmp_path):
    url = dead_url(kube_cluster)
    kubeconfig = api.kubeconfig(tmp_path / "kc-down")
    kubeconfig.write_text(kubeconfig.read_text().replace(api.url, url))
    msg = _fails(ansible, {"kubeconfig": str(kubeconfig)})
    assert msg.startswith("cannot reach the Kubernetes API at %s to list nodes" % url), msg
    assert "Connection refused" in msg


def test_bad_kubeconfig_and_context(ansible, api):
    assert "kubeconfig /nonexistent/kc does not exist" in _fails(ansible, {"kubeconfig": "/nonexistent/kc"})
    msg = _fails(ansible, {"kubeconfig": str(api.kubeconfig()), "context": "other"})
    assert "cannot load the Kubernetes client configuration" in msg and "context other" in msg


# ------------------------------------------------------------------ overrides, names, credentials
def test_host_and_api_key_beside_a_kubeconfig_are_honoured(lab, api, kube_cluster, tmp_path):
    """Regression: host/api_key beside a kubeconfig were ignored (the client's refresh hook put the
    kubeconfig's server and token back before each request) while results named the override."""
    kc = api.kubeconfig(tmp_path / "kc-dead", token="wrong-token")
    kc.write_text(kc.read_text().replace(api.url, dead_url(kube_cluster)))
    before = len(api.requests)
    kube = Kube({"kubeconfig": str(kc), "host": api.url, "api_key": api.token, "ca_cert": str(kube_cluster.ca_file)})
    assert kube.server == api.url and kube.credential_source == "kubeconfig"
    assert [n["metadata"]["name"] for n in kube.nodes()] == [n.name for n in lab.nodes]
    assert kube.version()["gitVersion"].startswith("v1.")
    # both reached the API server as the api_key's ServiceAccount (the audit log's user)
    assert [(r["path"], r["user"], r["code"]) for r in api.requests[before:]] == \
        [("/api/v1/nodes", api.username, 200), ("/version", api.username, 200)]
    # the token alone overrides too (same server as the kubeconfig)
    audited = len(_audit(api))
    kube = Kube({"kubeconfig": str(api.kubeconfig(tmp_path / "kc-wrong", token="wrong-token")), "api_key": api.token})
    assert len(kube.nodes()) == len(lab.nodes)
    assert [(r["path"], r["user"], r["code"]) for r in _audit(api)[audited:]] == \
        [("/api/v1/nodes", api.username, 200)]


def test_path_segments_are_escaped_and_names_checked(ansible, api):
    """Regression: a namespace of ../../x sent a GET to another path."""
    kube = Kube({"kubeconfig": str(api.kubeconfig())})
    before = len(api.requests)
    # below the name check, resource_path quotes the segment: the server sees one escaped segment (the real API
    # server routes no escaped "/" inside a segment: 404, where the stand-in listed an empty namespace)
    with pytest.raises(ReadError) as refused:
        kube.call("list services", resource_path("services", "../../x"))
    assert str(refused.value).startswith("not found: list services on %s (404)" % api.url), refused.value
    sent = api.requests[before:]
    assert [(r["path"], r["parts"], r["code"]) for r in sent] == [
        ("/api/v1/namespaces/..%2F..%2Fx/services", ["api", "v1", "namespaces", "../../x", "services"], 404)], sent
    # the kube layer refuses such names before any request, through a real module run too
    for call in (lambda: kube.services("../../x"), lambda: kube.get("services", "x", "../../x"),
                 lambda: kube.get("services", "../../nodes", "web"), lambda: kube.pods("kube-system", node="a,b=c")):
        with pytest.raises(InputError, match="is not a Kubernetes"):
            call()
    result = ansible.module("localhost", "kube_network_info", {"kubeconfig": str(api.kubeconfig()),
                                                               "dns_namespace": "../../x",
                                                               "gather": ["dns_servers"]})["localhost"]
    # refused by the module's option rules, before the kube layer's own check
    assert result["failed"] and result["msg"].startswith("dns_namespace='../../x' is invalid: a Kubernetes name")
    assert not [r for r in api.requests[before + 1:] if ".." in r["path"]]


def test_kubeconfig_that_is_not_one_is_a_clear_error(ansible):
    """Regression: a kubeconfig pointing at /etc/passwd gave a traceback."""
    for path, message in (("/etc/passwd", "kubeconfig /etc/passwd is not a kubeconfig: expected a YAML mapping"),
                          ("/dev/zero", "kubeconfig /dev/zero is not a regular file"),
                          ("/etc", "kubeconfig /etc is not a regular file")):
        assert _fails(ansible, {"kubeconfig": path}).startswith(message)


def test_awx_environment_alone_reaches_the_api(ansible, api, kube_cluster, monkeypatch):
    """AWX's bearer-token credential injects only K8S_AUTH_HOST / K8S_AUTH_API_KEY (and friends)."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    probe = ansible.module("localhost", "kube_network_info", {"gather": []})["localhost"]
    assert probe["failed"] is False and probe["credential_source"] is None
    monkeypatch.setenv("K8S_AUTH_HOST", api.url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", api.token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(kube_cluster.ca_file))
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "true")
    before = len(api.requests)
    probe = ansible.module("localhost", "kube_network_info", {"gather": []})["localhost"]
    assert probe["credential_source"] == "host" and len(api.requests) == before  # answered without a request
    result = ansible.module("localhost", "kube_network_info", {"gather": ["nodes"]})["localhost"]
    assert result["credential_source"] == "host"
    theirs = kubectl(kube_cluster, "get", "nodes")["items"]
    assert [n["name"] for n in result["nodes"]] == sorted(n["metadata"]["name"] for n in theirs)
    sent = api.requests[before:]
    assert sent and sent[0]["path"] == "/api/v1/nodes" and {r["code"] for r in sent} == {200}, sent
    # K8S_AUTH_KUBECONFIG too
    monkeypatch.delenv("K8S_AUTH_HOST")
    monkeypatch.delenv("K8S_AUTH_API_KEY")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(api.kubeconfig()))
    before = len(api.requests)
    result = ansible.module("localhost", "kube_network_info", {"gather": ["nodes"]})["localhost"]
    assert result["credential_source"] == "kubeconfig" and len(result["nodes"]) == len(theirs)
    assert api.requests[before]["path"] == "/api/v1/nodes"


def test_credentials_info_answers_on_the_controller_as_the_module_does(ansible, api, kube_cluster, tmp_path,
                                                                       monkeypatch):
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
                               "K8S_AUTH_SSL_CA_CERT": str(kube_cluster.ca_file), "K8S_AUTH_VERIFY_SSL": "true"},
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


def test_in_cluster_service_account(ansible, api, kube_cluster, lab, tmp_path, monkeypatch):
    """A pod's ServiceAccount: the module run sees a real ServiceAccount token and the cluster's CA where a pod has
    them mounted (SERVICE_ACCOUNT_DIR, a tmpfs over /run in a mount namespace of the run alone), and the
    KUBERNETES_SERVICE_HOST/_PORT a pod's environment carries; no kubeconfig."""
    source = tmp_path / "serviceaccount"
    source.mkdir()
    (source / "token").write_text(api.token)
    (source / "ca.crt").write_bytes(kube_cluster.ca_file.read_bytes())
    (source / "namespace").write_text("k8snet-lab")
    mounted = os.path.realpath(SERVICE_ACCOUNT_DIR)
    assert mounted.startswith("/run/") and not os.path.exists(SERVICE_ACCOUNT_DIR)  # the machine's own: untouched
    host, port = api.url[len("https://"):].rsplit(":", 1)
    script = 'mount -t tmpfs k8snet-sa /run && mkdir -p "$1" && cp -a "$2"/. "$1" && shift 2 && exec "$@"'
    from tests.integration.conftest import BIN

    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", mounted, str(source),
            str(BIN / "ansible"), "localhost", "-i", str(lab.inventory_path), "-m", "k8snet.triage.kube_network_info",
            "-a", '{"gather": ["nodes"]}']
    before = len(api.requests)
    env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "KUBECONFIG": "/nonexistent"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    run = ansible._run(argv)  # pylint: disable=protected-access
    [record] = run.records
    result = record["result"]
    assert record["status"] == "ok" and result["credential_source"] == "in_cluster", (result, run.stderr[-2000:])
    assert [n["name"] for n in result["nodes"]] == sorted(n.name for n in lab.nodes)
    sent = api.requests[before:]
    assert sent and sent[0]["path"] == "/api/v1/nodes" and {r["code"] for r in sent} == {200}, sent
    assert not os.path.exists(SERVICE_ACCOUNT_DIR)
    # the kube layer alone, given the directory
    before = len(api.requests)
    kube = Kube({}, environ=dict(env), service_account_dir=str(source))
    assert kube.credential_source == "in_cluster" and kube.server == api.url
    assert len(kube.nodes()) == len(lab.nodes) and api.requests[before]["path"] == "/api/v1/nodes"


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

    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_DEPRECATION_WARNINGS="1",
               ANSIBLE_NOCOLOR="1")
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
    # every module's reads reached the API server as the kubeconfig's ServiceAccount (api.requests: its alone)
    sent = api.requests[before:]
    assert sent and {r["code"] for r in sent} == {200}, sent
    paths = {r["path"] for r in sent}
    assert {"/api/v1/nodes", "/api/v1/services", "/api/v1/configmaps", "/api/v1/namespaces/kube-system/pods"} <= paths
    other = run.result("Facts through kubernetes.core's group", "localhost")
    assert other["msg"].startswith("no Kubernetes API to talk to")
