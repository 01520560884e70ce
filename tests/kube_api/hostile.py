"""A misbehaving Kubernetes API server, for the tests of the client's bounds (never used by the collection).

``Hostile(objects, workdir, bind, mode).start()`` is the stand-in (``server.StandIn``: its TLS, tokens, store
and REST paths) with one way of misbehaving, ``mode``:

* ``hang``: accepts the connection and the request, never answers;
* ``trickle``: answers the status line and headers, then the body one byte every ``interval`` (2 s);
* ``trickle_headers``: the status line and headers themselves one byte every ``interval``;
* ``continue``: every list has a ``continue`` token, a new one on every page, without end;
* ``continue_same``: every list has the same ``continue`` token on every page;
* ``huge``: every list is a valid JSON list of ``huge_bytes`` (400 MB), generated while it is sent (no
  Content-Length, as a chunked or close-delimited answer of the API server); an object (a get) carries an
  annotation that long;
* ``items_empty``: lists answer ``items: [{}]`` (a get answers ``{}``);
* ``spec_null``: every object has ``spec: null`` and ``status: null`` (legal JSON the API server never sends);
* ``top_list``: a list is a top-level JSON array of its items (a get: an array of the object);
* ``name_null``: every object has ``metadata.name: null``;
* ``events403``: events are forbidden (RBAC), everything else is answered;
* ``429``: the first ``throttled`` requests are refused with 429 Too Many Requests and ``Retry-After: 1``
  (as the API server's priority and fairness answers), then everything is answered;
* ``reset``: the first ``throttled`` connections are closed (TCP reset) once the request is read, unanswered.

Pod logs (text) are answered normally except in ``hang``, ``trickle`` and ``trickle_headers``.  In these three
modes, a request's record (``requests``) gets ``held``: the seconds from the request to the client closing the
connection (the client's own deadline, measured by the server).
"""

from __future__ import annotations

import copy
import json
import select
import socket
import struct
import threading
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .server import Handler, StandIn, Text, Upgrade, status

MODES = ("hang", "trickle", "trickle_headers", "continue", "continue_same", "huge", "items_empty", "spec_null",
         "top_list", "name_null", "events403", "429", "reset")
HUGE_BYTES = 400 * 1024 * 1024


def _objects(body):
    """The objects of an answer (a list's items, or the object itself)."""
    if isinstance(body, dict) and isinstance(body.get("items"), list):
        return body["items"]
    if isinstance(body, dict) and "metadata" in body and body.get("kind") != "Status":
        return [body]
    return []


