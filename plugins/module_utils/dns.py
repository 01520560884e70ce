# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""DNS queries against each resolver separately, and the findings their matrix implies.

Readers: one query = (server, name, protocol).  dnspython is used when the Python that
runs the module has it (the controller always does: requirements.txt); a node's Python
usually has not (RHEL/Ubuntu do not ship it by default), and the point of this check is
to ask *from each node*, so a minimal RFC 1035 client built on the standard library
fills the same model there: A/AAAA questions, UDP with TCP retry on truncation, TCP with
the two-byte length prefix, answer RRs of type A, AAAA and CNAME.

Model of one answer:
  {"server", "name", "protocol", "status", "rcode", "answers": [ip...], "cnames": [...],
   "elapsed_ms", "error"}
status is one of STATUSES.  Parsers and checks below are pure.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils import conntrack, params, pod_netns
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.sockets import tcp_socket
from ansible_collections.k8snet.triage.plugins.module_utils.dns_options import RESOLV_CONFS, server_item

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
            raise InputError("DNS name %r has an empty or over-long label; give a name like web.default.svc.cluster.local" % name)
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


# ------------------------------------------------------------------ input (pure)


def validate_servers(servers):
    out = []
    for index, item in enumerate(servers or []):
        item = server_item("servers[%d]" % index, item)
        out.append({"address": item["address"], "name": item.get("name") or item["address"], "node": item.get("node"),
                    "role": item.get("role") or "pod"})
    return out


def validate_names(names, expect):
    params.each(params.dns_name, max_items=64, non_empty=True,
                what="give at least one name to resolve, e.g. kubernetes.default.svc.cluster.local")("names", names)
    for name, addresses in (expect or {}).items():
        if name not in names:
            raise InputError("expect names %r, which is not in names (%s)" % (name, ", ".join(names)))
        params.scalar_or_list(params.address())("expect[%r]" % name, addresses)
    return dict((k, v if isinstance(v, list) else [v]) for k, v in (expect or {}).items())


# glibc's limits (resolv/resolv.h): the first MAXNS nameservers are used; ndots, timeout and attempts
# are capped; with no nameserver line the resolver asks the loopback address.
MAXNS = 3
RES_MAXNDOTS, RES_MAXRETRANS, RES_MAXRETRY = 15, 30, 5
RES_DEFAULTS = {"ndots": 1, "timeout": 5, "attempts": 2}


def parse_resolver_config(text):
    """A resolv.conf read as glibc reads it (pure): {"nameservers" (the first 3, what is used),
    "all_nameservers", "search", "ndots", "timeout", "attempts", "rotate", "options", "default_nameserver"}.

    ``search`` and ``domain`` replace each other (the last line wins); ``options`` values are
    capped as glibc caps them (ndots 15, timeout 30, attempts 5); comments start with # or ;."""
    nameservers, search, options = [], [], []
    values = dict(RES_DEFAULTS)
    rotate = False
    for line in text.splitlines():
        parts = line.split("#", 1)[0].split(";", 1)[0].split()
        if len(parts) < 2:
            continue
        keyword, args = parts[0], parts[1:]
        if keyword == "nameserver":
            if args[0] not in nameservers:
                nameservers.append(args[0])
        elif keyword == "search":
            search = [d.rstrip(".") or "." for d in args]
        elif keyword == "domain":
            search = [args[0].rstrip(".") or "."]
        elif keyword == "options":
            for option in args:
                options.append(option)
                name, sep, value = option.partition(":")
                if sep and name in values:
                    try:
                        number = int(value)
                    except ValueError:
                        continue
                    cap = {"ndots": RES_MAXNDOTS, "timeout": RES_MAXRETRANS, "attempts": RES_MAXRETRY}[name]
                    values[name] = max(0 if name == "ndots" else 1, min(cap, number))
                elif option == "rotate":
                    rotate = True
    return {"nameservers": nameservers[:MAXNS] or ["127.0.0.1"], "all_nameservers": nameservers,
            "default_nameserver": not nameservers, "search": search, "ndots": values["ndots"],
            "timeout": values["timeout"], "attempts": values["attempts"], "rotate": rotate, "options": options}


def parse_resolv_conf(text):
    """nameserver lines of a resolv.conf (pure), every one of them (the host resolvers)."""
    return parse_resolver_config(text)["all_nameservers"]


