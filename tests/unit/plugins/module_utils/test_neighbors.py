"""neighbors.py: validation, checks, flush planning and the re-read before delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import interfaces, netlink
from ansible_collections.k8snet.triage.plugins.module_utils.arp import neighbors, options as neighbors_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

CAPTURE = json.loads((Path(__file__).parent / "fixtures" / "neigh_capture.json").read_text())
ENTRIES = netlink.parse_neighbors(CAPTURE["ip_json_v4"]) + netlink.parse_neighbors(CAPTURE["ip_json_v6"])
LINKS = interfaces.parse_links(CAPTURE["ip_json_link"])
OWNER = "02:18:00:00:00:09"


def run_check(addresses, expected=None, probes=None, local=()):
    entries = neighbors.select_neighbors(ENTRIES, addresses)
    return neighbors.check(addresses, expected or {}, entries, probes or {}, list(local))


def checks(findings):
    return sorted((f["check"], f["subject"]) for f in findings)


@pytest.mark.parametrize("value", ["02:de:ad:00:be", "02:de:ad:00:be:zz", "02:de-ad:00:be:ef", ""])
def test_malformed_mac_names_the_value(value):
    with pytest.raises(InputError) as err:
        neighbors.validate(["198.18.0.210"], {"198.18.0.210": value}, None, LINKS)
    assert repr(value) in err.value.message and "expected[198.18.0.210]" in err.value.message


def test_bad_address_names_the_value_and_option():
    # the option rules check and normalise the addresses (validate trusts them)
    with pytest.raises(InputError) as err:
        neighbors_options.RULES["addresses"]("addresses", ["198.18.0.300"])
    assert err.value.message.startswith("addresses[0]='198.18.0.300' is invalid"), err.value.message
    with pytest.raises(InputError) as err:
        neighbors_options.RULES["expected"]("expected", {"198.18.0.300": "02:de:ad:00:be:e3"})
    assert err.value.message.startswith("expected key='198.18.0.300' is invalid"), err.value.message
    assert neighbors_options.RULES["addresses"]("addresses", [" 2001:DB8::1 "]) == ["2001:db8::1"]


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


def test_a_probe_contradicting_expected_is_reported_and_nothing_is_stale():
    """Regression (issue 47): flush: stale trusted the given MAC over its own probe and deleted a correct entry
    although the cached MAC was the only one answering."""
    cached = "02:de:ad:00:be:ef"  # 198.18.0.210's entry in the capture
    probes = {"198.18.0.210": [{"mac": cached, "vendor": None}]}
    findings, stale = run_check(["198.18.0.210"], {"198.18.0.210": OWNER}, probes)
    assert checks(findings) == [("arp.expected_contradicted", "198.18.0.210")] and stale == []
    item = findings[0]
    assert item["severity"] == "warning" and item["evidence"]["expected_mac"] == OWNER
    assert item["evidence"]["cached_macs"] == [cached] and "the cached MAC is the one answering" in item["summary"]
    # the expected MAC among the answers (a conflict) or nothing answering: expected still decides
    both = {"198.18.0.210": [{"mac": cached, "vendor": None}, {"mac": OWNER, "vendor": None}]}
    findings, stale = run_check(["198.18.0.210"], {"198.18.0.210": OWNER}, both)
    assert checks(findings) == [("arp.ip_conflict", "198.18.0.210"), ("arp.stale_entry", "198.18.0.210 dev eth0")]
    findings, stale = run_check(["198.18.0.210"], {"198.18.0.210": OWNER}, {"198.18.0.210": []})
    assert checks(findings) == [("arp.stale_entry", "198.18.0.210 dev eth0")] and len(stale) == 1


def test_flush_stale_deletes_nothing_the_probe_contradicts(monkeypatch):
    entries = [dict(ENTRIES[0], address="198.18.0.201", interface="eth0", mac="02:de:ad:00:be:ef",
                    state=["REACHABLE"], flags=[])]

    class Kernel(FakeNetlink):
        name = "iproute2"

        def links(self):
            return LINKS

        def addresses(self):
            return []

    fake = Kernel(entries)
    params = {"addresses": ["198.18.0.201"], "expected": {"198.18.0.201": OWNER}, "interface": None, "probe": True,
              "probe_timeout": 0.5, "flush": "stale", "force": False, "max_flush": 32}
    monkeypatch.setattr(neighbors, "probe_requests", lambda *a, **k: ([("198.18.0.201", "eth0")], {}))

    def prober(requests, timeout):
        return {"198.18.0.201": ["02:de:ad:00:be:ef"]}
    result = neighbors.arp_check(fake, prober, params, check_mode=False, events=lambda: None)
    assert result["changed"] is False and result["flushed"] == [] and fake.deleted == []
    assert [f["check"] for f in result["findings"]] == ["arp.expected_contradicted"]


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
    """A fake kernel: a neighbor table, deletes that act on it, and hooks that change it in between.

    ``on_delete`` maps (address, device) to a function called with the table right before that
    entry is deleted: the place where a real race happens.  ``fail`` maps (address, device) to
    the error the kernel answers for that delete.
    """

    def __init__(self, table, on_delete=None, fail=None):
        self.table = [dict(e) for e in table]
        self.deleted = []
        self.on_delete = on_delete or {}
        self.fail = fail or {}
        self.reads = []

    def neighbors(self):
        return self.table

    def neighbor(self, address, interface):
        self.reads.append((address, interface))
        found = [e for e in self.table if e["address"] == address and e["interface"] == interface]
        return dict(found[0]) if found else None

    def delete_neighbor(self, address, interface):
        key = (address, interface)
        if key in self.fail:
            raise self.fail[key]
        self.table = [e for e in self.table if (e["address"], e["interface"]) != key]
        self.deleted.append(key)
        for hook_key, hook in self.on_delete.items():
            if hook_key == key:
                hook(self.table)


def stale_pair():
    """Two proven-stale ordinary entries, on two devices."""
    first = dict(ENTRIES[0], address="198.18.0.201", interface="eth0", mac="02:de:ad:00:be:ef", state=["STALE"], flags=[])
    second = dict(first, address="198.18.0.202", interface="eth1")
    third = dict(first, address="198.18.0.203", interface="eth0")
    return [first, second, third]


def test_flush_re_reads_and_spares_an_entry_that_changed():
    stale = [e for e in ENTRIES if e["address"] == "198.18.0.210"]
    refreshed = [dict(stale[0], mac=OWNER, state=["REACHABLE"])]
    fake = FakeNetlink(refreshed)
    flushed, kept, _raced = neighbors.apply_flush(fake, stale, check_mode=False)
    assert not flushed and not fake.deleted
    assert "changed since it was read" in kept[0]["reason"]


def test_flush_deletes_exactly_address_and_device():
    stale = [e for e in ENTRIES if e["address"] == "198.18.0.210"]
    fake = FakeNetlink(ENTRIES)
    flushed, kept, _raced = neighbors.apply_flush(fake, stale, check_mode=False)
    assert fake.deleted == [("198.18.0.210", "eth0")] and flushed == stale and not kept


def test_each_entry_is_re_read_right_before_its_own_delete():
    entries = stale_pair()
    fake = FakeNetlink(entries)
    neighbors.apply_flush(fake, entries, check_mode=False)
    # read, delete, read, delete ... never one read for the whole loop
    assert fake.reads == [(e["address"], e["interface"]) for e in entries]
    assert fake.deleted == [(e["address"], e["interface"]) for e in entries]


@pytest.mark.parametrize("change, word", [
    ({"state": ["PERMANENT"]}, "PERMANENT"),
    ({"state": ["NOARP"]}, "NOARP"),
    ({"flags": ["extern_learn"]}, "extern_learn"),
    ({"flags": ["managed"], "state": ["REACHABLE"]}, "managed"),
])
def test_entry_that_becomes_protected_between_read_and_delete_is_kept(change, word):
    """The race: the second entry turns PERMANENT (a CNI, an admin) while the first is deleted."""
    entries = stale_pair()

    def protect(table):
        for e in table:
            if e["address"] == entries[1]["address"]:
                e.update(change)

    fake = FakeNetlink(entries, on_delete={("198.18.0.201", "eth0"): protect})
    flushed, kept, _raced = neighbors.apply_flush(fake, entries, check_mode=False)
    assert fake.deleted == [("198.18.0.201", "eth0"), ("198.18.0.203", "eth0")]
    assert [e["address"] for e in kept] == ["198.18.0.202"]
    assert "became protected since it was read" in kept[0]["reason"] and word in kept[0]["reason"]
    assert [e["address"] for e in fake.table] == ["198.18.0.202"]


def test_entry_that_becomes_protected_is_deleted_with_force():
    entries = stale_pair()

    def protect(table):
        table[0]["state"] = ["PERMANENT"]

    fake = FakeNetlink(entries, on_delete={("198.18.0.201", "eth0"): protect})
    flushed, kept, _raced = neighbors.apply_flush(fake, entries, check_mode=False, force=True)
    assert len(fake.deleted) == 3 and not kept and flushed[1]["state"] == ["PERMANENT"]


def test_mac_change_between_read_and_delete_is_kept_even_with_force():
    entries = stale_pair()

    def relearn(table):
        table[0]["mac"] = OWNER

    fake = FakeNetlink(entries, on_delete={("198.18.0.201", "eth0"): relearn})
    flushed, kept, _raced = neighbors.apply_flush(fake, entries, check_mode=False, force=True)
    assert ("198.18.0.202", "eth1") not in fake.deleted
    assert "changed since it was read" in kept[0]["reason"] and OWNER in kept[0]["reason"]


def test_entry_gone_before_its_delete_is_reported_not_failed():
    entries = stale_pair()
    fake = FakeNetlink(entries, on_delete={("198.18.0.201", "eth0"): lambda table: table.pop(0)})
    flushed, kept, _raced = neighbors.apply_flush(fake, entries, check_mode=False)
    assert [e["address"] for e in flushed] == ["198.18.0.201", "198.18.0.203"]
    assert kept[0]["address"] == "198.18.0.202" and "gone since it was read" in kept[0]["reason"]


def test_failure_on_the_second_delete_returns_what_was_already_done():
    entries = stale_pair()
    error = ChangeError('deleting the neighbor entry 198.18.0.202 dev eth1 failed: Cannot find device "eth1"')
    fake = FakeNetlink(entries, fail={("198.18.0.202", "eth1"): error})
    with pytest.raises(neighbors.FlushIncomplete) as err:
        neighbors.apply_flush(fake, entries, check_mode=False)
    details = err.value.details
    assert [(e["address"], e["interface"], e["mac"]) for e in details["flushed"]] == [
        ("198.18.0.201", "eth0", "02:de:ad:00:be:ef")]
    assert [e["address"] for e in details["flush_failed"]] == ["198.18.0.202"]
    assert "Cannot find device" in details["flush_failed"][0]["error"]
    assert [e["address"] for e in details["not_attempted"]] == ["198.18.0.203"]
    assert details["not_attempted"][0]["reason"].startswith("not attempted")
    assert details["changed"] is True
    message = err.value.message
    assert "Already deleted (1): 198.18.0.201 dev eth0 lladdr 02:de:ad:00:be:ef STALE" in message
    assert "Attempted and failed (1): 198.18.0.202 dev eth1" in message
    assert "Not attempted (1): 198.18.0.203 dev eth0" in message
    # the third entry was neither read nor deleted: the flush stopped at the failure
    assert fake.deleted == [("198.18.0.201", "eth0")] and len(fake.reads) == 2


def test_failed_re_read_also_keeps_the_partial_progress():
    entries = stale_pair()

    class Broken(FakeNetlink):
        def neighbor(self, address, interface):
            if interface == "eth1":
                raise ReadError("`ip neigh show to 198.18.0.202 dev eth1` failed with exit code 1: boom")
            return FakeNetlink.neighbor(self, address, interface)

    with pytest.raises(neighbors.FlushIncomplete) as err:
        neighbors.apply_flush(Broken(entries), entries, check_mode=False)
    assert [e["address"] for e in err.value.details["flushed"]] == ["198.18.0.201"]
    assert "boom" in err.value.details["flush_failed"][0]["error"]


def test_arp_check_fails_with_the_whole_result_and_a_finding():
    """The module-level entry point: the failure carries findings, flushed, failed and not attempted."""
    entries = stale_pair()
    links = [{"ifindex": 1, "ifname": "eth0", "mac": "02:18:00:00:00:0a", "operstate": "UP", "up": True, "kind": "veth"},
             {"ifindex": 2, "ifname": "eth1", "mac": "02:18:00:00:00:0b", "operstate": "UP", "up": True, "kind": "veth"}]
    error = ChangeError("deleting the neighbor entry 198.18.0.202 dev eth1 failed: No such device")

    class Kernel(FakeNetlink):
        name = "iproute2"

        def links(self):
            return links

        def addresses(self):
            return []

    fake = Kernel(entries, fail={("198.18.0.202", "eth1"): error})
    params = {"addresses": [e["address"] for e in entries], "expected": {e["address"]: OWNER for e in entries},
              "interface": None, "probe": False, "probe_timeout": 0.5, "flush": "stale", "force": False, "max_flush": 32}
    with pytest.raises(neighbors.FlushIncomplete) as err:
        neighbors.arp_check(fake, None, params, check_mode=False, events=lambda: None)
    result = err.value.details
    assert result["changed"] is True and [e["address"] for e in result["flushed"]] == ["198.18.0.201"]
    assert [e["address"] for e in result["not_attempted"]] == ["198.18.0.203"]
    incomplete = [f for f in result["findings"] if f["check"] == "arp.flush_incomplete"]
    assert len(incomplete) == 1 and incomplete[0]["severity"] == "critical"
    assert incomplete[0]["evidence"]["deleted"] == ["198.18.0.201 dev eth0 lladdr 02:de:ad:00:be:ef STALE"]
    assert "198.18.0.201" not in result["diff"]["after"] and "198.18.0.202" in result["diff"]["after"]


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


def test_failure_before_any_delete_says_so_and_keeps_the_privilege_hint():
    entries = stale_pair()
    error = PrivilegeError("deleting the neighbor entry 198.18.0.201 dev eth0 was refused (Operation not permitted): "
                           "CAP_NET_ADMIN is needed, run the task with become: true")
    with pytest.raises(neighbors.FlushIncomplete) as err:
        neighbors.apply_flush(FakeNetlink(entries, fail={("198.18.0.201", "eth0"): error}), entries, check_mode=False)
    assert err.value.message.startswith("flushing the stale neighbor entries failed before any was deleted")
    assert "become: true" in err.value.message and err.value.details["changed"] is False
    assert len(err.value.details["not_attempted"]) == 2


# --------------------------------------------- what the kernel deleted (its RTM_DELNEIGH notification)

class FakeEvents(object):
    """The kernel's neighbour notifications: ``told`` maps (address, ifindex) to what it says it deleted."""

    def __init__(self, told):
        self.told, self.restored, self.closed = told, [], False

    @staticmethod
    def ifindex(interface):
        return {"eth0": 2, "eth1": 3}[interface]

    def deleted(self, address, ifindex, before):
        return self.told.get((address, ifindex))

    def restore(self, entry, ifindex, interface):
        self.restored.append((dict(entry), ifindex, interface))
        return "%s dev %s lladdr %s nud %s" % (entry["address"], interface, entry["mac"], " ".join(entry["state"]).lower())

    def close(self):
        self.closed = True


