"""One total deadline per socket read, from connect to the last byte: Cilium's unix-socket HTTP and BIRD's
control socket against hostile peers (real unix sockets, served from a thread)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent_reader as cilium_agent_reader
from ansible_collections.k8snet.triage.plugins.module_utils.core import sockets
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError
from tests.cilium_agent.hostile import Hostile
from tests.conftest import BUILD

TIMEOUT = 1.0
SLACK = 1.10  # the acceptance bound: the deadline + 10 %


@pytest.fixture
def hostile(tmp_path):
    servers = []

    def serve(mode, pace=0.05):
        path = str(tmp_path / ("%s.sock" % mode))
        servers.append(Hostile(path, mode, pace))
        return path

    yield serve
    for server in servers:
        server.close()


@pytest.mark.parametrize("mode", ["trickle_status", "trickle_headers", "endless_headers"])
def test_cilium_socket_that_trickles_is_cut_at_one_total_deadline(hostile, mode):
    path = hostile(mode)
    started = time.monotonic()
    with pytest.raises(cilium_agent_reader.Unreachable) as info:
        cilium_agent_reader.get_json(path, cilium_agent_reader.HEALTHZ_PATH, timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    assert elapsed <= TIMEOUT * SLACK, "%s held the reader %.2fs for a %gs deadline" % (mode, elapsed, TIMEOUT)
    message = str(info.value)
    assert info.value.reason == "timeout"
    assert path in message and "within the 1s deadline" in message and "from connect to the last byte" in message


def test_headers_larger_than_the_cap_are_refused(hostile):
    path = hostile("flood_headers")
    started = time.monotonic()
    with pytest.raises(cilium_agent_reader.Unreachable) as info:
        cilium_agent_reader.get_json(path, cilium_agent_reader.HEALTHZ_PATH, timeout=5)
    assert time.monotonic() - started < 5
    # either cap may strike first: the header bytes (64 KiB) or http.client's 100 header lines
    assert path in str(info.value) and ("larger than 65536 bytes" in str(info.value) or "100 headers" in str(info.value))
    assert info.value.reason in ("invalid", "refused")


def test_header_byte_cap_is_counted_on_the_socket(tmp_path):
    left, right = socket.socketpair()
    bounded = sockets.BoundedSocket(fileno=left.detach()).arm(5)
    right.sendall(b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * 60000 + b"\r\nX-Long2: " + b"v" * 60000 + b"\r\n\r\n")
    with pytest.raises(sockets.TooLarge, match="status line and headers are larger than 65536 bytes"):
        sockets.http_get(bounded, "/v1/healthz", max_bytes=1000)
    right.close()


def test_bird_socket_that_trickles_is_cut_at_one_total_deadline(hostile):
    path = hostile("trickle_bird")
    started = time.monotonic()
    with pytest.raises(ReadError) as info:
        bird.BirdClient(path, timeout=TIMEOUT).query("show protocols all")
    elapsed = time.monotonic() - started
    assert elapsed <= TIMEOUT * SLACK, "BIRD held the reader %.2fs for a %gs deadline" % (elapsed, TIMEOUT)
    assert path in str(info.value) and "within the 1s deadline" in str(info.value)
    assert info.value.details.get("deadline") == TIMEOUT


class TcpTrickle(object):
    """A TCP peer on 127.0.0.1 (port 0) that answers every connection one byte every ``pace`` seconds."""

    def __init__(self, data, pace=0.05):
        import threading

        self.data, self.pace, self.stop = data, pace, threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(4)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _addr = self.server.accept()
            except OSError:
                continue
            try:
                conn.recv(4096)
                for index in range(len(self.data)):
                    if self.stop.is_set():
                        break
                    conn.sendall(self.data[index:index + 1])
                    self.stop.wait(self.pace)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(2)
        self.server.close()


def test_tcp_reads_of_the_dns_and_lb_health_checks_keep_one_deadline():
    from ansible_collections.k8snet.triage.plugins.module_utils.dns import wire as dns_wire
    from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_probes as lb_health_probes

    peer = TcpTrickle(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: 1\r\n" * 500)
    try:
        started = time.monotonic()
        out = lb_health_probes.probe("127.0.0.1", peer.port, TIMEOUT)
        assert time.monotonic() - started <= TIMEOUT * SLACK
        assert out["status"] is None and "within the 1s deadline" in out["error"]
    finally:
        peer.close()
    peer = TcpTrickle(b"\x01\x00" + b"\x00" * 256)  # a DNS-over-TCP answer of 256 bytes, one byte at a time
    try:
        started = time.monotonic()
        with pytest.raises(socket.timeout):
            dns_wire._wire_exchange("127.0.0.1", peer.port, b"\x12\x34" + b"\x00" * 10, "tcp", TIMEOUT)
        assert time.monotonic() - started <= TIMEOUT * SLACK
    finally:
        peer.close()


def test_readers_of_every_pass_do_not_import_http_client():
    """BIRD's and DNS's readers import sockets on every node pass; http.client is imported only by what reads
    HTTP (checked in a fresh interpreter: this process has imported it long ago)."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird\n"
            "from ansible_collections.k8snet.triage.plugins.module_utils.dns import wire\n"
            "from ansible_collections.k8snet.triage.plugins.module_utils.core import sockets\n"
            "print('http.client' in sys.modules)\n"
            "from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent\n"
            "print('http.client' in sys.modules)\n") % str(BUILD)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.split() == ["False", "True"]