class HostileHandler(Handler):

    def do_GET(self):
        self._hostile("GET")

    def do_PATCH(self):
        self._hostile("PATCH")

    def _wait(self, seconds):
        """Wait ``seconds``; True when the client closed the connection (the time is then recorded) or the
        server stops."""
        end = time.monotonic() + seconds
        while not self.server.stopping.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return False
            if select.select([self.connection], [], [], min(left, 0.05))[0] and self._closed():
                return True
        return True

    def _closed(self):
        try:
            data = self.connection.recv(1)
        except (OSError, ValueError):
            data = b""
        if data:
            return False
        self.request_record["held"] = time.monotonic() - self.request_record["at"]
        return True

    def _hostile(self, method):
        server = self.server
        mode = server.mode
        if mode == "reset":
            with server.lock:
                server.throttled -= 1
                reset = server.throttled >= 0
            if reset:
                server.requests.append({"method": method, "path": self.path, "reset": True})
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
        if mode == "hang":
            self.request_record = {"method": method, "path": self.path, "at": time.monotonic()}
            server.requests.append(self.request_record)
            self._wait(300)
            return
        if mode in ("continue", "continue_same"):
            # its own tokens mean nothing: every page is the list from its start
            url = urlsplit(self.path)
            self.path = urlunsplit(url._replace(query=urlencode([(k, v) for k, v in parse_qsl(url.query)
                                                                 if k != "continue"])))
        at = time.monotonic()
        answer = self._route(method)
        if isinstance(answer, Upgrade):  # an exec: its handshake came through, what it prints is the stand-in's
            return self._serve_exec(answer)
        code, body = answer
        self.request_record = server.requests[-1]
        self.request_record["at"] = at
        parts = self.request_record["parts"]
        is_list = isinstance(body, dict) and isinstance(body.get("items"), list) and code == 200
        if mode == "429":
            with server.lock:
                server.throttled -= 1
                throttle = server.throttled >= 0
            if throttle:
                code, body = status(429, "TooManyRequests", "Too many requests, please try again later.",
                                    {"retryAfterSeconds": 1})
                return self._send_with(code, body, {"Retry-After": "1"})
        elif mode == "events403" and "events" in parts:
            code, body = status(403, "Forbidden", 'events is forbidden: User "lab-admin" cannot list resource "events" '
                                'in API group "" in the namespace "%s"' % (parts[3] if len(parts) > 3 else ""),
                                {"kind": "events"})
        elif mode in ("continue", "continue_same") and is_list:
            with server.lock:
                server.pages += 1
                number = server.pages
            body = dict(body, metadata=dict(body["metadata"], **{
                "continue": "same-token" if mode == "continue_same" else "token-%d" % number}))
        elif mode == "huge" and is_list:
            return self._huge(body)
        elif mode == "huge" and code == 200 and _objects(body):
            return self._huge_object(body)
        elif mode == "items_empty" and code == 200 and not isinstance(body, Text):
            body = dict(body, items=[{}]) if is_list else {}
        elif mode in ("spec_null", "name_null") and code == 200 and not isinstance(body, Text):
            body = copy.deepcopy(body)
            for obj in _objects(body):
                if mode == "spec_null":
                    obj["spec"] = obj["status"] = None
                else:
                    obj["metadata"]["name"] = None
        elif mode == "top_list" and code == 200 and not isinstance(body, Text):
            body = body["items"] if is_list else [body]
        if mode == "trickle":
            return self._trickle(code, body, headers_too=False)
        if mode == "trickle_headers":
            return self._trickle(code, body, headers_too=True)
        self._send(code, body)

    def _encode(self, body):
        if isinstance(body, Text):
            return body.encode(), "text/plain"
        return json.dumps(body).encode(), "application/json"

    def _send_with(self, code, body, headers):
        data, content_type = self._encode(body)
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, data):
        """Write ``data`` one byte every interval; False when the client went away or the server stops."""
        for index in range(len(data)):
            try:
                self.wfile.write(data[index:index + 1])
                self.wfile.flush()
            except OSError:
                self.request_record.setdefault("held", time.monotonic() - self.request_record["at"])
                return False
            if self._wait(self.server.interval):
                return False
        return True

    def _trickle(self, code, body, headers_too):
        data, content_type = self._encode(body)
        head = ("HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (
            code, "OK" if code == 200 else "Error", content_type, len(data))).encode()
        if headers_too:
            if self._drip(head):
                self._drip(data)
            return
        try:
            self.wfile.write(head)
            self.wfile.flush()
        except OSError:
            return
        self._drip(data)

    def _huge_object(self, obj):
        """One object with an annotation of about HUGE_BYTES, made while sent."""
        marker = "@@pad@@"
        text = json.dumps(dict(obj, metadata=dict(obj["metadata"], annotations={"pad": marker})))
        head, tail = text.split(marker)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        sent, block = 0, b"x" * 65536
        try:
            self.wfile.write(head.encode())
            while sent < self.server.huge_bytes and not self.server.stopping.is_set():
                self.wfile.write(block)
                sent += len(block)
            self.wfile.write(tail.encode())
        except OSError:
            pass
        with self.server.lock:
            self.server.huge_sent.append(sent)

    def _huge(self, body):
        """A valid list of about HUGE_BYTES, its items copies of the real ones (or a ConfigMap), made while sent."""
        items = body["items"] or [{"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "filler", "namespace": "default"}, "data": {}}]
        head = json.dumps(dict(body, items=[]))[:-2].encode()  # ... "items": [
        pieces = [json.dumps(dict(item, metadata=dict(item["metadata"], annotations={"pad": "x" * 4096})))
                  for item in items]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        sent = 0
        try:
            self.wfile.write(head)
            index = 0
            while sent < self.server.huge_bytes and not self.server.stopping.is_set():
                chunk = ",".join(pieces[(index + i) % len(pieces)] for i in range(16))
                chunk = ("," if index else "") + chunk
                index += 16
                data = chunk.encode()
                self.wfile.write(data)
                sent += len(data)
            self.wfile.write(b"]}")
        except OSError:
            pass
        with self.server.lock:
            self.server.huge_sent.append(sent)


class Hostile(StandIn):
    """The stand-in answering in one hostile ``mode`` (see the module's docstring)."""

    def __init__(self, objects, workdir, bind, mode, port=0, tokens=None, logs=None, interval=2.0, throttled=1,
                 huge_bytes=HUGE_BYTES):
        if mode not in MODES:
            raise ValueError("mode %r is not one of %s" % (mode, ", ".join(MODES)))
        StandIn.__init__(self, objects, workdir, bind, port, tokens, logs, why="misbehaving")
        self.mode, self.interval, self.throttled, self.huge_bytes = mode, interval, throttled, huge_bytes

    def start(self):
        StandIn.start(self)
        httpd = self.httpd
        httpd.RequestHandlerClass = HostileHandler
        httpd.mode, httpd.interval, httpd.throttled, httpd.huge_bytes = (
            self.mode, self.interval, self.throttled, self.huge_bytes)
        httpd.stopping, httpd.lock, httpd.pages, httpd.huge_sent = threading.Event(), threading.Lock(), 0, []
        return self

    @property
    def huge_sent(self):
        return self.httpd.huge_sent

    def stop(self):
        if self.httpd:
            self.httpd.stopping.set()
            time.sleep(0.1)
        StandIn.stop(self)
