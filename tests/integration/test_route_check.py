"""route_check and the pod_network playbook against the lab's direct-routing mesh.

Every fault is injected with tests/lab/faults/routes.py, checked over real SSH on the node
(node1 has pyroute2, node2 has no pyroute2, node3 runs Python 3.9), verified independently
with ``ip -j`` and real pings, and undone."""

from __future__ import annotations

import json
import time

import pytest

from tests.lab.faults import pods, undone
from tests.lab.faults import routes as faults

ROOT_PLAYBOOK = "playbooks/pod_network.yml"


def peers(lab):
    return [{"node": n.name, "node_ip": n.ip, "pod_cidrs": [n.pod_cidr]} for n in lab.nodes]


def ipj(lab, node, *argv):
    return lab.node_json(node, ["ip", "-j"] + list(argv)) or []


def main_table(lab, node):
    return ipj(lab, node, "-4", "route", "show", "table", "main")


@pytest.fixture(scope="module")
def mesh(lab):
    had_mesh = bool(lab.extra.get("pod_mesh"))
    pods.pod_mesh(lab)
    made = [pods.pod(lab, "node1", "rc-a"), pods.pod(lab, "node2", "rc-b", cni="calico"),
            pods.pod(lab, "node3", "rc-c", cni="calico")]
    yield dict((p["node"], p) for p in made)
    for info in made:
        faults.restore(lab, {"node": info["node"], "undo_pods": [info["name"]]})
    if not had_mesh:
        for node in lab.nodes:
            lab.ns_run(node, ["ip", "route", "flush", "proto", "static"], check=False)
        lab.remember("pod_mesh", False)


@pytest.fixture
def inject(lab, mesh):
    """Call an injector; undo it after the test."""
    def restore(lab_, info):
        if info.get("undo_next_hop"):
            faults.restore_next_hop(lab_, info)
        faults.restore(lab_, info)

    with undone(lab, restore) as inject_:
        yield inject_
    # the mesh is whole again (independent reader)
    for node in lab.nodes:
        have = dict((r["dst"], r.get("gateway")) for r in main_table(lab, node))
        for peer in lab.nodes:
            if peer is not node:
                assert have.get(peer.pod_cidr) == peer.ip, (node.name, peer.pod_cidr, have)


def route_check(ansible, lab, host, **args):
    args.setdefault("peers", peers(lab))
    return ansible.module(host, "route_check", args)


def checks(result):
    return dict((f["check"], f) for f in result["findings"])


def test_clean_mesh_on_every_node(lab, ansible, mesh):
    results = route_check(ansible, lab, "k8s_nodes")
    assert sorted(results) == ["node1", "node2", "node3"]
    for node in lab.nodes:
        result = results[node.name]
        assert not result.get("failed"), result
        assert result["local_node"] == node.name
        assert result["reader"] == "iproute2"
        assert [(f["check"], f["severity"]) for f in result["findings"]] == [("route.mesh", "ok")]
        assert result["findings"][0]["evidence"] == {"peer_cidrs": 2, "pod_routes": 1}
        # what the module found is what ip -j says
        table = dict((r["dst"], r) for r in main_table(lab, node))
        for row in result["peer_routes"]:
            assert row["status"] == ["ok"]
            assert row["found"] == "%s via %s dev eth0 proto static" % (row["cidr"], table[row["cidr"]]["gateway"])
        assert result["routes_read"] == len(main_table(lab, node)) + len(ipj(lab, node, "-6", "route", "show", "table", "main"))


def test_missing_route(lab, ansible, inject):
    info = inject(faults.route_missing, node="node2", peer="node3")
    assert ipj(lab, "node2", "route", "show", info["cidr"]) == []
    result = route_check(ansible, lab, "node2")["node2"]
    found = checks(result)
    assert set(found) == {"route.missing"}
    assert found["route.missing"]["subject"] == "node3 %s" % info["cidr"]
    assert found["route.missing"]["evidence"]["expected"] == "%s via %s dev eth0" % (info["cidr"], lab.node("node3").ip)
    # and the pod behind it is really cut off
    assert lab.ping("node2", mesh_ip(lab, "node3")).returncode != 0


def mesh_ip(lab, node):
    return [p["ip"] for p in lab.extra["pods"].values() if p["node"] == node and p["name"].startswith("rc-")][0]


def test_wrong_gateway(lab, ansible, inject):
    info = inject(faults.route_wrong_gateway, node="node3", peer="node1", via="node2")
    assert ipj(lab, "node3", "route", "show", info["cidr"])[0]["gateway"] == lab.node("node2").ip
    found = checks(route_check(ansible, lab, "node3")["node3"])
    assert set(found) == {"route.wrong_gateway"}
    assert found["route.wrong_gateway"]["evidence"]["found"] == "%s via %s dev eth0 proto static" % (info["cidr"], info["gateway"])


