"""netlink.py: ip -json and pyroute2 messages of one real table give the same models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import interfaces, netlink
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, ReadError

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
    links = interfaces.parse_links(CAPTURE["ip_json_link"])
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


class FakeIPRoute(object):
    def __init__(self, links=(), neigh=()):
        self.closed = False
        self.links = list(links)
        self.neighs = list(neigh)
        self.deleted = []

    def close(self):
        self.closed = True

    def get_links(self):
        return self.links

    def neigh(self, command, **kwargs):
        if command == "dump":
            return self.neighs
        self.deleted.append(kwargs)
        return []


class FakeTool(object):
    """Canned answers of `ip`: {argv tuple: (rc, out, err)}."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, args, check=True, data=None):
        self.calls.append(tuple(args) + ((data,) if data is not None else ()))
        return self.answers[tuple(args) + ((data,) if data is not None else ())]


def iproute2_netlink(answers):
    nl = netlink.Netlink(None, "iproute2")
    nl._ip = FakeTool(answers)
    return nl


def test_netlink_is_a_context_manager_that_closes_its_socket():
    with netlink.Netlink(None, "iproute2") as nl:
        ipr = nl._ipr = FakeIPRoute()
    assert ipr.closed and nl._ipr is None


def test_netlink_closes_on_error_and_lets_the_error_through():
    with pytest.raises(RuntimeError):
        with netlink.Netlink(None, "iproute2") as nl:
            ipr = nl._ipr = FakeIPRoute()
            raise RuntimeError("boom")
    assert ipr.closed


class BinPaths(object):
    """A module whose PATH has the given tools."""

    def __init__(self, tools):
        self.tools = tools

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/sbin/%s" % name if name in self.tools else None


@pytest.fixture
def importable(monkeypatch):
    """Whether pyroute2 is importable, and how often the readers asked for it (importing it costs 0.25 s)."""
    asked = []

    def use(has_pyroute2):
        def fake():
            asked.append(True)
            return {"IPRoute": FakeIPRoute if has_pyroute2 else None, "Conntrack": None, "NetlinkError": Exception}
        monkeypatch.setattr(netlink, "pyroute2", fake)
        return asked
    return use


@pytest.mark.parametrize("has_pyroute2", [True, False])
def test_auto_reads_with_ip_where_it_is_installed_and_never_imports_pyroute2(importable, has_pyroute2):
    asked = importable(has_pyroute2)
    nl = netlink.Netlink(BinPaths({"ip"}), "auto")
    assert nl.name == "iproute2" and nl.ip.path == "/usr/sbin/ip"
    assert asked == []


def test_auto_reads_with_pyroute2_where_ip_is_missing(importable):
    importable(True)
    assert netlink.Netlink(BinPaths(set()), "auto").name == "pyroute2"


def test_auto_without_ip_or_pyroute2_names_what_to_install_on_the_first_read(importable):
    importable(False)
    nl = netlink.Netlink(BinPaths(set()), "auto")
    with pytest.raises(ReadError) as err:
        nl.links()
    assert "ip is not installed" in err.value.message


@pytest.mark.parametrize("reader, has_pyroute2, name", [("pyroute2", True, "pyroute2"), ("iproute2", True, "iproute2")])
def test_a_reader_asked_for_by_name_is_used_where_ip_is_installed(importable, reader, has_pyroute2, name):
    importable(has_pyroute2)
    assert netlink.Netlink(BinPaths({"ip"}), reader).name == name


def test_pyroute2_asked_for_but_not_importable_is_a_clear_error(importable):
    importable(False)
    with pytest.raises(ReadError) as err:
        netlink.Netlink(BinPaths({"ip"}), "pyroute2")
    assert "pyroute2 is not importable" in err.value.message and "reader=auto" in err.value.message


NEIGH_ARGS = ("-json", "-4", "neigh", "show", "to", "198.18.0.200", "dev", "eth0", "nud", "all")


def test_neighbor_re_read_with_ip_fills_the_device_ip_leaves_out():
    out = '[{"dst":"198.18.0.200","lladdr":"02:de:ad:00:be:ef","state":["PERMANENT"]}]'
    entry = iproute2_netlink({NEIGH_ARGS: (0, out, "")}).neighbor("198.18.0.200", "eth0")
    assert entry == {"address": "198.18.0.200", "family": 4, "interface": "eth0", "mac": "02:de:ad:00:be:ef",
                     "state": ["PERMANENT"], "flags": []}


def test_neighbor_re_read_of_a_vanished_device_or_entry_is_none():
    assert iproute2_netlink({NEIGH_ARGS: (0, "[]", "")}).neighbor("198.18.0.200", "eth0") is None
    gone = iproute2_netlink({NEIGH_ARGS: (1, "", 'Cannot find device "eth0"\n')})
    assert gone.neighbor("198.18.0.200", "eth0") is None


