"""neighbors.py: validation, checks, flush planning and the re-read before delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import neighbors, netlink
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError

CAPTURE = json.loads((Path(__file__).parent / "fixtures" / "neigh_capture.json").read_text())
ENTRIES = netlink.parse_neighbors(CAPTURE["ip_json_v4"]) + netlink.parse_neighbors(CAPTURE["ip_json_v6"])
LINKS = netlink.parse_links(CAPTURE["ip_json_link"])
OWNER = "02:18:00:00:00:09"


def run_check(addresses, expected=None, probes=None, local=()):
    entries = neighbors.select_neighbors(ENTRIES, addresses)
    return neighbors.check(addresses, expected or {}, entries, probes or {}, list(local))


def checks(findings):
    return sorted((f["check"], f["subject"]) for f in findings)


@pytest.mark.parametrize("value, normal", [
    ("02:DE:AD:00:BE:EF", "02:de:ad:00:be:ef"), ("02-de-ad-00-be-ef", "02:de:ad:00:be:ef"),
    ("02dead00beef", "02:de:ad:00:be:ef"),
])
def test_mac_forms_accepted(value, normal):
    assert neighbors.normalize_mac(value) == normal


@pytest.mark.parametrize("value", ["02:de:ad:00:be", "02:de:ad:00:be:zz", "02:de-ad:00:be:ef", ""])
def test_malformed_mac_names_the_value(value):
    with pytest.raises(InputError) as err:
        neighbors.validate(["198.18.0.210"], {"198.18.0.210": value}, None, LINKS)
    assert repr(value) in err.value.message and "expected[198.18.0.210]" in err.value.message


def test_bad_address_names_the_value_and_option():
    with pytest.raises(InputError) as err:
        neighbors.validate(["198.18.0.300"], {}, None, LINKS)
    assert "'198.18.0.300' in addresses" in err.value.message


def test_unknown_interface_lists_the_real_ones():
    with pytest.raises(InputError) as err:
        neighbors.validate(["198.18.0.210"], {}, "eth9", LINKS)
    assert "'eth9' does not exist" in err.value.message and "eth0, lo" in err.value.message


def test_expected_keys_join_the_checked_addresses():
    addresses, expected = neighbors.validate(["198.18.0.210"], {"198.18.0.214": "02-de-ad-00-be-e3"}, None, LINKS)
    assert addresses == ["198.18.0.210", "198.18.0.214"]
    assert expected == {"198.18.0.214": "02:de:ad:00:be:e3"}


def test_stale_entry_against_the_owner_mac():
    findings, stale = run_check(["198.18.0.210"], {"198.18.0.210": OWNER})
    assert checks(findings) == [("arp.stale_entry", "198.18.0.210 dev eth0")]
    assert findings[0]["severity"] == "critical" and findings[0]["layer"] == "L2"
    assert findings[0]["evidence"]["cached_mac"] == "02:de:ad:00:be:ef"
    assert findings[0]["evidence"]["true_mac"] == OWNER
    assert [e["address"] for e in stale] == ["198.18.0.210"]


def test_matching_entry_is_ok():
    findings, stale = run_check(["198.18.0.214"], {"198.18.0.214": "02:de:ad:00:be:e3"})
    assert checks(findings) == [("arp.ok", "198.18.0.214")] and not stale


def test_single_probe_answer_is_the_truth_without_expected():
    probes = {"198.18.0.210": [{"mac": OWNER, "vendor": None}]}
    findings, stale = run_check(["198.18.0.210"], probes=probes)
    assert checks(findings) == [("arp.stale_entry", "198.18.0.210 dev eth0")]
    assert findings[0]["evidence"]["truth_from"] == "probe"


def test_two_macs_answering_is_a_conflict():
    probes = {"198.18.0.214": [{"mac": "02:de:ad:00:be:e3", "vendor": None}, {"mac": OWNER, "vendor": None}]}
    findings = run_check(["198.18.0.214"], probes=probes)[0]
    assert ("arp.ip_conflict", "198.18.0.214") in checks(findings)


def test_owner_sees_a_rival_claimant():
    local = [{"address": "198.18.0.250", "interface": "eth0", "mac": OWNER}]
    probes = {"198.18.0.250": [{"mac": "02:18:00:00:00:02", "vendor": None}]}
    findings = run_check(["198.18.0.250"], probes=probes, local=local)[0]
    assert checks(findings) == [("arp.ip_conflict", "198.18.0.250")]


def test_failed_and_incomplete_are_unresolved():
    findings, stale = run_check(["198.18.0.99", "198.18.0.215"])
    assert checks(findings) == [("arp.unresolved", "198.18.0.215 dev eth0"), ("arp.unresolved", "198.18.0.99 dev eth0")]
    assert not stale


def test_absent_entry_is_info_only():
    findings = run_check(["198.18.0.77"], {"198.18.0.77": OWNER})[0]
    assert checks(findings) == [("arp.not_cached", "198.18.0.77")]
    assert findings[0]["severity"] == "info"


def test_protected_entries_are_kept_unless_forced():
    addresses = ["198.18.0.210", "198.18.0.211", "198.18.0.212", "198.18.0.213"]
    stale = run_check(addresses, {a: OWNER for a in addresses})[1]
    delete, kept = neighbors.plan_flush(stale, force=False, limit=32)
    assert [e["address"] for e in delete] == ["198.18.0.210"]
    assert sorted(e["address"] for e in kept) == ["198.18.0.211", "198.18.0.212", "198.18.0.213"]
    assert all("force=true" in e["reason"] for e in kept)
    delete, kept = neighbors.plan_flush(stale, force=True, limit=32)
    assert len(delete) == 4 and not kept


def test_cap_on_deletions():
    stale = [dict(ENTRIES[0], address="198.18.0.%d" % i, state=["STALE"], flags=[]) for i in range(5)]
    delete, kept = neighbors.plan_flush(stale, force=False, limit=2)
    assert len(delete) == 2 and len(kept) == 3 and "max_flush=2" in kept[0]["reason"]


class FakeNetlink(object):
    def __init__(self, table):
        self.table = table
        self.deleted = []

    def neighbors(self):
        return self.table

    def delete_neighbor(self, address, interface):
        self.deleted.append((address, interface))


def test_flush_re_reads_and_spares_an_entry_that_changed():
    stale = [e for e in ENTRIES if e["address"] == "198.18.0.210"]
    refreshed = [dict(stale[0], mac=OWNER, state=["REACHABLE"])]
    fake = FakeNetlink(refreshed)
    flushed, kept = neighbors.apply_flush(fake, stale, check_mode=False)
    assert not flushed and not fake.deleted
    assert "changed since it was read" in kept[0]["reason"]


def test_flush_deletes_exactly_address_and_device():
    stale = [e for e in ENTRIES if e["address"] == "198.18.0.210"]
    fake = FakeNetlink(ENTRIES)
    flushed, kept = neighbors.apply_flush(fake, stale, check_mode=False)
    assert fake.deleted == [("198.18.0.210", "eth0")] and flushed == stale and not kept


def test_check_mode_deletes_nothing_but_reports():
    stale = [e for e in ENTRIES if e["address"] == "198.18.0.210"]
    fake = FakeNetlink(ENTRIES)
    flushed = neighbors.apply_flush(fake, stale, check_mode=True)[0]
    assert flushed == stale and fake.deleted == []


def test_diff_shows_the_removed_line():
    entries = neighbors.select_neighbors(ENTRIES, ["198.18.0.210", "198.18.0.214"])
    stale = [e for e in entries if e["address"] == "198.18.0.210"]
    d = neighbors.diff(entries, stale)
    assert "198.18.0.210 dev eth0 lladdr 02:de:ad:00:be:ef STALE" in d["before"]
    assert "198.18.0.210" not in d["after"] and "198.18.0.214" in d["after"]


def test_vendor_of_a_registered_oui_and_none_for_local():
    assert neighbors.vendor("02:18:00:00:00:01") is None
    assert "Intel" in (neighbors.vendor("00:1b:21:00:00:01") or "")