def test_blackhole_over_part_of_a_cidr(lab, ansible, inject):
    target = mesh_ip(lab, "node2")
    assert lab.ping("node1", target).returncode == 0
    info = inject(faults.route_blackhole, node="node1", peer="node2", prefixlen=26)
    assert [r["dst"] for r in ipj(lab, "node1", "route", "show", "type", "blackhole")] == [info["part"]]
    assert lab.ping("node1", target).returncode != 0  # longest prefix wins: the pod is cut off
    found = checks(route_check(ansible, lab, "node1")["node1"])
    assert set(found) == {"route.unreachable"}
    assert found["route.unreachable"]["evidence"]["covers"] == "part"
    assert found["route.unreachable"]["evidence"]["routes"] == ["blackhole %s" % info["part"]]


def test_pod_device_down(lab, ansible, inject):
    info = inject(faults.pod_device_down, node="node2", name="rc-down")
    route = ipj(lab, "node2", "route", "show", info["ip"])[0]
    assert route["dev"] == info["device"] and "linkdown" in route["flags"]
    found = checks(route_check(ansible, lab, "node2")["node2"])
    assert set(found) == {"route.pod_device_down"}
    assert found["route.pod_device_down"]["evidence"]["routes"][0]["dev"] == info["device"]


def test_pod_route_without_its_device(lab, ansible, inject):
    info = inject(faults.pod_route_missing_device, node="node3", name="rc-gone")
    assert lab.ns_run("node3", ["ip", "link", "show", info["device"]], check=False).returncode != 0
    assert ipj(lab, "node3", "route", "show", info["ip"])[0]["dev"] == "eth0"
    found = checks(route_check(ansible, lab, "node3")["node3"])
    assert set(found) == {"route.pod_device_missing"}
    assert found["route.pod_device_missing"]["evidence"]["routes"][0]["route"] == "%s/32 dev eth0 proto static" % info["ip"]


def test_next_hop_unresolved(lab, ansible, inject):
    info = inject(faults.next_hop_failed, node="node1", peer="node3")
    state = ipj(lab, "node1", "neigh", "show", info["gateway"])[0]["state"]
    assert set(state) & {"FAILED", "INCOMPLETE"}
    found = checks(route_check(ansible, lab, "node1")["node1"])
    assert set(found) == {"route.next_hop_unresolved"}
    hop = found["route.next_hop_unresolved"]
    assert hop["evidence"]["gateway"] == info["gateway"]
    # confirmed: the kernel asked again (its requests still dropped on node1) and got no answer
    assert hop["evidence"]["confirm"]["state"] in (["INCOMPLETE"], ["FAILED"]), hop
    # the kernel's own table agrees: no MAC for node3 on node1 (the entry unresolved, or dropped since)
    assert not [e for e in ipj(lab, "node1", "neigh", "show", info["gateway"]) if e.get("lladdr")]


def test_a_next_hop_that_failed_once_and_answers_now_is_not_critical(lab, ansible, inject):
    # the entry FAILED while node1's ARP requests were dropped; the drop is gone, the entry still reads FAILED
    info = inject(faults.next_hop_failed, node="node1", peer="node3")
    for dummy in range(50):  # the kernel keeps INCOMPLETE while it asks (3 x 1 s), then FAILED
        if "FAILED" in ipj(lab, "node1", "neigh", "show", info["gateway"])[0]["state"]:
            break
        time.sleep(0.2)
    lab.ns_run("node1", ["nft", "delete", "table", "arp", "k8tlab_arp"])
    assert "FAILED" in ipj(lab, "node1", "neigh", "show", info["gateway"])[0]["state"]
    found = checks(route_check(ansible, lab, "node1")["node1"])
    assert set(found) == {"route.next_hop_recovered", "route.mesh"}, found
    recovered = found["route.next_hop_recovered"]
    assert recovered["severity"] == "info" and "read FAILED, then resolved" in recovered["summary"]
    # the kernel's own table agrees: the confirmation's packet made it resolve node3's MAC
    [entry] = ipj(lab, "node1", "neigh", "show", info["gateway"])
    assert entry["lladdr"] == lab.node("node3").mac and not set(entry["state"]) & {"FAILED", "INCOMPLETE"}


