"""conntrack.py: the /proc readers' parsers on real captures, the window sampler and the checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import options as conntrack_options
from ansible_collections.k8snet.triage.plugins.module_utils.conntrack import check as ct
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

FIXTURES = Path(__file__).parent / "fixtures" / "conntrack"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_stat_rows_are_summed_over_cpus_and_entries_taken_once():
    # a lab node's table driven full with UDP flows (2 CPUs): early_drop only on the CPU that sent
    stats = ct.parse_stat(fixture("stat_full.txt"))
    assert stats["entries"] == 0x3fffe == 262142
    assert stats["early_drop"] == 0x527c2 == 337858
    assert stats["drop"] == 0 and stats["insert_failed"] == 0
    assert "chainlength" in stats and "search_restart" in stats
    assert ct.parse_stat(fixture("stat_idle.txt"))["early_drop"] == 0
    # an older kernel's header (no clashres/chainlength, searched/restart) is read by its own names
    old = "entries  searched found new invalid ignore delete delete_list insert insert_failed drop early_drop\n" \
          "00000010  00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000001 00000002 00000000\n" \
          "00000010  00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000002 00000000 0000000a\n"
    assert ct.parse_stat(old) == {"entries": 16, "searched": 2, "found": 4, "new": 6, "invalid": 0, "ignore": 0,
                                  "delete": 0, "delete_list": 0, "insert": 0, "insert_failed": 3, "drop": 2,
                                  "early_drop": 10}
    assert ct.parse_stat("") == {}


def test_entries_give_the_original_direction_and_the_top_pairs():
    entries = ct.parse_entries(fixture("table_head.txt"))
    assert entries[0] == ("198.18.64.11", "198.18.64.12", "udp")
    assert ("198.18.64.11", "198.18.64.13", "icmp") in entries
    top = ct.top_pairs(entries, 2)
    assert top["entries"] == 6
    assert top["pairs"] == [{"src": "198.18.64.11", "dst": "198.18.64.12", "count": 3},
                            {"src": "::1", "dst": "::1", "count": 2}]
    assert top["protos"] == {"udp": 3, "icmpv6": 2, "icmp": 1}


def test_sample_counters_reports_the_growth_in_the_window():
    reads = iter([{"drop": 1, "early_drop": 5, "insert_failed": 0, "entries": 9},
                  {"drop": 4, "early_drop": 5, "insert_failed": 2, "entries": 10}])
    slept = []
    out = ct.sample_counters(2.5, read=lambda: next(reads), sleep=slept.append, clock=iter([0.0, 2.5]).__next__)
    assert slept == [2.5]
    assert out == {"seconds": 2.5, "before": {"insert_failed": 0, "drop": 1, "early_drop": 5},
                   "after": {"insert_failed": 2, "drop": 4, "early_drop": 5},
                   "delta": {"insert_failed": 2, "drop": 3, "early_drop": 0}}


def test_readers_on_files(tmp_path):
    (tmp_path / "nf_conntrack_count").write_text("212000\n")
    (tmp_path / "nf_conntrack_max").write_text("262144\n")
    (tmp_path / "nf_conntrack_buckets").write_text("65536\n")
    assert ct.read_usage(str(tmp_path)) == {"count": 212000, "max": 262144, "buckets": 65536, "ratio": 0.8087}
    assert ct.read_usage(str(tmp_path / "missing")) is None
    assert ct.read_stat(str(tmp_path / "missing")) == {}
    table = tmp_path / "nf_conntrack"
    table.write_text(fixture("table_head.txt"))
    assert ct.read_entries(None, "proc", str(table))[0] == "proc"
    with pytest.raises(ReadError, match="reader=proc: .* cannot be read"):
        ct.read_entries(None, "proc", str(tmp_path / "none"))


USAGE = {"count": 100, "max": 1000, "buckets": 256, "ratio": 0.1}


def usage(count, limit=262144):
    return {"count": count, "max": limit, "buckets": 65536, "ratio": round(float(count) / limit, 4)}


PAIRS = {"entries": 210000, "reader": "proc", "protos": {"udp": 210000},
         "pairs": [{"src": "198.18.64.11", "dst": "198.18.64.12", "count": 209990}]}


def test_below_the_warning_ratio_is_ok_with_the_figures():
    [f] = ct.check(usage(1000), {"drop": 0, "early_drop": 0}, {"drop": 0}, None, "node1")
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "ok")
    assert f["evidence"]["count"] == 1000 and f["evidence"]["max"] == 262144


def test_pressure_warning_then_critical_names_the_top_pair_and_the_sysctl():
    [f] = ct.check(usage(210000), {}, None, PAIRS, "node1", 0.75, 0.9)
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "warning")
    assert "210000 of 262144 entries (80%)" in f["summary"] and "198.18.64.11 -> 198.18.64.12" in f["summary"]
    assert "net.netfilter.nf_conntrack_max" in f["remediation"] and "300 bytes" in f["remediation"]
    assert f["evidence"]["top_pairs"] == PAIRS["pairs"]
    [f] = ct.check(usage(240000), {}, None, PAIRS, "node1", 0.75, 0.9)
    assert f["severity"] == "critical" and f["check"] == "conntrack.pressure"


def test_full_table_and_growing_drops_are_table_full():
    # the count hovers just below the limit when the kernel early-drops to make room (the capture above)
    [f] = ct.check(usage(262142), {"early_drop": 337858}, {"early_drop": 40000, "drop": 0}, PAIRS, "node1", window=5)
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "critical")
    assert f["summary"].startswith("the table is full, 262142 of 262144 entries")
    assert "early_drop +40000" in f["summary"]
    # not full now, but drops grew in the window
    [f] = ct.check(usage(1000), {"drop": 3}, {"drop": 3, "early_drop": 0}, None, "node1", window=5)
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "critical")
    # only the counters since boot: info, never ok and never critical
    [f] = ct.check(usage(1000), {"early_drop": 7, "drop": 0}, {"drop": 0, "early_drop": 0}, None, "node1")
    assert (f["check"], f["severity"]) == ("conntrack.table_full", "info") and "early_drop 7" in f["summary"]


def test_not_loaded_is_info_not_ok():
    [f] = ct.check(None, {}, None, None, "node1")
    assert (f["check"], f["severity"]) == ("conntrack.pressure", "info")


def test_node_check_refuses_inverted_ratios():
    with pytest.raises(InputError, match="warn_ratio must be more than 0 and at most critical_ratio"):
        ct.node_check({"warn_ratio": 0.9, "critical_ratio": 0.5}, None)


@pytest.mark.parametrize("option, value", [("warn_ratio", 0.0), ("warn_ratio", float("nan")), ("interval", 61),
                                           ("top", 51), ("top_pairs", "sometimes"), ("reader", "netlink")])
def test_rules_refuse_out_of_bounds(option, value):
    with pytest.raises(InputError, match=option):
        conntrack_options.RULES[option](option, value)


def test_conntrack_tool_extended_output_reads_the_same():
    # `conntrack -L -o extended` (conntrack-tools 1.4.7) prints IPv6 abbreviated, unlike /proc
    entries = ct.parse_entries(fixture("conntrack_L_extended.txt"))
    assert entries == [("127.0.0.1", "127.0.0.1", "udp"), ("::1", "::1", "icmpv6"), ("127.0.0.1", "127.0.0.1", "icmp")]
    assert ct.top_pairs(entries, 1)["pairs"] == [{"src": "127.0.0.1", "dst": "127.0.0.1", "count": 2}]


def test_pairs_that_cannot_be_read_leave_the_fill_and_say_why(monkeypatch):
    def unreadable(runner, reader="auto", table_path=ct.TABLE_PATH):
        raise ReadError("the conntrack entries cannot be read: /proc/net/nf_conntrack is not readable")

    monkeypatch.setattr(ct, "read_entries", unreadable)
    monkeypatch.setattr(ct, "read_usage", lambda sysctl_dir=ct.SYSCTL_DIR: usage(250000))
    monkeypatch.setattr(ct, "read_stat", lambda path=ct.STAT_PATH: {"drop": 0, "early_drop": 0})
    out = ct.node_check({"interval": 0, "node_name": "node1"}, None)
    [f] = out["findings"]
    assert (f["check"], f["severity"], f["subject"]) == ("conntrack.pressure", "critical", "node1")
    assert "not readable" in f["evidence"]["top_pairs_error"]
    # asked by name, the reader's failure is the module's failure
    with pytest.raises(ReadError, match="not readable"):
        ct.node_check({"interval": 0, "reader": "proc"}, None)


def test_a_max_of_zero_is_no_known_limit_never_a_full_table():
    """Before: nf_conntrack_max 0 was reported critical as "the table is full, 0 of 0 entries"."""
    for count in (0, 1500):
        [f] = ct.check({"count": count, "max": 0, "buckets": 65536, "ratio": None}, {}, None, None, "node1")
        assert (f["check"], f["severity"]) == ("conntrack.pressure", "warning")
        assert f["summary"].startswith("nf_conntrack_max reads 0: the conntrack table has no limit set")
        assert "full" not in f["summary"] and "%d entries" % count in f["summary"]
