# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The dns_check from this node (``node_check``): its options checked, DNS queries against each
resolver separately, and the findings their matrix implies (``check_matrix``, ``check_host_resolvers``,
pure).

The other parts: ``dns_wire`` (the wire format, the resolver and the model of one answer),
``resolv_conf`` (resolv.conf read and one lookup made as glibc does) and ``dns_pod_view`` (the
pod's view, repeated queries and their findings).
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.dns.options import EXTERNAL_NAMES, RESOLV_CONFS, server_item
from ansible_collections.k8snet.triage.plugins.module_utils.dns.pod_view import (
    check_pod_view, pod_view, repeat_only_view, repeat_with_counters)
from ansible_collections.k8snet.triage.plugins.module_utils.dns.wire import FAILED, NO_ANSWER, Resolver, status_counts
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.dns.resolv_conf import read_resolv_confs

MAX_REPEAT_SECONDS = 600  # repeat x (repeat_interval + timeout) is refused beyond this


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


def validate_repeat(repeat, interval, timeout):
    if repeat and repeat * (interval + timeout) > MAX_REPEAT_SECONDS:
        raise InputError("repeat=%d x (repeat_interval=%s + timeout=%s) is longer than %ds: give fewer repeats or a "
                         "shorter interval" % (repeat, interval, timeout, MAX_REPEAT_SECONDS))


# ------------------------------------------------------------------ checks (pure)


def is_cluster_name(name, domain):
    name, domain = name.rstrip(".").lower(), domain.rstrip(".").lower()
    return name == domain or name.endswith("." + domain)


def _cluster_and_external(rows, cluster_domain):
    """``rows`` split: those of names in ``cluster_domain``, those of the other (external) names."""
    return ([r for r in rows if is_cluster_name(r["name"], cluster_domain)],
            [r for r in rows if not is_cluster_name(r["name"], cluster_domain)])


def _server_view(server, rows):
    return {"server": server["name"], "address": server["address"], "node": server["node"], "role": server["role"],
            "statuses": status_counts(rows),
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


def _fails(server, judged):
    """Whether ``server`` was asked one of the ``judged`` rows and failed one."""
    mine = [r for r in judged if r["server"] == server["address"]]
    return bool(mine) and any(r["status"] in FAILED for r in mine)


def _silent(server, by_server):
    """Whether none of ``server``'s queries got an answer."""
    return all(r["status"] in NO_ANSWER for r in by_server[server["address"]])


def _all_fail(servers, failing, by_server, subject):
    """dns.all_servers_fail: no server answers correctly from here."""
    silent = all(r["status"] in NO_ANSWER for s in failing for r in by_server[s["address"]])
    return finding(
        "dns.all_servers_fail", "critical", "DNS", subject,
        "none of the %d DNS servers answered correctly from here%s" % (
            len(servers), ": no answers at all, this node cannot reach any of them" if silent else ""),
        {"servers": sample(_server_view(s, by_server[s["address"]]) for s in failing)},
        "no answer at all: check the node's path to the pods (role k8snet.triage.connectivity, route_check, "
        "iptables_drops) and the kube-dns Service NAT; answers with REFUSED/SERVFAIL: the coredns "
        "configuration (Corefile forward / kubernetes plugin) and its logs" if silent else
        "the servers answer but wrongly: the coredns Corefile, its upstreams and the coredns logs")


def _failure_parts(silent, answering, by_server):
    """What the failing servers did: the silent ones and where they run, the answering ones' errors."""
    parts = []
    if silent:
        parts.append("%s did not answer from here%s" % (", ".join(s["name"] for s in silent), _where(silent)))
    if answering:
        parts.append("%s answered with errors (%s)" % (", ".join(s["name"] for s in answering), ", ".join(
            sorted(set(r["status"] for s in answering for r in by_server[s["address"]] if r["status"] in FAILED)))))
    return parts


def _some_fail_remediation(silent, answering):
    """The remediation of dns.some_servers_fail: the path to the silent servers, the answering ones' pods."""
    return (("no answer from %s: check pod routes and drops between this node and %s (role "
             "k8snet.triage.connectivity, k8snet.triage.route_check, k8snet.triage.iptables_drops); " % (
                 _silent_where(silent), _toward(silent)) if silent else "")
            + ("REFUSED/SERVFAIL/wrong answers: check that pod's Corefile and logs, or delete the pod so it is "
               "recreated" if answering else ""))


def _some_fail(servers, failing, working, by_server, subject):
    """dns.some_servers_fail: some servers fail while the others work (critical when the Service fails)."""
    pods = [s for s in failing if s["role"] != "service"]
    silent = [s for s in failing if _silent(s, by_server)]
    answering = [s for s in failing if s not in silent]
    service_down = any(s["role"] == "service" for s in failing)
    return finding(
        "dns.some_servers_fail", "critical" if service_down else "warning", "DNS", subject,
        "%d of %d DNS servers fail while %s work: %s" % (len(failing), len(servers), ", ".join(
            s["name"] for s in working), "; ".join(_failure_parts(silent, answering, by_server))),
        {"failing": sample(_server_view(s, by_server[s["address"]]) for s in failing),
         "working": sample(s["name"] for s in working),
         "failing_nodes": _nodes(pods)},
        _some_fail_remediation(silent, answering))


def _asked_of(row, servers):
    """Whether ``row`` is the answer of one of ``servers``."""
    return any(row["server"] == s["address"] for s in servers)


def _upstream(working, external, subject):
    """dns.upstream, when the working servers resolve cluster names but fail every external one: [] or [it]."""
    good = list(working)
    broken_ext = [r for r in external if r["status"] in FAILED and _asked_of(r, good)]
    ok_ext = [r for r in external if r["status"] == "ok" and _asked_of(r, good)]
    if not (good and broken_ext and not ok_ext):
        return []
    return [finding(
        "dns.upstream", "critical", "DNS", subject,
        "cluster names resolve but external names do not (%s): the upstream resolvers coredns forwards to "
        "fail" % ", ".join(sorted(set(r["name"] for r in broken_ext))),
        {"external": sample({"server": r["server"], "name": r["name"], "status": r["status"]}
                            for r in broken_ext), "statuses": status_counts(broken_ext)},
        "check the `forward . <upstreams>` of the Corefile and that those upstreams answer from the coredns "
        "pods' nodes (dns_check with host_resolvers: true on those nodes)")]


def check_matrix(servers, rows, cluster_domain="cluster.local", subject="resolver"):
    """Findings from the in-cluster matrix: all / some servers fail, upstream broken."""
    out = []
    if not servers:
        return out
    by_server = dict((s["address"], [r for r in rows if r["server"] == s["address"]]) for s in servers)
    cluster_rows, external = _cluster_and_external(rows, cluster_domain)
    judged = cluster_rows or rows  # the names a cluster DNS server must answer
    failing = [s for s in servers if _fails(s, judged)]
    working = [s for s in servers if s not in failing]
    if failing and not working:
        out.append(_all_fail(servers, failing, by_server, subject))
    elif failing:
        out.append(_some_fail(servers, failing, working, by_server, subject))
    # upstream: servers that resolve cluster names but not external ones
    if cluster_rows and external:
        out.extend(_upstream(working, external, subject))
    if not out:
        out.append(finding("dns.ok", "ok", "DNS", subject,
                           "all %d DNS servers answered every name as expected" % len(servers),
                           {"servers": len(servers), "queries": len(rows)}))
    return out


def check_host_resolvers(confs, rows, cluster_domain="cluster.local", subject="host"):
    """Findings for the host network's resolvers (resolv.conf upstreams): ok only when they were asked an external
    name (cluster names fail there by design) and answered it."""
    if not confs:
        return [finding("dns.host_resolver", "warning", "DNS", subject,
                        "no readable resolv.conf with a nameserver line, so the host resolvers were not tested",
                        {}, "give resolv_conf paths that exist on this host")]
    cluster, external = _cluster_and_external(rows, cluster_domain)
    silent = sorted(set(r["server"] for r in rows)) if rows and all(r["status"] in NO_ANSWER for r in rows) else []
    note = ("; %s names fail there as expected: the host network does not use the cluster DNS" % cluster_domain
            if cluster and all(r["status"] != "ok" for r in cluster) and not silent else "")
    evidence = {"resolv_conf": confs, "external": status_counts(external),
                "failing": sample({"server": r["server"], "name": r["name"], "status": r["status"], "error": r["error"]}
                                  for r in external if r["status"] in FAILED),
                "unreachable": silent}
    if not external:
        return [finding("dns.host_resolver", "warning", "DNS", subject,
                        "the host resolvers were not tested: no external name was asked (only %s names, which they "
                        "do not serve)%s" % (cluster_domain, "; and none of them (%s) answered at all" % ", ".join(
                            sample(silent)) if silent else ""), evidence,
                        "give external_names (e.g. registry.k8s.io, or a name your nodes resolve through a mirror) or "
                        "an external name in names")]
    if any(r["status"] in FAILED for r in external):
        dead = sorted(set(r["server"] for r in external if r["status"] in FAILED))
        all_dead = not any(r["status"] == "ok" for r in external)
        return [finding("dns.host_resolver", "critical" if all_dead else "warning", "DNS", subject,
                        "the host's upstream resolvers %s fail for external names%s" % (
                            ", ".join(dead), "; none of them answered at all (unreachable or timed out)" if silent
                            else note),
                        evidence, "coredns forwards to these resolvers by default (forward . /etc/resolv.conf): fix "
                        "or replace them (nameserver lines of %s)" % ", ".join(sorted(confs)))]
    return [finding("dns.host_resolver", "ok", "DNS", subject,
                    "the host's resolvers answer external names%s" % note, evidence)]


# ----------------------------------------------------------------- the node check (one shape)


def _check_what_to_ask(servers_in, host_resolvers, pod_ip, repeat):
    """Refuse a check with nothing to ask, or repeated queries with nowhere to send them."""
    if not servers_in and not host_resolvers and not pod_ip:
        raise InputError("nothing to ask: give servers (the kube-dns Service IP and coredns pod IPs), "
                         "host_resolvers: true and/or pod_ip")
    if repeat and not pod_ip and not servers_in:
        raise InputError("repeat asks the pod's first nameserver, or else the first of servers: give pod_ip or servers")


def _validated(params, servers_in, names, repeat):
    """The query options, the repeat's length, the servers, the names and expect checked in this order:
    (resolver, servers, expect)."""
    timeout, retries, port = params.get("timeout", 2.0), params.get("retries", 1), params.get("port", 53)
    if timeout <= 0 or retries < 0 or not 0 < port < 65536:
        raise InputError("timeout must be > 0, retries >= 0 and port 1..65535 (got %s, %s, %s)"
                         % (timeout, retries, port))
    validate_repeat(repeat, params.get("repeat_interval") or 0, timeout)
    servers = validate_servers(servers_in)
    expect = validate_names(names, params.get("expect") or {})
    resolver = Resolver(params.get("backend") or "auto", port, params.get("record_type") or "A", timeout, retries)
    return resolver, servers, expect


def _asked_names(names, servers, host_resolvers, pod_ip):
    """The names the servers and host resolvers are asked: those of more than one label."""
    # a server is asked a name as it is: a name of one label means something only through a search
    # list (the pod's view expands it), so the servers and host resolvers are asked the others
    asked = [n for n in names if "." in n.rstrip(".")]
    if not asked and (servers or host_resolvers) and not pod_ip:
        raise InputError("names %s are single labels, which a server is asked as they are (no search list): give "
                         "fully qualified names such as web.default.svc.cluster.local, or pod_ip to look them up "
                         "through that pod's search list" % ", ".join(names))
    return asked


def _ask_servers(resolver, servers, asked, protocols, expect, cluster_domain):
    """The matrix of the servers, the asked names and the protocols, and its findings: (rows, findings)."""
    rows = resolver.matrix([s["address"] for s in servers], asked, protocols, expect) if asked else []
    findings = check_matrix(servers, rows, cluster_domain, "cluster DNS") if servers and asked else []
    return rows, findings


def host_resolver_names(asked, external_names):
    """The names the host resolvers are asked: the servers' names, then the external names not among them."""
    out = list(asked)
    out.extend(n for n in external_names if n not in out)
    return out


def _ask_host_resolvers(params, resolver, asked, protocols, expect):
    """The host's resolv.conf files with a nameserver, and the matrix of their nameservers (asked ``asked``, the
    servers' names and the external names): (confs, rows)."""
    confs = dict((k, v) for k, v in read_resolv_confs(params.get("resolv_conf") or list(RESOLV_CONFS)).items() if v)
    upstreams = []
    for found in confs.values():
        upstreams.extend(a for a in found if a not in upstreams)
    host_rows = resolver.matrix(upstreams, asked, protocols[:1], expect) if asked else []
    return confs, host_rows


def node_check(params, runner=None):
    """The whole dns_check from this node: ``params`` (dns_check's options, a plain dict) in,
    ``{"data": {backend, matrix, host_matrix, resolv_conf, summary}, "findings": [...]}`` out.
    Queries go out in threads (see ``Resolver.matrix``); no command is run."""
    names, servers_in = params.get("names") or [], params.get("servers") or []
    host_resolvers = params.get("host_resolvers", False)
    protocols = params.get("protocols") or ["udp", "tcp"]
    cluster_domain = params.get("cluster_domain") or "cluster.local"
    pod_ip, repeat = params.get("pod_ip"), params.get("repeat") or 0
    _check_what_to_ask(servers_in, host_resolvers, pod_ip, repeat)
    resolver, servers, expect = _validated(params, servers_in, names, repeat)
    asked = _asked_names(names, servers, host_resolvers, pod_ip)
    rows, findings = _ask_servers(resolver, servers, asked, protocols, expect, cluster_domain)
    pod = repeat_data = None
    if pod_ip:
        pod = pod_view(params, runner, resolver, servers, names, expect)
        findings += pod["findings"]
    elif repeat:
        repeat_data = repeat_with_counters(resolver, servers[0]["address"], asked[0], repeat,
                                           params.get("repeat_interval") or 0)
        findings += check_pod_view(repeat_only_view("this node", None, repeat_data, servers[0]["address"]))
    confs, host_rows = {}, []
    external_names = params.get("external_names")
    host_names = host_resolver_names(asked, list(EXTERNAL_NAMES) if external_names is None else external_names)
    if host_resolvers and host_names:
        confs, host_rows = _ask_host_resolvers(params, resolver, host_names, protocols, expect)
        findings += check_host_resolvers(confs, host_rows, cluster_domain, "host resolvers")
    data = {"backend": resolver.backend, "matrix": rows, "host_matrix": host_rows, "resolv_conf": confs,
            "summary": status_counts(rows + host_rows), "pod": pod["data"] if pod else None,
            "repeat": dict(repeat_data["stats"], server=servers[0]["address"], name=asked[0]) if repeat_data else None}
    return {"data": data, "findings": findings}