def test_local_cidr_routed_away_and_overlapping_peers(lab, ansible, inject):
    info = inject(faults.local_cidr_routed_away, node="node2", via="node1")
    assert ipj(lab, "node2", "route", "show", info["part"])[0]["gateway"] == lab.node("node1").ip
    overlapping = peers(lab) + [{"node": "ghost", "node_ip": "198.18.32.99", "pod_cidrs": [lab.node("node3").pod_cidr]}]
    result = route_check(ansible, lab, "node2", peers=overlapping)["node2"]
    overlap = [f for f in result["findings"] if f["check"] == "route.overlap"]
    assert sorted(f["subject"] for f in overlap) == ["node2", "node2 %s" % lab.node("node2").pod_cidr]
    assert {f["check"] for f in result["findings"]} == {"route.overlap", "route.wrong_gateway"}  # ghost's CIDR via node3


def test_overlay_mode(lab, ansible, mesh):
    node1, node3 = lab.node("node1"), lab.node("node3")
    lab.ns_run("node2", ["ip", "link", "add", "vxlan.calico", "type", "veth", "peer", "name", "k8tvx0"])
    try:
        lab.ns_run("node2", ["ip", "link", "set", "vxlan.calico", "up"])
        lab.ns_run("node2", ["ip", "route", "replace", node1.pod_cidr, "via", node1.ip, "dev", "vxlan.calico", "onlink"])
        assert ipj(lab, "node2", "route", "show", node1.pod_cidr)[0]["dev"] == "vxlan.calico"
        result = route_check(ansible, lab, "node2", mode="overlay", tunnel_device="vxlan.calico")["node2"]
        rows = dict((r["node"], r["status"]) for r in result["peer_routes"])
        assert rows == {"node1": ["ok"], "node3": ["wrong_device"]}
        wrong = [f for f in result["findings"] if f["check"] == "route.wrong_device"][0]
        assert wrong["subject"] == "node3 %s" % node3.pod_cidr
    finally:
        lab.ns_run("node2", ["ip", "link", "del", "vxlan.calico"], check=False)
        lab.ns_run("node2", ["ip", "route", "replace", node1.pod_cidr, "via", node1.ip, "dev", "eth0", "proto", "static"])


def test_destinations_match_ip_route_get(lab, ansible, mesh):
    """Each destination's route is the kernel's (ip route get), with both readers; with iproute2 they are
    looked up in one ip -batch process, and a destination without a route keeps the kernel's words."""
    target = mesh_ip(lab, "node2")
    nowhere = "198.19.250.7"  # an unreachable route on every node, for this test only
    destinations = [target, lab.node("node3").ip, nowhere, lab.node("node1").ip]
    for node in lab.nodes:
        lab.ns_run(node.name, ["ip", "route", "add", "unreachable", "198.19.250.0/24"])
    try:
        results = route_check(ansible, lab, "k8s_nodes", destinations=destinations)
        for name, result in results.items():
            assert [got["dst"] for got in result["destinations"]] == [d + "/32" for d in destinations], name
            for got, dst in zip(result["destinations"], destinations):
                if dst == nowhere:
                    failed = lab.ns_run(name, ["ip", "-j", "route", "get", dst], check=False)
                    assert failed.returncode != 0 and got["type"] == "unreachable", (name, got)
                    assert got["error"] and got["error"] in failed.stderr, (name, got, failed.stderr)
                    continue
                truth = ipj(lab, name, "route", "get", dst)[0]
                expected = (truth["dev"], truth.get("gateway"), truth.get("prefsrc"))
                assert (got["dev"], got["gateway"], got["prefsrc"]) == expected, (name, dst)
        # both readers answered: nodes with pyroute2 (netlink) and without (one ip -batch)
        assert {lab.node(name).pyroute2 for name in results} == {True, False}
    finally:
        for node in lab.nodes:
            lab.ns_run(node.name, ["ip", "route", "del", "unreachable", "198.19.250.0/24"], check=False)


READER_SCRIPT = r"""
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.k8snet.triage.plugins.module_utils.kernel import netlink

class Module(object):
    def get_bin_path(self, name, required=False, opt_dirs=()):
        return "/usr/sbin/" + name if name == "ip" else None
    def run_command(self, argv, **kw):
        proc = subprocess.run(argv, capture_output=True, text=True)
        return proc.returncode, proc.stdout, proc.stderr

out = {}
for reader in ("pyroute2", "iproute2"):
    nl = netlink.Netlink(Module(), reader)
    assert nl.name == reader, nl.name
    out[reader] = sorted(nl.routes(table="main"), key=lambda r: (r["family"], r["dst"], r["metric"]))
    nl.close()
print(json.dumps(out))
"""