def kernel_entry(entry, ifindex, **changes):
    out = dict(entry, ifindex=ifindex, **changes)
    out.pop("interface")
    return out


def test_a_delete_that_took_a_permanent_entry_with_another_mac_puts_it_back_and_says_so():
    first, second = stale_pair()[:2]
    other = "02:0a:0b:0c:0d:0e"
    events = FakeEvents({(first["address"], 2): kernel_entry(first, 2, mac=other, state=["PERMANENT"]),
                         (second["address"], 3): kernel_entry(second, 3)})
    fake = FakeNetlink([first, second])
    flushed, kept, raced = neighbors.apply_flush(fake, [first, second], check_mode=False, events=events)
    # only the entry the kernel confirms is reported deleted; the other was restored as it was
    assert [(e["address"], e["mac"], e["verified"]) for e in flushed] == [(second["address"], second["mac"], True)]
    assert not kept
    [race] = raced
    assert race["deleted"]["mac"] == other and race["deleted"]["state"] == ["PERMANENT"] and race["stale_mac"] == first["mac"]
    assert events.restored == [(kernel_entry(first, 2, mac=other, state=["PERMANENT"]), 2, "eth0")]
    assert "replaced between the re-read and the delete" in race["reason"]
    [found] = neighbors.race_findings(raced, [])
    assert found["check"] == "arp.flush_race" and found["severity"] == "critical"
    assert other in found["summary"] and "put it back" in found["summary"]


