# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Socket reads with ONE total deadline, from connect to the last byte, and a cap on the bytes read (stdlib only).

A socket's own timeout bounds each recv: a peer that trickles one byte just inside it holds a reader for
ever.  ``BoundedSocket`` re-arms its timeout before every connect, send and recv with what is left of a
deadline fixed when the read starts, and counts what it receives against a byte budget.  Used by the
Cilium agent's and cilium-health's HTTP over unix sockets, the agent's metrics over TCP, and BIRD's
control socket.
"""

from __future__ import annotations

import socket
import time

MAX_HEADER_BYTES = 64 * 1024  # status line + headers; http.client also refuses more than 100 header lines
_READ_AHEAD = 8192  # what http.client's buffered reader may take past the headers in one recv


class DeadlineExceeded(socket.timeout):
    """The total deadline of a socket read passed (a socket.timeout, so existing handlers catch it)."""


class TooLarge(OSError):
    """The peer sent more bytes than the read allows."""


class BoundedSocket(socket.socket):
    """A stream socket whose every connect, send and recv shares one deadline and one byte budget.

    ``arm(timeout)`` fixes the deadline (now + timeout); ``budget(n)`` caps the bytes received from now on
    (None: no cap).  Past the deadline an operation raises DeadlineExceeded; past the budget, TooLarge."""

    deadline = None
    timeout_total = None
    limit = None
    received = 0

    def arm(self, timeout, clock=time.monotonic):
        self.timeout_total = timeout
        self.deadline = clock() + timeout
        return self

    def budget(self, max_bytes):
        self.limit = None if max_bytes is None else self.received + max_bytes

    def _rearm(self):
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("the %gs deadline passed" % self.timeout_total)
        self.settimeout(left)

    def _count(self, size):
        self.received += size
        if self.limit is not None and self.received > self.limit:
            raise TooLarge("more bytes than allowed (%d received)" % self.received)

    def connect(self, address):
        self._rearm()
        try:
            return super().connect(address)
        except socket.timeout as exc:
            raise DeadlineExceeded("the %gs deadline passed while connecting" % self.timeout_total) from exc

    def sendall(self, data, flags=0):
        self._rearm()
        return self._timed(super().sendall, data, flags)

    def recv(self, bufsize, flags=0):
        self._rearm()
        data = self._timed(super().recv, bufsize, flags)
        self._count(len(data))
        return data

    def recv_into(self, buffer, nbytes=0, flags=0):
        self._rearm()
        size = self._timed(super().recv_into, buffer, nbytes, flags)
        self._count(size)
        return size

    def _timed(self, call, *args):
        try:
            return call(*args)
        except DeadlineExceeded:
            raise
        except socket.timeout as exc:
            raise DeadlineExceeded("the %gs deadline passed" % self.timeout_total) from exc


def unix_socket(path, timeout):
    """A BoundedSocket connected to the unix socket ``path``; the deadline starts now."""
    sock = BoundedSocket(socket.AF_UNIX, socket.SOCK_STREAM).arm(timeout)
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


def tcp_socket(host, port, timeout):
    """A BoundedSocket connected to ``host``:``port`` (an IP address or localhost); the deadline starts now."""
    deadline = time.monotonic() + timeout
    last = None
    for family, kind, proto, _name, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = BoundedSocket(family, kind, proto)
        sock.timeout_total, sock.deadline = timeout, deadline
        try:
            sock.connect(address)
            return sock
        except DeadlineExceeded:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            last = exc
    raise last or OSError("no address for %s" % host)


def http_get(sock, path, max_bytes, max_header_bytes=MAX_HEADER_BYTES, host="localhost"):
    """``GET path`` over the connected BoundedSocket ``sock`` -> (status, reason, body bytes).

    Every byte, from the request to the body's last, is read before the socket's deadline; the status
    line and headers are capped at ``max_header_bytes`` (and 100 lines, http.client's limit), the body at
    ``max_bytes``.  Raises DeadlineExceeded, TooLarge, OSError or http.client.HTTPException; closes ``sock``."""
    # imported here: BIRD's and DNS's readers import this file on every node pass, and http.client (with the
    # email package it loads) cost a node about 18 ms of CPU (Debian's Python 3.11) in a pass that reads no HTTP
    import http.client as http_client  # pylint: disable=import-outside-toplevel

    connection = http_client.HTTPConnection(host)
    connection.sock = sock
    try:
        connection.request("GET", path, headers={"Accept": "application/json, text/plain", "Connection": "close"})
        sock.budget(max_header_bytes + _READ_AHEAD)
        try:
            response = connection.getresponse()
        except TooLarge:
            raise TooLarge("the status line and headers are larger than %d bytes" % max_header_bytes)
        sock.budget(max_bytes + _READ_AHEAD + 1024 * 1024)  # + chunk framing
        chunks, size = [], 0
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise TooLarge("the answer is larger than %d bytes" % max_bytes)
            chunks.append(chunk)
        return response.status, response.reason, b"".join(chunks)
    except TooLarge as exc:
        if "larger than" in str(exc):
            raise
        raise TooLarge("the answer is larger than %d bytes" % max_bytes)
    finally:
        connection.close()
        sock.close()
