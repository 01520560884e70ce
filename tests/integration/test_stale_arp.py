"""Stale ARP, end to end over SSH in the lab.

Every change is verified with ``ip -j neigh`` run in the node's namespace by the test
itself, never with arp_check.  Runs on every kind of node: node1 (venv Python with
pyroute2: both readers, and auto, which reads with ip where ip is installed), node2 (system
Python, no pyroute2), node3 (Python 3.9, no pyroute2).
"""

from __future__ import annotations

import json

import pytest

from tests.lab.faults import arp

WRONG = "02:de:ad:00:be:ef"
OTHER = "02:0a:0b:0c:0d:0e"
PLAYBOOK = "playbooks/stale_arp.yml"


@pytest.fixture(scope="module")
def vips(lab):
    """VIP 0 held by node1 (the control plane); VIP 6 held by node2, for node1 as a client."""
    arp.bind_vip(lab, "node1", lab.vip(0))
    arp.bind_vip(lab, "node2", lab.vip(6))
    yield {"cp": lab.vip(0), "node2": lab.vip(6)}
    lab.ns_run("node1", ["ip", "addr", "del", lab.vip(0) + "/32", "dev", "eth0"], check=False)
    lab.ns_run("node2", ["ip", "addr", "del", lab.vip(6) + "/32", "dev", "eth0"], check=False)


@pytest.fixture
def clean(lab):
    """Forget every neighbor entry a test made for the lab's VIPs."""
    yield
    for node in lab.nodes:
        for n in (0, 1, 3, 6):
            lab.ns_run(node, ["ip", "neigh", "del", lab.vip(n), "dev", "eth0"], check=False)


def cached(lab, node, address):
    entries = lab.neighbors(node, address)
    return entries[0] if entries else None


# (client node, reader, VIP key, owner node): every kind of node and both readers
CLIENTS = [
    pytest.param("node1", "pyroute2", "node2", "node2", id="node1-pyroute2"),
    pytest.param("node1", "iproute2", "node2", "node2", id="node1-iproute2"),
    pytest.param("node1", "auto", "node2", "node2", id="node1-auto-reads-with-ip"),
    pytest.param("node2", "auto", "cp", "node1", id="node2-no-pyroute2"),
    pytest.param("node3", "auto", "cp", "node1", id="node3-python3.9"),
]


@pytest.mark.parametrize("client, reader, vip_key, owner", CLIENTS)
def test_stale_entry_found_dry_run_then_flushed_then_idempotent(lab, ansible, vips, clean, client, reader, vip_key, owner):
    vip = vips[vip_key]
    true_mac = lab.node(owner).mac
    arp.stale_neighbor(lab, client, vip, WRONG)
    args = {"addresses": [vip], "expected": {vip: true_mac}, "reader": reader}

    found = ansible.module(client, "arp_check", args)[client]
    assert found["reader"] == ("pyroute2" if reader == "pyroute2" else "iproute2")
    stale = [f for f in found["findings"] if f["check"] == "arp.stale_entry"]
    assert len(stale) == 1 and stale[0]["evidence"]["cached_mac"] == WRONG and stale[0]["evidence"]["true_mac"] == true_mac
    assert found["changed"] is False

    dry = ansible.module(client, "arp_check", dict(args, flush="stale"), check=True, diff=True)[client]
    assert dry["changed"] is True and [e["address"] for e in dry["flushed"]] == [vip]
    assert WRONG in dry["diff"]["before"] and WRONG not in dry["diff"]["after"]
    assert cached(lab, client, vip)["lladdr"] == WRONG, "check mode must leave the entry in place"

    real = ansible.module(client, "arp_check", dict(args, flush="stale"))[client]
    assert real["changed"] is True
    entry = cached(lab, client, vip)
    assert entry is None or entry.get("lladdr") != WRONG

    again = ansible.module(client, "arp_check", dict(args, flush="stale"))[client]
    assert again["changed"] is False and again["flushed"] == []


