"""pmtu_check, the pmtu playbook and the one pass against the lab: an MTU lowered on one side of a link
only, an overlay to a pod whose veth is narrower, ICMP "fragmentation needed" dropped by nft.  Each
finding is checked against the kernel's own view: ``ip -d -j link`` for the MTUs, the switch port's TX
drops, nft's counter of dropped fragmentation-needed and ``ip route get``'s learnt path MTU."""

from __future__ import annotations

import pytest

from tests.lab.faults import mtu, pods, undone


@pytest.fixture
def inject(lab):
    with undone(lab, mtu.restore, lambda info: info["nodes"] if isinstance(info.get("nodes"), list) else [info]) as inject_:
        yield inject_
    for node in lab.nodes:  # everything restored (independent reader)
        assert mtu.link_mtu(lab, node, "eth0") == 1500
        assert mtu.NFT_TABLE not in lab.ns_run(node, ["nft", "list", "tables"]).stdout
        assert mtu.VXLAN not in lab.ns_run(node, ["ip", "-br", "link"]).stdout


def run_pmtu(ansible, host, targets, **args):
    args.update(targets=targets, node_name=host)
    result = ansible.module(host, "pmtu_check", args)[host]
    assert not result["failed"], result
    return result


def by_subject(result):
    return dict((f["subject"], f) for f in result["findings"])


def test_underlay_mtu_lowered_on_one_side_is_a_blackhole(lab, ansible, inject):
    node2, node3 = lab.node("node2"), lab.node("node3")
    targets = [{"address": node2.ip, "name": "node2"}, {"address": node3.ip, "name": "node3"}]
    clean = run_pmtu(ansible, "node1", targets)
    assert [(f["check"], f["severity"]) for f in clean["findings"]] == [("net.pmtu", "ok")]

    inject(mtu.lower_mtu, node="node2", device="eth0", mtu=1400)
    port = "vn%d" % node2.index
    dropped_before = mtu.tx_dropped(lab, lab.switch_ns, port)
    result = run_pmtu(ansible, "node1", targets)
    found = by_subject(result)
    f = found["node2"]
    assert (f["check"], f["severity"]) == ("net.pmtu_blackhole", "critical")
    # the kernel's view: node1 sends up to its eth0 MTU, node2's end of the link takes 1400 (+ a VLAN
    # header's slack the veth allows), the switch port drops the rest without a word
    assert f["evidence"]["probed_max"] == mtu.link_mtu(lab, "node1", "eth0") == 1500
    assert mtu.link_mtu(lab, "node2", "eth0") == 1400
    assert 1400 <= f["evidence"]["largest"] <= 1404
    assert f["evidence"]["frag_needed"] is None
    assert mtu.tx_dropped(lab, lab.switch_ns, port) > dropped_before
    assert f["evidence"]["interfaces"]["route_devices"] == [{"ifname": "eth0", "kind": "veth", "mtu": 1500, "up": True}]
    assert "node3" not in found  # full size passes there
    assert [r["largest"] for r in result["peers"] if r["name"] == "node3"] == [1500]


def test_a_full_size_answer_lost_once_is_asked_again_not_called_a_black_hole(lab, ansible, inject):
    node2 = lab.node("node2")
    inject(mtu.lose_full_size_once, node="node1", peer="node2")
    result = run_pmtu(ansible, "node1", [{"address": node2.ip, "name": "node2"}])
    assert [(f["check"], f["severity"]) for f in result["findings"]] == [("net.pmtu", "ok")], result["findings"]
    [row] = result["peers"]
    assert row["largest"] == 1500 and row["confirm"]["full_size"] is True
    # nft's own counter on node2: the search's first full-size probe (its two copies) was really lost
    assert mtu.dropped_by_table(lab, "node2") == 2


def test_overlay_to_a_narrower_pod_veth_with_frag_needed_dropped(lab, ansible, inject):
    inject(mtu.vxlan_overlay, a="node1", b="node2", mtu=1450)
    web = pods.pod(lab, "node2", "web")
    inject(mtu.lower_mtu, node="node2", device=web["device"], mtu=1400)
    inject(mtu.drop_frag_needed, node="node2")
    targets = [{"address": web["ip"], "name": "web"}]

    result = run_pmtu(ansible, "node1", targets)
    [f] = result["findings"]
    assert (f["check"], f["severity"], f["subject"]) == ("net.pmtu_blackhole", "critical", "web")
    assert f["evidence"]["dev"] == mtu.VXLAN
    assert f["evidence"]["probed_max"] == mtu.link_mtu(lab, "node1", mtu.VXLAN) == 1450
    assert f["evidence"]["largest"] == mtu.link_mtu(lab, "node2", web["device"]) == 1400
    assert f["evidence"]["frag_needed"] is None
    assert {"ifname": mtu.VXLAN, "kind": "vxlan", "mtu": 1450, "up": True} in f["evidence"]["interfaces"]["tunnels"]
    # node2 did answer "fragmentation needed", and nft dropped every one; node1 learnt nothing
    assert mtu.dropped_by_table(lab, "node2") > 0
    assert mtu.cached_pmtu(lab, "node1", web["ip"]) is None

    # the same path with the ICMP let through: path-MTU discovery works, and the kernel learnt 1400 too
    lab.ns_run("node2", ["nft", "delete", "table", "inet", mtu.NFT_TABLE])
    result = run_pmtu(ansible, "node1", targets)
    [f] = result["findings"]
    assert (f["check"], f["severity"]) == ("net.pmtu_reduced", "info")
    assert f["evidence"]["frag_needed"] == {"mtu": 1400, "from": mtu.overlay_address(lab.node("node2"))}
    assert mtu.cached_pmtu(lab, "node1", web["ip"]) == 1400


