"""kube_client.Kube against a hostile API server on loopback (tests/kube_api/hostile.py): every call ends within its
deadline, big answers are refused early, paging cannot loop, malformed objects are named, 429 is retried."""

from __future__ import annotations

import time

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError

from tests.kube_api import FIXTURES, load_yaml
from tests.kube_api.hostile import Hostile

OBJECTS = load_yaml([FIXTURES / "cluster.yaml", FIXTURES / "cni.yaml", FIXTURES / "service_path.yaml"])


@pytest.fixture
def hostile(tmp_path):
    servers = []

    def start(mode, **kwargs):
        server = Hostile(OBJECTS, tmp_path / mode, "127.0.0.1", mode, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _client(server, seconds=None):
    params = {"kubeconfig": str(server.kubeconfig())}
    if seconds is not None:
        params["api_timeout"] = seconds
    return kube_client.Kube(params)


def _fails(call, cause):
    started = time.monotonic()
    with pytest.raises(ReadError) as info:
        call()
    assert info.value.details.get("cause") == cause, info.value
    return str(info.value), time.monotonic() - started


@pytest.mark.parametrize("mode", ["hang", "trickle", "trickle_headers"])
def test_a_hung_or_trickling_api_ends_at_the_module_deadline(hostile, mode):
    server = hostile(mode)
    client = _client(server, 1.5)
    msg, took = _fails(client.nodes, "deadline")
    assert 1.4 <= took <= 1.5 * 1.1, took
    assert "did not answer list nodes within 1.5 s (the module's api_timeout" in msg and server.url in msg
    time.sleep(0.2)  # the server sees the connection closed
    assert 1.3 <= server.requests[0]["held"] <= 1.5 * 1.1
    # the budget is spent: the next call fails at once, naming it
    msg, took = _fails(client.nodes, "deadline")
    assert took < 0.1 and "(api_timeout 1.5 s) is spent" in msg


def test_one_call_has_its_own_deadline_inside_the_budget(hostile, monkeypatch):
    monkeypatch.setattr(kube_client.Kube, "CALL_TIMEOUT", 1.0)
    client = _client(hostile("trickle"), 10)
    msg, took = _fails(lambda: client.get("services", "web", "default"), "deadline")
    assert took <= 1.1 and "within 1 s (the deadline of one call" in msg


def test_an_endless_continue_stops_at_the_page_cap(hostile, monkeypatch):
    monkeypatch.setattr(kube_client.Kube, "MAX_PAGES", 200)  # the cap's own value (1000) would take a while here
    server = hostile("continue")
    msg, took = _fails(_client(server).nodes, "pages")
    assert "more than 200 pages of 500 for list nodes" in msg and "narrow the query" in msg
    assert len(server.requests) == 200


def test_a_repeated_continue_token_is_named(hostile):
    server = hostile("continue_same")
    msg, took = _fails(lambda: _client(server).custom_objects("metallb.io", "v1beta1", "servicel2statuses"),
                       "continue_loop")
    assert "the continue token 'same-token' a second time (page 2)" in msg and len(server.requests) == 2


def test_a_huge_list_is_refused_early_without_reading_it(hostile):
    server = hostile("huge")
    msg, took = _fails(_client(server).nodes, "too_large")
    assert "answered list nodes with more than 64 MiB" in msg and "narrow the query" in msg
    time.sleep(0.2)  # the server notices the closed connection
    assert max(server.huge_sent) < 100 * 1024 * 1024  # of 400 MB
    assert took < 15


@pytest.mark.parametrize("mode, message", [
    ("items_empty", "answered list nodes with a malformed object: page 1: item 0 has no metadata (absent)"),
    ("spec_null", "answered list nodes with a malformed object: page 1: item 0 (node1) has spec: null"),
    ("top_list", "answered list nodes with a malformed object: page 1: the answer is a JSON array"),
    ("name_null", "answered list nodes with a malformed object: page 1: item 0 has no metadata.name (got null)"),
])
def test_malformed_lists_are_named(hostile, mode, message):
    msg, took = _fails(_client(hostile(mode)).nodes, "malformed")
    assert message in msg


def test_malformed_object_of_a_get_is_named(hostile):
    msg, took = _fails(lambda: _client(hostile("top_list")).get("services", "web", "default"), "malformed")
    assert "answered get services default/web with a malformed object: the object is a JSON array" in msg


def test_429_with_retry_after_is_retried(hostile):
    server = hostile("429")
    started = time.monotonic()
    assert len(_client(server).nodes()) == 3
    assert 1.0 <= time.monotonic() - started < 2.0 and len(server.requests) == 2


def test_429_beyond_the_deadline_is_an_error_naming_the_retries(hostile):
    server = hostile("429", throttled=100)
    started = time.monotonic()
    with pytest.raises(ReadError) as info:
        _client(server, 2.5).nodes()
    took = time.monotonic() - started
    assert "too many requests (429)" in str(info.value) and "retried 2 times, the next retry (in 1 s" in str(info.value)
    assert took <= 2.5 * 1.1 and len(server.requests) == 3


def test_a_throttled_patch_is_retried(hostile):
    server = hostile("429")
    got = _client(server).merge_patch("services", "web", "default", {"metadata": {"labels": {"a": "b"}}})
    assert got["metadata"]["labels"]["a"] == "b"
    assert [r["method"] for r in server.requests] == ["PATCH", "PATCH"]


def test_an_optional_read_degrades_to_a_warning(hostile):
    client = _client(hostile("events403"))
    events, found = kube_client.optional_read(lambda: client.events("default"), "the events of namespace default",
                                              "default")
    assert events is None and found["check"] == "kube.read_skipped" and found["severity"] == "warning"
    assert found["evidence"]["status"] == 403 and "RBAC forbids us to list events" in found["summary"]
    with pytest.raises(PrivilegeError):
        client.events("default")  # a required read lets the error go
    assert len(client.nodes()) == 3


def test_a_reset_read_is_retried(hostile):
    server = hostile("reset")
    assert len(_client(server).nodes()) == 3
    assert [r.get("reset", False) for r in server.requests] == [True, False]


def test_a_reset_patch_is_not_retried(hostile):
    """The connection broke after the request was sent: the patch may have been applied, it is not sent again."""
    server = hostile("reset")
    with pytest.raises(ReadError) as info:
        _client(server).merge_patch("services", "web", "default", {"metadata": {"labels": {"a": "b"}}})
    assert "cannot reach the Kubernetes API" in str(info.value) and "patch services default/web" in str(info.value)
    assert [r["method"] for r in server.requests] == ["PATCH"]


def test_a_tls_eof_is_a_broken_connection_not_a_certificate_problem():
    """A server that drops the connection mid-TLS surfaces as ssl.SSLEOFError inside urllib3's SSLError and
    MaxRetryError: a reset (not retried for a patch), not 'check ca_cert'."""
    import ssl

    import urllib3

    eof = ssl.SSLEOFError(8, "EOF occurred in violation of protocol (_ssl.c:2427)")
    wrapped = urllib3.exceptions.MaxRetryError(None, "/api/v1/services", urllib3.exceptions.SSLError(eof))
    assert kube_client._tls_eof(wrapped)  # pylint: disable=protected-access
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed: unable to get local issuer certificate")
    assert not kube_client._tls_eof(urllib3.exceptions.MaxRetryError(  # pylint: disable=protected-access
        None, "/api/v1/services", urllib3.exceptions.SSLError(verify)))


def test_a_silent_api_is_said_with_the_server_the_request_and_the_deadline(hostile):
    """What the triage reads to find the API server silent (filter api_down): the error's details."""
    server = hostile("hang")
    with pytest.raises(ReadError) as info:
        _client(server, 1.5).nodes()
    details = info.value.details
    assert (details["cause"], details["server"], details["action"], details["deadline"]) == (
        "deadline", server.url, "list nodes", 1.5)
