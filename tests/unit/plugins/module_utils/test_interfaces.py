"""interfaces.py: the link model from ip -json, pyroute2 and sysfs, and the lookups on it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import interfaces
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

CAPTURE = json.loads((Path(__file__).parent / "fixtures" / "neigh_capture.json").read_text())
KEYS = ["ifindex", "ifname", "mac", "operstate", "up", "kind", "mtu"]


class Msg(dict):
    def __init__(self, fields, attrs):
        super().__init__(fields)
        self.attrs = attrs

    def get_attr(self, name):
        return self.attrs.get(name)


def test_ip_json_and_pyroute2_give_the_same_links():
    from_ip = interfaces.parse_links(CAPTURE["ip_json_link"])
    from_nl = [interfaces.from_pyroute2_link(Msg({"index": m["index"], "flags": m["flags"]}, m["attrs"]))
               for m in CAPTURE["pyroute2_links"]]
    for link in from_ip + from_nl:
        assert sorted(link) == sorted(KEYS)

    def comparable(links):
        return sorted((l["ifindex"], l["ifname"], l["mac"], l["operstate"], l["up"]) for l in links)

    assert comparable(from_ip) == comparable(from_nl)
    eth0 = [l for l in from_ip if l["ifname"] == "eth0"][0]
    assert eth0["kind"] == "veth" and eth0["up"] is True


def fake_sysfs(root, name, ifindex, mac, flags, operstate):
    base = root / name
    base.mkdir()
    for key, value in (("ifindex", ifindex), ("address", mac), ("flags", flags), ("operstate", operstate)):
        if value is not None:
            (base / key).write_text("%s\n" % value)


def test_sysfs_reader_fills_the_same_model(tmp_path):
    fake_sysfs(tmp_path, "lo", 1, "00:00:00:00:00:00", "0x9", "unknown")
    fake_sysfs(tmp_path, "eth0", 2, "02:18:00:00:00:01", "0x1003", "up")
    fake_sysfs(tmp_path, "eth1", 3, "02:18:00:00:00:02", "0x1002", "down")
    fake_sysfs(tmp_path, "vanished", None, None, None, None)  # went away while we read
    links = interfaces.read_sysfs_links(str(tmp_path))
    assert [(l["ifindex"], l["ifname"], l["mac"], l["operstate"], l["up"]) for l in links] == [
        (2, "eth0", "02:18:00:00:00:01", "UP", True), (3, "eth1", "02:18:00:00:00:02", "DOWN", False),
        (1, "lo", "00:00:00:00:00:00", "UNKNOWN", True)]
    assert all(sorted(l) == sorted(KEYS) and l["kind"] is None for l in links)


def test_sysfs_and_ip_json_agree_on_this_machine():
    text = subprocess.run(["ip", "-json", "-details", "link", "show"], capture_output=True, text=True, check=True).stdout
    from_ip = {l["ifindex"]: (l["ifname"], l["mac"], l["up"], l["mtu"]) for l in interfaces.parse_links(text)}
    from_sys = {l["ifindex"]: (l["ifname"], l["mac"], l["up"], l["mtu"]) for l in interfaces.read_sysfs_links()}
    assert from_ip == from_sys
    assert all(isinstance(mtu, int) and mtu >= 68 for _n, _m, _u, mtu in from_ip.values())


def test_lookups():
    links = interfaces.parse_links(CAPTURE["ip_json_link"])
    assert interfaces.names_by_index(links)[2] == "eth0"
    assert interfaces.macs_by_name(links)["eth0"] == "02:18:00:00:00:01"


def test_unknown_interface_names_the_real_ones():
    links = interfaces.parse_links(CAPTURE["ip_json_link"])
    interfaces.require_interface("eth0", links)
    with pytest.raises(InputError) as err:
        interfaces.require_interface("eth9", links)
    assert "'eth9' does not exist on this host" in err.value.message and "eth0, lo" in err.value.message
