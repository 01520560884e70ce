"""Cilium LB map decoders, checks and cleanup plan on byte layouts captured with bpftool in the lab."""

from __future__ import annotations

import ipaddress
import json
import struct
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb as cilium_lb
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_analysis as cilium_lb_analysis
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_cleanup as cilium_lb_cleanup
from ansible_collections.k8snet.triage.plugins.module_utils.core import frontends
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError, PrivilegeError

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
    return cilium_lb_analysis.analyze(dump(version, "cilium_lb4_services_v2"), {version: dump(version, BACKEND_MAP[version])},
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
            assert cilium_lb_analysis.layout_ok(name, {"type": info["type"], "key_size": info["bytes_key"],
                                                       "value_size": info["bytes_value"]}), (version, name)


def test_layout_refuses_lru_or_other_sizes():
    assert not cilium_lb_analysis.layout_ok("cilium_lb4_backends_v3", {"type": "hash", "key_size": 4, "value_size": 8})
    assert not cilium_lb_analysis.layout_ok("cilium_lb4_services_v2", {"type": "lru_hash", "key_size": 12, "value_size": 12})


def test_service_key_and_value_decode_every_field():
    frontends = set(scenario("v3")["frontends"]) | {scenario("v3")["dangling_service"]}
    masters = 0
    for key, value in dump("v3", "cilium_lb4_services_v2"):
        k, v = cilium_lb_analysis.decode_service_key(key), cilium_lb_analysis.decode_service_value(value)
        assert cilium_lb_analysis.frontend_text(k["address"], k["port"], k["proto"]) in frontends
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
        backend_id = cilium_lb_analysis.decode_backend_key(key)
        b = cilium_lb_analysis.decode_backend_value(value)
        assert ipaddress.ip_address(b["address"]) in ipaddress.ip_network("198.19.64.0/19")
        assert b["proto"] == 6 and b["state"] == 0
        assert b["port"] == (8080 if backend_id <= scenario(version)["live_backends"] else 9090)


def test_revnat_decoding():
    decoded = {cilium_lb_analysis.decode_revnat_key(k): cilium_lb_analysis.decode_revnat_value(v) for k, v in dump("v3", "cilium_lb4_reverse_nat")}
    assert decoded[1] == {"address": "198.18.80.21", "port": 80}
    assert decoded[30000]["port"] == 443


def test_rev_nat_index_is_network_order_and_slot_host_order():
    key = ipaddress.IPv4Address("10.96.0.10").packed + struct.pack(">H", 53) + struct.pack("=H", 3) + bytes([17, 1, 0, 0])
    value = struct.pack("=IH", 77, 0) + struct.pack(">H", 0x0102) + bytes([2, 0, 0, 0])
    assert cilium_lb_analysis.decode_service_key(key) == {"address": "10.96.0.10", "port": 53, "slot": 3, "proto": 17, "scope": 1}
    assert cilium_lb_analysis.decode_service_value(value)["rev_nat_index"] == 0x0102
    assert cilium_lb_analysis.decode_service_value(value)["backend_id"] == 77


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
    found = {f["check"]: f for f in cilium_lb_analysis.lb_findings(model, "/sys/fs/bpf/tc/globals")}
    dangling = found["bpf.dangling_service_slots"]
    assert dangling["severity"] == "critical" and dangling["evidence"]["dangling"] == 2
    assert found["bpf.orphan_backends"]["evidence"]["count"] == 3
    assert found["bpf.orphan_reverse_nat"]["evidence"]["count"] == 2
    assert "bpf.stale_frontends" not in found  # no live_frontends given


def test_stale_frontends_need_live_list_and_honour_wildcards():
    live = {cilium_lb_analysis.parse_frontend(f) for f in scenario("v3")["frontends"][:2]}
    model = model_of("v3", live)
    assert [cilium_lb_analysis.frontend_text(*fe) for fe in model["stale_frontends"]] == ["198.18.80.23:80/TCP", "198.18.80.24:80/TCP"]
    assert model_of("v3", {("198.18.80.23", 80, 0), ("198.18.80.24", 0, 6)})["stale_frontends"] == [
        ("198.18.80.21", 80, 6), ("198.18.80.22", 80, 6)]


def test_summaries_stay_small():
    out = cilium_lb_analysis.summaries(model_of("v3"))
    assert out["services"]["frontends"] == 4 and out["services"]["backend_slots"] == 8
    assert out["backends_v3"]["orphans"] == 3 and out["backends_v3"]["active"] is True
    assert out["reverse_nat"]["orphans"] == 2
    assert len(json.dumps(out)) < 4000


def test_count_mismatch_detected():
    services = dump("v3", "cilium_lb4_services_v2")
    # drop slot 2 of the first frontend: its count (2) no longer matches the slots present (1)
    target = next(k for k, _v in services if cilium_lb_analysis.decode_service_key(k)["slot"] == 2)
    model = cilium_lb_analysis.analyze([p for p in services if p[0] != target], {"v3": dump("v3", "cilium_lb4_backends_v3")},
                                       dump("v3", "cilium_lb4_reverse_nat"))
    assert len(model["count_mismatch"]) == 1


def test_no_services_map_means_nothing_is_provably_orphan():
    model = cilium_lb_analysis.analyze(None, {"v3": dump("v3", "cilium_lb4_backends_v3")}, None)
    assert model["orphan_backends"] == {}
    assert cilium_lb_cleanup.plan_cleanup(model, "orphans") == []
    found = cilium_lb_analysis.lb_findings(model, "/x")
    assert [f["severity"] for f in found] == ["info"]


# ---------------------------------------------------------------------- plan
def test_orphan_plan_keeps_every_referenced_backend():
    model = model_of("v3")
    plan = cilium_lb_cleanup.plan_cleanup(model, "orphans")
    roles = [p[0] for p in plan]
    assert roles == ["backends"] * 3 + ["reverse_nat"] * 2
    referenced = {s["v"]["backend_id"] for s in model["slots"]}
    assert not {cilium_lb_analysis.decode_backend_key(p[2]) for p in plan if p[0] == "backends"} & referenced
    assert cilium_lb_cleanup.plan_cleanup(model, "none") == []


def test_stale_plan_removes_frontend_first_then_its_backends_and_revnat():
    live = {cilium_lb_analysis.parse_frontend(f) for f in scenario("v3")["frontends"][1:]}  # service 1 and the dangling one are gone
    model = model_of("v3", live)
    plan = cilium_lb_cleanup.plan_cleanup(model, "stale")
    services = [p for p in plan if p[0] == "services"]
    assert [cilium_lb_analysis.decode_service_key(p[2])["slot"] for p in services][:2] == [0, 0]  # both frontends before slots
    assert len(services) == 2 + 2 + 2  # two masters, 2 slots of service 1, 2 dangling slots
    backends = sorted(cilium_lb_analysis.decode_backend_key(p[2]) for p in plan if p[0] == "backends")
    assert backends == [1, 2, 1000000, 1000001, 1000002]
    revnat = sorted(cilium_lb_analysis.decode_revnat_key(p[2]) for p in plan if p[0] == "reverse_nat")
    assert revnat == [1, 4, 30000, 30001]
    assert plan.index(services[-1]) < plan.index(next(p for p in plan if p[0] == "backends"))


def test_plan_after_cleanup_is_empty():
    model = model_of("v3")
    plan = cilium_lb_cleanup.plan_cleanup(model, "orphans")
    gone = {p[2] for p in plan}
    again = cilium_lb_analysis.analyze(dump("v3", "cilium_lb4_services_v2"),
                                       {"v3": [kv for kv in dump("v3", "cilium_lb4_backends_v3") if kv[0] not in gone]},
                                       [kv for kv in dump("v3", "cilium_lb4_reverse_nat") if kv[0] not in gone])
    assert cilium_lb_cleanup.plan_cleanup(again, "orphans") == []


# ------------------------------------------------------------------- options
@pytest.mark.parametrize("text,expected", [
    ("10.96.0.10:53/UDP", ("10.96.0.10", 53, 17)),
    ("10.96.0.1:443", ("10.96.0.1", 443, 6)),
    ("10.96.0.1:443/any", ("10.96.0.1", 443, 0)),
    ("[fd00::1]:80/TCP", ("fd00::1", 80, 6)),
])
def test_parse_frontend(text, expected):
    assert cilium_lb_analysis.parse_frontend(text) == expected


@pytest.mark.parametrize("text", ["10.96.0.300:53/UDP", "10.96.0.10/UDP", "10.96.0.10:70000/TCP", "10.96.0.10:53/ICMP", ""])
def test_parse_frontend_refuses_bad_values(text):
    with pytest.raises(InputError) as err:
        cilium_lb_analysis.parse_frontend(text)
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
        self.lookups = []
        self.fail_after = {}  # path: number of deletes that succeed before the next one fails with EPERM
        self.vanish = {}  # path: (number of deletes, another map unpinned after that many deletes here)
        store = self

        class FakeMap(object):
            def __init__(self, path, write=False):
                if path not in store.maps:
                    raise InputError("%s does not exist: name a map pinned under the bpf filesystem" % path, pin=path)
                self.path, self.write = path, write
                self.frozen = path in store.frozen

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def items(self):
                return list(store.maps[self.path].items())

            def lookup(self, key):
                store.lookups.append((self.path, key))
                return store.maps[self.path].get(key)

            def delete_key(self, key):
                assert self.write, "deleting through a read-only map"
                done = sum(1 for p, _k in store.deleted if p == self.path)
                if self.path in store.fail_after and done >= store.fail_after[self.path]:
                    raise PrivilegeError("deleting entries of %s was refused by the kernel (Operation not "
                                         "permitted)" % self.path, pin=self.path, errno=1)
                if store.maps[self.path].pop(key, None) is None:
                    return False
                store.deleted.append((self.path, key))
                if self.path in store.vanish and store.vanish[self.path][0] == done + 1:
                    store.maps.pop(store.vanish[self.path][1])
                return True

        self.cls = FakeMap


GL = "/sys/fs/bpf/tc/globals/"
PATHS = [GL + "cilium_lb4_services_v2", GL + "cilium_lb4_backends_v3", GL + "cilium_lb4_reverse_nat"]


def fake_kernel(monkeypatch):
    fake = FakeMaps({GL + "cilium_lb4_services_v2": dict(dump("v3", "cilium_lb4_services_v2")),
                     GL + "cilium_lb4_backends_v3": dict(dump("v3", "cilium_lb4_backends_v3")),
                     GL + "cilium_lb4_reverse_nat": dict(dump("v3", "cilium_lb4_reverse_nat"))})
    monkeypatch.setattr(cilium_lb.bpf, "BpfMap", fake.cls)
    return fake


def fake_reader(monkeypatch, fake):
    """usage_report's discovery and reads served from the fake kernel (every pinned map is a hash map)."""
    monkeypatch.setattr(cilium_lb.bpf, "check_bpffs", lambda path: None)
    monkeypatch.setattr(cilium_lb.bpf, "find_pinned", lambda bpffs, maps: (sorted(fake.maps), []))

    def read_map(path, bpffs, with_items=False):
        items = list(fake.maps[path].items())
        info = {"type": "hash", "id": 1, "key_size": len(items[0][0]), "value_size": len(items[0][1]),
                "max_entries": 1024, "flags": 1, "kernel_name": path[-15:]}
        return cilium_lb.bpf.usage_model(path, "/sys/fs/bpf", info, len(items)), items
    monkeypatch.setattr(cilium_lb.bpf, "read_map", read_map)


def test_check_mode_counts_and_deletes_nothing(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3"), "orphans")
    done = cilium_lb_cleanup.apply_cleanup(PATHS, 100, True, plan)
    assert done["deleted"] == {GL + "cilium_lb4_backends_v3": 3, GL + "cilium_lb4_reverse_nat": 2}
    assert fake.deleted == []
    assert done["samples"][GL + "cilium_lb4_backends_v3"][0].startswith("1000000 -> ")


def test_apply_rereads_and_skips_what_changed_went_or_became_referenced(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3"), "orphans")
    backends = fake.maps[GL + "cilium_lb4_backends_v3"]
    services = fake.maps[GL + "cilium_lb4_services_v2"]
    orphan_keys = [p[2] for p in plan if p[0] == "backends"]
    # after planning: the agent rewrote orphan 0, deleted orphan 1, and gave orphan 2 to a new slot
    backends[orphan_keys[0]] = backends[orphan_keys[0]][:4] + b"\x00\x51" + backends[orphan_keys[0]][6:]
    del backends[orphan_keys[1]]
    master = next(k for k in services if cilium_lb_analysis.decode_service_key(k)["slot"] == 0)
    new_slot = master[:6] + struct.pack("=H", 9) + master[8:]
    services[new_slot] = orphan_keys[2] + b"\x00" * 8
    done = cilium_lb_cleanup.apply_cleanup(PATHS, 100, False, plan)
    assert done["skipped"] == {"changed": 1, "gone": 1, "now_referenced": 1}
    assert done["deleted"] == {GL + "cilium_lb4_reverse_nat": 2}
    assert all(path.endswith("reverse_nat") for path, _key in fake.deleted)


def test_apply_honours_max_delete(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3"), "orphans")
    done = cilium_lb_cleanup.apply_cleanup(PATHS, 2, False, plan)
    assert done["capped"] is True and len(fake.deleted) == 2
    assert done["deleted"] == {GL + "cilium_lb4_backends_v3": 2}


def test_a_frozen_map_stops_the_cleanup_before_anything_is_deleted(monkeypatch):
    fake = fake_kernel(monkeypatch)
    fake.frozen.add(GL + "cilium_lb4_reverse_nat")
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3"), "orphans")
    with pytest.raises(ChangeError, match="cilium_lb4_reverse_nat is frozen"):
        cilium_lb_cleanup.apply_cleanup(PATHS, 100, False, plan)
    assert fake.deleted == []


def test_apply_looks_each_key_up_right_before_deleting_it(monkeypatch):
    fake = fake_kernel(monkeypatch)
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3"), "orphans")
    cilium_lb_cleanup.apply_cleanup(PATHS, 100, False, plan)
    assert [k for _p, k in fake.lookups] == [p[2] for p in plan]  # one lookup per planned key, in plan order
    assert fake.deleted == fake.lookups  # each key deleted right after its own lookup


# ------------------------------------------------- live is live in every form (issue 11)
def _map_with(frontends_text):
    """A services map holding one frontend with one slot for each ``ip:port/proto``, and their backends."""
    services, backends, revnat = [], [], []
    for n, text in enumerate(frontends_text, 1):
        address, port, proto = cilium_lb_analysis.parse_frontend(text)
        key = ipaddress.IPv4Address(address).packed + struct.pack(">H", port)
        services.append((key + struct.pack("=H", 0) + bytes([proto, 0, 0, 0]),
                         struct.pack("=IH", 0, 1) + struct.pack(">H", n) + bytes(4)))
        services.append((key + struct.pack("=H", 1) + bytes([proto, 0, 0, 0]),
                         struct.pack("=IH", n, 0) + struct.pack(">H", n) + bytes(4)))
        backends.append((struct.pack("=I", n), ipaddress.IPv4Address("198.19.0.%d" % n).packed + struct.pack(">H", 80)
                         + bytes([6, 0]) + bytes(4)))
        revnat.append((struct.pack(">H", n), ipaddress.IPv4Address(address).packed + struct.pack(">H", port)))
    return services, backends, revnat


NODEPORT_FORMS = ["0.0.0.0:30070/TCP", "198.18.0.11:30070/TCP", "198.18.0.12:30070/TCP", "203.0.113.12:30070/TCP",
                  "198.18.0.13:31444/UDP", "0.0.0.0:31444/UDP", "198.18.16.70:80/TCP"]


def test_surrogate_and_every_node_address_nodeport_frontends_are_live_from_the_api():
    """Regression: the live set built from the API listed NodePorts on InternalIPs only, so the
    0.0.0.0 surrogate and node addresses other than the InternalIP looked stale and were deleted."""
    from ansible_collections.k8snet.triage.plugins.module_utils.cluster import facts as kube_facts
    from tests.kube_api import fixture_objects, of_kind
    objs = fixture_objects("cluster.yaml", "network.yaml")
    nodes = of_kind(objs, "Node")
    for node in nodes:
        if node["metadata"]["name"] == "node2":
            node["status"]["addresses"].append({"type": "ExternalIP", "address": "203.0.113.12"})
    live_text = kube_facts.service_frontends(of_kind(objs, "Service"), kube_facts.nodes_facts(nodes), of_kind(objs, "Pod"))
    services, backends, revnat = _map_with(NODEPORT_FORMS + ["198.18.80.99:80/TCP"])
    model = cilium_lb_analysis.analyze(services, {"v3": backends}, revnat, {cilium_lb_analysis.parse_frontend(f) for f in live_text})
    assert [cilium_lb_analysis.frontend_text(*fe) for fe in model["stale_frontends"]] == ["198.18.80.99:80/TCP"]
    plan = cilium_lb_cleanup.plan_cleanup(model, "stale")
    gone = {cilium_lb_analysis.decode_service_key(p[2])["address"] for p in plan if p[0] == "services"}
    assert gone == {"198.18.80.99"}


@pytest.mark.parametrize("live,frontend,why", [
    (["198.18.0.11:30070/TCP"], "0.0.0.0:30070/TCP", "surrogate"),  # a NodePort on one address covers 0.0.0.0
    (["198.18.0.11:30070/TCP"], "0.0.0.0:30070/UDP", None),  # another protocol does not
    (["0.0.0.0:30070/TCP"], "198.18.0.99:30070/TCP", "node_port"),  # a node address the list does not name
    (["0.0.0.0:30070/ANY"], "198.18.0.99:30070/UDP", "node_port"),
    (["198.18.16.70:80/TCP"], "198.18.16.70:80/ANY", "exact"),  # older Cilium keys carry protocol 0
    (["198.18.16.70:0/TCP"], "198.18.16.70:8080/TCP", "exact"),
    (["198.18.16.70:80/TCP"], "198.18.0.11:80/TCP", None),  # a ClusterIP port is no node port
    (["198.18.16.70:80/TCP"], "198.18.16.71:80/TCP", None),
    (["[::]:30070/TCP"], "198.18.0.1:30070/TCP", "node_port"),
])
def test_live_matching_rule(live, frontend, why):
    index = frontends.LiveFrontends(cilium_lb_analysis.parse_frontend(f) for f in live)
    assert index.why(cilium_lb_analysis.parse_frontend(frontend)) == why
    assert (cilium_lb_analysis.parse_frontend(frontend) in index) is (why is not None)


# ------------------------------------------- refusing an empty or implausible live set (issue 11)
def test_empty_live_set_is_refused_naming_the_override(tmp_path):
    with pytest.raises(InputError, match="allow_empty_live_frontends=true"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "stale", [], 10)
    with pytest.raises(InputError, match="max_stale_share=nan must be a fraction"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "stale", ["10.0.0.1:80"], 10, float("nan"))
    with pytest.raises(InputError, match="max_stale_share=0 must be"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "none", None, 10, 0)
    with pytest.raises(InputError, match="verify_deleted item '10.0.0.1'"):
        cilium_lb.check_options(str(tmp_path), 0.8, 0.95, "none", ["10.0.0.1:80"], 10, 0.25, False, ["10.0.0.1"])


def test_implausible_share_is_refused_naming_the_option():
    live = {cilium_lb_analysis.parse_frontend(f) for f in scenario("v3")["frontends"][1:]}  # 2 of 4 frontends stale
    model = model_of("v3", live)
    assert len(model["stale_frontends"]) == 2 and len(model["frontends"]) == 4
    with pytest.raises(InputError, match=r"would delete 2 of the 4 frontends in /d \(50%\), more than max_stale_share=0.25"):
        cilium_lb.refuse_implausible({"/d": model}, 0.25)
    cilium_lb.refuse_implausible({"/d": model}, 0.5)  # at the share exactly: allowed


def test_usage_report_refuses_before_deleting_anything(monkeypatch):
    fake = fake_kernel(monkeypatch)
    fake_reader(monkeypatch, fake)
    for args, words in ((dict(live_frontends=[]), "allow_empty_live_frontends"),
                        (dict(live_frontends=["198.18.80.22:80/TCP"]), "max_stale_share=0.25")):
        for check_mode in (True, False):
            with pytest.raises(InputError, match=words):
                cilium_lb.usage_report("/sys/fs/bpf", cleanup="stale", check_mode=check_mode, **args)
    assert fake.deleted == []
    out = cilium_lb.usage_report("/sys/fs/bpf", cleanup="stale", live_frontends=[], allow_empty_live_frontends=True,
                                 max_stale_share=1, check_mode=True)
    assert len(out["deleted_frontends"]) == 4 and fake.deleted == []


def test_verify_deleted_names_the_live_ones(monkeypatch):
    live = frontends.LiveFrontends(cilium_lb_analysis.parse_frontend(f) for f in ["0.0.0.0:30070/TCP", "10.96.0.1:443/TCP"])
    hits, found = cilium_lb.deleted_live_findings(["198.18.0.11:30070/TCP", "10.96.0.9:443/TCP"], live, "/sys/fs/bpf")
    assert hits == ["198.18.0.11:30070/TCP"]
    assert [(f["check"], f["severity"]) for f in found] == [("bpf.deleted_live_frontends", "critical")]
    assert cilium_lb.deleted_live_findings([], live, "/x") == ([], [])


# --------------------------------------------------- partial progress is never lost (issue 11)
def test_delete_refused_halfway_returns_every_key_already_deleted(monkeypatch):
    """Regression: a cleanup that failed after deleting keys returned only the pin path."""
    fake = fake_kernel(monkeypatch)
    fake.fail_after[GL + "cilium_lb4_backends_v3"] = 2  # the third delete gets EPERM
    live = {cilium_lb_analysis.parse_frontend(f) for f in scenario("v3")["frontends"][1:]}
    plan = cilium_lb_cleanup.plan_cleanup(model_of("v3", live), "stale")
    with pytest.raises(ChangeError) as err:
        cilium_lb_cleanup.apply_cleanup(PATHS, 100, False, plan)
    details = err.value.details
    gone = {}
    for path, key in fake.deleted:
        gone.setdefault(path, []).append(key)
    assert details["deleted"] == {GL + "cilium_lb4_services_v2": 6, GL + "cilium_lb4_backends_v3": 2}
    assert details["deleted"] == {p: len(k) for p, k in gone.items()}
    assert details["deleted_keys"][GL + "cilium_lb4_backends_v3"] == [
        str(cilium_lb_analysis.decode_backend_key(k)) for k in gone[GL + "cilium_lb4_backends_v3"]]
    assert sorted(details["deleted_frontends"]) == ["198.18.80.21:80/TCP", "198.18.80.24:80/TCP"]
    assert details["not_attempted"] == {GL + "cilium_lb4_backends_v3": 2, GL + "cilium_lb4_reverse_nat": 4}
    assert "Operation not permitted" in err.value.message


def test_map_gone_halfway_over_two_directories_keeps_the_progress(monkeypatch):
    fake = fake_kernel(monkeypatch)
    other = "/sys/fs/bpf/tc/old/"
    for path in PATHS:
        fake.maps[path.replace(GL, other)] = dict(fake.maps[path])
    fake.vanish[other + "cilium_lb4_backends_v3"] = (1, other + "cilium_lb4_reverse_nat")
    fake_reader(monkeypatch, fake)
    with pytest.raises(ChangeError) as err:
        cilium_lb.usage_report("/sys/fs/bpf", cleanup="orphans")
    details = err.value.details
    # /tc/globals (first) was cleaned fully; /tc/old lost its reverse-NAT map while its backends were deleted
    assert details["deleted"] == {GL + "cilium_lb4_backends_v3": 3, GL + "cilium_lb4_reverse_nat": 2,
                                  other + "cilium_lb4_backends_v3": 3}
    assert len(fake.deleted) == 8 and details["changed"] is True
    assert details["not_attempted"] == {other + "cilium_lb4_reverse_nat": 2}
    assert err.value.message.startswith("the cleanup stopped halfway: ")
    assert "cilium_lb4_reverse_nat does not exist" in err.value.message
    assert "Already deleted: 8 keys" in err.value.message and "Not attempted: 2 keys" in err.value.message


def test_orphan_sweep_of_an_empty_services_map_or_above_its_share_is_refused():
    empty = cilium_lb_analysis.analyze([], {"v3": dump("v3", BACKEND_MAP["v3"])}, dump("v3", "cilium_lb4_reverse_nat"))
    plan = cilium_lb_cleanup.plan_cleanup(empty, "orphans")
    total = len(empty["backend_maps"]["v3"]) + len(empty["revnat"])
    assert len(plan) == total > 0  # without the guard, every backend and reverse-NAT entry would go
    with pytest.raises(InputError, match="empty services map.*allow_empty_services=true.*max_orphan_share=1"):
        cilium_lb.refuse_orphan_sweep({"/d": empty}, {"/d": ([], plan)}, False, 0.95)
    with pytest.raises(InputError, match=r"would delete %d of the %d backend and reverse-NAT entries in /d \(100%%\), "
                                         r"more than max_orphan_share=0.95" % (total, total)):
        cilium_lb.refuse_orphan_sweep({"/d": empty}, {"/d": ([], plan)}, True, 0.95)
    cilium_lb.refuse_orphan_sweep({"/d": empty}, {"/d": ([], plan)}, True, 1)  # both overrides: allowed
    with pytest.raises(InputError, match="max_orphan_share=0 must be a fraction"):
        cilium_lb.check_options("/nonexistent", 0.8, 0.95, "orphans", None, 10, max_orphan_share=0)
