# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A command run in a container through the Kubernetes API's exec, bounded: ``kubectl exec -c C POD -- CMD``.

The API server upgrades ``GET /api/v1/namespaces/NS/pods/NAME/exec?command=...&container=...&stdout=true&stderr=true``
to a websocket speaking the channel protocol ``v4.channel.k8s.io``: each binary message starts with its channel
(1 stdout, 2 stderr, 3 the end of the exec: a meta/v1 Status, ``Success``, or ``Failure`` with the reason
``NonZeroExitCode`` and the exit code in ``details.causes`` (reason ``ExitCode``), or another reason when the
command could not start).  The websocket is websocket-client's (the kubernetes client's own dependency, the one
its stream module uses); the token, the TLS options and the proxy are the client configuration's, as that module
uses them.  Every bound is ours: a connect timeout, a byte cap on everything read (counted on the socket, so one
frame that declares gigabytes is cut as its bytes arrive), and one deadline for the whole exec, kept by a watchdog
that aborts the socket whatever the server sends (a trickle, silence).

The client's own stream module sets no timeout on the connection (a hung API server holds it forever), hence
this module rather than ``kubernetes.stream``.
"""

from __future__ import annotations

import json
import ssl
import threading
import time

from urllib.parse import urlencode, urlsplit

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import check_name, check_namespace
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import resource_path
from ansible_collections.k8snet.triage.plugins.module_utils.kube.statuses import http_error
from ansible_collections.k8snet.triage.plugins.module_utils.kube.transport import CONNECT_TIMEOUT

PROTOCOL = "v4.channel.k8s.io"
STDOUT, STDERR, ERROR = 1, 2, 3
MAX_OUTPUT = 8 * 1024 * 1024
FRAMING = 64 * 1024  # what the frames' headers, the Status and the close may add to the output


class OverCap(OSError):
    """More bytes arrived than the exec may read."""


class _CappedSocket(object):
    """The websocket's socket with a budget of bytes read: past it, a read raises OverCap (websocket-client reads a
    frame's payload whole, however long the frame says it is)."""

    def __init__(self, sock, limit):
        self._sock, self._left = sock, limit

    def recv(self, size):
        if self._left < 0:
            raise OverCap("read past the cap")
        data = self._sock.recv(size)
        self._left -= len(data)
        if self._left < 0:
            raise OverCap("read past the cap")
        return data

    def __getattr__(self, name):
        return getattr(self._sock, name)


def exec_url(server, namespace, pod, container, command):
    """The websocket URL of an exec of ``command`` (a list: argv, no shell) in one container."""
    check_namespace(namespace)
    check_name(pod)
    check_name(container, "container")
    query = [("command", str(arg)) for arg in command] + [
        ("container", container), ("stdout", "true"), ("stderr", "true")]
    parts = urlsplit(server)
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme)
    if scheme is None:
        raise ReadError("the Kubernetes API server %s is not an http(s) URL: no exec" % server)
    return "%s://%s%s%s?%s" % (scheme, parts.netloc, parts.path.rstrip("/"),
                               resource_path("pods", namespace, pod, "exec"), urlencode(query))


def connect_options(config, headers):
    """websocket-client's connect options from the client configuration: the token, the TLS options (the CA, the
    client certificate, the server name, no verification only when the configuration says so) and the proxy."""
    sslopt = {"cert_reqs": ssl.CERT_REQUIRED if config.verify_ssl else ssl.CERT_NONE}
    if config.verify_ssl and config.ssl_ca_cert:
        sslopt["ca_certs"] = config.ssl_ca_cert
    if config.verify_ssl and config.assert_hostname is False:
        sslopt["check_hostname"] = False
    if config.cert_file:
        sslopt["certfile"] = config.cert_file
    if config.key_file:
        sslopt["keyfile"] = config.key_file
    if getattr(config, "tls_server_name", None):
        sslopt["server_hostname"] = config.tls_server_name
    options = {"sslopt": sslopt, "subprotocols": [PROTOCOL],
               "header": ["%s: %s" % (k, v) for k, v in headers.items() if k.lower() == "authorization"]}
    if config.proxy:
        proxy = urlsplit(config.proxy)
        options.update(http_proxy_host=proxy.hostname, http_proxy_port=proxy.port, proxy_type="http")
        if config.no_proxy:
            options["http_no_proxy"] = [host.strip() for host in config.no_proxy.split(",") if host.strip()]
    return options


def exit_code(status):
    """(exit code or None, the Status's message): 0 for Success, the code of a NonZeroExitCode failure, None when
    the command did not start or ended otherwise (the message says why)."""
    if not isinstance(status, dict):
        return None, ""
    message = str(status.get("message") or "")
    if status.get("status") == "Success":
        return 0, message
    for cause in ((status.get("details") or {}).get("causes") or []):
        if isinstance(cause, dict) and cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
            return int(cause["message"]), message
    return None, message or str(status.get("reason") or "")


