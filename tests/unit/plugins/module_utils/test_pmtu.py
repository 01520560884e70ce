"""pmtu.py: the binary search, the verdicts, the interfaces in evidence and the error-queue parser."""

from __future__ import annotations

import struct

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu_options
from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


class Path(object):
    """A path that passes sizes up to ``mtu``; records what was probed."""

    def __init__(self, mtu):
        self.mtu, self.sizes = mtu, []

    def __call__(self, size):
        self.sizes.append(size)
        return size <= self.mtu


class Quiet(object):
    """What a prober has besides its probe: no "fragmentation needed" heard, nothing to drain or close."""

    frag_needed, sent = None, 0

    def drain_errors(self):
        pass

    def close(self):
        pass


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


NOT_PEERS = [
    ("0.0.0.0", "the unspecified address"),
    ("0.1.2.3", "an address of 'this network' (0.0.0.0/8)"),
    ("127.0.0.1", "a loopback address"),
    ("127.4.5.6", "a loopback address"),
    ("224.0.0.1", "a multicast address"),
    ("239.255.255.250", "a multicast address"),
    ("255.255.255.255", "the limited broadcast address"),
    ("240.0.0.1", "a reserved address"),
]


@pytest.mark.parametrize("address, why", NOT_PEERS)
def test_targets_that_are_not_peers_are_refused_naming_them(address, why):
    rule = pmtu_options.RULES["targets"]
    with pytest.raises(InputError) as raised:
        rule("targets", [{"address": "198.18.64.12"}, {"address": address}])
    message = str(raised.value)
    assert message.startswith("targets[1].address=%r is invalid: %s is %s" % (address, address, why)), message
    assert "give a peer's unicast address" in message
    # the module's check refuses them too, before any route is read or probe sent
    with pytest.raises(InputError, match=r"targets\[0\]\.address=%r is invalid" % address):
        pmtu.module_check({"targets": [{"address": address}]}, None)


@pytest.mark.parametrize("address", ["198.18.64.12", "10.0.0.1", "192.168.1.255", "169.254.1.1", "100.64.0.1"])
def test_unicast_peers_are_accepted(address):
    assert pmtu_options.RULES["targets"]("targets", [{"address": address}])[0]["address"] == address
    assert pmtu_options.not_a_peer(address) is None


class FakeNetlink(object):
    """Routes as ``ip -j route get`` gives them: this node's own 198.18.64.11 is local, through lo."""

    ROUTES = {"198.18.64.11": {"type": "local", "dev": "lo"}, "198.18.64.12": {"type": "unicast", "dev": "eth0"},
              "0.0.0.0": {"type": "local", "dev": "lo"}}

    def __init__(self, runner, reader):
        pass

    def links(self):
        return [{"ifname": "lo", "mtu": 65536}, {"ifname": "eth0", "mtu": 1500, "kind": "veth"}]

    def routes_get(self, addresses):
        return [dict(self.ROUTES[a]) for a in addresses]

    def close(self):
        pass


@pytest.fixture()
def fake_paths(monkeypatch):
    from ansible_collections.k8snet.triage.plugins.module_utils.kernel import netlink
    monkeypatch.setattr(netlink, "Netlink", FakeNetlink)
    probed = []

    def probe(target, high, low, timeout, pacer=None):  # the pacer is tested in test_pacing
        probed.append(target["address"])
        return {"address": target["address"], "name": target["name"], "dev": target["dev"], "probed_min": low,
                "probed_max": high, "largest": high, "frag_needed": None, "probes": 2, "seconds": 0.1}
    monkeypatch.setattr(pmtu, "probe_peer", probe)
    return probed


def test_the_module_refuses_this_nodes_own_address(fake_paths):
    with pytest.raises(InputError) as raised:
        pmtu.module_check({"targets": [{"address": "198.18.64.12"}, {"address": "198.18.64.11"}]}, None)
    assert str(raised.value).startswith("targets[1].address='198.18.64.11' is invalid: 198.18.64.11 is this node's "
                                        "own address (the kernel's route to it is local, through lo)")
    assert fake_paths == []  # nothing was probed


def test_the_pass_skips_what_is_not_a_peer_with_a_note_and_measures_the_rest(fake_paths):
    params = pmtu_options.PASS_RULES["targets"]("targets", [
        {"address": "0.0.0.0", "name": "node9"}, {"address": "198.18.64.11", "name": "node1"},
        {"address": "198.18.64.12", "name": "node2"}])
    result = pmtu.node_check({"targets": params, "node_name": "node1"}, None)
    assert fake_paths == ["198.18.64.12"]
    assert [r["name"] for r in result["data"]["peers"]] == ["node2"]
    assert [(s["name"], s["reason"].split(" (")[0]) for s in result["data"]["skipped"]] == [
        ("node9", "the unspecified address"), ("node1", "this node's own address")]
    checks = [(f["check"], f["severity"], f["subject"]) for f in result["findings"]]
    assert checks == [("net.pmtu", "ok", "node1"), ("net.pmtu_target_skipped", "info", "node1")]
    assert "node9 (0.0.0.0) is the unspecified address" in result["findings"][1]["summary"]
    assert not any(f["check"] == "net.pmtu_reduced" for f in result["findings"])