def test_a_delete_that_took_an_entry_turned_permanent_is_put_back_unless_force():
    first = stale_pair()[0]
    told = {(first["address"], 2): kernel_entry(first, 2, state=["PERMANENT"])}
    flushed, _kept, raced = neighbors.apply_flush(FakeNetlink([first]), [first], False, events=FakeEvents(told))
    assert not flushed and len(raced) == 1 and "became protected" in raced[0]["reason"]
    flushed, _kept, raced = neighbors.apply_flush(FakeNetlink([first]), [first], False, force=True, events=FakeEvents(told))
    assert len(flushed) == 1 and not raced


def test_a_delete_no_notification_confirms_is_a_warning_not_a_silent_ok():
    first = stale_pair()[0]
    entries = [first]

    class Kernel(FakeNetlink):
        name = "iproute2"

        def links(self):
            return [{"ifindex": 2, "ifname": "eth0", "mac": "02:18:00:00:00:0a", "operstate": "UP", "up": True,
                     "kind": "veth"}]

        def addresses(self):
            return []

    params = {"addresses": [first["address"]], "expected": {first["address"]: OWNER}, "interface": None,
              "probe": False, "probe_timeout": 0.5, "flush": "stale", "force": False, "max_flush": 32}
    events = FakeEvents({})
    result = neighbors.arp_check(Kernel(entries), None, params, check_mode=False, events=lambda: events)
    assert events.closed and [e["verified"] for e in result["flushed"]] == [False]
    assert [f["severity"] for f in result["findings"] if f["check"] == "arp.flush_unverified"] == ["warning"]


