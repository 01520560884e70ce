"""A loopback HTTP server that trickles its answer, for the tests of a client's total deadline (the Pushgateway
push).  ``Trickle(mode, interval).start()`` listens on 127.0.0.1 only, reads each request whole (headers and
Content-Length body), then answers:

* ``headers``: the status line and headers one byte every ``interval`` seconds (a socket timeout per operation
  never fires: each byte renews it);
* ``body``: the status line and headers at once (200, Content-Length 4096), then the body one byte every
  ``interval``;
* ``ok``: 200 with a short body, at once.

``requests`` records each request: its method, path, the bytes of its body, and ``held``: the seconds from the
request read to the client closing the connection (the client's deadline, by the server's clock)."""

from __future__ import annotations

import socket
import threading
import time

MODES = ("headers", "body", "ok")


class Trickle(object):

    def __init__(self, mode, interval=0.5, hold=300.0):
        if mode not in MODES:
            raise ValueError("mode %r is not one of %s" % (mode, ", ".join(MODES)))
        self.mode, self.interval, self.hold = mode, interval, hold
        self.requests = []
        self.stopping = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.threads = []

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def start(self):
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self.threads.append(thread)
        return self

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(5)
        self.sock.close()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn = self.sock.accept()[0]
            except socket.timeout:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _read_request(self, conn):
        data = b""
        while b"\r\n\r\n" not in data:
            part = conn.recv(65536)
            if not part:
                return None
            data += part
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = dict((p[0].strip().lower(), p[2].strip()) for p in (line.partition(":") for line in lines[1:]))
        length = int(headers.get("content-length") or 0)
        while len(body) < length:
            part = conn.recv(65536)
            if not part:
                break
            body += part
        method, path = lines[0].split(" ")[:2]
        return {"method": method, "path": path, "bytes": len(body), "at": time.monotonic()}

    def _send_slowly(self, conn, data, record):
        """One byte every ``interval``; False when the client closed the connection (``held`` recorded)."""
        for index in range(len(data)):
            try:
                conn.sendall(data[index:index + 1])
            except OSError:
                record["held"] = time.monotonic() - record["at"]
                return False
            end = time.monotonic() + self.interval
            while time.monotonic() < end:
                if self.stopping.is_set():
                    return False
                if self._closed(conn, min(0.05, max(0.0, end - time.monotonic()))):
                    record["held"] = time.monotonic() - record["at"]
                    return False
        return True

    @staticmethod
    def _closed(conn, wait):
        import select
        if not select.select([conn], [], [], wait)[0]:
            return False
        try:
            return conn.recv(1) == b""
        except OSError:
            return True

    def _serve(self, conn):
        with conn:
            conn.settimeout(10)
            record = self._read_request(conn)
            if record is None:
                return
            self.requests.append(record)
            if self.mode == "ok":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            conn.setblocking(True)
            if self.mode == "headers":
                self._send_slowly(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Padding: "
                                  + b"a" * 4096 + b"\r\n\r\n", record)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4096\r\n\r\n")
            self._send_slowly(conn, b"x" * 4096, record)
