"""Cilium LB map decoders, checks and cleanup plan on byte layouts captured with bpftool in the lab."""

from __future__ import annotations

import ipaddress
import json
import struct
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import cilium_lb
from ansible_collections.k8snet.triage.plugins.module_utils.errors import ChangeError, InputError

FIXTURES = Path(__file__).parent / "fixtures" / "bpf"
BACKEND_MAP = {"v1": "cilium_lb4_backends", "v2": "cilium_lb4_backends_v2", "v3": "cilium_lb4_backends_v3"}


def dump(version, name):
    entries = json.loads((FIXTURES / f"{version}_{name}.dump.json").read_text())
    return [(bytes(int(b, 16) for b in e["key"]), bytes(int(b, 16) for b in e["value"])) for e in entries]


def show(version, name):
    return json.loads((FIXTURES / f"{version}_{name}.show.json").read_text())


def scenario(version):
    return json.loads((FIXTURES / f"{version}_scenario.json").read_text())


def model_of(version, live=None):
    return cilium_lb.analyze(dump(version, "cilium_lb4_services_v2"), {version: dump(version, BACKEND_MAP[version])},
                             dump(version, "cilium_lb4_reverse_nat"), live)


def plain_dump_pairs(version, name):
    """Pairs parsed from the plain `bpftool map dump` text (a second, independent rendering)."""
    pairs = []
    for line in (FIXTURES / f"{version}_{name}.dump.txt").read_text().splitlines():
        if line.startswith("key:"):
            key, value = line[4:].split("value:")
            pairs.append((bytes.fromhex(key.replace(" ", "")), bytes.fromhex(value.replace(" ", ""))))
    return pairs


# ------------------------------------------------------------------ decoders
def test_fixture_layouts_match_the_known_sizes():
    for version in ("v1", "v2", "v3"):
        for name in ("cilium_lb4_services_v2", BACKEND_MAP[version], "cilium_lb4_reverse_nat"):
            info = show(version, name)
            assert cilium_lb.layout_ok(name, {"type": info["type"], "key_size": info["bytes_key"],
                                              "value_size": info["bytes_value"]}), (version, name)


def test_layout_refuses_lru_or_other_sizes():
    assert not cilium_lb.layout_ok("cilium_lb4_backends_v3", {"type": "hash", "key_size": 4, "value_size": 8})
    assert not cilium_lb.layout_ok("cilium_lb4_services_v2", {"type": "lru_hash", "key_size": 12, "value_size": 12})


def test_service_key_and_value_decode_every_field():
    frontends = set(scenario("v3")["frontends"]) | {scenario("v3")["dangling_service"]}
    masters = 0
    for key, value in dump("v3", "cilium_lb4_services_v2"):
        k, v = cilium_lb.decode_service_key(key), cilium_lb.decode_service_value(value)
        assert cilium_lb.frontend_text(k["address"], k["port"], k["proto"]) in frontends
        assert k["port"] == 80 and k["proto"] == 6 and k["scope"] == 0
        # the reverse-NAT index is the service number: the last octet of the VIP minus 20
        assert v["rev_nat_index"] == int(k["address"].rsplit(".", 1)[1]) - 20
        if k["slot"] == 0:
            masters += 1
            assert v["backend_id"] == 0 and v["count"] in (2,)
        else:
            assert v["backend_id"] > 0 and v["count"] == 0
    assert masters == 4


def test_plain_and_json_bpftool_renderings_agree():
    for name in ("cilium_lb4_services_v2", "cilium_lb4_backends_v3", "cilium_lb4_reverse_nat"):
        assert sorted(plain_dump_pairs("v3", name)) == sorted(dump("v3", name))


@pytest.mark.parametrize("version,key_len", [("v1", 2), ("v2", 4), ("v3", 4)])
def test_backend_decoding_per_version(version, key_len):
    entries = dump(version, BACKEND_MAP[version])
    assert len(entries) == scenario(version)["backend_entries"]
    for key, value in entries:
        assert len(key) == key_len
        backend_id = cilium_lb.decode_backend_key(key)
        b = cilium_lb.decode_backend_value(value)
        assert ipaddress.ip_address(b["address"]) in ipaddress.ip_network("198.19.64.0/19")
        assert b["proto"] == 6 and b["state"] == 0
        assert b["port"] == (8080 if backend_id <= scenario(version)["live_backends"] else 9090)