@pytest.mark.parametrize("client, reader", [("node1", "pyroute2"), ("node1", "iproute2"), ("node2", "auto")])
def test_flush_touches_only_the_stale_entry(lab, ansible, vips, clean, client, reader):
    """Healthy entries (the controller, peers) survive; this is what `ip neigh flush all` would not do."""
    vip = vips["node2"] if client == "node1" else vips["cp"]
    owner = "node2" if client == "node1" else "node1"
    peer = "node3"
    lab.ping(client, lab.node(peer).ip)
    arp.stale_neighbor(lab, client, vip, WRONG)
    before = {e["dst"] for e in lab.neighbors(client)}
    assert lab.node(peer).ip in before
    ansible.module(client, "arp_check", {"addresses": [vip], "expected": {vip: lab.node(owner).mac},
                                         "flush": "stale", "reader": reader})
    after = {e["dst"] for e in lab.neighbors(client)}
    assert before - after == {vip}


def test_both_readers_return_the_same_table(lab, ansible, vips, clean):
    arp.stale_neighbor(lab, "node1", vips["node2"], WRONG)
    lab.ns_run("node1", ["ip", "neigh", "replace", lab.vip(3), "lladdr", WRONG, "dev", "eth0", "nud", "permanent"])
    args = {"addresses": [vips["node2"], lab.vip(3), lab.node("node3").ip], "probe": False}
    lab.ping("node1", lab.node("node3").ip)
    a = ansible.module("node1", "arp_check", dict(args, reader="pyroute2"))["node1"]
    b = ansible.module("node1", "arp_check", dict(args, reader="iproute2"))["node1"]

    def table(result):
        return sorted((n["address"], n["interface"], n["mac"], tuple(n["flags"])) for n in result["neighbors"])

    assert table(a) == table(b) and len(a["neighbors"]) == 3
    assert a["findings"] == b["findings"]


def test_ip_conflict_found_by_probe_from_a_client_and_from_the_owner(lab, ansible, clean):
    address = lab.vip(1)
    arp.ip_conflict(lab, ["node1", "node2"], address)
    try:
        results = ansible.module("node1,node3", "arp_check", {"addresses": [address], "probe": True, "probe_timeout": 0.5})
        for node in ("node1", "node3"):
            conflicts = [f for f in results[node]["findings"] if f["check"] == "arp.ip_conflict"]
            assert len(conflicts) == 1, results[node]["findings"]
            macs = {a["mac"] for a in conflicts[0]["evidence"]["answers"]}
            assert macs == {lab.node("node1").mac, lab.node("node2").mac}
        # probing taught no cache anything: the client still has no entry for the address
        assert cached(lab, "node3", address) is None
    finally:
        for node in ("node1", "node2"):
            lab.ns_run(node, ["ip", "addr", "del", address + "/32", "dev", "eth0"], check=False)


def test_probe_does_not_repair_or_touch_the_stale_entry(lab, ansible, vips, clean):
    """The kernel would learn from ARP replies; our probes are built so that it cannot."""
    arp.stale_neighbor(lab, "node3", vips["cp"], WRONG)
    result = ansible.module("node3", "arp_check", {"addresses": [vips["cp"]], "probe": True})["node3"]
    assert [p["mac"] for p in result["probes"][vips["cp"]]] == [lab.node("node1").mac]
    assert [f["evidence"]["truth_from"] for f in result["findings"] if f["check"] == "arp.stale_entry"] == ["probe"]
    entry = cached(lab, "node3", vips["cp"])
    assert entry["lladdr"] == WRONG and entry["state"] == ["STALE"]


