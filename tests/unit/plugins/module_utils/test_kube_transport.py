"""The pure bounds of the Kubernetes client (kube_transport): retries, Retry-After, shapes, the body reader."""

from __future__ import annotations

import email.utils

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import transport as t


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Raw(object):
    """A urllib3 response as read_body sees it: headers and read1(); ``tick`` seconds pass per chunk."""

    def __init__(self, chunks, headers=None, clock=None, tick=0.0):
        self.chunks, self.headers, self.clock, self.tick = list(chunks), headers or {}, clock, tick
        self.reads = 0

    def read1(self, amount):
        self.reads += 1
        if self.clock:
            self.clock.now += self.tick
        return self.chunks.pop(0) if self.chunks else b""


# ------------------------------------------------------------------ deadlines
def test_deadline_within_never_extends_and_timeouts_stay_inside():
    clock = Clock()
    outer = t.Deadline(10, clock)
    inner = outer.within(30)
    assert inner.end == outer.end == 110.0
    assert outer.within(2).end == 102.0
    clock.now = 108.0
    assert outer.timeouts() == (2.0, 2.0) and outer.timeouts(connect=1) == (1, 2.0)
    clock.now = 111.0
    assert outer.expired() and outer.timeouts() == (0.05, 0.05)


# ------------------------------------------------------------------ the body reader
def test_body_is_read_whole_within_bounds():
    raw = Raw([b'{"a":', b" 1}"])
    assert t.read_body(raw, t.Deadline(5), max_bytes=100) == b'{"a": 1}'


def test_declared_length_above_the_cap_is_refused_before_reading():
    raw = Raw([b"x" * 10], headers={"Content-Length": str(400 * 1024 * 1024)})
    with pytest.raises(t.TooLarge) as info:
        t.read_body(raw, t.Deadline(5), max_bytes=64 * 1024 * 1024)
    assert info.value.declared and info.value.size == 400 * 1024 * 1024 and raw.reads == 0


def test_undeclared_body_stops_at_the_cap():
    raw = Raw([b"x" * 40] * 100)
    with pytest.raises(t.TooLarge) as info:
        t.read_body(raw, t.Deadline(5), max_bytes=100)
    assert not info.value.declared and info.value.size == 120 and raw.reads == 3


def test_trickled_body_stops_at_the_deadline():
    """One byte every 2 s: the chunks keep coming, the clock decides."""
    clock = Clock()
    raw = Raw([b"x"] * 1000, clock=clock, tick=2.0)
    with pytest.raises(t.Expired) as info:
        t.read_body(raw, t.Deadline(7, clock), max_bytes=10 ** 6)
    assert info.value.phase == "body" and raw.reads == 4


def test_abort_is_not_an_exception_the_client_could_swallow():
    assert not issubclass(t.Expired, Exception) and not issubclass(t.TooLarge, Exception)


# ------------------------------------------------------------------ retries
def test_retry_after_forms():
    assert t.retry_after("3") == 3.0 and t.retry_after(None) is None and t.retry_after("soon") is None
    stamp = email.utils.formatdate(1000.0 + 5, usegmt=True)
    assert t.retry_after(stamp, now=1000.0) == 5.0
    assert t.retry_after(email.utils.formatdate(900.0, usegmt=True), now=1000.0) == 0.0


def test_reads_retry_on_429_5xx_and_resets_with_backoff():
    assert [t.retry_delay(n, 503) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, None]
    assert t.retry_delay(1, 429, {"Retry-After": "2"}) == 2.0
    assert t.retry_delay(1, reset=True) == 0.5
    for status in (400, 401, 403, 404, 409, 410, 422):
        assert t.retry_delay(1, status) is None
    assert t.retry_delay(t.ATTEMPTS, 500) is None


def test_a_patch_is_retried_only_when_refused_before_processing():
    assert t.retry_delay(1, 429, {}, idempotent=False) == 0.5
    assert t.retry_delay(1, 503, {"Retry-After": "1"}, idempotent=False) == 1.0
    assert t.retry_delay(1, 503, {}, idempotent=False) is None
    assert t.retry_delay(1, 500, {"Retry-After": "1"}, idempotent=False) is None
    assert t.retry_delay(1, reset=True, idempotent=False) is None


# ------------------------------------------------------------------ shapes
def _obj(name="a", **extra):
    return dict({"metadata": {"name": name, "namespace": "ns"}}, **extra)


def test_list_page_items_and_token():
    items, token = t.check_list({"items": [_obj()], "metadata": {"continue": "abc"}}, "page 1")
    assert [i["metadata"]["name"] for i in items] == ["a"] and token == "abc"
    assert t.check_list({"items": None, "metadata": {}}, "page 1") == ([], None)


@pytest.mark.parametrize("page, message", [
    ([_obj()], "the answer is a JSON array where a list object"),
    ({"items": {"a": 1}}, "its items are a JSON object, not a list"),
    ({"items": [{}]}, "item 0 has no metadata (absent)"),
    ({"items": [{"metadata": None}]}, "item 0 has no metadata (null)"),
    ({"items": [{"metadata": []}]}, "item 0 has metadata that is a JSON array, not an object"),
    ({"items": [_obj(spec=None)]}, "item 0 (a) has spec: null, which the API server never sends"),
    ({"items": [_obj(status=None)]}, "item 0 (a) has status: null"),
    ({"items": [_obj(), "x"]}, "item 1 is a str ('x'), not an object"),
    ({"items": [{"metadata": {"name": None}}]}, "item 0 has no metadata.name (got null)"),
    ({"items": [{"metadata": {"name": ""}}]}, "item 0 has no metadata.name (got an empty string)"),
    ({"items": [_obj(spec=[1])]}, "item 0 (a) has a spec that is a JSON array, not an object"),
    ({"items": [], "metadata": {"continue": 5}}, "metadata.continue is a int (5), not a string"),
])
def test_malformed_pages_are_named(page, message):
    with pytest.raises(ValueError) as info:
        t.check_list(page, "page 1")
    assert message in str(info.value)


def test_null_maps_and_lists_read_as_empty():
    obj = t.check_object({"metadata": {"name": "web", "labels": None}, "data": None, "endpoints": None,
                          "ports": None, "webhooks": None}, "the object")
    assert obj == {"metadata": {"name": "web", "labels": {}}, "data": {}, "endpoints": [], "ports": [], "webhooks": []}


# ------------------------------------------------------------------ the option
def test_api_timeout_option():
    from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
    assert kube_client.api_timeout({}) == t.API_TIMEOUT == 120.0
    assert kube_client.api_timeout({"api_timeout": "7.5"}) == 7.5
    for bad in (0, 0.5, 3601, "soon", float("inf"), float("nan")):
        with pytest.raises(InputError, match="api_timeout .* is not a number of seconds from 1 to 3600"):
            kube_client.api_timeout({"api_timeout": bad})
