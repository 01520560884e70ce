"""Hostile peers on a unix socket, for the deadline tests of the socket readers (Cilium's APIs, BIRD).

``Hostile(path, mode)`` serves one mode in a thread until ``close()``:

* ``trickle_status``: the status line one byte every ``pace`` seconds;
* ``trickle_headers``: a prompt status line, then headers one byte at a time;
* ``endless_headers``: a prompt status line, then ``X-N: ...`` header lines, one every ``pace`` seconds, for ever;
* ``flood_headers``: a prompt status line, then header bytes as fast as the reader takes them;
* ``trickle_bird``: BIRD's welcome, then a ``show protocols`` reply one byte at a time (never the final line).

Each byte comes well within a per-recv timeout: only a total deadline ends the read.
"""

from __future__ import annotations

import socket
import threading

MODES = ("trickle_status", "trickle_headers", "endless_headers", "flood_headers", "trickle_bird")


class Hostile(object):

    def __init__(self, path, mode, pace=0.05):
        if mode not in MODES:
            raise ValueError("mode %r: one of %s" % (mode, ", ".join(MODES)))
        self.path, self.mode, self.pace = path, mode, pace
        self.stop = threading.Event()
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.server.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _addr = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _drip(self, conn, data):
        for index in range(len(data)):
            if self.stop.is_set():
                return False
            conn.sendall(data[index:index + 1])
            self.stop.wait(self.pace)
        return True

    def _answer(self, conn):
        try:
            conn.settimeout(1)
            if self.mode == "trickle_bird":
                conn.sendall(b"0001 BIRD 2.0.12 ready.\n")
                conn.recv(4096)
                self._drip(conn, b"2002-Name       Proto      Table      State  Since         Info\n" * 1000)
                return
            conn.recv(4096)
            if self.mode == "trickle_status":
                self._drip(conn, b"HTTP/1.1 200 OK\r\n" * 1000)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            if self.mode == "trickle_headers":
                self._drip(conn, b"Content-Type: application/json\r\n" * 1000)
            elif self.mode == "endless_headers":
                number = 0
                while not self.stop.is_set():
                    conn.sendall(b"X-%d: %s\r\n" % (number, b"v" * 10))
                    number += 1
                    self.stop.wait(self.pace)
            else:
                while not self.stop.is_set():
                    conn.sendall(b"X-Flood: " + b"v" * 1000 + b"\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.server.close()
        self.thread.join(2)