def test_both_readers_give_the_same_routes(lab, ansible, inject):
    """pyroute2 and ip -json on node1: same route models (blackhole, multipath, linkdown, pods, 2000 /32s)
    and the same module result."""
    inject(faults.route_blackhole, node="node1", peer="node2", prefixlen=27, kind="unreachable")
    inject(faults.route_wrong_gateway, node="node1", peer="node3", via="node2")
    inject(faults.pod_device_down, node="node1", name="rc-r-down", cni="cilium")
    node1 = lab.node("node1")
    # destinations from the lab's own (otherwise unused) service range 198.18.(32 slot + 16..31).x
    base, gw2, gw3 = lab.slot * 32, lab.node("node2").ip, lab.node("node3").ip
    extra = ["route add 198.18.%d.0/24 nexthop via %s dev eth0 nexthop via %s dev eth0" % (base + 16, gw2, gw3),
             "route add prohibit 198.18.%d.0/24" % (base + 17)]
    extra += ["route add 198.18.%d.%d/32 via %s dev eth0 proto static" % (base + 24 + i // 256, i % 256, gw2)
              for i in range(2000)]
    lab.run(["ip", "-n", node1.ns, "-batch", "-"], input="\n".join(extra) + "\n")
    try:
        proc = lab.node_run(node1, [node1.python, "-c", READER_SCRIPT, str(lab_build())])
        both = json.loads(proc.stdout)
        assert len(both["iproute2"]) >= 2008
        assert both["pyroute2"] == both["iproute2"]
        by_reader = {}
        for reader in ("pyroute2", "iproute2"):
            result = route_check(ansible, lab, "node1", reader=reader, destinations=[mesh_ip(lab, "node2")])["node1"]
            assert result["reader"] == reader
            by_reader[reader] = {k: result[k] for k in ("findings", "peer_routes", "destinations", "routes_read")}
        assert by_reader["pyroute2"] == by_reader["iproute2"]
        assert {f["check"] for f in by_reader["iproute2"]["findings"]} == \
            {"route.unreachable", "route.wrong_gateway", "route.pod_device_down"}
    finally:
        lab.run(["ip", "-n", node1.ns, "-batch", "-"], check=False, input="\n".join(
            ["route del 198.18.%d.0/24" % (base + 16), "route del prohibit 198.18.%d.0/24" % (base + 17)]
            + ["route del 198.18.%d.%d/32" % (base + 24 + i // 256, i % 256) for i in range(2000)]) + "\n")


def lab_build():
    from pathlib import Path
    return Path(__file__).resolve().parents[2] / "build"


@pytest.mark.parametrize("host", ["node2", "node3"])
def test_bad_input_fails_and_names_the_value(lab, ansible, mesh, host):
    before = main_table(lab, host)
    bad_cidr = peers(lab) + [{"node": "bad", "node_ip": "198.18.32.50", "pod_cidrs": ["198.19.40.1/24"]}]
    result = route_check(ansible, lab, host, peers=bad_cidr)[host]
    assert result["failed"] and "findings" not in result
    assert "'198.19.40.1/24' is not a valid CIDR" in result["msg"] and "peer bad" in result["msg"]
    result = route_check(ansible, lab, host, mode="overlay", tunnel_device="cilium_vxlan")[host]
    assert result["failed"] and "tunnel_device 'cilium_vxlan' is not a device on this host" in result["msg"]
    result = route_check(ansible, lab, host, destinations=["pod-b.default"])[host]
    assert result["failed"] and "'pod-b.default'" in result["msg"]
    assert main_table(lab, host) == before


def test_pod_network_playbook_with_every_fault(lab, ansible, inject):
    inject(faults.route_missing, node="node2", peer="node3")
    inject(faults.route_wrong_gateway, node="node3", peer="node1", via="node2")
    inject(faults.route_blackhole, node="node1", peer="node2")
    inject(faults.pod_device_down, node="node2", name="rc-pb-down")
    inject(faults.pod_route_missing_device, node="node3", name="rc-pb-gone")
    inject(faults.next_hop_failed, node="node1", peer="node3")
    inject(faults.local_cidr_routed_away, node="node2", via="node1")
    run = ansible.playbook(ROOT_PLAYBOOK)
    assert run.rc == 0, run
    table = {}
    for node in ("node1", "node2", "node3"):
        result = {"findings": run.result("Keep the findings of this host", node)["ansible_facts"]["pod_network_findings"]}
        table[node] = sorted(f["check"] for f in result["findings"])
        lines = run.result("Show the findings", node)["msg"]
        assert len(lines) == len(result["findings"])
    assert table == {
        "node1": ["route.next_hop_unresolved", "route.unreachable"],
        "node2": ["route.missing", "route.overlap", "route.pod_device_down"],
        "node3": ["route.pod_device_missing", "route.wrong_gateway"],
    }
