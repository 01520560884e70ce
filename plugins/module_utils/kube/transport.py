# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounds of every Kubernetes API request (used by kube_client.Kube): deadlines, byte caps, retries, shapes.

The official client's ``_request_timeout`` bounds each socket operation only: a server that trickles one
byte every 2 s, or an endless ``continue`` token, never ends.  Here:

* ``Deadline``: one monotonic end time per call (connect, TLS, headers, body and every retry together),
  also shared by all pages of a list.  In the main thread ``alarm(deadline)`` arms SIGALRM for what the
  socket timeouts cannot bound (a header trickle); the body loop checks the clock between chunks too.
* ``BoundedPool``: stands in for the client's urllib3 pool manager.  Every response it returns reads its
  body as a stream in chunks (``read_body``), refusing a Content-Length above the cap before reading and
  stopping at the cap otherwise (``TooLarge``), and stopping at the deadline (``Expired``), error bodies
  as well.
* ``retry_delay``: whether and how long to wait before retrying (429, 5xx, connection resets), honouring
  ``Retry-After``; a PATCH is retried only when the server said it did not process it (429, or 503 with
  ``Retry-After``: the API server's priority-and-fairness and max-in-flight rejections answer before any
  handler runs).
* ``check_list`` / ``check_object``: a JSON answer that is not the object expected is refused naming
  it (a ``spec`` or ``status`` of null too); the null maps and lists a real API server may send are read as
  empty (``NULL_SECTIONS``, ``NULL_LIST_SECTIONS``) so domain code does not crash on them.

Pure apart from the clock and the signal; no import of the client (tests use it without one).
"""

from __future__ import annotations

import email.utils
import signal
import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.deadline import Deadline as _Deadline

# seconds one call may take in all (connect, headers, body, retries; all pages of a list)
CALL_TIMEOUT = 30.0
# seconds one module run may spend on the API of one cluster (the api_timeout option's default)
API_TIMEOUT = 120.0
CONNECT_TIMEOUT = 5.0
# bytes of one response (a page of a list, an object, a log), and of all the pages of one list
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# all the pages of one list are read a page at a time (what a check keeps of each item stays: Kube.pages' keep):
# these bound an endless list, not memory; 150,000 pods with their status are about 1 GiB of JSON in 300 pages
# (150,000 pods is Kubernetes' own scalability limit for a cluster: 1,000 pages of 500 is over three times that)
MAX_LIST_BYTES = 4 * 1024 * 1024 * 1024
MAX_PAGES = 1000
CHUNK = 64 * 1024
# retries: attempts in all, first backoff, its cap (seconds)
ATTEMPTS = 5
BACKOFF = 0.5
MAX_BACKOFF = 8.0
RETRY_STATUSES = (429, 500, 502, 503, 504)

# Null sections.  The API server never sends ``spec: null`` or ``status: null`` (Go structs: at least {}): such an
# object went through something that broke it, and reading it as empty would give false findings (a Service of
# type ClusterIP, a node without pods), so it is refused naming it.  Maps that mean the same when null and absent
# are read as {}; lists the API server itself sends as null when empty (EndpointSlice ``endpoints`` and ``ports``
# have no omitempty in k8s.io/api discovery/v1 types.go) are read as [].
REFUSED_NULL = ("spec", "status")
NULL_SECTIONS = ("data", "binaryData")
NULL_LIST_SECTIONS = ("webhooks", "endpoints", "ports", "subsets")
NULL_META = ("labels", "annotations")


class Abort(BaseException):
    """A bound was hit.  BaseException: the client swallows ``Exception`` while reading error bodies."""


class Expired(Abort):
    def __init__(self, phase="answer"):
        super(Expired, self).__init__(phase)
        self.phase = phase


class TooLarge(Abort):
    def __init__(self, size, declared):
        super(TooLarge, self).__init__(size)
        self.size = size
        self.declared = declared


class Deadline(_Deadline):
    """A monotonic end time (``clock`` for tests), with the socket timeouts it leaves."""

    def timeouts(self, connect=CONNECT_TIMEOUT):
        """(connect, read) socket timeouts for the client, never beyond the deadline."""
        left = max(self.left(), 0.05)
        return (min(connect, left), left)


class alarm(object):
    """``with alarm(deadline):`` raises Expired when the deadline passes (SIGALRM, main thread only;
    elsewhere a no-op: the socket timeouts and the body loop bound the call)."""

    def __init__(self, deadline):
        self.deadline = deadline
        self.armed = False

    def _fire(self, signum, frame):
        raise Expired("answer")

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, max(self.deadline.left(), 0.001))
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def read_body(raw, deadline, max_bytes=MAX_RESPONSE_BYTES, chunk=CHUNK):
    """The body of a urllib3 response, read in chunks; TooLarge beyond ``max_bytes``, Expired past ``deadline``."""
    length = (raw.headers or {}).get("Content-Length")
    try:
        length = int(length) if length is not None else None
    except ValueError:
        length = None
    if length is not None and length > max_bytes:
        raise TooLarge(length, True)
    reader = getattr(raw, "read1", None) or raw.read
    parts, size = [], 0
    while True:
        if deadline.expired():
            raise Expired("body")
        part = reader(chunk)
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > max_bytes:
            raise TooLarge(size, False)
        parts.append(part)


class BoundedResponse(object):
    """A urllib3 response whose ``data`` is read by ``read_body`` (what the client reads, also for errors)."""

    def __init__(self, raw, deadline, max_bytes):
        self.raw, self.deadline, self.max_bytes = raw, deadline, max_bytes
        self.status, self.reason, self.headers = raw.status, raw.reason, raw.headers
        self._data = None

    @property
    def data(self):
        if self._data is None:
            try:
                self._data = read_body(self.raw, self.deadline, self.max_bytes)
            finally:
                if self._data is None:
                    self.close()
                else:
                    self.raw.release_conn()
        return self._data

    def read(self, *args, **kwargs):
        return self.data

    def getheaders(self):
        return self.headers

    def getheader(self, name, default=None):
        return self.headers.get(name, default)

    def close(self):
        try:
            self.raw.close()
        except Exception:  # pylint: disable=broad-except
            pass

    def release_conn(self):
        self.raw.release_conn()


class BoundedPool(object):
    """Wraps the client's pool manager: responses come back unread and bounded (``limits`` per call)."""

    def __init__(self, pool):
        self._pool = pool
        self.deadline = None
        self.max_bytes = MAX_RESPONSE_BYTES

    def request(self, method, url, *args, **kwargs):
        kwargs["preload_content"] = False
        raw = self._pool.request(method, url, *args, **kwargs)
        return BoundedResponse(raw, self.deadline or Deadline(CALL_TIMEOUT), self.max_bytes)

    def __getattr__(self, name):
        return getattr(self._pool, name)