def test_neighbor_re_read_failure_is_a_read_error():
    broken = iproute2_netlink({NEIGH_ARGS: (2, "", "RTNETLINK answers: Operation not permitted\n")})
    with pytest.raises(ReadError) as err:
        broken.neighbor("198.18.0.200", "eth0")
    assert "Operation not permitted" in err.value.message


def test_pyroute2_delete_on_a_vanished_device_is_a_change_error_not_a_wrong_index():
    nl = netlink.Netlink(None, "iproute2")
    nl.name = "pyroute2"
    nl._names = {2: "eth1"}  # cached before eth1 went away
    nl._ipr = FakeIPRoute(links=[Msg({"index": 1, "flags": 0x9}, {"IFLA_IFNAME": "lo"})])
    with pytest.raises(ChangeError) as err:
        nl.delete_neighbor("198.18.0.200", "eth1")
    assert "does not exist" in err.value.message and nl._ipr.deleted == []


# `ip -json -force -batch -` on a lab node (iproute2 6.1): the 2nd and 4th commands failed
BATCH_ADDRESSES = ["198.18.64.11", "198.19.250.7", "198.18.64.12", "198.19.251.9", "::1"]
BATCH_SCRIPT = "".join("route get %s\n" % a for a in BATCH_ADDRESSES)
BATCH_OUT = (
    '[{"dst":"198.18.64.11","dev":"eth0","prefsrc":"198.18.64.12","flags":[],"uid":0,"cache":[]}]\n'
    '[{"type":"local","dst":"198.18.64.12","dev":"lo","prefsrc":"198.18.64.12","flags":[],"uid":0,"cache":["local"]}]\n'
    '[{"type":"local","dst":"::1","from":"::","dev":"lo","table":"local","protocol":"kernel","prefsrc":"::1",'
    '"metric":0,"flags":[],"pref":"medium"}]\n')
BATCH_ERR = ("RTNETLINK answers: No route to host\nCommand failed -:2\n"
             "RTNETLINK answers: Network is unreachable\nCommand failed -:4\n")
BATCH_ARGS = ("-json", "-force", "-batch", "-", BATCH_SCRIPT)


def test_route_lookups_in_one_ip_batch_pair_answers_and_errors_with_their_addresses():
    routes = netlink.parse_batch_route_get(BATCH_ADDRESSES, BATCH_OUT, BATCH_ERR)
    assert [(r["dst"], r["type"], r.get("dev"), r.get("error")) for r in routes] == [
        ("198.18.64.11/32", "unicast", "eth0", None),
        ("198.19.250.7/32", "unreachable", None, "No route to host"),
        ("198.18.64.12/32", "local", "lo", None),
        ("198.19.251.9/32", "unreachable", None, "Network is unreachable"),
        ("::1/128", "local", "lo", None)]
    nl = iproute2_netlink({BATCH_ARGS: (1, BATCH_OUT, BATCH_ERR)})
    assert nl.routes_get(BATCH_ADDRESSES) == routes and nl._ip.calls == [BATCH_ARGS]  # one process for five


def test_route_lookups_fall_back_to_one_process_each_when_the_batch_cannot_be_paired():
    one = dict(((("-json", "route", "get", a), (0, '[{"dst":"%s","dev":"eth0"}]' % a, "")) for a in BATCH_ADDRESSES))
    for out, err in ((BATCH_OUT.split("\n", 1)[1], BATCH_ERR),  # an answer missing
                     (BATCH_OUT + BATCH_OUT, BATCH_ERR),  # too many
                     (BATCH_OUT, BATCH_ERR + "Command failed -:9\n"),  # a line that was not sent
                     ("not json\n" * 3, BATCH_ERR)):
        assert netlink.parse_batch_route_get(BATCH_ADDRESSES, out, err) is None
        nl = iproute2_netlink(dict(one))
        nl._ip.answers[BATCH_ARGS] = (1, out, err)
        assert [r["dev"] for r in nl.routes_get(BATCH_ADDRESSES)] == ["eth0"] * 5
        assert nl._ip.calls == [BATCH_ARGS] + [("-json", "route", "get", a) for a in BATCH_ADDRESSES]


def test_route_lookups_take_addresses_only():
    """Each address becomes a line of ip's batch script: anything but an address (a newline and another
    command) is refused before ip runs."""
    nl = iproute2_netlink({})
    for bad in ("198.18.64.11\nroute flush table main", "198.18.64.0/24", "eth0"):
        with pytest.raises(ValueError):
            nl.routes_get(["198.18.64.12", bad])
    assert nl._ip.calls == []