def expand_name(name, search, ndots):
    """The names glibc's res_nsearch asks, in order, for ``name`` (pure).

    An absolute name (trailing dot) is asked as it is, only.  A name with at least ``ndots`` dots
    is asked as it is first, then with each search domain appended; a name with fewer dots gets the
    search domains first and is asked as it is last.  A search domain "." stands for the name as it
    is at that place.  getaddrinfo asks each of these names for A and for AAAA."""
    if name.endswith(".") and name != ".":
        return [name.rstrip(".")]
    dots = name.count(".")
    out = []
    if dots >= ndots:
        out.append(name)
    for domain in search or []:
        out.append(name if domain == "." else "%s.%s" % (name, domain))
    if dots < ndots:
        out.append(name)
    unique = []
    for candidate in out:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def timeout_wait(timeout, attempts, nameservers):
    """Seconds glibc's res_send waits for one name when no nameserver answers (pure): ``attempts``
    rounds over the nameservers, the first round ``timeout`` each, round r ``(timeout << r) / count``."""
    total = 0
    for attempt in range(attempts):
        for dummy in range(nameservers):
            seconds = timeout << attempt
            if attempt > 0:
                seconds //= nameservers
            total += max(1, seconds)
    return total


def lookup_cost(name, config):
    """What one lookup of ``name`` costs a process with resolver ``config`` (pure)."""
    candidates = expand_name(name, config["search"], config["ndots"])
    return {"name": name, "candidates": candidates, "queries": len(candidates),
            "queries_a_aaaa": 2 * len(candidates),
            "wait_per_name_s": timeout_wait(config["timeout"], config["attempts"], len(config["nameservers"]))}


def read_resolv_confs(paths):
    found = {}
    for path in paths:
        try:
            with open(path) as handle:
                found[path] = parse_resolv_conf(handle.read())
        except (IOError, OSError):
            continue
    return found


# ------------------------------------------------------------------ checks (pure)


def is_cluster_name(name, domain):
    name, domain = name.rstrip(".").lower(), domain.rstrip(".").lower()
    return name == domain or name.endswith("." + domain)


def _statuses(rows):
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


def _server_view(server, rows):
    return {"server": server["name"], "address": server["address"], "node": server["node"], "role": server["role"],
            "statuses": _statuses(rows),
            "errors": sample(sorted(set(r["error"] for r in rows if r["error"])), 3)}


def _nodes(servers):
    return sorted(set(s["node"] for s in servers if s["node"]))


def _where(silent):
    """Where the silent servers run, as far as known: never '(on ?)' nor 'its node'."""
    nodes, unknown = _nodes(silent), [s["name"] for s in silent if not s["node"]]
    if nodes and not unknown:
        return " (on %s): an in-cluster connectivity problem between this node and %s" % (
            ", ".join(nodes), ", ".join(nodes))
    if nodes:
        return (" (on %s; the node of %s is not known): an in-cluster connectivity problem between this node and "
                "those servers" % (", ".join(nodes), ", ".join(unknown)))
    return (": a connectivity problem between this node and %s (the node %s on is not known; give the servers' "
            "node to narrow it down)" % ("that server" if len(silent) == 1 else "those servers",
                                         "it runs" if len(silent) == 1 else "they run"))


def _silent_where(silent):
    nodes = _nodes(silent)
    return "the servers on %s" % ", ".join(nodes) if nodes and all(s["node"] for s in silent) else \
        ", ".join(s["name"] for s in silent)


def _toward(silent):
    nodes = _nodes(silent)
    if nodes and all(s["node"] for s in silent):
        return "those nodes" if len(nodes) > 1 else nodes[0]
    return "those servers" if len(silent) > 1 else "that server"


