# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube_exec: the exec's URL, the connection's options from the client configuration, and the exit code read
from the Status the kubelet ends an exec with (the shapes of the client's V1Status model)."""

from __future__ import annotations

import ssl
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes.client import Configuration, V1Status

from ansible_collections.k8snet.triage.plugins.module_utils.kube import pod_exec as kube_exec
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

COMMAND = ["timeout", "5", "cilium-dbg", "monitor", "--type", "drop", "-j"]


def test_the_url_carries_each_argument_once_in_order_and_quotes_the_names():
    url = kube_exec.exec_url("https://198.18.0.1:6443/prefix/", "kube-system", "cilium-x2k4p", "cilium-agent",
                             COMMAND + ["a b&c=d"])
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == (
        "wss", "198.18.0.1:6443", "/prefix/api/v1/namespaces/kube-system/pods/cilium-x2k4p/exec")
    query = parse_qsl(parts.query)
    assert [v for k, v in query if k == "command"] == COMMAND + ["a b&c=d"]
    rest = dict((k, v) for k, v in query if k != "command")
    assert rest == {"container": "cilium-agent", "stdout": "true", "stderr": "true"}
    assert kube_exec.exec_url("http://127.0.0.1:8080", "ns", "p", "c", ["true"]).startswith("ws://127.0.0.1:8080/api/")


@pytest.mark.parametrize("namespace, pod, container", [
    ("../kube-system", "p", "c"), ("ns", "p/../../nodes", "c"), ("ns", "p", "c?x=1"), ("NS", "p", "c")])
def test_names_that_are_not_kubernetes_names_never_reach_a_url(namespace, pod, container):
    with pytest.raises(InputError):
        kube_exec.exec_url("https://198.18.0.1:6443", namespace, pod, container, ["true"])


def test_a_server_that_is_not_http_is_refused():
    with pytest.raises(ReadError) as caught:
        kube_exec.exec_url("unix:///run/api.sock", "ns", "p", "c", ["true"])
    assert "not an http(s) URL" in str(caught.value)


def test_connect_options_follow_the_configuration():
    config = Configuration()
    config.host, config.ssl_ca_cert, config.cert_file, config.key_file = "https://h", "/ca.crt", "/c.crt", "/c.key"
    config.proxy, config.no_proxy = "http://198.18.0.9:3128", "198.18.0.1, .svc"
    options = kube_exec.connect_options(config, {"authorization": "Bearer t0k", "Accept": "application/json"})
    assert options["header"] == ["authorization: Bearer t0k"]
    assert options["subprotocols"] == ["v4.channel.k8s.io"]
    assert options["sslopt"] == {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": "/ca.crt", "certfile": "/c.crt",
                                 "keyfile": "/c.key"}
    assert (options["http_proxy_host"], options["http_proxy_port"], options["http_no_proxy"]) == (
        "198.18.0.9", 3128, ["198.18.0.1", ".svc"])
    config.verify_ssl = False
    assert kube_exec.connect_options(config, {})["sslopt"]["cert_reqs"] == ssl.CERT_NONE


@pytest.mark.parametrize("status, expected", [
    ({"metadata": {}, "status": "Success"}, (0, "")),
    ({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
      "message": "command terminated with non-zero exit code: error executing command [timeout 5 cilium-dbg], exit code 124",
      "details": {"causes": [{"reason": "ExitCode", "message": "124"}]}},
     (124, "command terminated with non-zero exit code: error executing command [timeout 5 cilium-dbg], exit code 124")),
    ({"metadata": {}, "status": "Failure", "reason": "InternalError",
      "message": 'OCI runtime exec failed: exec: "timeout": executable file not found in $PATH: unknown'},
     (None, 'OCI runtime exec failed: exec: "timeout": executable file not found in $PATH: unknown')),
    ({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
      "details": {"causes": [{"reason": "ExitCode", "message": "-1"}]}}, (None, "NonZeroExitCode")),
    (None, (None, "")),
    ("not a status", (None, "")),
])
def test_the_exit_code_from_the_status_the_exec_ends_with(status, expected):
    if isinstance(status, dict):
        V1Status.model_validate(status)  # the shapes are the API's
    assert kube_exec.exit_code(status) == expected