def test_revnat_decoding():
    decoded = {cilium_lb.decode_revnat_key(k): cilium_lb.decode_revnat_value(v) for k, v in dump("v3", "cilium_lb4_reverse_nat")}
    assert decoded[1] == {"address": "198.18.80.21", "port": 80}
    assert decoded[30000]["port"] == 443


def test_rev_nat_index_is_network_order_and_slot_host_order():
    key = ipaddress.IPv4Address("10.96.0.10").packed + struct.pack(">H", 53) + struct.pack("=H", 3) + bytes([17, 1, 0, 0])
    value = struct.pack("=IH", 77, 0) + struct.pack(">H", 0x0102) + bytes([2, 0, 0, 0])
    assert cilium_lb.decode_service_key(key) == {"address": "10.96.0.10", "port": 53, "slot": 3, "proto": 17, "scope": 1}
    assert cilium_lb.decode_service_value(value)["rev_nat_index"] == 0x0102
    assert cilium_lb.decode_service_value(value)["backend_id"] == 77


# ------------------------------------------------------------------ analysis
@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_orphans_found_exactly(version):
    model = model_of(version)
    sc = scenario(version)
    orphans = model["orphan_backends"][version]
    assert len(orphans) == sc["orphans"]
    assert all(i > sc["live_backends"] for i in orphans)
    assert len(model["dangling_slots"]) == sc["dangling"]
    assert len(model["orphan_revnat"]) == sc["orphan_revnat"]


def test_dangling_slots_and_their_finding():
    model = model_of("v3")
    assert sorted(s["v"]["backend_id"] for s in model["dangling_slots"]) == [2000001, 2000002]
    found = {f["check"]: f for f in cilium_lb.lb_findings(model, "/sys/fs/bpf/tc/globals")}
    dangling = found["bpf.dangling_service_slots"]
    assert dangling["severity"] == "critical" and dangling["evidence"]["dangling"] == 2
    assert found["bpf.orphan_backends"]["evidence"]["count"] == 3
    assert found["bpf.orphan_reverse_nat"]["evidence"]["count"] == 2
    assert "bpf.stale_frontends" not in found  # no live_frontends given


def test_stale_frontends_need_live_list_and_honour_wildcards():
    live = {cilium_lb.parse_frontend(f) for f in scenario("v3")["frontends"][:2]}
    model = model_of("v3", live)
    assert [cilium_lb.frontend_text(*fe) for fe in model["stale_frontends"]] == ["198.18.80.23:80/TCP", "198.18.80.24:80/TCP"]
    assert model_of("v3", {("198.18.80.23", 80, 0), ("198.18.80.24", 0, 6)})["stale_frontends"] == [
        ("198.18.80.21", 80, 6), ("198.18.80.22", 80, 6)]


def test_summaries_stay_small():
    out = cilium_lb.summaries(model_of("v3"))
    assert out["services"]["frontends"] == 4 and out["services"]["backend_slots"] == 8
    assert out["backends_v3"]["orphans"] == 3 and out["backends_v3"]["active"] is True
    assert out["reverse_nat"]["orphans"] == 2
    assert len(json.dumps(out)) < 4000


def test_count_mismatch_detected():
    services = dump("v3", "cilium_lb4_services_v2")
    # drop slot 2 of the first frontend: its count (2) no longer matches the slots present (1)
    target = next(k for k, _v in services if cilium_lb.decode_service_key(k)["slot"] == 2)
    model = cilium_lb.analyze([p for p in services if p[0] != target], {"v3": dump("v3", "cilium_lb4_backends_v3")},
                              dump("v3", "cilium_lb4_reverse_nat"))
    assert len(model["count_mismatch"]) == 1


