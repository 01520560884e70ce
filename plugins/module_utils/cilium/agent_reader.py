# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Cilium agent's view, the readers: a bounded HTTP client over a unix socket (the agent's and cilium-health's REST
APIs) and over TCP (the Prometheus metrics), and the Prometheus text parser (pure).
"""

from __future__ import annotations

import errno
import http.client as http_client
import json
import os
import re
import socket
import stat

from ansible_collections.k8snet.triage.plugins.module_utils.core import sockets
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.agent_options import split_url
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError

HEALTHZ_PATH = "/v1/healthz"
ENDPOINTS_PATH = "/v1/endpoint"
HEALTH_STATUS_PATH = "/v1beta/status"
MAX_JSON_BYTES = 8 * 1024 * 1024
MAX_METRICS_BYTES = 32 * 1024 * 1024

DROP_METRIC = "cilium_drop_count_total"
LIMITER_METRIC = "cilium_api_limiter_processed_requests_total"
LIMITER_RATE = "cilium_api_limiter_rate_limit"
LIMITER_IN_FLIGHT = "cilium_api_limiter_requests_in_flight"
METRICS_READ = (DROP_METRIC, LIMITER_METRIC, LIMITER_RATE, LIMITER_IN_FLIGHT)


# ------------------------------------------------------------------ the HTTP client over a unix socket


class Unreachable(ReadError):
    """A socket or URL that does not answer: ``reason`` is absent, not a socket, refused, timeout, http, invalid."""

    def __init__(self, message, reason, **details):
        super().__init__(message, reason=reason, **details)
        self.reason = reason


def unix_connect(path):
    """How get_json reaches a unix socket: ``connect(timeout)`` -> a connected sockets.BoundedSocket."""
    return lambda timeout: sockets.unix_socket(path, timeout)


def http_get(connect, path, what, timeout, max_bytes):
    """``GET path`` on the socket ``connect(timeout)`` gives -> the body (bytes) of a 200 answer; Unreachable otherwise.

    One deadline, ``timeout`` seconds, covers the connection, the status line, the headers and the body."""
    try:
        status, reason, body = sockets.http_get(connect(timeout), path, max_bytes)
    except socket.timeout:
        raise Unreachable("%s: no complete answer within the %gs deadline (from connect to the last byte)"
                          % (what, timeout), "timeout", deadline=timeout)
    except sockets.TooLarge as exc:
        raise Unreachable("%s: %s; refusing to read more" % (what, exc), "invalid")
    except PermissionError:
        raise PrivilegeError("%s: permission denied; run as root (become: true)" % what)
    except (ConnectionRefusedError, FileNotFoundError) as exc:
        raise Unreachable("%s: %s (nothing listens)" % (what, exc.strerror or exc), "refused")
    except (OSError, http_client.HTTPException) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            raise Unreachable("%s: %s (nothing listens)" % (what, exc.strerror or exc), "refused")
        raise Unreachable("%s: %s" % (what, exc.__class__.__name__ + (": %s" % exc if str(exc) else "")), "refused")
    if status != 200:
        text = body[:200].decode("utf-8", "replace").strip()
        raise Unreachable("%s: HTTP %d %s%s" % (what, status, reason, (": " + text) if text else ""),
                          "http", status=status)
    return body


def socket_state(path):
    """``ok`` | ``absent`` | ``not a socket`` for a unix socket path (PermissionError: PrivilegeError)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "absent"
    except PermissionError:
        raise PrivilegeError("cannot look at %s: permission denied; run as root (become: true)" % path, socket=path)
    return "ok" if stat.S_ISSOCK(mode) else "not a socket"


def get_json(path, url_path, timeout=5.0, max_bytes=MAX_JSON_BYTES, connect=unix_connect, kind=dict):
    """The JSON answer of ``GET url_path`` on the unix socket ``path`` (an object, or a ``kind`` such as list)."""
    what = "GET %s on %s" % (url_path, path)
    state = socket_state(path)
    if state != "ok":
        raise Unreachable("%s: the socket is %s" % (what, state), state)
    body = http_get(connect(path), url_path, what, timeout, max_bytes)
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError as exc:
        raise Unreachable("%s: the answer is not JSON (%s)" % (what, exc), "invalid")
    if not isinstance(data, kind):
        raise Unreachable("%s: the answer is a JSON %s, not %s" % (
            what, type(data).__name__, "an object" if kind is dict else "a " + kind.__name__), "invalid")
    return data


def get_metrics(url, timeout=5.0, max_bytes=MAX_METRICS_BYTES, names=METRICS_READ):
    """The samples of ``names`` in the Prometheus text answer of ``url``."""
    host, port, path = split_url(url)
    body = http_get(lambda seconds: sockets.tcp_socket(host, port, seconds), path, "GET %s" % url, timeout, max_bytes)
    return parse_metrics(body.decode("utf-8", "replace"), names)


# ------------------------------------------------------------------ the Prometheus text parser (pure)

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?[0-9]+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _labels(text):
    out, pos = {}, 0
    text = text.strip()
    while pos < len(text):
        match = _LABEL.match(text, pos)
        if not match:
            return None
        out[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], match.group(2))
        pos = match.end()
    return out


def _value(text):
    lowered = text.lower()
    if lowered in ("nan", "+inf", "inf", "-inf"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_metrics(text, names=None):
    """Prometheus text exposition -> [(name, {label: value}, float)] (pure).

    Comments (``# HELP``/``# TYPE``) and blank lines are skipped, as are samples whose labels or
    value cannot be read and NaN/Inf values; ``names`` (a collection) keeps only those metrics."""
    wanted = set(names) if names is not None else None
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match or (wanted is not None and match.group(1) not in wanted):
            continue
        labels = _labels(match.group(3) or "")
        value = _value(match.group(4))
        if labels is None or value is None:
            continue
        out.append((match.group(1), labels, value))
    return out


def sum_by(samples, name, keys, where=None):
    """{(label values of ``keys``): sum} of metric ``name`` (``where``: {label: value} to keep) (pure)."""
    out = {}
    for metric, labels, value in samples:
        if metric != name or any(labels.get(k) != v for k, v in (where or {}).items()):
            continue
        key = tuple(labels.get(k, "") for k in keys)
        out[key] = out.get(key, 0.0) + value
    return out


def growth(before, after):
    """{key: after - before} of counters (a counter that went down was reset: its growth is its new value)."""
    out = {}
    for key, value in after.items():
        old = before.get(key, 0.0)
        out[key] = value - old if value >= old else value
    return out
