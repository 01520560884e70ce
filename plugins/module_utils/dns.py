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

import random
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils import params
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample

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
BACKENDS = ("auto", "dnspython", "stdlib")
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
RDTYPES = {"A": 1, "AAAA": 28, "CNAME": 5}
RESOLV_CONFS = ("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf")
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
    with socket.create_connection((server, port), timeout=timeout) as sock:
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


SERVER_KEYS = ("address", "name", "node", "role")
SERVER_ROLES = ("service", "pod", "upstream")


def server_item(option, item):
    """One server as users write it: a plain address (``10.96.0.10``, as after ``dig @``) or a dict
    {address, name, node, role} -> the dict, with the address normalised (pure; InputError otherwise)."""
    if isinstance(item, str):
        return {"address": params.address()(option, item)}
    if not isinstance(item, dict):
        raise InputError("%s=%r is invalid: give an address such as 10.96.0.10, or a dict {address, name, node, role}"
                         % (option, item), option=option)
    unknown = sorted(str(k) for k in item if k not in SERVER_KEYS)
    if unknown:
        raise InputError("%s has unknown keys %s: give address, name, node and role only" % (option, ", ".join(unknown)),
                         option=option)
    if item.get("address") is None:
        raise InputError("%s has no address: give {address: 10.96.0.10} or the plain address" % option, option=option)
    out = params.fields(address=params.address(), name=params.short_text, node=params.node_name,
                        role=params.choice(*SERVER_ROLES))(option, item)
    return out


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


def parse_resolv_conf(text):
    """nameserver lines of a resolv.conf (pure); comments and other keywords ignored."""
    out = []
    for line in text.splitlines():
        parts = line.split("#", 1)[0].split(";", 1)[0].split()
        if len(parts) >= 2 and parts[0] == "nameserver" and parts[1] not in out:
            out.append(parts[1])
    return out


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
    if not servers_in and not host_resolvers:
        raise InputError("nothing to ask: give servers (the kube-dns Service IP and coredns pod IPs) "
                         "and/or host_resolvers: true")
    if timeout <= 0 or retries < 0 or not 0 < port < 65536:
        raise InputError("timeout must be > 0, retries >= 0 and port 1..65535 (got %s, %s, %s)"
                         % (timeout, retries, port))
    servers = validate_servers(servers_in)
    expect = validate_names(names, params.get("expect") or {})
    resolver = Resolver(params.get("backend") or "auto", port, params.get("record_type") or "A", timeout, retries)
    rows = resolver.matrix([s["address"] for s in servers], names, protocols, expect)
    findings = check_matrix(servers, rows, cluster_domain, "cluster DNS") if servers else []
    confs, host_rows = {}, []
    if host_resolvers:
        confs = dict((k, v) for k, v in read_resolv_confs(params.get("resolv_conf") or list(RESOLV_CONFS)).items() if v)
        upstreams = []
        for found in confs.values():
            upstreams.extend(a for a in found if a not in upstreams)
        host_rows = resolver.matrix(upstreams, names, protocols[:1], expect)
        findings += check_host_resolvers(confs, host_rows, cluster_domain, "host resolvers")
    summary = {}
    for row in rows + host_rows:
        summary[row["status"]] = summary.get(row["status"], 0) + 1
    data = {"backend": resolver.backend, "matrix": rows, "host_matrix": host_rows, "resolv_conf": confs,
            "summary": summary}
    return {"data": data, "findings": findings}


# The argument spec of one server in its dict form (the servers option takes ``raw`` items: a plain
# address or such a dict, checked by ``server_item``).
SERVER_SPEC = dict(
    address=dict(type="str", required=True),
    name=dict(type="str"),
    node=dict(type="str"),
    role=dict(type="str", choices=["service", "pod", "upstream"], default="pod"),
)

# The options of the DNS check: dns_check's, and node_triage's dns (with the triage's defaults).
# Paired one-to-one with the doc fragment k8snet.triage.dns.
CHECK_SPEC = dict(
    names=dict(type="list", elements="str", required=True),
    servers=dict(type="list", elements="raw", default=[]),
    protocols=dict(type="list", elements="str", choices=["udp", "tcp"], default=["udp", "tcp"]),
    record_type=dict(type="str", choices=["A", "AAAA"], default="A"),
    port=dict(type="int", default=53),
    timeout=dict(type="float", default=2.0),
    retries=dict(type="int", default=1),
    expect=dict(type="dict", default={}),
    cluster_domain=dict(type="str", default="cluster.local"),
    host_resolvers=dict(type="bool", default=False),
    resolv_conf=dict(type="list", elements="path", default=list(RESOLV_CONFS)),
    backend=dict(type="str", choices=list(BACKENDS), default="auto"),
)


# The option rules (bounds, shapes) of the dns options, used by module dns_check and by node_triage.
RULES = dict(
    names=params.each(params.dns_name, max_items=64, non_empty=True,
                      what="give at least one name to resolve, e.g. kubernetes.default.svc.cluster.local"),
    servers=params.each(server_item, max_items=64),
    port=params.port,
    timeout=params.seconds(0, 30),
    retries=params.count(0, 5, "retries"),
    expect=params.mapping(params.dns_name, params.scalar_or_list(params.address(), max_items=64), max_items=64),
    cluster_domain=params.dns_name,
    resolv_conf=params.each(params.absolute_path, max_items=16),
    protocols=params.each(params.choice("udp", "tcp"), max_items=2, non_empty=True, what="give udp and/or tcp"),
)
