# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dns, the pod's view: resolv.conf read as glibc reads it, the names glibc's res_nsearch asks and
in which order (resolv/res_query.c), res_send's next-nameserver rule, and the findings."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.dns import check as d
from ansible_collections.k8snet.triage.plugins.module_utils.dns import pod_view as pv
from ansible_collections.k8snet.triage.plugins.module_utils.dns import resolv_conf as rc

POD_SEARCH = ["default.svc.cluster.local", "svc.cluster.local", "cluster.local"]
# a kubelet-written resolv.conf (ClusterFirst) with a NodeLocal DNS address first
KUBELET = """# written by kubelet
nameserver 198.18.0.61
nameserver 10.96.0.10
search default.svc.cluster.local svc.cluster.local cluster.local
options ndots:5
"""


def test_resolver_config_as_glibc_reads_it():
    c = rc.parse_resolver_config(KUBELET)
    assert c["nameservers"] == ["198.18.0.61", "10.96.0.10"] and c["search"] == POD_SEARCH
    assert (c["ndots"], c["timeout"], c["attempts"], c["default_nameserver"]) == (5, 5, 2, False)


def test_resolver_config_limits_and_last_line_wins():
    text = ("nameserver 1.1.1.1\nnameserver 2.2.2.2\nnameserver 3.3.3.3\nnameserver 4.4.4.4 ; fourth\n"
            "search a.example b.example\ndomain only.example\noptions ndots:99 timeout:0 attempts:9 rotate\n")
    c = rc.parse_resolver_config(text)
    assert c["nameservers"] == ["1.1.1.1", "2.2.2.2", "3.3.3.3"]  # MAXNS = 3
    assert c["all_nameservers"][-1] == "4.4.4.4"
    assert c["search"] == ["only.example"]  # domain after search replaces it
    assert (c["ndots"], c["timeout"], c["attempts"], c["rotate"]) == (15, 1, 5, True)
    assert rc.parse_resolver_config("domain x.example\nsearch y.example. z.example\n")["search"] == [
        "y.example", "z.example"]
    # no nameserver line: glibc asks the loopback address
    empty = rc.parse_resolver_config("# nothing\n")
    assert empty["nameservers"] == ["127.0.0.1"] and empty["default_nameserver"] is True
    assert rc.parse_resolv_conf(text) == ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"]


@pytest.mark.parametrize("name, ndots, expected", [
    # fewer dots than ndots: the search domains first, the name as it is last
    ("web", 5, ["web.default.svc.cluster.local", "web.svc.cluster.local", "web.cluster.local", "web"]),
    ("www.example.com", 5, ["www.example.com.default.svc.cluster.local", "www.example.com.svc.cluster.local",
                            "www.example.com.cluster.local", "www.example.com"]),
    # at least ndots dots: as it is first, then the search domains
    ("www.example.com", 2, ["www.example.com", "www.example.com.default.svc.cluster.local",
                            "www.example.com.svc.cluster.local", "www.example.com.cluster.local"]),
    ("web", 0, ["web", "web.default.svc.cluster.local", "web.svc.cluster.local", "web.cluster.local"]),
    # a trailing dot: absolute, asked once
    ("web.default.svc.cluster.local.", 5, ["web.default.svc.cluster.local"]),
])
def test_expand_name_glibc_order(name, ndots, expected):
    assert rc.expand_name(name, POD_SEARCH, ndots) == expected


def test_expand_name_root_domain_and_no_search():
    assert rc.expand_name("web", ["a.example", ".", "b.example"], 1) == ["web.a.example", "web", "web.b.example"]
    assert rc.expand_name("web", [], 5) == ["web"]


def test_lookup_cost_and_timeout_wait():
    c = rc.parse_resolver_config(KUBELET)
    cost = rc.lookup_cost("web", c)
    assert cost["queries"] == 4 and cost["queries_a_aaaa"] == 8
    # res_send: 2 attempts x 2 servers, 5 s each in the first round, (5 << 1) / 2 in the second
    assert cost["wait_per_name_s"] == 20
    assert rc.timeout_wait(1, 2, 1) == 3 and rc.timeout_wait(5, 2, 3) == 15 + 9