def test_the_gateway_of_an_off_subnet_address_is_read_from_the_neighbour_table():
    gw = dict(ENTRIES[0], address="198.18.0.1", interface="eth0", mac="02:18:00:00:00:01", state=["REACHABLE"], flags=[])
    failed = dict(gw, mac=None, state=["FAILED"])
    assert neighbors.gateway_neighbor([gw], "198.18.0.1", "eth0") == {
        "gateway_neighbor": "198.18.0.1 dev eth0 lladdr 02:18:00:00:00:01 REACHABLE", "gateway_resolved": True}
    assert neighbors.gateway_neighbor([failed], "198.18.0.1", "eth0")["gateway_resolved"] is False
    # an entry on another interface is not this route's gateway; no entry at all resolves on demand
    assert neighbors.gateway_neighbor([gw], "198.18.0.1", "eth1") == {"gateway_neighbor": None, "gateway_resolved": None}


# --------------------------------------------- the re-check in the same run (the result's ``after``)

class ThreeLinkKernel(FakeNetlink):
    """stale_pair's kernel, with its links; ``comes_back`` entries reappear in the table after their delete."""
    name = "iproute2"

    def __init__(self, table, comes_back=(), **kwargs):
        super().__init__(table, **kwargs)
        self.comes_back = [dict(e) for e in comes_back]

    def links(self):
        return [{"ifindex": 2, "ifname": "eth0", "mac": "02:18:00:00:00:0a", "operstate": "UP", "up": True, "kind": "veth"},
                {"ifindex": 3, "ifname": "eth1", "mac": "02:18:00:00:00:0b", "operstate": "UP", "up": True, "kind": "veth"}]

    def addresses(self):
        return []

    def neighbors(self):
        back = [e for e in self.comes_back if (e["address"], e["interface"]) in self.deleted]
        return self.table + [e for e in back if e not in self.table]


