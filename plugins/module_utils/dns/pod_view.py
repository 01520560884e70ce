# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pod's view of DNS: its resolv.conf, every name looked up as its glibc would from inside its
network namespace and from the node, repeated queries with the node's conntrack counters around
them and their statistics, and the findings of that view (``check_pod_view``, pure)."""

from __future__ import annotations

import os
import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import check as conntrack
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import pod_netns
from ansible_collections.k8snet.triage.plugins.module_utils.dns.wire import NO_ANSWER, Resolver, status_counts
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.dns.resolv_conf import (
    MAX_CANDIDATES, SERVER_NEXT, lookup_cost, parse_resolver_config, walk, walks)

AMPLIFICATION_MIN = 3  # queries of one lookup that fail before it ends: a warning from this many
# the resolver settings of a resolv.conf the view's data shows
RESOLV_CONF_KEYS = ("nameservers", "search", "ndots", "timeout", "attempts", "options", "default_nameserver")


def _lookup_view(row):
    return {"name": row["name"], "result": row["result"], "answered_as": row["answered_as"],
            "queries": row["queries"], "failed_queries": row["failed_queries"],
            "steps": sample(({"name": s["name"], "server": s["server"], "status": s["status"]} for s in row["steps"]),
                            MAX_CANDIDATES)}


# ------------------------------------------------------------------ the findings of the view (pure)


def _silent_from_pod(rows):
    """Whether no step of these walk rows (one nameserver's, from the pod) got an answer."""
    return all(s["status"] in NO_ANSWER for r in rows for s in r["steps"])


def _answers_the_node(ns, pod_rows, node_by):
    """Whether nameserver ``ns`` answered the node for one of the names of its ``pod_rows``."""
    return any(node_by.get((ns, r["name"]), {}).get("queries") and any(
        s["status"] not in NO_ANSWER for s in node_by[(ns, r["name"])]["steps"]) for r in pod_rows)


def _dead_summary(dead, used, alive, node_answers, wait):
    """The summary of dns.dead_nameserver: which entries, what their silence costs, whether the node gets answers."""
    summary = "%s in the pod's resolv.conf never answer%s from the pod" % (
        ", ".join("%s (nameserver %d of %d)" % (ns, used.index(ns) + 1, len(used)) for ns in dead),
        "s" if len(dead) == 1 else "")
    if not alive:
        summary += ": no nameserver of the pod answers, every lookup fails"
    elif used[0] in dead:
        summary += (": every query waits %ds (its timeout:%d) for it before glibc asks %s, the 5-second DNS "
                    "delays" % (wait, wait, alive[0]))
    if node_answers:
        summary += "; %s answer%s the node: the path from the pod is broken, not the server" % (
            ", ".join(node_answers), "s" if len(node_answers) == 1 else "")
    return summary


def _dead_nameservers(used, pod_by, node_by, config, subject):
    """dns.dead_nameserver: the pod's nameservers that never answer it: [] or [it]."""
    dead = [ns for ns in used if pod_by.get(ns) and _silent_from_pod(pod_by[ns])]
    if not dead:
        return []
    first = used[0] in dead
    alive = [ns for ns in used if ns not in dead]
    node_answers = [ns for ns in dead if _answers_the_node(ns, pod_by[ns], node_by)]
    wait = config["timeout"]
    return [finding(
        "dns.dead_nameserver", "critical" if not alive or first else "warning", "DNS", subject,
        _dead_summary(dead, used, alive, node_answers, wait),
        {"dead": dead, "nameservers": used, "answer_the_node": node_answers, "timeout_s": wait,
         "errors": sample(sorted(set(s["server"] + ": " + s["status"] for ns in dead for r in pod_by[ns]
                                     for s in r["steps"])), 3)},
        "fix or remove the dead entry: a NodeLocal DNS cache (node-local-dns DaemonSet) not running on this node, "
        "or a dnsConfig/kubelet --cluster-dns naming an address nothing serves; kubectl -n kube-system get pods "
        "-o wide -l k8s-app=node-local-dns")]


def _pod_only_failures(pod_rows, node_by, subject):
    """dns.pod_only_failure: the lookups that fail from the pod and work from the node: [] or [it]."""
    pod_only = []
    for row in pod_rows:
        other = node_by.get((row["server"], row["name"]))
        if other and other["result"] == "ok" and row["result"] != "ok":
            pod_only.append({"server": row["server"], "name": row["name"], "pod": row["result"], "node": "ok"})
    if not pod_only:
        return []
    return [finding(
        "dns.pod_only_failure", "critical", "DNS", subject,
        "%d lookup(s) fail from the pod and work from the node: %s" % (len(pod_only), "; ".join(
            "%s via %s: %s" % (p["name"], p["server"], p["pod"]) for p in pod_only[:5])),
        {"pairs": sample(pod_only), "count": len(pod_only)},
        "the same names asked of the same servers answer the node: look at what differs for the pod, i.e. "
        "NetworkPolicies (egress to kube-dns on 53/UDP and TCP), the pod's route and veth "
        "(k8snet.triage.route_check), and drops of traffic from the pod CIDR (k8snet.triage.iptables_drops)")]


def _search_amplification(lookup, config, subject):
    """dns.search_amplification: one lookup that costs AMPLIFICATION_MIN or more failed queries."""
    statuses = status_counts(lookup["steps"])
    failed = dict((k, v) for k, v in statuses.items() if k not in ("ok", "wrong_answer"))
    return finding(
        "dns.search_amplification", "warning", "DNS", "%s: %s" % (subject, lookup["name"]),
        "one lookup of %s from the pod costs %d queries (%d with AAAA), %d of them %s%s (search %s, ndots:%d)" % (
            lookup["name"], lookup["queries"], 2 * lookup["queries"], lookup["failed_queries"],
            ", ".join("%d %s" % (v, k) for k, v in sorted(failed.items())),
            " before %s answered" % lookup["answered_as"] if lookup["answered_as"] else ", and it failed",
            " ".join(config["search"]) or "(none)", config["ndots"]),
        {"lookup": _lookup_view(lookup), "ndots": config["ndots"], "search": config["search"]},
        "write the name fully qualified with a trailing dot (%s.), or lower ndots in the pod's dnsConfig "
        "(options: [{name: ndots, value: \"2\"}]); coredns' autopath plugin answers the first query; "
        "NodeLocal DNS caches the negative answers" % (lookup["answered_as"] or lookup["name"]))


def _intermittent_timeouts(stats, target, subject):
    """dns.intermittent_timeout of the repeated queries' ``stats`` (none without them): [] or [it]."""
    if not stats:
        return []
    if 0 < stats["timeouts"] < stats["count"]:
        return [finding(
            "dns.intermittent_timeout", "warning", "DNS", subject,
            "%d of %d queries to %s timed out (%.1f%%); the answered ones took p50 %s ms, p99 %s ms" % (
                stats["timeouts"], stats["count"], target, 100.0 * stats["timeout_rate"],
                stats["p50_ms"], stats["p99_ms"]),
            dict(stats, server=target),
            "timeouts on a fraction of UDP queries are the conntrack insert race (see conntrack.insert_failed), "
            "packet loss or an overloaded DNS pod: NodeLocal DNS (no conntrack for the pod's queries), options "
            "single-request-reopen or use-vc in the pod's dnsConfig, more coredns replicas")]
    return [finding(
        "dns.intermittent_timeout", "ok" if not stats["timeouts"] else "warning", "DNS", subject,
        "%d of %d queries to %s timed out; the answered ones took p50 %s ms, p99 %s ms" % (
            stats["timeouts"], stats["count"], target, stats["p50_ms"], stats["p99_ms"]),
        dict(stats, server=target),
        "" if not stats["timeouts"] else "every query timed out: the server does not answer (dns.dead_nameserver)")]


def _insert_failed(counters, subject):
    """conntrack.insert_failed of the node's counters around the repeated queries (none without them): [] or [it]."""
    if not counters:
        return []
    delta = counters["delta"]
    if "insert_failed" in delta and delta["insert_failed"] <= 0:
        return [finding("conntrack.insert_failed", "ok", "L4", subject,
                        "the node's conntrack insert_failed counter did not grow during the %ss of queries"
                        % counters.get("seconds"), {"delta": delta, "seconds": counters.get("seconds")})]
    if delta.get("insert_failed", 0) > 0:
        return [finding(
            "conntrack.insert_failed", "warning", "L4", subject,
            "the node's conntrack insert_failed counter grew by %d during the %ss of queries (drop +%d, early_drop "
            "+%d): the UDP race that drops DNS queries and makes them wait for the 5 s retry" % (
                delta["insert_failed"], counters.get("seconds"), delta.get("drop", 0), delta.get("early_drop", 0)),
            {"delta": delta, "before": counters.get("before"), "after": counters.get("after"),
             "seconds": counters.get("seconds")},
            "run NodeLocal DNS (its queries skip conntrack), or set options single-request-reopen / use-vc in the "
            "pods' dnsConfig; kernels from 5.0 fix most of the DNAT race")]
    return []


def _pod_ok(used, pod_by, lookups, subject):
    """dns.pod_ok: the pod's nameservers and the servers answered it as they answer the node."""
    return finding("dns.pod_ok", "ok", "DNS", subject,
                   "from the pod, %d nameserver(s) of its resolv.conf and %d server(s) answered %d name(s) as "
                   "from the node" % (len(used), len(pod_by) - len([n for n in used if n in pod_by]), len(lookups)),
                   {"nameservers": used, "lookups": sample(_lookup_view(x) for x in lookups)})


def check_pod_view(view):
    """Findings of the pod's view (pure).  ``view``: {"subject", "config", "nameservers" (used),
    "pod" and "node" (walk rows per server and name, from the pod's namespace and from the node),
    "lookups" (the pod's glibc lookup of each name over its nameservers), "repeat" (repeat_stats or
    None), "conntrack" (conntrack.sample_counters or None), "repeat_target"}."""
    subject, config = view["subject"], view["config"]
    node_by = dict(((r["server"], r["name"]), r) for r in view["node"])
    pod_by = {}
    for row in view["pod"]:
        pod_by.setdefault(row["server"], []).append(row)
    used = view["nameservers"]
    out = _dead_nameservers(used, pod_by, node_by, config, subject)
    out += _pod_only_failures(view["pod"], node_by, subject)
    out += [_search_amplification(lookup, config, subject) for lookup in view["lookups"]
            if lookup["failed_queries"] >= AMPLIFICATION_MIN]
    out += _intermittent_timeouts(view.get("repeat"), view.get("repeat_target"), subject)
    out += _insert_failed(view.get("conntrack"), subject)
    if view["pod"] and not [f for f in out if f["severity"] != "ok"]:
        out.append(_pod_ok(used, pod_by, view["lookups"], subject))
    return out


def repeat_only_view(subject, config, repeated, target):
    """The view ``check_pod_view`` judges when only queries were repeated (``repeat_with_counters``) to ``target``."""
    return {"subject": subject, "config": config, "nameservers": [], "pod": [], "node": [], "lookups": [],
            "repeat": repeated["stats"], "conntrack": repeated["conntrack"], "repeat_target": target}


# ------------------------------------------------------------------ the pod's view


def _in_netns(pid, work):
    """``work()`` run in a thread moved into the network namespace of ``pid`` (threads it starts
    are there too); the calling thread and the rest of the process stay in their namespace."""
    from ansible_collections.k8snet.triage.plugins.module_utils.probes.reachability import enter_netns  # pylint: disable=import-outside-toplevel
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


def _resolv_conf_data(config, **extra):
    """The resolver settings of ``config`` the view's data shows, with ``extra``."""
    return dict([(k, config[k]) for k in RESOLV_CONF_KEYS], **extra)


def _with_delta(counters):
    """The conntrack counters, when they have a delta (else None)."""
    return counters if counters and counters.get("delta") else None


def _pod_lookups(resolver, pid, pod_rows, names, config, expect):
    """The pod's glibc lookup of each name over its nameservers (in its namespace)."""
    used = config["nameservers"]
    lookups = []
    for name in names:
        first = next(r for r in pod_rows if r["server"] == used[0] and r["name"] == name)
        if all(s["status"] not in SERVER_NEXT for s in first["steps"]) or len(used) == 1:
            lookups.append(first)  # glibc never left the first nameserver: the same queries
        else:
            lookups.append(_in_netns(pid, lambda n=name: walk(
                lambda server, fqdn, wanted: resolver.ask(server, fqdn, "udp", wanted), used, n, config,
                expect.get(n))))
    return lookups


def _pod_repeat(params, resolver, used, lookups, names, pid):
    """The repeated queries from the pod (``repeat``) to its first nameserver: (target, name, stats, counters),
    all None without ``repeat``."""
    repeat = params.get("repeat") or 0
    repeated = target = name = None
    if repeat:
        target, name = used[0], lookups[0]["answered_as"] or names[0]
        repeated = repeat_with_counters(resolver, target, name, repeat, params.get("repeat_interval") or 0, pid)
    stats, counters = (repeated["stats"], repeated["conntrack"]) if repeated else (None, None)
    return target, name, stats, counters


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
    lookups = _pod_lookups(resolver, pid, pod_rows, names, config, expect)
    subject = "pod %s" % found["ip"]
    target, name, stats, counters = _pod_repeat(params, resolver, used, lookups, names, pid)
    view = {"subject": subject, "config": config, "nameservers": used, "pod": pod_rows, "node": node_rows,
            "lookups": lookups, "repeat": stats, "conntrack": counters, "repeat_target": target}
    data = {"ip": found["ip"], "pid": pid, "netns_inode": found["inode"], "netns_name": found["netns_name"],
            "found_by": found["method"], "namespaces_scanned": found["namespaces_scanned"],
            "resolv_conf": _resolv_conf_data(config, truncated=conf_file["truncated"]),
            "costs": [lookup_cost(n, config) for n in names], "lookups": [_lookup_view(x) for x in lookups],
            "pod_matrix": _compact(pod_rows, role_of), "node_matrix": _compact(node_rows, role_of),
            "repeat": dict(stats, server=target, name=name) if stats else None,
            "conntrack": _with_delta(counters)}
    return {"data": data, "findings": check_pod_view(view)}


def _node_resolv_conf():
    """This node's /etc/resolv.conf read: (file, None), or (None, why it could not be read)."""
    try:
        return pod_netns.read_root_file(os.getpid(), "/etc/resolv.conf"), None
    except (ReadError, InputError) as exc:
        return None, exc.message


def _host_network_summary(found, servers, config, conf_error):
    """The summary of dns.pod_host_network: the pod's DNS path is the node's, its resolv.conf by dnsPolicy."""
    return ("%s is this node's own address: a pod with it runs on the host network (hostNetwork: true), in the "
            "node's network namespace, so its DNS path is the node's; which pod cannot be told by its IP. Its "
            "resolv.conf follows its dnsPolicy: ClusterFirstWithHostNet names the cluster DNS%s, Default (and "
            "ClusterFirst on the host network) the node's: %s" % (
                found["ip"], " (%s, asked from this node above)" % ", ".join(s["address"] for s in servers)
                if servers else "",
                "nameservers %s" % ", ".join(config["nameservers"]) if config and config["nameservers"]
                else "no nameserver (glibc then asks 127.0.0.1)" if config else "unreadable (%s)" % conf_error))


def _host_network_repeat_target(found, servers, config):
    """Where a host-network pod's queries are repeated: the first of ``servers``, else the node's first nameserver."""
    node_first = config["nameservers"][0] if config and config["nameservers"] else None
    target = servers[0]["address"] if servers else node_first
    if target is None:
        raise InputError("repeat: %s is on the host network and this node's resolv.conf names no nameserver: "
                         "give servers (the kube-dns Service IP) to repeat the queries to" % found["ip"])
    return target


def host_network_view(params, found, resolver, servers, names):
    """The pod view of an IP that is the node's own address (``found["host_network"]``): a pod with it runs
    with hostNetwork: true, in the node's network namespace, and which one cannot be told by the IP.
    Its DNS path is the node's: the servers (and host resolvers) asked from this node are what it
    reaches.  Its resolv.conf is kubelet's choice by dnsPolicy: ClusterFirstWithHostNet gives the
    cluster DNS (the servers), Default (and ClusterFirst, which falls back to Default on the host
    network) the node's resolv.conf, read here.  No pod-only verdict (dead nameserver, pod-only
    failure) is given: there is no pod-only path.  Repeated queries (``repeat``) go from the node to
    the first of ``servers``, else the node's first nameserver."""
    node_conf, conf_error = _node_resolv_conf()
    config = parse_resolver_config(node_conf["text"]) if node_conf else None
    subject = "pod %s" % found["ip"]
    findings = [finding(
        "dns.pod_host_network", "info", "DNS", subject, _host_network_summary(found, servers, config, conf_error),
        {"ip": found["ip"], "netns_inode": found["inode"],
         "node_nameservers": config["nameservers"] if config else None, "servers": [s["address"] for s in servers]},
        "the node's resolvers are checked with host_resolvers: true; to see one pod's own view, give the IP of a "
        "pod that is not on the host network")]
    repeat = params.get("repeat") or 0
    repeated = target = name = None
    if repeat:
        target = _host_network_repeat_target(found, servers, config)
        name = next((n for n in names if "." in n.rstrip(".")), names[0])
        repeated = repeat_with_counters(resolver, target, name, repeat, params.get("repeat_interval") or 0)
        findings += check_pod_view(repeat_only_view(subject, config, repeated, target))
    data = {"ip": found["ip"], "host_network": True, "pid": None, "netns_inode": found["inode"],
            "netns_name": found["netns_name"], "found_by": found["method"],
            "namespaces_scanned": found["namespaces_scanned"],
            "resolv_conf": _resolv_conf_data(config, truncated=node_conf["truncated"], of="node") if config else None,
            "repeat": dict(repeated["stats"], server=target, name=name) if repeated else None,
            "conntrack": _with_delta(repeated["conntrack"]) if repeated else None}
    return {"data": data, "findings": findings}


# ------------------------------------------------------------------ repeated queries


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
            "statuses": status_counts({"status": status} for status, dummy in rows),
            "p50_ms": percentile(answered, 0.5), "p99_ms": percentile(answered, 0.99),
            "max_ms": answered[-1] if answered else None}


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