def test_no_services_map_means_nothing_is_provably_orphan():
    model = cilium_lb.analyze(None, {"v3": dump("v3", "cilium_lb4_backends_v3")}, None)
    assert model["orphan_backends"] == {}
    assert cilium_lb.plan_cleanup(model, "orphans") == []
    found = cilium_lb.lb_findings(model, "/x")
    assert [f["severity"] for f in found] == ["info"]


# ---------------------------------------------------------------------- plan
def test_orphan_plan_keeps_every_referenced_backend():
    model = model_of("v3")
    plan = cilium_lb.plan_cleanup(model, "orphans")
    roles = [p[0] for p in plan]
    assert roles == ["backends"] * 3 + ["reverse_nat"] * 2
    referenced = {s["v"]["backend_id"] for s in model["slots"]}
    assert not {cilium_lb.decode_backend_key(p[2]) for p in plan if p[0] == "backends"} & referenced
    assert cilium_lb.plan_cleanup(model, "none") == []


def test_stale_plan_removes_frontend_first_then_its_backends_and_revnat():
    live = {cilium_lb.parse_frontend(f) for f in scenario("v3")["frontends"][1:]}  # service 1 and the dangling one are gone
    model = model_of("v3", live)
    plan = cilium_lb.plan_cleanup(model, "stale")
    services = [p for p in plan if p[0] == "services"]
    assert [cilium_lb.decode_service_key(p[2])["slot"] for p in services][:2] == [0, 0]  # both frontends before slots
    assert len(services) == 2 + 2 + 2  # two masters, 2 slots of service 1, 2 dangling slots
    backends = sorted(cilium_lb.decode_backend_key(p[2]) for p in plan if p[0] == "backends")
    assert backends == [1, 2, 1000000, 1000001, 1000002]
    revnat = sorted(cilium_lb.decode_revnat_key(p[2]) for p in plan if p[0] == "reverse_nat")
    assert revnat == [1, 4, 30000, 30001]
    assert plan.index(services[-1]) < plan.index(next(p for p in plan if p[0] == "backends"))


def test_plan_after_cleanup_is_empty():
    model = model_of("v3")
    plan = cilium_lb.plan_cleanup(model, "orphans")
    gone = {p[2] for p in plan}
    again = cilium_lb.analyze(dump("v3", "cilium_lb4_services_v2"),
                              {"v3": [kv for kv in dump("v3", "cilium_lb4_backends_v3") if kv[0] not in gone]},
                              [kv for kv in dump("v3", "cilium_lb4_reverse_nat") if kv[0] not in gone])
    assert cilium_lb.plan_cleanup(again, "orphans") == []


# ------------------------------------------------------------------- options
@pytest.mark.parametrize("text,expected", [
    ("10.96.0.10:53/UDP", ("10.96.0.10", 53, 17)),
    ("10.96.0.1:443", ("10.96.0.1", 443, 6)),
    ("10.96.0.1:443/any", ("10.96.0.1", 443, 0)),
    ("[fd00::1]:80/TCP", ("fd00::1", 80, 6)),
])
def test_parse_frontend(text, expected):
    assert cilium_lb.parse_frontend(text) == expected


@pytest.mark.parametrize("text", ["10.96.0.300:53/UDP", "10.96.0.10/UDP", "10.96.0.10:70000/TCP", "10.96.0.10:53/ICMP", ""])
def test_parse_frontend_refuses_bad_values(text):
    with pytest.raises(InputError) as err:
        cilium_lb.parse_frontend(text)
    assert repr(text) in err.value.message


def test_check_options_refuse_bad_input_before_reading(tmp_path):
    with pytest.raises(InputError, match="warn_ratio=0.9 and critical_ratio=0.5"):
        cilium_lb.check_options(str(tmp_path), 0.9, 0.5, "none", None, 10)
    with pytest.raises(InputError, match="cleanup=stale needs live_frontends"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "stale", None, 10)
    with pytest.raises(InputError, match="max_delete=0"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "orphans", None, 0)
    with pytest.raises(InputError, match="bpffs=%s is not a bpf filesystem" % tmp_path):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "none", None, 10)
    with pytest.raises(InputError, match="is not a directory"):
        cilium_lb.check_options(str(tmp_path / "nope"), 0.8, 0.95, "none", None, 10)