def test_playbook_and_one_pass_report_the_blackhole(lab, ansible, inject):
    inject(mtu.lower_mtu, node="node2", device="eth0", mtu=1400)
    run = ansible.playbook("k8snet.triage.pmtu", {"pmtu_timeout": 0.5})
    assert run.rc == 0, run
    findings = dict((r["host"], r["result"]["ansible_facts"]["pmtu_findings"])
                    for r in run.results(task="Keep the findings of this host"))
    assert sorted(findings) == ["node1", "node2", "node3"]
    for host in ("node1", "node3"):
        assert [(f["check"], f["subject"]) for f in findings[host]] == [("net.pmtu_blackhole", "node2")]
    # node2 sends at most its own (lowered) MTU: nothing is lost from its side
    assert [f["check"] for f in findings["node2"]] == ["net.pmtu"]

    # the one pass: the same check through node_triage, with peers as the controller passes them
    node2 = lab.node("node2")
    result = ansible.module("node1", "node_triage", {
        "node_name": "node1", "scenarios": ["pmtu", "conntrack"],
        "pmtu": {"targets": [{"address": node2.ip, "name": "node2"}]}, "conntrack": {"interval": 0}})["node1"]
    assert result["scenarios"]["pmtu"]["status"] == "ran"
    assert [(f["check"], f["subject"]) for f in result["scenarios"]["pmtu"]["findings"]] == [
        ("net.pmtu_blackhole", "node2")]
    assert result["scenarios"]["conntrack"]["status"] == "ran"
    skipped = ansible.module("node1", "node_triage", {"node_name": "node1", "scenarios": ["pmtu"]})["node1"]
    assert skipped["scenarios"]["pmtu"] == {"status": "skipped", "reason": "no peers to measure (pmtu.targets is empty)",
                                            "findings": [], "data": {}, "seconds": 0.0, "cpu_seconds": 0.0}


def test_from_a_pod_across_an_overlay_lowered_on_one_side(lab, ansible, inject):
    """The issue's case: the overlay's MTU lowered on one side only (node2's end), ICMP fragmentation-needed
    dropped by nft on node2; seen from a pod on node2, whose own eth0 still says 1500."""
    inject(mtu.vxlan_overlay, a="node1", b="node2", mtu=1450)
    web = pods.pod(lab, "node2", "web2")
    inject(mtu.lower_mtu, node="node2", device=mtu.VXLAN, mtu=1400)
    inject(mtu.drop_frag_needed, node="node2")
    pid = mtu.pod_process(lab, web)
    target = mtu.overlay_address(lab.node("node1"))
    result = run_pmtu(ansible, "node2", [{"address": target, "name": "node1-overlay"}], netns_pid=pid)
    [f] = result["findings"]
    assert (f["check"], f["severity"], f["subject"]) == ("net.pmtu_blackhole", "critical", "node1-overlay")
    # the pod's side: its eth0 (1500) is the interface of the route; node2's end of the overlay takes 1400
    assert f["evidence"]["dev"] == "eth0" and f["evidence"]["probed_max"] == 1500
    pod_mtu = lab.run(["ip", "-n", web["ns"], "-d", "-j", "link", "show", "dev", "eth0"]).stdout
    assert '"mtu":1500' in pod_mtu.replace(" ", "")
    assert f["evidence"]["largest"] == mtu.link_mtu(lab, "node2", mtu.VXLAN) == 1400
    assert mtu.link_mtu(lab, "node1", mtu.VXLAN) == 1450
    assert f["evidence"]["frag_needed"] is None and mtu.dropped_by_table(lab, "node2") > 0
    # node2's own view is unaffected: its vxlan end says 1400 and it sends no more than that
    own = run_pmtu(ansible, "node2", [{"address": target, "name": "node1-overlay"}])
    assert [f["check"] for f in own["findings"]] == ["net.pmtu"]
    assert own["peers"][0]["probed_max"] == 1400


def lo_packets(lab, node):
    stats = lab.node_json(node, ["ip", "-s", "-j", "link", "show", "lo"])[0]["stats64"]
    return stats["tx"]["packets"], stats["rx"]["packets"]


