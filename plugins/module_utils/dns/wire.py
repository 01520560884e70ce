# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""DNS queries against each resolver separately: the wire format and the resolver.

Readers: one query = (server, name, protocol).  dnspython is used when the Python that
runs the module has it (the controller always does: requirements.txt); a node's Python
usually has not (RHEL/Ubuntu do not ship it by default), and the point of this check is
to ask *from each node*, so a minimal RFC 1035 client built on the standard library
fills the same model there: A/AAAA questions, UDP with TCP retry on truncation, TCP with
the two-byte length prefix, answer RRs of type A, AAAA and CNAME.

Model of one answer:
  {"server", "name", "protocol", "status", "rcode", "answers": [ip...], "cnames": [...],
   "elapsed_ms", "error"}
status is one of STATUSES.  The wire parsers and ``classify`` are pure.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sample
from ansible_collections.k8snet.triage.plugins.module_utils.core.sockets import tcp_socket

try:
    import dns.exception
    import dns.message
    import dns.query
    import dns.rcode
    import dns.rdatatype

    HAS_DNSPYTHON = True
except ImportError:  # a node's Python: use the stdlib wire client below
    HAS_DNSPYTHON = False

STATUSES = ("ok", "nodata", "nxdomain", "servfail", "refused", "timeout", "unreachable", "wrong_answer", "error")
FAILED = ("servfail", "refused", "timeout", "unreachable", "wrong_answer", "error")
NO_ANSWER = ("timeout", "unreachable")
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
RDTYPES = {"A": 1, "AAAA": 28, "CNAME": 5}
MAX_WORKERS = 16


# ------------------------------------------------------------------ wire format (pure)


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        raw = label.encode("idna") if label else b""
        if not raw or len(raw) > 63:
            raise InputError("DNS name %r has an empty or over-long label; give a name like "
                             "web.default.svc.cluster.local" % name)
        out += struct.pack("!B", len(raw)) + raw
    return out + b"\x00"


def build_query(name, rdtype="A", qid=None):
    """A recursive query for ``name``/``rdtype`` with one question and an EDNS0 OPT (1232 bytes)."""
    qid = random.randint(0, 0xFFFF) if qid is None else qid
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1)
    question = encode_name(name) + struct.pack("!HH", RDTYPES[rdtype], 1)
    opt = b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)
    return header + question + opt


def _read_name(data, offset, depth=0):
    labels = []
    while True:
        if offset >= len(data) or depth > 20:
            raise ValueError("truncated or looping name")
        length = data[offset]
        if length & 0xC0 == 0xC0:
            pointer = struct.unpack("!H", data[offset:offset + 2])[0] & 0x3FFF
            rest = _read_name(data, pointer, depth + 1)[0]
            labels.append(rest)
            return ".".join(x for x in labels if x), offset + 2
        offset += 1
        if length == 0:
            return ".".join(labels), offset
        labels.append(data[offset:offset + length].decode("ascii", "replace"))
        offset += length


def parse_response(data):
    """Wire bytes of a response -> {"id", "rcode", "truncated", "answers", "cnames"} (pure)."""
    if len(data) < 12:
        raise ValueError("response shorter than a DNS header (%d bytes)" % len(data))
    qid, flags, qd, an, _ns, _ar = struct.unpack("!HHHHHH", data[:12])
    offset = 12
    for dummy in range(qd):
        offset = _read_name(data, offset)[1]
        offset += 4
    answers, cnames = [], []
    for dummy in range(an):
        offset = _read_name(data, offset)[1]
        rtype, _cls, _ttl, rdlen = struct.unpack("!HHIH", data[offset:offset + 10])
        offset += 10
        rdata = data[offset:offset + rdlen]
        if rtype == 1 and rdlen == 4:
            answers.append(socket.inet_ntop(socket.AF_INET, rdata))
        elif rtype == 28 and rdlen == 16:
            answers.append(socket.inet_ntop(socket.AF_INET6, rdata))
        elif rtype == 5:
            cnames.append(_read_name(data, offset)[0])
        offset += rdlen
    return {"id": qid, "rcode": RCODES.get(flags & 0xF, str(flags & 0xF)), "truncated": bool(flags & 0x0200),
            "answers": answers, "cnames": cnames}


def _recv_exact(sock, size):
    buf = b""
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            raise ConnectionResetError("connection closed after %d of %d bytes" % (len(buf), size))
        buf += chunk
    return buf