def flush_params(entries):
    return {"addresses": [e["address"] for e in entries], "expected": {e["address"]: OWNER for e in entries},
            "interface": None, "probe": False, "probe_timeout": 0.5, "flush": "stale", "force": False, "max_flush": 32}


def test_a_flush_re_checks_the_table_once_its_deletes_are_done():
    entries = stale_pair()
    result = neighbors.arp_check(ThreeLinkKernel(entries), None, flush_params(entries), check_mode=False,
                                 events=lambda: None)
    assert sorted(e["address"] for e in result["flushed"]) == sorted(e["address"] for e in entries)
    assert result["after"]["neighbors"] == []
    assert not [f for f in result["after"]["findings"] if f["severity"] in ("warning", "critical")]
    # before the flush, the same run found each entry stale
    assert [f["check"] for f in result["findings"]].count("arp.stale_entry") == 3


def test_an_entry_that_comes_back_stale_is_stale_in_the_re_check():
    entries = stale_pair()
    result = neighbors.arp_check(ThreeLinkKernel(entries, comes_back=entries[:1]), None, flush_params(entries),
                                 check_mode=False, events=lambda: None)
    assert [(f["check"], f["subject"]) for f in result["after"]["findings"] if f["check"] == "arp.stale_entry"] == [
        ("arp.stale_entry", "198.18.0.201 dev eth0")]