@pytest.mark.parametrize("address, why", [
    ("0.0.0.0", "is the unspecified address"), ("127.0.0.1", "is a loopback address"),
    ("224.0.0.1", "is a multicast address"), ("255.255.255.255", "is the limited broadcast address"),
    ("own", "is this node's own address (the kernel's route to it is local, through lo)")])
def test_targets_that_are_not_peers_are_refused_and_nothing_is_sent(lab, ansible, address, why):
    node1 = lab.node("node1")
    address = node1.ip if address == "own" else address
    # the kernel's own view: a probe to these would go through lo (or not leave the host)
    if address in ("0.0.0.0", "127.0.0.1", node1.ip):
        route = lab.node_json("node1", ["ip", "-j", "route", "get", address])[0]
        assert route["type"] == "local" and route["dev"] == "lo"
    before = lo_packets(lab, "node1")
    result = ansible.module("node1", "pmtu_check", {"targets": [{"address": lab.node("node2").ip, "name": "node2"},
                                                                {"address": address, "name": "peer"}]})["node1"]
    assert result["failed"]
    assert result["msg"].startswith("targets[1].address=%r is invalid: %s %s" % (address, address, why)), result["msg"]
    assert "net.pmtu" not in str(result.get("findings"))
    assert lo_packets(lab, "node1") == before  # nothing was sent through lo


def test_the_one_pass_skips_what_is_not_a_peer_and_measures_the_rest(lab, ansible):
    node1, node2 = lab.node("node1"), lab.node("node2")
    targets = [{"address": "0.0.0.0", "name": "ghost"}, {"address": node1.ip, "name": "node1"},
               {"address": node2.ip, "name": "node2"}]
    result = ansible.module("node1", "node_triage", {"node_name": "node1", "scenarios": ["pmtu"],
                                                     "pmtu": {"targets": targets}})["node1"]
    pmtu_result = result["scenarios"]["pmtu"]
    assert pmtu_result["status"] == "ran", pmtu_result
    assert [p["name"] for p in pmtu_result["data"]["peers"]] == ["node2"]
    skipped = [(s["name"], s["address"]) for s in pmtu_result["data"]["skipped"]]
    assert skipped == [("ghost", "0.0.0.0"), ("node1", node1.ip)]
    assert [(f["check"], f["severity"]) for f in pmtu_result["findings"]] == [
        ("net.pmtu", "ok"), ("net.pmtu_target_skipped", "info")]
    assert "lo" not in [d["ifname"] for d in pmtu_result["data"]["interfaces"]["route_devices"]]
    # independent reader: node2 is reached through eth0 at full size, as the pass says
    route = lab.node_json("node1", ["ip", "-j", "route", "get", node2.ip])[0]
    assert route["dev"] == "eth0" and pmtu_result["data"]["peers"][0]["largest"] == mtu.link_mtu(lab, "node1", "eth0")


def _echo_times(lab, node, count, run):
    """The times tcpdump saw ``node`` send ``count`` ICMP echo requests while ``run()`` ran (an independent reader)."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel

    dump = subprocess.Popen(["ip", "netns", "exec", lab.node(node).ns, "timeout", "60", "tcpdump", "-i", "eth0", "-n",
                             "-tt", "-l", "-c", str(count), "icmp[icmptype] == icmp-echo and src %s" % lab.node(node).ip],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)  # tcpdump listens
    result = run()
    out = dump.communicate(timeout=90)[0]
    return result, [float(line.split()[0]) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("module", ["reachability", "pmtu_check"])
def test_the_probes_of_one_node_keep_to_its_rate(lab, ansible, module):
    """rate: at most that many probe packets a second from the node, whatever the number of peers and threads
    (seen by tcpdump on the node, not by the module)."""
    peers = [{"address": lab.node(n).ip, "name": n} for n in ("node2", "node3")]
    if module == "reachability":
        args, packets = {"targets": peers, "probes": ["icmp"], "count": 4, "rate": 5}, 8
    else:  # two sizes a peer at least (the interface MTU answers at once), two copies each
        args, packets = {"targets": peers, "min_size": 1400, "rate": 5}, 8
    result, times = _echo_times(lab, "node1", packets, lambda: ansible.module("node1", module, args)["node1"])
    assert not result.get("failed"), result
    assert len(times) == packets, times
    gaps = [b - a for a, b in zip(times, times[1:])]
    # 5 a second: every packet at least ~0.2 s after the one before (a little jitter allowed), the whole >= 1.4 s
    assert min(gaps) > 0.18 and times[-1] - times[0] >= 1.4 - 0.05, gaps
    # and without a limit the same probes leave together
    result, times = _echo_times(lab, "node1", packets,
                                lambda: ansible.module("node1", module, dict(args, rate=0))["node1"])
    assert times[-1] - times[0] < 1.0, times