class _Watchdog(object):
    """Aborts the websocket when the deadline passes (from its own thread: a blocked receive returns)."""

    def __init__(self, ws, seconds):
        self.fired = False
        self.ws = ws
        self.timer = threading.Timer(max(0.0, seconds), self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self):
        self.fired = True
        try:
            self.ws.abort()
        except Exception:  # pylint: disable=broad-except
            pass

    def cancel(self):
        self.timer.cancel()


def _connect(websocket, url, options, deadline, action, server):
    try:
        return websocket.create_connection(url, timeout=max(0.05, min(CONNECT_TIMEOUT, deadline.left())), **options)
    except websocket.WebSocketBadStatusException as exc:
        body = getattr(exc, "resp_body", None) or b""
        error = http_error(exc.status_code, body.decode("utf-8", "replace") if isinstance(body, bytes) else body,
                           action, server)
        if exc.status_code == 403:
            error = PrivilegeError(
                "RBAC forbids us to %s on %s (403 Forbidden): grant the verb create on the subresource pods/exec "
                "in that namespace to the user or service account (kubectl auth can-i create pods --subresource "
                "exec -n NAMESPACE)" % (action, server), status=403, action=action)
        raise error
    except (websocket.WebSocketException, OSError) as exc:
        timeout = isinstance(exc, websocket.WebSocketTimeoutException) or "timed out" in str(exc)
        raise ReadError(
            "the Kubernetes API at %s did not %s: %s%s" % (
                server, action, str(exc)[:200] or type(exc).__name__,
                " (no answer within the connect timeout)" if timeout else
                "; check the server and that it allows exec (a proxy in between must pass websocket upgrades)"),
            action=action, cause="deadline" if timeout else None)


def _receive(ws, websocket, deadline, watchdog):
    """The channels' bytes until the server closes, the deadline passes or the socket's byte cap is reached."""
    channels = {STDOUT: bytearray(), STDERR: bytearray(), ERROR: bytearray()}
    while True:
        left = deadline.left()
        if left <= 0:
            return channels, "deadline"
        ws.settimeout(left)
        try:
            opcode, data = ws.recv_data()
        except OverCap:
            return channels, "truncated"
        except websocket.WebSocketTimeoutException:
            return channels, "deadline"
        except (websocket.WebSocketConnectionClosedException, OSError, websocket.WebSocketException):
            return channels, "deadline" if watchdog.fired else "closed"
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return channels, "closed"
        if opcode not in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT) or not data:
            continue
        data = data.encode("utf-8") if isinstance(data, str) else data
        channel, payload = data[0], data[1:]
        if channel in channels:
            channels[channel].extend(payload)


def run(kube, namespace, pod, container, command, seconds, max_bytes=MAX_OUTPUT, options=None, websocket=None):
    """Run ``command`` in the container for at most ``seconds`` (connect included; within the Kube's budget).
    ``options``: connect_options made once in the main thread (so that execs in threads never refresh the token).

    Returns ``{stdout, stderr, exit_code, message, ended, seconds}``: ``ended`` is ``closed`` (the exec ended and
    the server closed), ``deadline`` (cut at the deadline: the output read so far is kept) or ``truncated`` (more
    than ``max_bytes`` read, and FRAMING for the frames' own bytes).  ReadError / PrivilegeError when the exec
    could not start (the API's own answer: 403 without create on pods/exec, 404 no such pod, 400 no such
    container)."""
    if websocket is None:
        import websocket  # pylint: disable=import-outside-toplevel,redefined-outer-name
    action = "exec %s in pods %s/%s container %s" % (" ".join(str(a) for a in command)[:80], namespace, pod, container)
    url = exec_url(kube.server, namespace, pod, container, command)
    deadline = kube.deadline(seconds)
    started = time.monotonic()
    options = options if options is not None else connect_options(kube.config, kube.headers())
    ws = _connect(websocket, url, options, deadline, action, kube.server)
    ws.sock = _CappedSocket(ws.sock, max_bytes + FRAMING)
    watchdog = _Watchdog(ws, deadline.left())
    try:
        channels, ended = _receive(ws, websocket, deadline, watchdog)
    finally:
        watchdog.cancel()
        try:
            ws.close(timeout=0.5)
        except Exception:  # pylint: disable=broad-except
            pass
    status = None
    if channels[ERROR]:
        try:
            status = json.loads(bytes(channels[ERROR]).decode("utf-8", "replace"))
        except ValueError:
            status = {"status": "Failure", "message": bytes(channels[ERROR]).decode("utf-8", "replace")[:300]}
    code, message = exit_code(status)
    return {"stdout": bytes(channels[STDOUT]).decode("utf-8", "replace"),
            "stderr": bytes(channels[STDERR]).decode("utf-8", "replace"), "exit_code": code, "message": message,
            "ended": ended, "seconds": round(time.monotonic() - started, 3)}