def _wire_exchange(server, port, wire, protocol, timeout):
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    if protocol == "udp":
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.connect((server, port))  # so an ICMP port/host unreachable surfaces as an error
            sock.send(wire)
            deadline = time.time() + timeout
            while True:
                data = sock.recv(65535)
                if data[:2] == wire[:2]:
                    return data
                sock.settimeout(max(0.01, deadline - time.time()))
    with tcp_socket(server, port, timeout) as sock:  # one deadline for the connect, the query and the answer
        sock.sendall(struct.pack("!H", len(wire)) + wire)
        size = struct.unpack("!H", _recv_exact(sock, 2))[0]
        return _recv_exact(sock, size)


def _query_stdlib(server, port, name, rdtype, protocol, timeout):
    wire = build_query(name, rdtype)
    reply = parse_response(_wire_exchange(server, port, wire, protocol, timeout))
    if reply["truncated"] and protocol == "udp":
        reply = parse_response(_wire_exchange(server, port, build_query(name, rdtype), "tcp", timeout))
    return reply


def _query_dnspython(server, port, name, rdtype, protocol, timeout):
    query = dns.message.make_query(name, rdtype, use_edns=0)
    if protocol == "udp":
        response = dns.query.udp_with_fallback(query, server, timeout=timeout, port=port)[0]
    else:
        response = dns.query.tcp(query, server, timeout=timeout, port=port)
    answers, cnames = [], []
    for rrset in response.answer:
        for rdata in rrset:
            if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
                answers.append(rdata.address)
            elif rrset.rdtype == dns.rdatatype.CNAME:
                cnames.append(str(rdata.target).rstrip("."))
    return {"rcode": dns.rcode.to_text(response.rcode()), "truncated": False, "answers": answers, "cnames": cnames}


def classify(reply, expect=None):
    """Reply model (+ the expected addresses, if any) -> status (pure)."""
    rcode = reply.get("rcode")
    if rcode == "NXDOMAIN":
        return "nxdomain"
    if rcode == "SERVFAIL":
        return "servfail"
    if rcode == "REFUSED":
        return "refused"
    if rcode != "NOERROR":
        return "error"
    if expect:
        return "ok" if set(expect) & set(reply.get("answers") or []) else "wrong_answer"
    return "ok" if reply.get("answers") else "nodata"


def status_counts(rows):
    """How many of ``rows`` have each status: {status: count}, in the order met."""
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


class Resolver(object):
    """Asks every (server, name, protocol) separately, in parallel, with retries on timeouts."""

    def __init__(self, backend="auto", port=53, rdtype="A", timeout=2.0, retries=1):
        if backend == "dnspython" and not HAS_DNSPYTHON:
            raise InputError("backend=dnspython was asked for but dnspython is not importable here; install the "
                             "python3-dnspython package (pip: dnspython) or use backend=auto")
        self.backend = "dnspython" if backend in ("auto", "dnspython") and HAS_DNSPYTHON else "stdlib"
        self.port, self.rdtype, self.timeout, self.retries = port, rdtype, timeout, retries
        self._query = _query_dnspython if self.backend == "dnspython" else _query_stdlib

    def ask(self, server, name, protocol, expect=None):
        row = {"server": server, "name": name, "protocol": protocol, "rcode": None, "answers": [], "cnames": [],
               "error": None, "attempts": 0}
        started = time.time()
        for dummy in range(self.retries + 1):
            row["attempts"] += 1
            try:
                reply = self._query(server, self.port, name, self.rdtype, protocol, self.timeout)
            except (socket.timeout, TimeoutError) as exc:
                row.update(status="timeout", error=str(exc) or "timed out after %ss" % self.timeout)
                continue
            except OSError as exc:  # refused (ICMP port unreachable / RST), no route, network unreachable
                row.update(status="unreachable", error=exc.strerror or str(exc))
                break
            except Exception as exc:  # dnspython raises its own Timeout and FormError types
                if HAS_DNSPYTHON and isinstance(exc, dns.exception.Timeout):
                    row.update(status="timeout", error="timed out after %ss" % self.timeout)
                    continue
                row.update(status="error", error="%s: %s" % (type(exc).__name__, exc))
                break
            row.update(rcode=reply["rcode"], answers=sample(reply["answers"], 5), cnames=sample(reply["cnames"], 3),
                       status=classify(reply, expect), error=None)
            break
        row["elapsed_ms"] = int((time.time() - started) * 1000)
        return row

    def matrix(self, servers, names, protocols, expect=None):
        jobs = [(s, n, p) for s in servers for n in names for p in protocols]
        expect = expect or {}
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, max(1, len(jobs)))) as pool:
            futures = [pool.submit(self.ask, s, n, p, expect.get(n)) for s, n, p in jobs]
            return [f.result() for f in futures]