def test_the_pass_with_only_unusable_targets_is_not_ok(fake_paths):
    result = pmtu.node_check({"targets": [{"address": "0.0.0.0"}], "node_name": "node1"}, None)
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("net.pmtu_target_skipped", "info")]
    assert fake_paths == []


class _Sock(object):
    """A socket whose sends fail with ``errors`` first (the local queue full), then succeed."""

    def __init__(self, errors):
        self.errors = list(errors)
        self.sent = 0

    def send(self, data):
        if self.errors:
            raise OSError(self.errors.pop(0), "local")
        self.sent += 1
        return len(data)


def test_a_full_local_queue_is_waited_out_then_the_probe_goes(monkeypatch):
    """At 100 nodes 48 nodes' pmtu check failed with ENOBUFS: the probe is sent again after a short pause."""
    import errno as errno_module

    monkeypatch.setattr(pmtu, "LOCAL_RETRY_DELAYS", (0, 0, 0, None))
    prober = pmtu.Prober.__new__(pmtu.Prober)
    prober.sock = _Sock([errno_module.ENOBUFS, errno_module.ENOBUFS])
    prober._send(b"x")
    assert prober.sock.sent == 1
    prober.sock = _Sock([errno_module.ENOBUFS] * 4)
    with pytest.raises(OSError):
        prober._send(b"x")


def test_a_probe_this_node_could_not_send_is_its_own_problem_not_the_peers():
    import errno as errno_module

    class Failing(Quiet):
        def __init__(self, address, timeout):
            self.address = address

        def __call__(self, size):
            raise OSError(errno_module.ENOBUFS, "No buffer space available")

    target = {"address": "198.18.0.12", "name": "node2", "dev": "eth0"}
    row = pmtu.probe_peer(target, 1500, 576, 0.1, prober_class=Failing)
    assert row["largest"] is None and row["local_error"] == "No buffer space available (errno %d)" % errno_module.ENOBUFS
    ok = {"address": "198.18.0.13", "name": "node3", "dev": "eth0", "probed_min": 576, "probed_max": 1500,
          "largest": 1500, "frag_needed": None, "probes": 2, "seconds": 0.1}
    found = pmtu.check([row, ok], {}, "node1")
    assert [(f["check"], f["severity"], f["subject"]) for f in found] == [
        ("net.pmtu_probe_failed_locally", "warning", "node1")]
    assert "1 of 2 path-MTU searches could not send their probes from node1" in found[0]["summary"]
    assert found[0]["evidence"]["peers"] == ["node2"]
    # never a finding about node2 (not 'unchecked', not 'blackhole'), and no 'all peers pass' ok either
    assert not [f for f in found if f["subject"] == "node2"]


class Lossy(Quiet):
    """A prober whose answers come from ``answers`` in turn (True: answered), recording the sizes asked."""

    def __init__(self, answers):
        self.answers, self.sizes = list(answers), []

    def __call__(self, size):
        self.sizes.append(size)
        return self.answers.pop(0)


def test_a_full_size_lost_once_under_load_is_not_a_black_hole():
    # the search's full-size probe was lost (a busy peer); asked again, it is answered
    prober = Lossy([True])
    confirmed = {"tries": 1, "full_size": True, "largest_again": None}
    assert pmtu.confirm_short_path(prober, 1400, 1500) == (1500, confirmed)
    assert prober.sizes == [1500]
    assert pmtu.judge(dict(row(1500, 1500), confirm={"tries": 1, "full_size": True})) is None


def test_a_black_hole_is_confirmed_by_more_full_size_probes_while_the_smaller_size_passes():
    prober = Lossy([False, False, True])
    largest, confirm = pmtu.confirm_short_path(prober, 1400, 1500)
    assert (largest, confirm) == (1400, {"tries": 2, "full_size": False, "largest_again": True})
    assert prober.sizes == [1500, 1500, 1400]
    check, severity, summary = pmtu.judge(dict(row(1400, 1500), confirm=confirm))
    assert (check, severity) == ("net.pmtu_blackhole", "critical")
    assert summary.endswith("confirmed: 2 more 1500-byte probes unanswered while a 1400-byte one was")


def test_a_path_lost_during_the_confirmation_is_not_called_a_black_hole():
    largest, confirm = pmtu.confirm_short_path(Lossy([False, False, False]), 1400, 1500)
    check, severity, summary = pmtu.judge(dict(row(largest, 1500), confirm=confirm))
    assert (check, severity) == ("net.pmtu_unchecked", "info") and "the path was lost meanwhile" in summary


def test_probe_peer_confirms_only_a_short_path_without_fragmentation_needed():
    class Hole(Path, Quiet):
        def __init__(self, address, timeout):
            Path.__init__(self, 1400)

    target = {"address": "198.18.0.12", "name": "node2", "dev": "eth0"}
    found = pmtu.probe_peer(target, 1500, 576, 0.1, prober_class=Hole)
    assert found["largest"] == 1400 and found["confirm"] == {"tries": 2, "full_size": False, "largest_again": True}
    full = pmtu.probe_peer(dict(target, name="node3"), 1400, 576, 0.1, prober_class=Hole)
    assert full["largest"] == 1400 and "confirm" not in full  # the full size passed: nothing to confirm
