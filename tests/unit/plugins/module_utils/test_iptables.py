"""iptables_drops parsers and checks on output captured in the lab (fixtures/iptables/):
node1 with rules in iptables-legacy, iptables-nft (IPv4 and IPv6) and a native nftables table,
saved twice (t0, t1) around real ICMP and UDP traffic from node2 and node3."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.firewall import iptables
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import checks as iptables_checks
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import parsers as iptables_parsers
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

FIX = Path(__file__).parent / "fixtures" / "iptables"


def _text(name):
    return (FIX / name).read_text()


def snapshot(t, taken):
    out = []
    nft_tables = set()
    for backend, family, tool, _args in iptables.SAVE_TOOLS:
        rs = iptables_parsers.parse_save(_text("%s_%s.txt" % (t, tool)), backend, family)
        rs.taken = taken
        if tool == "iptables-nft-save":
            rs.warnings = iptables_parsers.parse_warnings(_text("%s_iptables-nft-save.stderr" % t))
        out.append(rs)
        if backend == "nft":
            nft_tables.update(("ip" if family == 4 else "ip6", name) for _f, name in rs.tables)
    rs = iptables_parsers.parse_nft(_text("%s_nft.json" % t), nft_tables)
    rs.taken = taken
    out.append(rs)
    return out


def entries(rs):
    return sorted(((e["table"], e["chain"], e["kind"], e["verdict"], e["packets"]) for e in rs.entries.values()))


def test_legacy_ipv4():
    rs = iptables_parsers.parse_save(_text("t0_iptables-legacy-save.txt"), "legacy", 4)
    assert rs.rules == 3
    assert entries(rs) == [
        ("filter", "FORWARD", "policy", "DROP", 0),
        ("filter", "KUBE-FIREWALL", "rule", "DROP", 5),
        ("raw", "PREROUTING", "rule", "DROP", 0),
    ]
    rule = [e for e in rs.entries.values() if e["chain"] == "KUBE-FIREWALL"][0]
    assert rule["rule"] == '-A KUBE-FIREWALL -s 198.18.32.12/32 -p icmp -m comment --comment "lab drop" -j DROP'
    assert rule["owner"] == "kube-proxy" and rule["bytes"] == 420


def test_legacy_ipv6():
    rs = iptables_parsers.parse_save(_text("t0_ip6tables-legacy-save.txt"), "legacy", 6)
    assert rs.family == "ipv6"
    assert entries(rs) == [("filter", "INPUT", "policy", "DROP", 0), ("filter", "INPUT", "rule", "REJECT", 0)]


def test_nft_variant_ipv4_and_ipv6():
    v4 = iptables_parsers.parse_save(_text("t1_iptables-nft-save.txt"), "nft", 4)
    assert entries(v4) == [
        ("filter", "FORWARD", "policy", "DROP", 0),
        ("filter", "cali-INPUT", "rule", "DROP", 9),
        ("filter", "cali-INPUT", "rule", "REJECT", 0),
    ]
    assert {e["owner"] for e in v4.entries.values() if e["kind"] == "rule"} == {"calico"}
    v6 = iptables_parsers.parse_save(_text("t1_ip6tables-nft-save.txt"), "nft", 6)
    assert [e["owner"] for e in v6.entries.values() if e["kind"] == "rule"] == ["cilium"]


def test_native_nft_skips_iptables_nft_tables():
    rs = iptables_parsers.parse_nft(_text("t1_nft.json"), {("ip", "filter"), ("ip6", "filter")})
    assert rs.tables == [("inet", "lab_native")]
    assert rs.rules == 3
    got = sorted((e["chain"], e["kind"], e["verdict"], e["packets"], e["counted"]) for e in rs.entries.values())
    assert got == [("forward_chain", "policy", "drop", 0, False), ("input", "rule", "drop", 27, True),
                   ("input", "rule", "reject", 0, True)]
    drop = [e for e in rs.entries.values() if e["verdict"] == "drop" and e["kind"] == "rule"][0]
    assert iptables_checks.rule_text(drop) == "ip saddr 198.18.32.12 udp dport 5000 counter drop"
    assert drop["handle"] == 3


def test_native_nft_without_skip_counts_iptables_nft_tables_too():
    rs = iptables_parsers.parse_nft(_text("t1_nft.json"))
    assert ("ip", "filter") in rs.tables and rs.rules > 3


def test_compare_growth_between_snapshots():
    grown = iptables_checks.compare(snapshot("t0", 100.0), snapshot("t1", 102.0))
    got = [(r["backend"], r["family"], r["chain"], r["packets"], r["pps"]) for r in grown]
    assert got == [
        ("nftables", "inet", "input", 20, 10.0),
        ("legacy", "ipv4", "KUBE-FIREWALL", 10, 5.0),
        ("nft", "ipv4", "cali-INPUT", 4, 2.0),
    ]
    # idle DROP rules and policies are not "growing"
    assert not [r for r in grown if r["kind"] == "policy"]


def test_findings_thresholds_policies_and_mixed_backends():
    before, after = snapshot("t0", 0.0), snapshot("t1", 2.0)
    grown = iptables_checks.compare(before, after)
    found = iptables_checks.check(grown, after, "node1", 2.0, 20, warning_pps=3.0, critical_pps=10.0)
    growing = dict((f["subject"], f["severity"]) for f in found if f["check"] == "iptables.drops_growing")
    assert growing == {"node1 nftables inet lab_native/input": "critical",
                       "node1 legacy ipv4 filter/KUBE-FIREWALL": "warning",
                       "node1 nft ipv4 filter/cali-INPUT": "info"}
    policies = sorted(f["subject"] for f in found if f["check"] == "iptables.drop_policy")
    assert policies == ["node1 legacy ipv4 filter/FORWARD", "node1 legacy ipv6 filter/INPUT",
                        "node1 nft ipv4 filter/FORWARD", "node1 nft ipv6 filter/FORWARD",
                        "node1 nftables inet lab_native/forward_chain"]
    mixed = [f for f in found if f["check"] == "iptables.mixed_backends"]
    assert mixed[0]["evidence"]["rules"] == {"legacy": 4, "nft": 5, "nftables": 3}
    assert "Warning: iptables-legacy tables present, use iptables-legacy-save to see them" in mixed[0]["evidence"]["warnings"]


def test_limit_caps_growing_findings():
    before, after = snapshot("t0", 0.0), snapshot("t1", 2.0)
    found = iptables_checks.check(iptables_checks.compare(before, after), after, "n", 2.0, 1, 1.0, 100.0)
    assert [f["subject"] for f in found if f["check"] == "iptables.drops_growing"] == ["n nftables inet lab_native/input"]


def test_one_snapshot_gives_totals_only():
    snap = snapshot("t1", 0.0)
    per, top = iptables_checks.totals(snap, 2)
    assert per["legacy"] == {"rules": 4, "drop_rules": 3, "drop_policies": 2, "packets": 15, "bytes": 1260}
    assert [(r["chain"], r["packets_total"]) for r in top] == [("input", 27), ("KUBE-FIREWALL", 15)]
    found = iptables_checks.check([], snap, "n", 0, 20, 1.0, 100.0)
    assert not [f for f in found if f["check"] == "iptables.drops_growing"]
    assert iptables_checks.summary(found, snap, "n", 0)[0]["summary"].endswith("(interval 0: totals only)")


def test_single_backend_is_not_mixed():
    snap = [rs for rs in snapshot("t1", 0.0) if rs.backend == "legacy"]
    assert not [f for f in iptables_checks.check([], snap, "n", 5, 20, 1, 100) if f["check"] == "iptables.mixed_backends"]


def test_identical_rules_are_kept_apart_and_resets_count_from_zero():
    text0 = "*filter\n:INPUT ACCEPT [0:0]\n[5:500] -A INPUT -p udp -j DROP\n[7:700] -A INPUT -p udp -j DROP\nCOMMIT\n"
    text1 = "*filter\n:INPUT ACCEPT [0:0]\n[6:600] -A INPUT -p udp -j DROP\n[2:200] -A INPUT -p udp -j DROP\nCOMMIT\n"
    a, b = iptables_parsers.parse_save(text0, "legacy", 4), iptables_parsers.parse_save(text1, "legacy", 4)
    a.taken, b.taken = 0.0, 1.0
    assert len(a.entries) == 2
    assert sorted(r["packets"] for r in iptables_checks.compare([a], [b])) == [1, 2]


def test_owner_guess():
    assert iptables_parsers.owner_of("filter", "KUBE-EXTERNAL-SERVICES") == "kube-proxy"
    assert iptables_parsers.owner_of("kube-proxy", "filter-input") == "kube-proxy"
    assert iptables_parsers.owner_of("filter", "cali-pi-_abc") == "calico"
    assert iptables_parsers.owner_of("filter", "CILIUM_FORWARD") == "cilium"
    assert iptables_parsers.owner_of("filter", "IN_public_deny") == "firewalld"
    assert iptables_parsers.owner_of("firewalld", "filter_INPUT") == "firewalld"
    assert iptables_parsers.owner_of("filter", "DOCKER-USER") == "other"


def test_render_sets_prefixes_and_reject():
    expr = [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}},
                       "right": {"prefix": {"addr": "198.18.32.0", "len": 24}}}},
            {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"set": [22, 80]}}},
            {"match": {"op": "!=", "left": {"meta": {"key": "iifname"}}, "right": "lo"}},
            {"counter": {"packets": 1, "bytes": 2}}, {"reject": {"type": "tcp reset"}}]
    assert iptables_parsers.render_expr(expr) == \
        "ip saddr 198.18.32.0/24 tcp dport { 22, 80 } meta iifname != lo counter reject with tcp reset"


def test_nft_bad_json():
    with pytest.raises(ReadError):
        iptables_parsers.parse_nft("not json")


@pytest.mark.parametrize("args, text", [
    ((["ebtables"], 5, 20, 1, 100), "backend 'ebtables' is unknown"),
    ((["legacy"], -1, 20, 1, 100), "interval=-1 is invalid: give a number from 0 to 300 seconds"),
    ((["legacy"], float("nan"), 20, 1, 100), "interval=nan is invalid"),  # issue 11: "grew in nans"
    ((["legacy"], 5, 0, 1, 100), "limit=0 is invalid: give an integer from 1 to 1000"),
    ((["legacy"], 5, 20, float("inf"), float("inf")), "warning_pps=inf is invalid"),
    ((["legacy"], 5, 20, 10, 1), "warning_pps=10 and critical_pps=1"),
])
def test_bad_input(args, text):
    with pytest.raises(InputError) as exc:
        iptables.validate(*args)
    assert text in str(exc.value)


def _full_decode(text, skip=()):
    """parse_nft with every element decoded by json.loads (the reference for the fast path)."""
    original = iptables_parsers._nft_items
    iptables_parsers._nft_items = lambda t: __import__("json").loads(t)["nftables"]
    try:
        return iptables_parsers.parse_nft(text, skip)
    finally:
        iptables_parsers._nft_items = original


def _same(fast, full):
    assert (fast.rules, fast.tables, sorted(fast.entries, key=str)) == (full.rules, full.tables, sorted(full.entries, key=str))
    for key, entry in fast.entries.items():
        other = full.entries[key]
        for field in ("verdict", "packets", "bytes", "counted", "chain", "table", "family", "handle", "owner"):
            assert entry.get(field) == other.get(field), (key, field)
        assert iptables_checks.rule_text(entry) == iptables_checks.rule_text(other)


@pytest.mark.parametrize("skip", [(), (("ip", "filter"), ("ip6", "filter"))])
def test_nft_fast_path_equals_full_decode_on_captured_output(skip):
    text = _text("t1_nft.json")
    _same(iptables_parsers.parse_nft(text, skip), _full_decode(text, skip))


def test_nft_fast_path_equals_full_decode_on_awkward_rules():
    import json
    match = {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "198.18.32.12"}}
    rules = [
        [match, {"counter": {"packets": 4, "bytes": 400}}, {"drop": None}],
        [match, {"counter": {"packets": 1, "bytes": 10}}, {"reject": {"type": "tcp reset"}}],
        [match, {"counter": {"packets": 2, "bytes": 20}}, {"reject": None}],
        [match, {"counter": "named"}, {"drop": None}],                       # named counter: not counted
        [match, {"counter": {"packets": 9, "bytes": 90}}, {"accept": None}],  # not a drop
        [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "drop"}}, {"accept": None}],
        [match, {"drop": None}],                                             # no counter
    ]
    items = [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
             {"table": {"family": "inet", "name": "t\"q", "handle": 1}},
             {"chain": {"family": "inet", "table": "t\"q", "name": "input", "handle": 1, "type": "filter",
                        "hook": "input", "prio": 0, "policy": "drop"}}]
    for handle, expr in enumerate(rules, start=2):
        items.append({"rule": {"family": "inet", "table": "t\"q", "chain": "input", "handle": handle, "expr": expr}})
    items.append({"rule": {"family": "inet", "table": "t\"q", "chain": "input", "handle": 50,
                           "comment": "drop \"all\"", "expr": [match, {"counter": {"packets": 3, "bytes": 30}}, {"drop": None}]}})
    text = json.dumps({"nftables": items})
    fast = iptables_parsers.parse_nft(text)
    _same(fast, _full_decode(text))
    assert sorted((e["handle"], e["verdict"], e["packets"], e["counted"]) for e in fast.entries.values() if e["kind"] == "rule") == [
        (2, "drop", 4, True), (3, "reject", 1, True), (4, "reject", 2, True), (5, "drop", 0, False),
        (8, "drop", 0, False), (50, "drop", 3, True)]


class _BinModule(object):
    """Just enough of AnsibleModule for commands.Tool to find a binary."""

    def get_bin_path(self, name, required=False, opt_dirs=None):
        import shutil
        return shutil.which(name)


def test_run_large_reads_big_output_and_names_a_failing_command():
    from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
    tool = Tool(_BinModule(), "head")
    rc, out, err = tool.run_large(["-c", "30000000", "/dev/zero"])
    assert rc == 0 and len(out) == 30000000 and err == ""
    with pytest.raises(ReadError) as exc:
        tool.run_large(["/nonexistent/k8t-file"])
    assert "`head /nonexistent/k8t-file` failed with exit code 1" in str(exc.value)


def test_no_backend_read_is_a_warning_not_ok():
    """issue 11: a node without iptables and nft got a severity-ok finding."""
    [item] = iptables_checks.summary([], [], "n", 5)
    assert item["check"] == "iptables.no_backend" and item["severity"] == "warning"
    assert "no drop counter was checked" in item["summary"]