def test_a_flush_that_fails_halfway_still_re_checks_what_it_left():
    entries = stale_pair()
    error = ChangeError("deleting the neighbor entry 198.18.0.202 dev eth1 failed: No such device")
    with pytest.raises(neighbors.FlushIncomplete) as err:
        neighbors.arp_check(ThreeLinkKernel(entries, fail={("198.18.0.202", "eth1"): error}), None,
                            flush_params(entries), check_mode=False, events=lambda: None)
    after = err.value.details["after"]
    assert sorted(e["address"] for e in after["neighbors"]) == ["198.18.0.202", "198.18.0.203"]
    assert sorted(f["subject"] for f in after["findings"] if f["check"] == "arp.stale_entry") == [
        "198.18.0.202 dev eth1", "198.18.0.203 dev eth0"]


def test_a_dry_run_has_no_re_check_and_a_failed_re_read_says_none():
    entries = stale_pair()
    dry = neighbors.arp_check(ThreeLinkKernel(entries), None, flush_params(entries), check_mode=True, events=lambda: None)
    assert "after" not in dry and dry["flushed"]

    class Unreadable(ThreeLinkKernel):
        def neighbors(self):
            if self.deleted:
                raise ReadError("ip -j neigh show failed: Cannot allocate memory")
            return self.table
    result = neighbors.arp_check(Unreadable(entries), None, flush_params(entries), check_mode=False, events=lambda: None)
    assert result["after"] is None and len(result["flushed"]) == 3