# ------------------------------------------------------------------ retries
def retry_after(value, now=None):
    """Seconds of a Retry-After header (delta-seconds or an HTTP date), or None."""
    if value is None:
        return None
    text = str(value).strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def retry_delay(attempt, status=None, headers=None, reset=False, idempotent=True):
    """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 1), or None for no retry.

    ``status``: the HTTP status answered; ``reset``: the connection broke (reset, closed mid-answer).
    Backoff doubles from BACKOFF up to MAX_BACKOFF; a Retry-After header wins when given.  A request
    that is not idempotent (PATCH) is retried only on 429, or 503 with Retry-After (refused before
    processing); never after a reset, since the change may have been applied."""
    if attempt >= ATTEMPTS:
        return None
    after = retry_after((headers or {}).get("Retry-After")) if headers is not None else None
    if reset:
        if not idempotent:
            return None
    elif status not in RETRY_STATUSES:
        return None
    elif not idempotent and not (status == 429 or (status == 503 and after is not None)):
        return None
    backoff = min(MAX_BACKOFF, BACKOFF * (2 ** (attempt - 1)))
    return after if after is not None else backoff


# ------------------------------------------------------------------ shapes
def _kind(value):
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, dict):
        return "a JSON object"
    return "a %s (%s)" % (type(value).__name__, repr(value)[:40])


def _empty_nulls(container, keys, expected, message, what, name):
    """Each of ``keys`` present in ``container``: null becomes an empty ``expected`` ({} or []); another type than
    ``expected`` is ValueError (``message`` % (what, name, key, its kind))."""
    for key in keys:
        if key not in container:
            continue
        if container[key] is None:
            container[key] = expected()
        elif not isinstance(container[key], expected):
            raise ValueError(message % (what, name, key, _kind(container[key])))


def _check_metadata(obj, what):
    """The name of ``obj`` once its metadata is checked (an object with a name, a string namespace, maps of
    labels and annotations, null ones made empty); else ValueError naming ``what``."""
    metadata = obj.get("metadata")
    if metadata is None:
        raise ValueError("%s has no metadata (%s)" % (what, "null" if "metadata" in obj else "absent"))
    if not isinstance(metadata, dict):
        raise ValueError("%s has metadata that is %s, not an object" % (what, _kind(metadata)))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("%s has no metadata.name (got %s)" % (what, _kind(name) if name != "" else "an empty string"))
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ValueError("%s (%s) has a metadata.namespace that is %s" % (what, name, _kind(namespace)))
    _empty_nulls(metadata, NULL_META, dict, "%s (%s) has metadata.%s that is %s, not a map", what, name)
    return name


def check_object(obj, what):
    """``obj`` if it is a Kubernetes object with a name, its null sections made empty; else ValueError naming ``what``."""
    if not isinstance(obj, dict):
        raise ValueError("%s is %s, not an object" % (what, _kind(obj)))
    name = _check_metadata(obj, what)
    for key in REFUSED_NULL:
        if key in obj and obj[key] is None:
            raise ValueError("%s (%s) has %s: null, which the API server never sends (it sends {} or leaves it out)"
                             % (what, name, key))
    _empty_nulls(obj, REFUSED_NULL + NULL_SECTIONS, dict, "%s (%s) has a %s that is %s, not an object", what, name)
    _empty_nulls(obj, NULL_LIST_SECTIONS, list, "%s (%s) has %s that is %s, not a list", what, name)
    return obj


def check_list(page, what):
    """(items, continue token) of one page of a list; ValueError naming what is wrong (and the item)."""
    if not isinstance(page, dict):
        raise ValueError("the answer is %s where a list object (kind ...List, with items) was expected" % _kind(page))
    items = page.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise ValueError("its items are %s, not a list" % _kind(items))
    for index, item in enumerate(items):
        check_object(item, "item %d" % index)
    metadata = page.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("its metadata is %s, not an object" % _kind(metadata))
    token = (metadata or {}).get("continue")
    if token is not None and not isinstance(token, str):
        raise ValueError("its metadata.continue is %s, not a string" % _kind(token))
    return items, token or None