def test_flush_keeps_a_correct_entry_the_given_mac_contradicts(lab, ansible, vips, clean):
    """Regression (issue 47): with a wrong ``expected`` MAC, flush: stale deleted a correct REACHABLE entry although
    its own probe showed the cached MAC was the only one answering.  Now: no delete, the contradiction reported."""
    owner_mac = lab.node("node1").mac
    lab.ping("node3", vips["cp"])
    entry = cached(lab, "node3", vips["cp"])
    assert entry["lladdr"] == owner_mac and entry["state"] == ["REACHABLE"], entry
    args = {"addresses": [vips["cp"]], "expected": {vips["cp"]: OTHER}, "probe": True, "probe_timeout": 0.5,
            "flush": "stale"}
    result = ansible.module("node3", "arp_check", args)["node3"]
    assert result["changed"] is False and result["flushed"] == [], result
    assert [p["mac"] for p in result["probes"][vips["cp"]]] == [owner_mac]
    [item] = [f for f in result["findings"] if f["check"] == "arp.expected_contradicted"]
    assert item["severity"] == "warning" and item["evidence"]["expected_mac"] == OTHER
    assert not [f for f in result["findings"] if f["check"] in ("arp.stale_entry", "arp.ok")]
    after = cached(lab, "node3", vips["cp"])
    assert after is not None and after["lladdr"] == owner_mac, "the correct entry must stay"


@pytest.mark.parametrize("client", ["node2", "node3"])
def test_permanent_wrong_entry_kept_without_force_and_deleted_with_force(lab, ansible, vips, clean, client):
    vip = vips["cp"]
    arp.stale_neighbor(lab, client, vip, WRONG, state="permanent")
    args = {"addresses": [vip], "expected": {vip: lab.node("node1").mac}, "flush": "stale"}
    kept = ansible.module(client, "arp_check", args)[client]
    assert kept["changed"] is False and "force=true" in kept["kept"][0]["reason"]
    assert cached(lab, client, vip)["state"] == ["PERMANENT"]
    forced = ansible.module(client, "arp_check", dict(args, force=True))[client]
    assert forced["changed"] is True and cached(lab, client, vip) is None


@pytest.mark.parametrize("args, message", [
    ({"addresses": ["198.18.0.300"]}, "addresses[0]='198.18.0.300' is invalid: give an IPv4 or IPv6 address"),
    ({"addresses": ["VIP"], "expected": {}}, "addresses[0]='VIP' is invalid"),
    ({"addresses": ["{vip}"], "interface": "eth9"}, "interface 'eth9' does not exist on this host"),
    ({"addresses": ["{vip}"], "expected": {"{vip}": "02:de:ad:be:ef"}, "flush": "stale"}, "is not a MAC address"),
    ({"addresses": ["{vip}"], "reader": "pyroute2"}, "pyroute2 is not importable"),
])
def test_bad_input_fails_clearly_and_changes_nothing(lab, ansible, vips, clean, args, message):
    vip = vips["cp"]
    arp.stale_neighbor(lab, "node2", vip, WRONG)
    before = lab.neighbors("node2", vip)
    args = json.loads(json.dumps(args).replace("{vip}", vip))
    result = ansible.module("node2", "arp_check", args)["node2"]
    assert result.get("failed") is True and message in result["msg"], result
    assert lab.neighbors("node2", vip) == before and before[0]["lladdr"] == WRONG


@pytest.fixture
def hooked(lab):
    """Nodes whose ``ip`` a test wrapped with arp.ip_hook, and their extra links: removed after the test."""
    nodes = []
    yield nodes
    for node in nodes:
        arp.ip_unhook(lab, node)
        lab.ns_run(node, ["ip", "link", "del", "arpt0"], check=False)
        for n in (7, 8):
            lab.ns_run(node, ["ip", "neigh", "del", lab.vip(n), "dev", "eth0"], check=False)


# The kernel's neighbour table is shared by every namespace on the machine: when other labs push
# it past gc_thresh2, its forced GC drops any ordinary entry not updated for 5 s, ours included.
# Tests that must find an entry still there after several seconds use PERMANENT entries (never
# collected) with force; the one that needs an ordinary entry retries when the kernel took it.


def three_stale_entries(lab, node, hooked):
    """A (eth0), B (on arpt0, a second device) and C (eth0) all cached PERMANENT with the wrong MAC."""
    a, b, c = lab.vip(0), lab.vip(7), lab.vip(8)
    arp.extra_link(lab, node, "arpt0")
    hooked.append(node)
    arp.stale_neighbor(lab, node, a, WRONG, state="permanent")
    lab.ns_run(node, ["ip", "neigh", "replace", b, "lladdr", WRONG, "dev", "arpt0", "nud", "permanent"])
    arp.stale_neighbor(lab, node, c, WRONG, state="permanent")
    return a, b, c