def _ask(table):
    """A fake Resolver.ask over {(server, fqdn): status}; unknown pairs are NXDOMAIN."""
    calls = []

    def ask(server, fqdn, expect=None):
        calls.append((server, fqdn))
        status = table.get((server, fqdn), "nxdomain")
        return {"status": status, "elapsed_ms": 1, "answers": ["198.19.0.9"] if status == "ok" else []}
    return ask, calls


def test_walk_stops_at_the_answer():
    c = rc.parse_resolver_config(KUBELET)
    ask, calls = _ask({("ns1", "web.cluster.local"): "ok"})
    out = rc.walk(ask, ["ns1"], "web", c)
    assert out["result"] == "ok" and out["answered_as"] == "web.cluster.local" and out["queries"] == 3
    assert out["failed_queries"] == 2
    assert calls == [("ns1", "web.default.svc.cluster.local"), ("ns1", "web.svc.cluster.local"),
                     ("ns1", "web.cluster.local")]


def test_walk_next_server_after_a_timeout_and_stop_when_all_silent():
    c = rc.parse_resolver_config(KUBELET)
    ask, calls = _ask({("dead", f): "timeout" for f in rc.expand_name("web", POD_SEARCH, 5)})
    out = rc.walk(ask, ["dead", "ns2"], "web", c)
    # each name goes to the dead cache first, then to ns2 (NXDOMAIN, next name)
    assert out["result"] == "nxdomain" and out["queries"] == 8 and calls[:2] == [
        ("dead", "web.default.svc.cluster.local"), ("ns2", "web.default.svc.cluster.local")]
    ask, calls = _ask({("dead", "web.default.svc.cluster.local"): "timeout"})
    out = rc.walk(ask, ["dead"], "web", c)
    assert out["result"] == "timeout" and out["queries"] == 1  # res_nsearch gives up at a timeout


def test_walk_servfail_goes_on_refused_stops():
    c = rc.parse_resolver_config(KUBELET)
    ask, dummy = _ask({("ns1", "web.default.svc.cluster.local"): "servfail",
                       ("ns1", "web.svc.cluster.local"): "refused"})
    out = rc.walk(ask, ["ns1"], "web", c)
    assert out["result"] == "refused" and out["queries"] == 2


def _view(pod, node, lookups, nameservers=("ns1", "kube-dns"), **extra):
    view = {"subject": "pod 198.19.0.5", "config": rc.parse_resolver_config(KUBELET), "nameservers": list(nameservers),
            "pod": pod, "node": node, "lookups": lookups, "repeat": None, "conntrack": None, "repeat_target": None}
    view.update(extra)
    return view


def _row(server, name, result, statuses):
    return {"server": server, "name": name, "result": result, "answered_as": None, "queries": len(statuses),
            "failed_queries": sum(1 for s in statuses if s != "ok"),
            "steps": [{"name": name, "server": server, "status": s, "ms": 1, "answers": []} for s in statuses]}


def by_check(found):
    return dict((f["check"], f) for f in found)


def test_dead_first_nameserver_and_pod_only():
    pod = [_row("ns1", "web", "timeout", ["timeout"]), _row("kube-dns", "web", "ok", ["nxdomain", "ok"])]
    node = [_row("ns1", "web", "ok", ["ok"]), _row("kube-dns", "web", "ok", ["nxdomain", "ok"])]
    found = by_check(pv.check_pod_view(_view(pod, node, [pod[1]])))
    dead = found["dns.dead_nameserver"]
    assert dead["severity"] == "critical" and dead["evidence"]["dead"] == ["ns1"]
    assert "waits 5s" in dead["summary"] and "ns1 answers the node" in dead["summary"]
    only = found["dns.pod_only_failure"]
    assert only["evidence"]["pairs"] == [{"server": "ns1", "name": "web", "pod": "timeout", "node": "ok"}]
    assert "dns.pod_ok" not in found


def test_amplification_threshold():
    four = _row("ns1", "web", "ok", ["nxdomain", "nxdomain", "nxdomain", "ok"])
    four["answered_as"] = "web"
    found = by_check(pv.check_pod_view(_view([four], [four], [four], nameservers=["ns1"])))
    amp = found["dns.search_amplification"]
    assert amp["severity"] == "warning" and "costs 4 queries (8 with AAAA), 3 of them 3 nxdomain" in amp["summary"]
    two = _row("ns1", "web", "ok", ["nxdomain", "ok"])
    found = by_check(pv.check_pod_view(_view([two], [two], [two], nameservers=["ns1"])))
    assert list(found) == ["dns.pod_ok"]


