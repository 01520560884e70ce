"""pmtu.py: the binary search, the verdicts, the interfaces in evidence and the error-queue parser."""

from __future__ import annotations

import struct

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils import pmtu_options
from ansible_collections.k8snet.triage.plugins.module_utils import pmtu
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError


class Path(object):
    """A path that passes sizes up to ``mtu``; records what was probed."""

    def __init__(self, mtu):
        self.mtu, self.sizes = mtu, []

    def __call__(self, size):
        self.sizes.append(size)
        return size <= self.mtu


@pytest.mark.parametrize("mtu", [576, 577, 1000, 1400, 1404, 1449, 1450])
def test_search_finds_the_largest_size_in_log_steps(mtu):
    path = Path(mtu)
    assert pmtu.search(path, 576, 1450) == mtu
    assert len(path.sizes) <= 2 + 10  # the two ends, then log2(1450 - 576) halvings


def test_search_full_size_costs_two_probes_and_silence_one():
    path = Path(9000)
    assert pmtu.search(path, 576, 1500) == 1500 and path.sizes == [576, 1500]
    silent = Path(100)
    assert pmtu.search(silent, 576, 1500) is None and silent.sizes == [576]


def row(largest, high=1450, frag=None, name="node2"):
    return {"address": "198.19.65.2", "name": name, "dev": "vxlan.k8t", "probed_min": 576, "probed_max": high,
            "largest": largest, "frag_needed": frag, "probes": 24, "seconds": 2.0}


def test_judge_blackhole_reduced_unchecked_and_full():
    check, severity, summary = pmtu.judge(row(1400))
    assert (check, severity) == ("net.pmtu_blackhole", "critical")
    assert "above 1400 bytes vanish although the interface vxlan.k8t allows 1450" in summary
    check, severity, summary = pmtu.judge(row(1400, frag={"mtu": 1400, "from": "198.19.65.1"}))
    assert (check, severity) == ("net.pmtu_reduced", "info") and "next-hop MTU 1400 from 198.19.65.1" in summary
    assert pmtu.judge(row(None))[0:2] == ("net.pmtu_unchecked", "info")
    assert pmtu.judge(row(1450)) is None


def test_check_gives_ok_only_when_every_peer_passes_full_size():
    ifs = {"route_devices": [], "tunnels": [], "pod_veths": {"count": 0, "mtus": {}, "sample": []}}
    [f] = pmtu.check([row(1450), row(1500, 1500, name="node3")], ifs, "node1")
    assert (f["check"], f["severity"]) == ("net.pmtu", "ok") and "1450, 1500" in f["summary"]
    out = pmtu.check([row(1450), row(1400, name="node3")], ifs, "node1")
    assert [(f["check"], f["subject"]) for f in out] == [("net.pmtu_blackhole", "node3")]
    assert out[0]["evidence"]["interfaces"] == ifs and "ICMP type 3 code 4" in out[0]["remediation"]
    # a peer that answered nothing is not shown as ok
    out = pmtu.check([row(None)], ifs, "node1")
    assert [f["check"] for f in out] == ["net.pmtu_unchecked"]


def test_path_interfaces_names_route_devices_tunnels_and_pod_veths():
    links = [
        {"ifname": "lo", "kind": None, "mtu": 65536, "up": True},
        {"ifname": "eth0", "kind": "veth", "mtu": 1500, "up": True},
        {"ifname": "vxlan.calico", "kind": "vxlan", "mtu": 1450, "up": True},
        {"ifname": "tunl0", "kind": "ipip", "mtu": 1480, "up": True},
        {"ifname": "cali12ab34cd56e", "kind": "veth", "mtu": 1450, "up": True},
        {"ifname": "cali99ab34cd56e", "kind": "veth", "mtu": 1400, "up": True},
        {"ifname": "lxc816e0e5ccdbe", "kind": "veth", "mtu": 1450, "up": True},
    ]
    out = pmtu.path_interfaces(links, {"eth0", "vxlan.calico"})
    assert [d["ifname"] for d in out["route_devices"]] == ["eth0", "vxlan.calico"]
    assert [(t["ifname"], t["mtu"]) for t in out["tunnels"]] == [("vxlan.calico", 1450), ("tunl0", 1480)]
    assert out["pod_veths"]["count"] == 3 and out["pod_veths"]["mtus"] == {"1450": 2, "1400": 1}


def test_extended_err_of_a_frag_needed():
    # struct sock_extended_err as the kernel queues it for ICMP type 3 code 4 with next-hop MTU 1400,
    # followed by the offender's sockaddr_in
    data = struct.pack("=IBBBBII", 90, 2, 3, 4, 0, 1400, 0) + struct.pack("=HH4s8x", 2, 0, bytes([198, 19, 65, 1]))
    assert pmtu.parse_extended_err(data) == {"errno": 90, "origin": 2, "type": 3, "code": 4, "info": 1400}


def test_bad_targets_and_sizes_are_refused():
    with pytest.raises(InputError, match="targets is empty"):
        pmtu.validate_targets([])
    with pytest.raises(InputError, match=r"targets\[0\].address='2001:db8::1' is invalid: this is an IPv6 address"):
        pmtu.validate_targets([{"address": "2001:db8::1"}])
    with pytest.raises(InputError, match="max_size 500 is below min_size 576"):
        pmtu.node_check({"targets": [{"address": "198.18.64.12"}], "max_size": 500}, None)
    with pytest.raises(InputError, match="min_size"):
        pmtu_options.RULES["min_size"]("min_size", 67)
    with pytest.raises(InputError, match="timeout"):
        pmtu_options.RULES["timeout"]("timeout", 0)