def check_matrix(servers, rows, cluster_domain="cluster.local", subject="resolver"):
    """Findings from the in-cluster matrix: all / some servers fail, upstream broken."""
    out = []
    if not servers:
        return out
    by_server = dict((s["address"], [r for r in rows if r["server"] == s["address"]]) for s in servers)
    cluster_rows = [r for r in rows if is_cluster_name(r["name"], cluster_domain)]
    external = [r for r in rows if not is_cluster_name(r["name"], cluster_domain)]
    judged = cluster_rows or rows  # the names a cluster DNS server must answer

    def fails(server):
        mine = [r for r in judged if r["server"] == server["address"]]
        return bool(mine) and any(r["status"] in FAILED for r in mine)

    failing = [s for s in servers if fails(s)]
    working = [s for s in servers if s not in failing]
    if failing and not working:
        silent = all(r["status"] in NO_ANSWER for s in failing for r in by_server[s["address"]])
        out.append(finding(
            "dns.all_servers_fail", "critical", "DNS", subject,
            "none of the %d DNS servers answered correctly from here%s" % (
                len(servers), ": no answers at all, this node cannot reach any of them" if silent else ""),
            {"servers": sample(_server_view(s, by_server[s["address"]]) for s in failing)},
            "no answer at all: check the node's path to the pods (role k8snet.triage.connectivity, route_check, "
            "iptables_drops) and the kube-dns Service NAT; answers with REFUSED/SERVFAIL: the coredns "
            "configuration (Corefile forward / kubernetes plugin) and its logs" if silent else
            "the servers answer but wrongly: the coredns Corefile, its upstreams and the coredns logs"))
    elif failing:
        pods = [s for s in failing if s["role"] != "service"]
        silent = [s for s in failing if all(r["status"] in NO_ANSWER for r in by_server[s["address"]])]
        answering = [s for s in failing if s not in silent]
        parts = []
        if silent:
            parts.append("%s did not answer from here%s" % (", ".join(s["name"] for s in silent), _where(silent)))
        if answering:
            parts.append("%s answered with errors (%s)" % (", ".join(s["name"] for s in answering), ", ".join(
                sorted(set(r["status"] for s in answering for r in by_server[s["address"]] if r["status"] in FAILED)))))
        service_down = any(s["role"] == "service" for s in failing)
        out.append(finding(
            "dns.some_servers_fail", "critical" if service_down else "warning", "DNS", subject,
            "%d of %d DNS servers fail while %s work: %s" % (len(failing), len(servers), ", ".join(
                s["name"] for s in working), "; ".join(parts)),
            {"failing": sample(_server_view(s, by_server[s["address"]]) for s in failing),
             "working": sample(s["name"] for s in working),
             "failing_nodes": sorted(set(s["node"] for s in pods if s["node"]))},
            ("no answer from %s: check pod routes and drops between this node and %s (role "
             "k8snet.triage.connectivity, k8snet.triage.route_check, k8snet.triage.iptables_drops); " % (
                 _silent_where(silent), _toward(silent)) if silent else "")
            + ("REFUSED/SERVFAIL/wrong answers: check that pod's Corefile and logs, or delete the pod so it is "
               "recreated" if answering else "")))
    # upstream: servers that resolve cluster names but not external ones
    if cluster_rows and external:
        good = list(working)
        broken_ext = [r for r in external if r["status"] in FAILED and any(r["server"] == s["address"] for s in good)]
        ok_ext = [r for r in external if r["status"] == "ok" and any(r["server"] == s["address"] for s in good)]
        if good and broken_ext and not ok_ext:
            out.append(finding(
                "dns.upstream", "critical", "DNS", subject,
                "cluster names resolve but external names do not (%s): the upstream resolvers coredns forwards to "
                "fail" % ", ".join(sorted(set(r["name"] for r in broken_ext))),
                {"external": sample({"server": r["server"], "name": r["name"], "status": r["status"]}
                                    for r in broken_ext), "statuses": _statuses(broken_ext)},
                "check the `forward . <upstreams>` of the Corefile and that those upstreams answer from the coredns "
                "pods' nodes (dns_check with host_resolvers: true on those nodes)"))
    if not out:
        out.append(finding("dns.ok", "ok", "DNS", subject, "all %d DNS servers answered every name as expected" % len(servers),
                           {"servers": len(servers), "queries": len(rows)}))
    return out


def check_host_resolvers(confs, rows, cluster_domain="cluster.local", subject="host"):
    """Findings for the host network's resolvers (resolv.conf upstreams)."""
    if not confs:
        return [finding("dns.host_resolver", "warning", "DNS", subject,
                        "no readable resolv.conf with a nameserver line, so the host resolvers were not tested",
                        {}, "give resolv_conf paths that exist on this host")]
    external = [r for r in rows if not is_cluster_name(r["name"], cluster_domain)]
    cluster = [r for r in rows if is_cluster_name(r["name"], cluster_domain)]
    note = ("; %s names fail there as expected: the host network does not use the cluster DNS" % cluster_domain
            if cluster and all(r["status"] != "ok" for r in cluster) else "")
    evidence = {"resolv_conf": confs, "external": _statuses(external),
                "failing": sample({"server": r["server"], "name": r["name"], "status": r["status"], "error": r["error"]}
                                  for r in external if r["status"] in FAILED)}
    if any(r["status"] in FAILED for r in external):
        dead = sorted(set(r["server"] for r in external if r["status"] in FAILED))
        all_dead = not any(r["status"] == "ok" for r in external)
        return [finding("dns.host_resolver", "critical" if all_dead else "warning", "DNS", subject,
                        "the host's upstream resolvers %s fail for external names%s" % (", ".join(dead), note),
                        evidence, "coredns forwards to these resolvers by default (forward . /etc/resolv.conf): fix "
                        "or replace them (nameserver lines of %s)" % ", ".join(sorted(confs)))]
    return [finding("dns.host_resolver", "ok", "DNS", subject,
                    "the host's resolvers answer external names%s" % note, evidence)]


# ------------------------------------------------------------------ the pod's view

WALK_NEXT = ("nxdomain", "nodata", "servfail")  # res_nsearch asks the next name after these
SERVER_NEXT = ("timeout", "unreachable", "servfail", "refused")  # res_send asks the next nameserver after these
AMPLIFICATION_MIN = 3  # queries of one lookup that fail before it ends: a warning from this many
MAX_CANDIDATES = 16  # names of one lookup asked at most (a pathological search list is cut there)
MAX_REPEAT_SECONDS = 600  # repeat x (repeat_interval + timeout) is refused beyond this