# -------------------------------------------------- cleanup against a fake kernel
class FakeMaps(object):
    """In-memory pinned maps standing in for bpf.BpfMap: {path: {key: value}}."""

    def __init__(self, maps):
        self.maps = maps
        self.deleted = []
        self.frozen = set()
        store = self

        class FakeMap(object):
            def __init__(self, path, write=False):
                self.path, self.write = path, write
                self.frozen = path in store.frozen

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def items(self):
                return list(store.maps[self.path].items())

            def delete_keys(self, keys):
                assert self.write, "deleting through a read-only map"
                for key in keys:
                    del store.maps[self.path][key]
                    store.deleted.append((self.path, key))
                return len(keys)

        self.cls = FakeMap


GL = "/sys/fs/bpf/tc/globals/"
PATHS = [GL + "cilium_lb4_services_v2", GL + "cilium_lb4_backends_v3", GL + "cilium_lb4_reverse_nat"]


def fake_kernel(monkeypatch):
    fake = FakeMaps({GL + "cilium_lb4_services_v2": dict(dump("v3", "cilium_lb4_services_v2")),
                     GL + "cilium_lb4_backends_v3": dict(dump("v3", "cilium_lb4_backends_v3")),
                     GL + "cilium_lb4_reverse_nat": dict(dump("v3", "cilium_lb4_reverse_nat"))})
    monkeypatch.setattr(cilium_lb.bpf, "BpfMap", fake.cls)
    return fake


def test_check_mode_counts_and_deletes_nothing(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb.plan_cleanup(model_of("v3"), "orphans")
    done = cilium_lb.apply_cleanup(PATHS, 100, True, plan)
    assert done["deleted"] == {GL + "cilium_lb4_backends_v3": 3, GL + "cilium_lb4_reverse_nat": 2}
    assert fake.deleted == []
    assert done["samples"][GL + "cilium_lb4_backends_v3"][0].startswith("1000000 -> ")


def test_apply_rereads_and_skips_what_changed_went_or_became_referenced(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb.plan_cleanup(model_of("v3"), "orphans")
    backends = fake.maps[GL + "cilium_lb4_backends_v3"]
    services = fake.maps[GL + "cilium_lb4_services_v2"]
    orphan_keys = [p[2] for p in plan if p[0] == "backends"]
    # after planning: the agent rewrote orphan 0, deleted orphan 1, and gave orphan 2 to a new slot
    backends[orphan_keys[0]] = backends[orphan_keys[0]][:4] + b"\x00\x51" + backends[orphan_keys[0]][6:]
    del backends[orphan_keys[1]]
    master = next(k for k in services if cilium_lb.decode_service_key(k)["slot"] == 0)
    new_slot = master[:6] + struct.pack("=H", 9) + master[8:]
    services[new_slot] = orphan_keys[2] + b"\x00" * 8
    done = cilium_lb.apply_cleanup(PATHS, 100, False, plan)
    assert done["skipped"] == {"changed": 1, "gone": 1, "now_referenced": 1}
    assert done["deleted"] == {GL + "cilium_lb4_reverse_nat": 2}
    assert all(path.endswith("reverse_nat") for path, _key in fake.deleted)


def test_apply_honours_max_delete(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb.plan_cleanup(model_of("v3"), "orphans")
    done = cilium_lb.apply_cleanup(PATHS, 2, False, plan)
    assert done["capped"] is True and len(fake.deleted) == 2
    assert done["deleted"] == {GL + "cilium_lb4_backends_v3": 2}


def test_a_frozen_map_stops_the_cleanup_before_anything_is_deleted(monkeypatch):
    fake = fake_kernel(monkeypatch)
    fake.frozen.add(GL + "cilium_lb4_reverse_nat")
    plan = cilium_lb.plan_cleanup(model_of("v3"), "orphans")
    with pytest.raises(ChangeError, match="cilium_lb4_reverse_nat is frozen"):
        cilium_lb.apply_cleanup(PATHS, 100, False, plan)
    assert fake.deleted == []