# The race tests wrap the node's `ip`: they use the iproute2 reader (node2: system Python,
# node3: Python 3.9); the pyroute2 reader is covered against a fake kernel in the unit tests.
@pytest.mark.parametrize("client", ["node2", "node3"])
def test_failure_on_the_second_delete_returns_what_was_already_deleted(lab, ansible, vips, clean, hooked, client):
    """The device of the second entry vanishes between its re-read and its delete."""
    a, b, c = three_stale_entries(lab, client, hooked)
    arp.ip_hook(lab, client, "neigh del %s dev arpt0" % b, ["link del arpt0"])
    owner = lab.node("node1").mac
    result = ansible.module(client, "arp_check", {"addresses": [a, b, c], "expected": {v: owner for v in (a, b, c)},
                                                  "flush": "stale", "force": True})[client]
    assert result["failed"] is True and result["changed"] is True, result
    assert [(e["address"], e["interface"], e["mac"]) for e in result["flushed"]] == [(a, "eth0", WRONG)]
    assert [(e["address"], e["interface"]) for e in result["flush_failed"]] == [(b, "arpt0")]
    assert "Cannot find device" in result["flush_failed"][0]["error"]
    assert [(e["address"], e["interface"]) for e in result["not_attempted"]] == [(c, "eth0")]
    assert "Already deleted (1): %s dev eth0 lladdr %s PERMANENT" % (a, WRONG) in result["msg"]
    assert "Not attempted (1): %s dev eth0" % c in result["msg"]
    assert [f["check"] for f in result["findings"] if f["check"] == "arp.flush_incomplete"] == ["arp.flush_incomplete"]
    # verified independently: A is gone, C untouched, B went with its device
    assert cached(lab, client, a) is None
    assert cached(lab, client, c)["lladdr"] == WRONG
    assert not [e for e in lab.neighbors(client) if e.get("dev") == "arpt0"]


@pytest.mark.parametrize("client", ["node2", "node3"])
def test_entry_turning_permanent_between_read_and_delete_is_kept(lab, ansible, vips, clean, hooked, client):
    """While A is deleted, something (an admin, a CNI) pins C as PERMANENT: C must survive without force."""
    a, c = lab.vip(0), lab.vip(8)
    hooked.append(client)
    arp.ip_hook(lab, client, "neigh del %s dev eth0" % a,
                ["neigh replace %s lladdr %s dev eth0 nud permanent" % (c, WRONG)])
    owner = lab.node("node1").mac
    for dummy in range(4):
        arp.stale_neighbor(lab, client, a, WRONG)
        arp.stale_neighbor(lab, client, c, WRONG)
        result = ansible.module(client, "arp_check", {"addresses": [a, c], "expected": {a: owner, c: owner},
                                                      "flush": "stale"})[client]
        if a in [e["address"] for e in result["flushed"]]:
            break  # A lived until its delete, so the hook ran (else the kernel's GC took A first: again)
    assert result["failed"] is False and result["changed"] is True, result
    assert [e["address"] for e in result["flushed"]] == [a]
    assert [e["address"] for e in result["kept"]] == [c]
    assert "became protected since it was read" in result["kept"][0]["reason"]
    assert "PERMANENT" in result["kept"][0]["reason"]
    assert cached(lab, client, a) is None
    entry = cached(lab, client, c)
    assert entry["lladdr"] == WRONG and entry["state"] == ["PERMANENT"]


def findings_of(run, client):
    """What the role's check reported for ``client``, in the order the role gave it before its one pass: what the
    VIP owners show (stale_arp_fleet_findings: a VIP no node holds, an owner that did not answer), then its own
    cache's findings (stale_arp_findings)."""
    facts = run.result("Keep the findings of this host", client)["ansible_facts"]
    return facts["stale_arp_fleet_findings"] + facts["stale_arp_findings"]