def walk(ask, nameservers, name, config, expect=None):
    """One lookup of ``name`` as glibc makes it: the names of ``expand_name`` in order, each asked of
    ``nameservers`` in order until one answers (res_send), the lookup ending at an answer, a timeout
    or a refusal (res_nsearch).  ``ask(server, fqdn, expect)`` returns a ``Resolver.ask`` row.

    Returns {"name", "result", "answered_as", "answers", "queries", "failed_queries", "steps",
    "elapsed_ms"}; ``result`` is the status the lookup ends with."""
    steps, got, result = [], [], None
    started = time.time()
    for fqdn in expand_name(name, config["search"], config["ndots"])[:MAX_CANDIDATES]:
        row = None
        for server in nameservers:
            row = ask(server, fqdn, expect)
            steps.append({"name": fqdn, "server": server, "status": row["status"], "ms": row["elapsed_ms"],
                          "answers": row["answers"]})
            if row["status"] not in SERVER_NEXT:
                break
        got.append(row["status"])
        if row["status"] not in WALK_NEXT:
            result = row["status"]
            break
    if result is None:
        result = "nodata" if "nodata" in got else "servfail" if "servfail" in got else "nxdomain"
    answered = steps[-1] if steps and result in ("ok", "wrong_answer") else None
    return {"name": name, "result": result, "answered_as": answered["name"] if answered else None,
            "answers": answered["answers"] if answered else [], "queries": len(steps),
            "failed_queries": sum(1 for step in steps if step["status"] not in ("ok", "wrong_answer")),
            "steps": steps, "elapsed_ms": int((time.time() - started) * 1000)}


def walks(resolver, targets, names, config, expect):
    """A glibc lookup of every name against every target alone, in parallel: [walk + "server"]."""
    def ask(server, fqdn, wanted):
        return resolver.ask(server, fqdn, "udp", wanted)

    jobs = [(t, n) for t in targets for n in names]
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, max(1, len(jobs)))) as pool:
        futures = [pool.submit(walk, ask, [t], n, config, expect.get(n)) for t, n in jobs]
        return [dict(f.result(), server=t) for (t, n), f in zip(jobs, futures)]


def repeat_queries(resolver, server, name, count, interval, sleep=time.sleep):
    """``count`` queries of ``name`` to ``server``, one at a time, ``interval`` seconds apart:
    [(status, elapsed_ms)]."""
    rows = []
    for index in range(count):
        row = resolver.ask(server, name, "udp")
        rows.append((row["status"], row["elapsed_ms"]))
        if interval and index < count - 1:
            sleep(interval)
    return rows