def test_intermittent_and_insert_failed():
    stats = pv.repeat_stats([("ok", 1)] * 95 + [("timeout", 1000)] * 5)
    assert (stats["timeout_rate"], stats["p50_ms"], stats["p99_ms"]) == (0.05, 1, 1)
    counters = {"seconds": 3.2, "before": {"insert_failed": 10}, "after": {"insert_failed": 14},
                "delta": {"insert_failed": 4, "drop": 0, "early_drop": 0}}
    found = by_check(pv.check_pod_view(_view([], [], [], nameservers=[], repeat=stats, conntrack=counters,
                                             repeat_target="ns1")))
    assert found["dns.intermittent_timeout"]["severity"] == "warning"
    assert "5 of 100 queries to ns1 timed out (5.0%)" in found["dns.intermittent_timeout"]["summary"]
    assert found["conntrack.insert_failed"]["severity"] == "warning"
    assert "grew by 4" in found["conntrack.insert_failed"]["summary"]
    calm = dict(counters, delta={"insert_failed": 0})
    found = by_check(pv.check_pod_view(_view([], [], [], nameservers=[], repeat=pv.repeat_stats([("ok", 2)] * 3),
                                             conntrack=calm, repeat_target="ns1")))
    assert found["dns.intermittent_timeout"]["severity"] == "ok" and found["conntrack.insert_failed"]["severity"] == "ok"


def test_percentile_nearest_rank():
    assert pv.percentile(list(range(1, 101)), 0.99) == 99 and pv.percentile([7], 0.5) == 7
    assert pv.percentile([], 0.5) is None


def test_repeat_bound():
    with pytest.raises(d.InputError, match="longer than 600s"):
        d.validate_repeat(1000, 1.0, 2.0)
    d.validate_repeat(100, 0.05, 2.0)


def test_single_label_names_need_a_search_list():
    with pytest.raises(d.InputError, match="names web are single labels"):
        d.node_check({"names": ["web"], "servers": ["127.0.0.1"], "timeout": 0.1, "retries": 0})
    with pytest.raises(d.InputError, match="give pod_ip or servers"):
        d.node_check({"names": ["web.example.test"], "host_resolvers": True, "repeat": 3, "timeout": 0.1})


def test_a_host_network_pods_ip_is_the_nodes_view_not_a_dead_nameserver(monkeypatch):
    # the node's resolv.conf names a nameserver nothing answers: judged by host_resolvers, not as the pod's
    found = {"ip": "198.18.0.11", "inode": 4026531840, "pids": [1], "netns_name": None, "method": "scan",
             "namespaces_scanned": 3, "host_network": True}
    monkeypatch.setattr(pv.pod_netns, "find_by_ip", lambda ip, runner=None: dict(found))
    monkeypatch.setattr(pv.pod_netns, "read_root_file", lambda pid, path: {
        "path": path, "text": "nameserver 10.255.255.53\nsearch example.net\n", "truncated": False})

    def no_walk(*args, **kwargs):
        raise AssertionError("no pod view is walked for a host-network IP")
    monkeypatch.setattr(pv, "walks", no_walk)
    monkeypatch.setattr(pv, "_in_netns", no_walk)
    servers = [{"address": "10.96.0.10", "name": "kube-dns", "role": "service"}]
    out = pv.pod_view({"pod_ip": "198.18.0.11"}, None, None, servers, ["kubernetes.default.svc.cluster.local"], {})
    assert [(f["check"], f["severity"]) for f in out["findings"]] == [("dns.pod_host_network", "info")]
    summary = out["findings"][0]["summary"]
    assert summary.startswith("198.18.0.11 is this node's own address: a pod with it runs on the host network")
    assert "ClusterFirstWithHostNet names the cluster DNS (10.96.0.10" in summary
    assert "the node's: nameservers 10.255.255.53" in summary
    assert out["data"]["host_network"] is True and out["data"]["pid"] is None
    assert out["data"]["resolv_conf"]["nameservers"] == ["10.255.255.53"] and out["data"]["resolv_conf"]["of"] == "node"