class TestPlaybook(object):
    """playbooks/stale_arp.yml: owners learned in the play, check mode, serial flush, post-check."""

    # facts injected as variables (ansible-core's default) or not (ANSIBLE_INJECT_FACT_VARS=False, the default
    # ansible-core announces and what a fleet's controller may set): node_pass's record and the flush's re-check are
    # read under ansible_facts either way
    @pytest.mark.parametrize("inject", ["True", "False"], ids=["facts-as-vars", "facts-not-as-vars"])
    def test_detects_flushes_and_rechecks(self, lab, ansible, vips, clean, inject, monkeypatch):
        monkeypatch.setenv("ANSIBLE_INJECT_FACT_VARS", inject)
        vip = vips["cp"]
        arp.learn_neighbor(lab, "node2", vip)
        arp.stale_neighbor(lab, "node3", vip, WRONG)
        extra = {"stale_arp_vips": [vip]}

        run = ansible.playbook(PLAYBOOK, extra)
        assert run.rc == 0, run
        facts = findings_of(run, "node3")
        assert [f["check"] for f in facts if f["severity"] == "critical"] == ["arp.stale_entry"]
        facts2 = findings_of(run, "node2")
        assert [f["check"] for f in facts2] == ["arp.ok"]
        assert cached(lab, "node3", vip)["lladdr"] == WRONG

        dry = ansible.playbook(PLAYBOOK, dict(extra, stale_arp_flush=True), check=True, diff=True)
        assert dry.rc == 0, dry
        assert "-%s dev eth0 lladdr %s STALE" % (vip, WRONG) in dry.stdout
        assert cached(lab, "node3", vip)["lladdr"] == WRONG

        real = ansible.playbook(PLAYBOOK, dict(extra, stale_arp_flush=True))
        assert real.rc == 0, real
        changed = {r["host"] for r in real.results(action="arp_check") if r["result"].get("changed")}
        assert changed == {"node3"}
        entry = cached(lab, "node3", vip)
        assert entry is None or entry["lladdr"] == lab.node("node1").mac
        # the report (the job's artifacts) holds what the re-check saw after the flush, not the check before it
        report = real.result("Gather the findings of every host and publish them as job artifacts",
                             "localhost")["ansible_facts"]["report_data"]
        assert report["hosts"]["node3"]["scenarios"]["stale_arp"]["status"] == "ran"
        assert not [f for f in report["findings"] if f["host"] == "node3" and f["check"] == "arp.stale_entry"]

        again = ansible.playbook(PLAYBOOK, dict(extra, stale_arp_flush=True))
        assert again.rc == 0 and not any(r["result"].get("changed") for r in again.results(action="arp_check"))

    def test_fails_the_host_whose_entry_is_still_wrong(self, lab, ansible, vips, clean):
        vip = vips["cp"]
        arp.stale_neighbor(lab, "node2", vip, WRONG, state="permanent")
        run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [vip], "stale_arp_flush": True})
        assert run.rc != 0
        failed = [r for r in run.records if r["status"] == "failed"]
        assert [r["host"] for r in failed] == ["node2"]
        assert "still stale after the flush" in failed[0]["result"]["msg"] and "force=true" in failed[0]["result"]["msg"]
        assert cached(lab, "node2", vip)["state"] == ["PERMANENT"]
        # the serial ramp stopped after the first host failed: node3 was never processed
        assert not run.results(host="node3")

    def test_unowned_vip_is_reported_not_guessed(self, lab, ansible, vips, clean):
        nobody = lab.vip(40)
        run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [nobody]})
        assert run.rc == 0, run
        facts = findings_of(run, "node2")
        assert [f["check"] for f in facts if f["severity"] == "critical"] == ["arp.vip_unowned"]
        assert nobody in facts[0]["summary"]

    def test_flush_stopping_halfway_is_shown_recorded_and_fails_the_host(self, lab, ansible, vips, clean, hooked):
        """The device of the second entry vanishes before its delete: the role shows and records
        what was deleted, what failed and what was not attempted, then fails the host."""
        a, b, c = three_stale_entries(lab, "node2", hooked)
        for vip in (b, c):
            arp.bind_vip(lab, "node1", vip)
        try:
            arp.ip_hook(lab, "node2", "neigh del %s dev arpt0" % b, ["link del arpt0"])
            run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [a, b, c], "stale_arp_flush": True, "stale_arp_force": True})
        finally:
            for vip in (b, c):
                lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        assert run.rc != 0, run
        shown = run.result("Show what the flush deleted, kept, failed and did not attempt", "node2")["msg"]
        assert shown["deleted (address, device, old MAC)"] == ["%s eth0 %s" % (a, WRONG)]
        assert len(shown["attempted and failed"]) == 1 and shown["attempted and failed"][0].startswith(b + ": ")
        assert "Cannot find device" in shown["attempted and failed"][0]
        assert shown["not attempted"] == [c]
        facts = run.result("Record the findings of this host after the flush", "node2")["ansible_facts"]["stale_arp_findings"]
        incomplete = [f for f in facts if f["check"] == "arp.flush_incomplete"]
        assert len(incomplete) == 1 and incomplete[0]["evidence"]["not_attempted"] == ["%s dev eth0 lladdr %s PERMANENT" % (c, WRONG)]
        assert ("arp.stale_entry", "%s dev eth0" % c) in [(f["check"], f["subject"]) for f in facts]
        failed = [r for r in run.records if r["status"] == "failed"]
        # the flush task itself (rescued, so the role can show and record it), then the host's failure
        assert [(r["host"], r["task"].split(" : ")[-1]) for r in failed] == [
            ("node2", "Flush the stale entries of this client"), ("node2", "Fail this host if the flush stopped halfway")]
        assert "Already deleted (1): %s dev eth0" % a in failed[-1]["result"]["msg"]
        # independently: A deleted, C untouched; the ramp stopped before node3
        assert cached(lab, "node2", a) is None and cached(lab, "node2", c)["lladdr"] == WRONG
        assert not run.results(host="node3", task="Flush the stale entries of this client")

    def test_delete_that_took_a_replaced_entry_is_restored_recorded_and_fails_the_host(self, lab, ansible, vips, clean,
                                                                                       hooked):
        """A writer replaces node2's stale entry with a PERMANENT one (another MAC) right before the delete:
        the role records the arp.flush_race finding and fails the host; the entry is back (ip -j neigh)."""
        a = lab.vip(0)
        hooked.append("node2")
        arp.stale_neighbor(lab, "node2", a, WRONG, state="permanent")  # never collected; deleted only with force
        arp.ip_hook(lab, "node2", "neigh del %s dev eth0" % a,
                    ["neigh replace %s lladdr %s dev eth0 nud permanent" % (a, OTHER)])
        run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [a], "stale_arp_flush": True, "stale_arp_force": True})
        assert run.rc != 0, run
        facts = run.result("Record the findings of this host after the flush", "node2")["ansible_facts"]["stale_arp_findings"]
        raced = [f for f in facts if f["check"] == "arp.flush_race"]
        assert len(raced) == 1 and raced[0]["severity"] == "critical" and OTHER in raced[0]["summary"]
        failed = [r for r in run.records if r["status"] == "failed"]
        assert [(r["host"], r["task"].split(" : ")[-1]) for r in failed] == [
            ("node2", "Fail this host if a delete took another entry than the stale one (it was put back)")]
        assert "lladdr %s nud permanent" % OTHER in failed[0]["result"]["msg"]
        entry = cached(lab, "node2", a)
        assert entry["lladdr"] == OTHER and entry["state"] == ["PERMANENT"]

    @pytest.fixture
    def owners_inventory(self, lab, tmp_path):
        """The lab inventory plus two owner nodes that cannot answer: node99 (no host at that address)
        and node98 (reachable, but its Python does not exist)."""
        inventory = json.loads(lab.inventory_path.read_text())
        children = inventory["all"]["children"]
        children["k8s_nodes"]["hosts"]["node99"] = {
            "ansible_host": str(lab.network[99]),
            "ansible_ssh_common_args": inventory["all"]["vars"]["ansible_ssh_common_args"] + " -o ConnectTimeout=3"}
        children["k8s_nodes"]["hosts"]["node98"] = dict(children["k8s_nodes"]["hosts"]["node2"],
                                                        ansible_python_interpreter="/nonexistent/python3")
        children["control_plane"]["hosts"].update({"node99": {}, "node98": {}})
        children["dead_owners"] = {"hosts": {"node99": {}}}
        path = tmp_path / "inventory.json"
        path.write_text(json.dumps(inventory))
        return path

    def test_unreachable_or_failing_owner_is_a_finding_and_stops_nothing(self, lab, ansible, vips, clean, owners_inventory):
        vip = vips["cp"]
        arp.stale_neighbor(lab, "node3", vip, WRONG)
        run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [vip]}, inventory=owners_inventory)
        assert run.rc == 0, run
        for client in ("node2", "node3"):
            facts = findings_of(run, client)
            unreachable = {f["subject"]: f["evidence"]["status"] for f in facts if f["check"] == "arp.owner_unreachable"}
            assert unreachable == {"node99": "unreachable", "node98": "failed"}, facts
            assert not [f for f in facts if f["check"] in ("arp.vip_unowned", "arp.vip_owner_unknown")]
        # node1 answered, so node3's stale entry was still compared with the owner's MAC
        facts = findings_of(run, "node3")
        stale = [f for f in facts if f["check"] == "arp.stale_entry"]
        assert len(stale) == 1 and stale[0]["evidence"]["true_mac"] == lab.node("node1").mac

    def test_only_owner_unreachable_is_unknown_not_unowned(self, lab, ansible, vips, clean, owners_inventory):
        run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": [vips["cp"]], "stale_arp_owners_group": "dead_owners"},
                               inventory=owners_inventory)
        assert run.rc == 0, run
        for client in ("node2", "node3"):
            facts = findings_of(run, client)
            checks = sorted(f["check"] for f in facts if f["severity"] != "ok")
            assert "arp.vip_unowned" not in checks
            assert {"arp.owner_unreachable", "arp.vip_owner_unknown"} <= set(checks), facts


