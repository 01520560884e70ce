"""netlink.py: ip -json and pyroute2 messages of one real table give the same models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import netlink

CAPTURE = json.loads((Path(__file__).parent / "fixtures" / "neigh_capture.json").read_text())


class Msg(dict):
    """Replays a captured pyroute2 message: fields by key, attributes through get_attr."""

    def __init__(self, fields, attrs):
        super().__init__(fields)
        self.attrs = attrs

    def get_attr(self, name):
        return self.attrs.get(name)


def pyroute2_models():
    names = {link["index"]: link["attrs"]["IFLA_IFNAME"] for link in CAPTURE["pyroute2_links"]}
    msgs = [Msg({k: m[k] for k in ("family", "ifindex", "state", "flags")}, m["attrs"]) for m in CAPTURE["pyroute2_neigh"]]
    return [netlink._from_pyroute2_neighbor(m, names) for m in msgs if m.get_attr("NDA_DST")]


def ip_models():
    return netlink.parse_neighbors(CAPTURE["ip_json_v4"]) + netlink.parse_neighbors(CAPTURE["ip_json_v6"])


def key(entry):
    return (entry["address"], entry["interface"])


def test_both_readers_fill_the_same_neighbor_model():
    from_ip = sorted(ip_models(), key=key)
    from_netlink = sorted(pyroute2_models(), key=key)
    assert from_ip == from_netlink
    assert len(from_ip) == 14


@pytest.mark.parametrize("address, state, flags", [
    ("198.18.0.210", ["STALE"], []),
    ("198.18.0.211", ["PERMANENT"], []),
    ("198.18.0.212", ["NOARP"], []),
    ("198.18.0.213", ["PERMANENT"], ["extern_learn"]),
    ("198.18.0.214", ["REACHABLE"], ["router"]),
    ("198.18.0.215", ["INCOMPLETE"], ["managed"]),
    ("198.18.0.99", ["INCOMPLETE"], []),
    ("fe80::1:2", ["STALE"], []),
])
def test_states_and_flags_decoded(address, state, flags):
    entry = [e for e in ip_models() if e["address"] == address][0]
    assert entry["state"] == state
    assert entry["flags"] == flags
    assert entry["family"] == (6 if ":" in address else 4)


def test_unresolved_entry_has_no_mac():
    entry = [e for e in ip_models() if e["address"] == "198.18.0.99"][0]
    assert entry["mac"] is None


def test_links_from_ip_json():
    links = netlink.parse_links(CAPTURE["ip_json_link"])
    eth0 = [link for link in links if link["ifname"] == "eth0"][0]
    assert eth0["mac"] == "02:18:00:00:00:01"
    assert eth0["up"] is True
    assert eth0["kind"] == "veth"


@pytest.mark.parametrize("dst, family, cidr", [
    ("default", 4, "0.0.0.0/0"), ("default", 6, "::/0"), ("198.19.0.5", 4, "198.19.0.5/32"),
    ("fd00::5", 6, "fd00::5/128"), ("198.19.1.0/24", 4, "198.19.1.0/24"),
])
def test_route_destinations_always_cidr(dst, family, cidr):
    assert netlink._cidr(dst, family) == cidr


def test_parse_routes_keeps_type_gateway_and_table():
    text = json.dumps([
        {"type": "blackhole", "dst": "198.19.1.128/25", "flags": []},
        {"dst": "198.19.2.0/24", "gateway": "198.18.0.13", "dev": "eth0", "protocol": "static", "flags": []},
        {"type": "local", "dst": "198.18.0.11", "dev": "eth0", "table": "local", "protocol": "kernel",
         "scope": "host", "prefsrc": "198.18.0.11", "flags": []},
    ])
    routes = netlink.parse_routes(text, 4)
    assert [r["type"] for r in routes] == ["blackhole", "unicast", "local"]
    assert routes[1]["gateway"] == "198.18.0.13" and routes[1]["dev"] == "eth0"
    assert routes[2]["dst"] == "198.18.0.11/32" and routes[2]["table"] == "local"