def percentile(values, share):
    """Nearest-rank percentile of a sorted list (pure); None when empty."""
    if not values:
        return None
    rank = int(-(-share * len(values) // 1))  # ceil
    return values[max(0, min(len(values), rank) - 1)]


def repeat_stats(rows):
    """Timeout share and latency distribution of ``repeat_queries`` rows (pure)."""
    timeouts = sum(1 for status, dummy in rows if status in NO_ANSWER)
    answered = sorted(ms for status, ms in rows if status not in NO_ANSWER)
    return {"count": len(rows), "timeouts": timeouts,
            "timeout_rate": round(float(timeouts) / len(rows), 4) if rows else None,
            "statuses": _statuses({"status": status} for status, dummy in rows),
            "p50_ms": percentile(answered, 0.5), "p99_ms": percentile(answered, 0.99),
            "max_ms": answered[-1] if answered else None}


def _lookup_view(row):
    return {"name": row["name"], "result": row["result"], "answered_as": row["answered_as"],
            "queries": row["queries"], "failed_queries": row["failed_queries"],
            "steps": sample(({"name": s["name"], "server": s["server"], "status": s["status"]} for s in row["steps"]),
                            MAX_CANDIDATES)}


def check_pod_view(view):
    """Findings of the pod's view (pure).  ``view``: {"subject", "config", "nameservers" (used),
    "pod" and "node" (walk rows per server and name, from the pod's namespace and from the node),
    "lookups" (the pod's glibc lookup of each name over its nameservers), "repeat" (repeat_stats or
    None), "conntrack" (conntrack.sample_counters or None), "repeat_target"}."""
    subject, config, out = view["subject"], view["config"], []
    node_by = dict(((r["server"], r["name"]), r) for r in view["node"])
    pod_by = {}
    for row in view["pod"]:
        pod_by.setdefault(row["server"], []).append(row)
    used = view["nameservers"]
    dead = [ns for ns in used if pod_by.get(ns) and all(s["status"] in NO_ANSWER for r in pod_by[ns] for s in r["steps"])]
    if dead:
        first = used[0] in dead
        alive = [ns for ns in used if ns not in dead]
        node_answers = [ns for ns in dead if any(node_by.get((ns, r["name"]), {}).get("queries") and any(
            s["status"] not in NO_ANSWER for s in node_by[(ns, r["name"])]["steps"]) for r in pod_by[ns])]
        wait = config["timeout"]
        summary = "%s in the pod's resolv.conf never answer%s from the pod" % (
            ", ".join("%s (nameserver %d of %d)" % (ns, used.index(ns) + 1, len(used)) for ns in dead),
            "s" if len(dead) == 1 else "")
        if not alive:
            summary += ": no nameserver of the pod answers, every lookup fails"
        elif first:
            summary += (": every query waits %ds (its timeout:%d) for it before glibc asks %s, the 5-second DNS "
                        "delays" % (wait, wait, alive[0]))
        if node_answers:
            summary += "; %s answer%s the node: the path from the pod is broken, not the server" % (
                ", ".join(node_answers), "s" if len(node_answers) == 1 else "")
        out.append(finding(
            "dns.dead_nameserver", "critical" if not alive or first else "warning", "DNS", subject, summary,
            {"dead": dead, "nameservers": used, "answer_the_node": node_answers, "timeout_s": wait,
             "errors": sample(sorted(set(s["server"] + ": " + s["status"] for ns in dead for r in pod_by[ns]
                                         for s in r["steps"])), 3)},
            "fix or remove the dead entry: a NodeLocal DNS cache (node-local-dns DaemonSet) not running on this node, "
            "or a dnsConfig/kubelet --cluster-dns naming an address nothing serves; kubectl -n kube-system get pods "
            "-o wide -l k8s-app=node-local-dns"))
    pod_only = []
    for row in view["pod"]:
        other = node_by.get((row["server"], row["name"]))
        if other and other["result"] == "ok" and row["result"] != "ok":
            pod_only.append({"server": row["server"], "name": row["name"], "pod": row["result"], "node": "ok"})
    if pod_only:
        out.append(finding(
            "dns.pod_only_failure", "critical", "DNS", subject,
            "%d lookup(s) fail from the pod and work from the node: %s" % (len(pod_only), "; ".join(
                "%s via %s: %s" % (p["name"], p["server"], p["pod"]) for p in pod_only[:5])),
            {"pairs": sample(pod_only), "count": len(pod_only)},
            "the same names asked of the same servers answer the node: look at what differs for the pod, i.e. "
            "NetworkPolicies (egress to kube-dns on 53/UDP and TCP), the pod's route and veth "
            "(k8snet.triage.route_check), and drops of traffic from the pod CIDR (k8snet.triage.iptables_drops)"))
    for lookup in view["lookups"]:
        if lookup["failed_queries"] >= AMPLIFICATION_MIN:
            statuses = _statuses(lookup["steps"])
            failed = dict((k, v) for k, v in statuses.items() if k not in ("ok", "wrong_answer"))
            out.append(finding(
                "dns.search_amplification", "warning", "DNS", "%s: %s" % (subject, lookup["name"]),
                "one lookup of %s from the pod costs %d queries (%d with AAAA), %d of them %s%s (search %s, ndots:%d)" % (
                    lookup["name"], lookup["queries"], 2 * lookup["queries"], lookup["failed_queries"],
                    ", ".join("%d %s" % (v, k) for k, v in sorted(failed.items())),
                    " before %s answered" % lookup["answered_as"] if lookup["answered_as"] else ", and it failed",
                    " ".join(config["search"]) or "(none)", config["ndots"]),
                {"lookup": _lookup_view(lookup), "ndots": config["ndots"], "search": config["search"]},
                "write the name fully qualified with a trailing dot (%s.), or lower ndots in the pod's dnsConfig "
                "(options: [{name: ndots, value: \"2\"}]); coredns' autopath plugin answers the first query; "
                "NodeLocal DNS caches the negative answers" % (lookup["answered_as"] or lookup["name"])))
    stats = view.get("repeat")
    if stats and 0 < stats["timeouts"] < stats["count"]:
        out.append(finding(
            "dns.intermittent_timeout", "warning", "DNS", subject,
            "%d of %d queries to %s timed out (%.1f%%); the answered ones took p50 %s ms, p99 %s ms" % (
                stats["timeouts"], stats["count"], view.get("repeat_target"), 100.0 * stats["timeout_rate"],
                stats["p50_ms"], stats["p99_ms"]),
            dict(stats, server=view.get("repeat_target")),
            "timeouts on a fraction of UDP queries are the conntrack insert race (see conntrack.insert_failed), "
            "packet loss or an overloaded DNS pod: NodeLocal DNS (no conntrack for the pod's queries), options "
            "single-request-reopen or use-vc in the pod's dnsConfig, more coredns replicas"))
    elif stats:
        out.append(finding(
            "dns.intermittent_timeout", "ok" if not stats["timeouts"] else "warning", "DNS", subject,
            "%d of %d queries to %s timed out; the answered ones took p50 %s ms, p99 %s ms" % (
                stats["timeouts"], stats["count"], view.get("repeat_target"), stats["p50_ms"], stats["p99_ms"]),
            dict(stats, server=view.get("repeat_target")),
            "" if not stats["timeouts"] else "every query timed out: the server does not answer (dns.dead_nameserver)"))
    counters = view.get("conntrack")
    if counters and "insert_failed" in counters["delta"] and counters["delta"]["insert_failed"] <= 0:
        out.append(finding("conntrack.insert_failed", "ok", "L4", subject,
                           "the node's conntrack insert_failed counter did not grow during the %ss of queries"
                           % counters.get("seconds"), {"delta": counters["delta"], "seconds": counters.get("seconds")}))
    elif counters and counters["delta"].get("insert_failed", 0) > 0:
        delta = counters["delta"]
        out.append(finding(
            "conntrack.insert_failed", "warning", "L4", subject,
            "the node's conntrack insert_failed counter grew by %d during the %ss of queries (drop +%d, early_drop +%d):"
            " the UDP race that drops DNS queries and makes them wait for the 5 s retry" % (
                delta["insert_failed"], counters.get("seconds"), delta.get("drop", 0), delta.get("early_drop", 0)),
            {"delta": delta, "before": counters.get("before"), "after": counters.get("after"),
             "seconds": counters.get("seconds")},
            "run NodeLocal DNS (its queries skip conntrack), or set options single-request-reopen / use-vc in the "
            "pods' dnsConfig; kernels from 5.0 fix most of the DNAT race"))
    if view["pod"] and not [f for f in out if f["severity"] != "ok"]:
        out.append(finding("dns.pod_ok", "ok", "DNS", subject,
                           "from the pod, %d nameserver(s) of its resolv.conf and %d server(s) answered %d name(s) as "
                           "from the node" % (len(used), len(pod_by) - len([n for n in used if n in pod_by]),
                                              len(view["lookups"])),
                           {"nameservers": used, "lookups": sample(_lookup_view(x) for x in view["lookups"])}))
    return out


def _in_netns(pid, work):
    """``work()`` run in a thread moved into the network namespace of ``pid`` (threads it starts
    are there too); the calling thread and the rest of the process stay in their namespace."""
    from ansible_collections.k8snet.triage.plugins.module_utils.reachability import enter_netns  # pylint: disable=import-outside-toplevel
    box = {}

    def run():
        try:
            enter_netns(pid)
            box["result"] = work()
        except Exception as exc:  # pylint: disable=broad-except  # handed back to the calling thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="netns-%d" % pid)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _compact(rows, role_of):
    return [{"server": r["server"], "role": role_of.get(r["server"]), "name": r["name"], "result": r["result"],
             "answered_as": r["answered_as"], "queries": r["queries"]} for r in rows]


def pod_view(params, runner, resolver, servers, names, expect):
    """The pod's view: its namespace found by ``pod_ip``, its resolv.conf, every name looked up as its
    glibc would from inside the namespace and from the node, optional repeated queries with the
    node's conntrack counters around them.  Returns {"data", "findings"}."""
    found = pod_netns.find_by_ip(params["pod_ip"], runner)
    if found.get("host_network"):
        return host_network_view(params, found, resolver, servers, names)
    conf_file = pod_netns.pod_file(found, "/etc/resolv.conf")
    config = parse_resolver_config(conf_file["text"])
    pid, used = conf_file["pid"], config["nameservers"]
    role_of = dict((s["address"], s["role"]) for s in servers)
    role_of.update((ns, "resolv.conf") for ns in used)
    targets = list(used) + [s["address"] for s in servers if s["address"] not in used]
    pod_rows = _in_netns(pid, lambda: walks(resolver, targets, names, config, expect))
    node_rows = walks(resolver, targets, names, config, expect)
    lookups = []
    for name in names:
        first = next(r for r in pod_rows if r["server"] == used[0] and r["name"] == name)
        if all(s["status"] not in SERVER_NEXT for s in first["steps"]) or len(used) == 1:
            lookups.append(first)  # glibc never left the first nameserver: the same queries
        else:
            lookups.append(_in_netns(pid, lambda n=name: walk(
                lambda server, fqdn, wanted: resolver.ask(server, fqdn, "udp", wanted), used, n, config, expect.get(n))))
    subject = "pod %s" % found["ip"]
    repeat = params.get("repeat") or 0
    repeated = target = name = None
    if repeat:
        target, name = used[0], lookups[0]["answered_as"] or names[0]
        repeated = repeat_with_counters(resolver, target, name, repeat, params.get("repeat_interval") or 0, pid)
    stats, counters = (repeated["stats"], repeated["conntrack"]) if repeated else (None, None)
    view = {"subject": subject, "config": config, "nameservers": used, "pod": pod_rows, "node": node_rows,
            "lookups": lookups, "repeat": stats, "conntrack": counters, "repeat_target": target}
    data = {"ip": found["ip"], "pid": pid, "netns_inode": found["inode"], "netns_name": found["netns_name"],
            "found_by": found["method"], "namespaces_scanned": found["namespaces_scanned"],
            "resolv_conf": dict([(k, config[k]) for k in ("nameservers", "search", "ndots", "timeout", "attempts",
                                                          "options", "default_nameserver")],
                                truncated=conf_file["truncated"]),
            "costs": [lookup_cost(n, config) for n in names], "lookups": [_lookup_view(x) for x in lookups],
            "pod_matrix": _compact(pod_rows, role_of), "node_matrix": _compact(node_rows, role_of),
            "repeat": dict(stats, server=target, name=name) if stats else None,
            "conntrack": counters if counters and counters.get("delta") else None}
    return {"data": data, "findings": check_pod_view(view)}


def host_network_view(params, found, resolver, servers, names):
    """The pod view of an IP that is the node's own address (``found["host_network"]``): a pod with it runs
    with hostNetwork: true, in the node's network namespace, and which one cannot be told by the IP.
    Its DNS path is the node's: the servers (and host resolvers) asked from this node are what it
    reaches.  Its resolv.conf is kubelet's choice by dnsPolicy: ClusterFirstWithHostNet gives the
    cluster DNS (the servers), Default (and ClusterFirst, which falls back to Default on the host
    network) the node's resolv.conf, read here.  No pod-only verdict (dead nameserver, pod-only
    failure) is given: there is no pod-only path.  Repeated queries (``repeat``) go from the node to
    the first of ``servers``, else the node's first nameserver."""
    node_conf, conf_error = None, None
    try:
        node_conf = pod_netns.read_root_file(os.getpid(), "/etc/resolv.conf")
    except (ReadError, InputError) as exc:
        conf_error = exc.message
    config = parse_resolver_config(node_conf["text"]) if node_conf else None
    subject = "pod %s" % found["ip"]
    findings = []
    summary = ("%s is this node's own address: a pod with it runs on the host network (hostNetwork: true), in the "
               "node's network namespace, so its DNS path is the node's; which pod cannot be told by its IP. Its "
               "resolv.conf follows its dnsPolicy: ClusterFirstWithHostNet names the cluster DNS%s, Default (and "
               "ClusterFirst on the host network) the node's: %s" % (
                   found["ip"], " (%s, asked from this node above)" % ", ".join(s["address"] for s in servers)
                   if servers else "",
                   "nameservers %s" % ", ".join(config["nameservers"]) if config and config["nameservers"]
                   else "no nameserver (glibc then asks 127.0.0.1)" if config else "unreadable (%s)" % conf_error))
    findings.append(finding(
        "dns.pod_host_network", "info", "DNS", subject, summary,
        {"ip": found["ip"], "netns_inode": found["inode"], "node_nameservers": config["nameservers"] if config else None,
         "servers": [s["address"] for s in servers]},
        "the node's resolvers are checked with host_resolvers: true; to see one pod's own view, give the IP of a "
        "pod that is not on the host network"))
    repeat = params.get("repeat") or 0
    repeated = target = name = None
    if repeat:
        node_first = config["nameservers"][0] if config and config["nameservers"] else None
        target = servers[0]["address"] if servers else node_first
        if target is None:
            raise InputError("repeat: %s is on the host network and this node's resolv.conf names no nameserver: "
                             "give servers (the kube-dns Service IP) to repeat the queries to" % found["ip"])
        name = next((n for n in names if "." in n.rstrip(".")), names[0])
        repeated = repeat_with_counters(resolver, target, name, repeat, params.get("repeat_interval") or 0)
        findings += check_pod_view({"subject": subject, "config": config, "nameservers": [], "pod": [], "node": [],
                                    "lookups": [], "repeat": repeated["stats"], "conntrack": repeated["conntrack"],
                                    "repeat_target": target})
    data = {"ip": found["ip"], "host_network": True, "pid": None, "netns_inode": found["inode"],
            "netns_name": found["netns_name"], "found_by": found["method"],
            "namespaces_scanned": found["namespaces_scanned"],
            "resolv_conf": dict([(k, config[k]) for k in ("nameservers", "search", "ndots", "timeout", "attempts",
                                                          "options", "default_nameserver")],
                                truncated=node_conf["truncated"], of="node") if config else None,
            "repeat": dict(repeated["stats"], server=target, name=name) if repeated else None,
            "conntrack": repeated["conntrack"] if repeated and repeated["conntrack"] and
            repeated["conntrack"].get("delta") else None}
    return {"data": data, "findings": findings}


def repeat_with_counters(resolver, server, name, count, interval, netns_pid=None):
    """``count`` queries (no retries), from the namespace of ``netns_pid`` when given, with this
    node's conntrack counters read before and after them (this thread never leaves the node's
    namespace): {"stats": repeat_stats, "conntrack": sample_counters or None when unreadable}."""
    once = Resolver(resolver.backend, resolver.port, resolver.rdtype, resolver.timeout, 0)
    box = {}

    def queries(dummy_window):
        def work():
            return repeat_queries(once, server, name, count, interval)
        box["rows"] = _in_netns(netns_pid, work) if netns_pid else work()

    counters = conntrack.sample_counters(1, sleep=queries)
    return {"stats": repeat_stats(box["rows"]), "conntrack": counters if counters.get("delta") else None}


def validate_repeat(repeat, interval, timeout):
    if repeat and repeat * (interval + timeout) > MAX_REPEAT_SECONDS:
        raise InputError("repeat=%d x (repeat_interval=%s + timeout=%s) is longer than %ds: give fewer repeats or a "
                         "shorter interval" % (repeat, interval, timeout, MAX_REPEAT_SECONDS))


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner=None):
    """The whole dns_check from this node: ``params`` (dns_check's options, a plain dict) in,
    ``{"data": {backend, matrix, host_matrix, resolv_conf, summary}, "findings": [...]}`` out.
    Queries go out in threads (see ``Resolver.matrix``); no command is run."""
    names, servers_in = params.get("names") or [], params.get("servers") or []
    host_resolvers = params.get("host_resolvers", False)
    timeout, retries, port = params.get("timeout", 2.0), params.get("retries", 1), params.get("port", 53)
    protocols = params.get("protocols") or ["udp", "tcp"]
    cluster_domain = params.get("cluster_domain") or "cluster.local"
    pod_ip, repeat = params.get("pod_ip"), params.get("repeat") or 0
    if not servers_in and not host_resolvers and not pod_ip:
        raise InputError("nothing to ask: give servers (the kube-dns Service IP and coredns pod IPs), "
                         "host_resolvers: true and/or pod_ip")
    if repeat and not pod_ip and not servers_in:
        raise InputError("repeat asks the pod's first nameserver, or else the first of servers: give pod_ip or servers")
    if timeout <= 0 or retries < 0 or not 0 < port < 65536:
        raise InputError("timeout must be > 0, retries >= 0 and port 1..65535 (got %s, %s, %s)"
                         % (timeout, retries, port))
    validate_repeat(repeat, params.get("repeat_interval") or 0, timeout)
    servers = validate_servers(servers_in)
    expect = validate_names(names, params.get("expect") or {})
    resolver = Resolver(params.get("backend") or "auto", port, params.get("record_type") or "A", timeout, retries)
    # a server is asked a name as it is: a name of one label means something only through a search
    # list (the pod's view expands it), so the servers and host resolvers are asked the others
    asked = [n for n in names if "." in n.rstrip(".")]
    if not asked and (servers or host_resolvers) and not pod_ip:
        raise InputError("names %s are single labels, which a server is asked as they are (no search list): give "
                         "fully qualified names such as web.default.svc.cluster.local, or pod_ip to look them up "
                         "through that pod's search list" % ", ".join(names))
    rows = resolver.matrix([s["address"] for s in servers], asked, protocols, expect) if asked else []
    findings = check_matrix(servers, rows, cluster_domain, "cluster DNS") if servers and asked else []
    pod = repeat_data = None
    if pod_ip:
        pod = pod_view(params, runner, resolver, servers, names, expect)
        findings += pod["findings"]
    elif repeat:
        repeat_data = repeat_with_counters(resolver, servers[0]["address"], asked[0], repeat,
                                           params.get("repeat_interval") or 0)
        findings += check_pod_view({"subject": "this node", "config": None, "nameservers": [], "pod": [], "node": [],
                                    "lookups": [], "repeat": repeat_data["stats"], "conntrack": repeat_data["conntrack"],
                                    "repeat_target": servers[0]["address"]})
    confs, host_rows = {}, []
    if host_resolvers and asked:
        confs = dict((k, v) for k, v in read_resolv_confs(params.get("resolv_conf") or list(RESOLV_CONFS)).items() if v)
        upstreams = []
        for found in confs.values():
            upstreams.extend(a for a in found if a not in upstreams)
        host_rows = resolver.matrix(upstreams, asked, protocols[:1], expect) if asked else []
        findings += check_host_resolvers(confs, host_rows, cluster_domain, "host resolvers")
    summary = {}
    for row in rows + host_rows:
        summary[row["status"]] = summary.get(row["status"], 0) + 1
    data = {"backend": resolver.backend, "matrix": rows, "host_matrix": host_rows, "resolv_conf": confs,
            "summary": summary, "pod": pod["data"] if pod else None,
            "repeat": dict(repeat_data["stats"], server=servers[0]["address"], name=asked[0]) if repeat_data else None}
    return {"data": data, "findings": findings}