@pytest.mark.parametrize("client", ["node2", "node3"])
def test_entry_replaced_by_a_permanent_one_right_before_the_delete_is_put_back(lab, ansible, vips, clean, hooked, client):
    """Between the re-read and `ip neigh del`, a writer replaces the stale entry with a PERMANENT one with
    another MAC: the delete takes it, the kernel's RTM_DELNEIGH says so, and the module writes it back."""
    a = lab.vip(0)
    hooked.append(client)
    arp.ip_hook(lab, client, "neigh del %s dev eth0" % a, ["neigh replace %s lladdr %s dev eth0 nud permanent" % (a, OTHER)])
    owner = lab.node("node1").mac
    for dummy in range(4):
        lab.ns_run(client, ["ip", "neigh", "del", a, "dev", "eth0"], check=False)
        arp.stale_neighbor(lab, client, a, WRONG)
        result = ansible.module(client, "arp_check", {"addresses": [a], "expected": {a: owner}, "flush": "stale"})[client]
        if result.get("raced"):
            break  # the stale entry lived until its re-read, so the hook ran (else the kernel's GC took it first)
    assert result["failed"] is False and result["changed"] is True, result
    assert result["flushed"] == []  # the stale MAC is not claimed deleted: the kernel said it deleted OTHER
    [race] = result["raced"]
    assert (race["deleted"]["mac"], race["deleted"]["state"], race["stale_mac"]) == (OTHER, ["PERMANENT"], WRONG)
    assert race["restored"] == "%s dev eth0 lladdr %s nud permanent" % (a, OTHER)
    [found] = [f for f in result["findings"] if f["check"] == "arp.flush_race"]
    assert found["severity"] == "critical" and OTHER in found["summary"] and WRONG in found["summary"]
    # verified independently with ip -j neigh in the node's namespace: the PERMANENT entry is back as it was
    entry = cached(lab, client, a)
    assert entry["lladdr"] == OTHER and entry["state"] == ["PERMANENT"]
