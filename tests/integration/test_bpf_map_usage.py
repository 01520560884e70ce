"""bpf_map_usage and the cilium_maps playbook over SSH against the lab's per-node bpffs.

Every figure is checked against bpftool run in the node's mount namespace (an independent
reader): entry counts, the exact keys left after a cleanup, nothing changed by check mode
or by a failed run.  node2 has no pyroute2 (/usr/bin/python3), node3 runs Python 3.9.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess

import pytest

from tests.lab.faults import bpf as lb

NODES = ("node1", "node2", "node3")
SERVICES_PIN = lb.path(lb.SERVICES)
REVNAT_PIN = lb.path(lb.REVNAT)


@pytest.fixture
def clean_bpffs(lab):
    """Every test starts and ends with an empty bpffs on every node."""
    for node in NODES:
        lb.remove_bpf_maps(lab, node)
    yield lab
    for node in NODES:
        lb.remove_bpf_maps(lab, node)


@pytest.fixture
def lb_maps(clean_bpffs):
    """Cilium LB maps on every node: 6 services x 3 backends, plus orphans and faults per node."""
    lab = clean_bpffs
    made = {
        "node1": lb.cilium_lb_maps(lab, "node1", services=6, orphans=40, dangling=2, orphan_revnat=3),
        "node2": lb.cilium_lb_maps(lab, "node2", services=6, orphans=25, version="v2"),
        "node3": lb.cilium_lb_maps(lab, "node3", services=6, orphans=10, version="v1", orphan_revnat=1),
    }
    return made


def snapshot(lab, node, made):
    return {role: lb.bpftool_entries(lab, node, made[role]) for role in ("services", "backends", "reverse_nat")}


def backend_ids(entries, version):
    fmt = "<H" if version == "v1" else "<I"
    return sorted(struct.unpack(fmt, k)[0] for k in entries)


def by_name(result):
    return {m["name"]: m for m in result["maps"]}


def statuses(ansible, pattern, args):
    """Run the module; {host: (status, result)} (the recorded status says whether it failed)."""
    run = ansible._run(["ansible", pattern, "-i", str(ansible.lab.inventory_path), "-m", "k8snet.triage.bpf_map_usage",
                        "-a", json.dumps(args)])
    return {r["host"]: (r["status"], r["result"]) for r in run.records}


def task(run, name, host=None):
    """Results of the task whose name ends with ``name`` (role tasks are prefixed with the role)."""
    return [r for r in run.records if r["task"].endswith(name) and (host is None or r["host"] == host)]


def checks(result):
    return {f["check"]: f for f in result["findings"]}


# ----------------------------------------------------------------- reading
def test_fill_levels_equal_bpftool_counts_on_every_node(lab, ansible, lb_maps):
    lb.ct_map(lab, "node1", entries=300, max_entries=4096)
    other = lb.other_maps(lab, "node3")  # LPM trie (GET_NEXT_KEY path) and per-CPU hash, on Python 3.9
    results = ansible.module("k8s_nodes", "bpf_map_usage", {"bpffs": "/sys/fs/bpf"})
    assert sorted(results) == list(NODES)
    for node in NODES:
        result = results[node]
        assert not result.get("failed"), result
        assert result["changed"] is False
        maps = by_name(result)
        pins = [lb_maps[node][r] for r in ("services", "backends", "reverse_nat")]
        if node == "node1":
            pins.append(lb.path(lb.CT))
        if node == "node3":
            pins += [other["lpm"], other["percpu"]]
            assert (maps["cilium_lb4_source_range"]["entries"], maps["cilium_metrics"]["entries"]) == (40, 30)
        assert sorted(m["path"] for m in result["maps"]) == sorted(pins)
        for pin in pins:
            model = maps[os.path.basename(pin)]
            shown = lb.bpftool_show(lab, node, pin)
            assert model["entries"] == lb.bpftool_count(lab, node, pin)
            assert (model["max_entries"], model["key_size"], model["value_size"], model["id"]) == (
                shown["max_entries"], shown["bytes_key"], shown["bytes_value"], shown["id"])
            assert model["type"] == shown["type"]
        assert result["not_maps"]["count"] == 2  # the kernel's maps.debug / progs.debug iterators


def test_lb_decoding_finds_the_injected_faults(lab, ansible, lb_maps):
    results = ansible.module("k8s_nodes", "bpf_map_usage", {"maps": ["tc/globals/cilium_lb4_*"]})
    one = results["node1"]
    found = checks(one)
    assert found["bpf.orphan_backends"]["evidence"]["count"] == 40
    assert found["bpf.dangling_service_slots"]["evidence"]["dangling"] == 2
    assert found["bpf.orphan_reverse_nat"]["evidence"]["count"] == 3
    services = by_name(one)["cilium_lb4_services_v2"]["cilium"]
    assert services["frontends"] == 7 and services["backend_slots"] == 6 * 3 + 2
    assert by_name(results["node2"])["cilium_lb4_backends_v2"]["cilium"]["orphans"] == 25
    assert by_name(results["node3"])["cilium_lb4_backends"]["cilium"]["orphans"] == 10
    assert checks(results["node3"])["bpf.orphan_reverse_nat"]["evidence"]["count"] == 1
    assert "bpf.dangling_service_slots" not in checks(results["node2"])


def test_full_map_is_critical(lab, ansible, clean_bpffs):
    made = lb.full_map(lab, "node2", entries=2048)
    result = ansible.module("node2", "bpf_map_usage", {"warn_ratio": 0.8})["node2"]
    full = checks(result)["bpf.map_full"]
    assert full["severity"] == "critical"
    assert full["evidence"]["entries"] == full["evidence"]["max_entries"] == 2048
    assert lb.bpftool_count(lab, "node2", made["path"]) == 2048
    assert by_name(result)["cilium_lb4_backends_v2"]["ratio"] == 1.0


def test_lru_map_is_reported_never_cleaned(lab, ansible, clean_bpffs):
    lb.cilium_lb_maps(lab, "node3", services=2, orphans=5)
    made = lb.ct_map(lab, "node3", entries=1000, max_entries=1024)
    result = ansible.module("node3", "bpf_map_usage", {"cleanup": "orphans"})["node3"]
    ct = [f for f in result["findings"] if f["subject"] == made["path"]]
    assert [(f["check"], f["severity"]) for f in ct] == [("bpf.map_pressure", "info")]
    assert made["path"] not in result["deleted"]
    assert lb.bpftool_count(lab, "node3", made["path"]) == 1000


# ----------------------------------------------------------------- cleanup
def test_check_mode_changes_nothing_then_cleanup_removes_exactly_the_orphans(lab, ansible, lb_maps):
    before = {node: snapshot(lab, node, lb_maps[node]) for node in NODES}

    dry = ansible.module("k8s_nodes", "bpf_map_usage", {"cleanup": "orphans"}, check=True, diff=True)
    for node in NODES:
        assert dry[node]["changed"] is True
        assert dry[node]["deleted"][lb_maps[node]["backends"]] == lb_maps[node]["orphans"]
        assert dry[node]["diff"]["before"][lb_maps[node]["backends"]]["entries"] == lb_maps[node]["backend_entries"]
        assert snapshot(lab, node, lb_maps[node]) == before[node], "check mode changed %s" % node

    real = ansible.module("k8s_nodes", "bpf_map_usage", {"cleanup": "orphans"}, diff=True)
    for node in NODES:
        made = lb_maps[node]
        after = snapshot(lab, node, made)
        assert real[node]["changed"] is True
        # services untouched, every referenced backend kept, exactly the orphans gone
        assert after["services"] == before[node]["services"]
        assert backend_ids(after["backends"], made["version"]) == list(range(1, made["live_backends"] + 1))
        assert {k: v for k, v in before[node]["backends"].items() if k in after["backends"]} == after["backends"]
        revnat_left = sorted(struct.unpack(">H", k)[0] for k in after["reverse_nat"])
        expected = list(range(1, 7)) + ([7] if made["dangling"] else [])
        assert revnat_left == expected
        samples = real[node]["diff"]["after"][made["backends"]]["deleted_examples"]
        assert 0 < len(samples) <= 5

    again = ansible.module("k8s_nodes", "bpf_map_usage", {"cleanup": "orphans"})
    for node in NODES:
        assert again[node]["changed"] is False and again[node]["deleted"] == {}
        assert "bpf.orphan_backends" not in checks(again[node])
    # the dangling slots are reported, never deleted
    assert checks(again["node1"])["bpf.dangling_service_slots"]["evidence"]["dangling"] == 2


def test_max_delete_caps_the_run(lab, ansible, clean_bpffs):
    made = lb.cilium_lb_maps(lab, "node2", services=2, orphans=50)
    result = ansible.module("node2", "bpf_map_usage", {"cleanup": "orphans", "max_delete": 12})["node2"]
    assert result["deleted"] == {made["backends"]: 12}
    assert result["cleanup"][lb.GLOBALS]["capped"] is True
    assert lb.bpftool_count(lab, "node2", made["backends"]) == made["backend_entries"] - 12
    rest = ansible.module("node2", "bpf_map_usage", {"cleanup": "orphans", "max_delete": 1000})["node2"]
    assert rest["deleted"] == {made["backends"]: 38}
    assert lb.bpftool_count(lab, "node2", made["backends"]) == made["live_backends"]


def test_stale_cleanup_removes_only_frontends_kubernetes_lacks(lab, ansible, clean_bpffs):
    made = lb.cilium_lb_maps(lab, "node3", services=4, backends_per_service=2)
    live = made["frontends"][1:]  # service 1 was deleted in Kubernetes
    before = snapshot(lab, "node3", made)
    result = ansible.module("node3", "bpf_map_usage", {"cleanup": "stale", "live_frontends": live})["node3"]
    assert checks(result)["bpf.stale_frontends"]["evidence"]["examples"] == [made["frontends"][0]]
    after = snapshot(lab, "node3", made)
    vip = bytes(int(x) for x in made["frontends"][0].split(":")[0].split("."))
    assert sorted(k for k in before["services"] if k not in after["services"]) == sorted(
        k for k in before["services"] if k[:4] == vip)
    assert len(after["services"]) == 3 * 3
    assert backend_ids(after["backends"], "v3") == [3, 4, 5, 6, 7, 8]
    assert sorted(struct.unpack(">H", k)[0] for k in after["reverse_nat"]) == [2, 3, 4]
    again = ansible.module("node3", "bpf_map_usage", {"cleanup": "stale", "live_frontends": live})["node3"]
    assert again["changed"] is False


# ------------------------------------------- an empty or implausible live set is refused (issue 11)
@pytest.mark.parametrize("check_mode", [True, False])
def test_empty_or_implausible_live_set_is_refused_and_nothing_deleted(lab, ansible, clean_bpffs, check_mode):
    made = lb.cilium_lb_maps(lab, "node2", services=4, backends_per_service=2, orphans=3)
    before = snapshot(lab, "node2", made)
    cases = [({"live_frontends": []}, ["empty live_frontends", "allow_empty_live_frontends=true"]),
             ({"live_frontends": made["frontends"][:2]}, ["would delete 2 of the 4 frontends", "max_stale_share=0.25"]),
             ({"live_frontends": [], "allow_empty_live_frontends": True}, ["max_stale_share=0.25"])]
    for args, words in cases:
        run = ansible._run(["ansible", "node2", "-i", str(lab.inventory_path), "-m", "k8snet.triage.bpf_map_usage",
                            "-a", json.dumps(dict(args, cleanup="stale"))] + (["--check"] if check_mode else []))
        status, result = run.records[0]["status"], run.records[0]["result"]
        assert status == "failed", result
        for word in words:
            assert word in result["msg"], result["msg"]
        assert snapshot(lab, "node2", made) == before  # bpftool: nothing deleted, orphans included
    # the override, taken deliberately: one of four is within a share of 0.25
    ok = ansible.module("node2", "bpf_map_usage", {"cleanup": "stale", "live_frontends": made["frontends"][1:]})["node2"]
    assert ok["deleted_frontends"] == [made["frontends"][0]]
    assert len(lb.bpftool_entries(lab, "node2", made["services"])) == 3 * 3


# ------------------------------ cleanup=orphans: an empty services map or an implausible share is refused
@pytest.mark.parametrize("check_mode", [True, False])
def test_orphan_sweep_of_an_empty_services_map_is_refused_and_nothing_deleted(lab, ansible, clean_bpffs, check_mode):
    # the agent's services map read empty (restarting agent, replaced map): every backend would look orphaned
    made = lb.cilium_lb_maps(lab, "node2", services=0, orphans=6, orphan_revnat=2)
    before = snapshot(lab, "node2", made)
    assert not before["services"] and len(before["backends"]) == 6 and len(before["reverse_nat"]) == 2
    cases = [({}, ["empty services map", "allow_empty_services=true", "max_orphan_share=1"]),
             ({"allow_empty_services": True}, ["would delete 8 of the 8", "max_orphan_share=0.95"])]
    for args, words in cases:
        run = ansible._run(["ansible", "node2", "-i", str(lab.inventory_path), "-m", "k8snet.triage.bpf_map_usage",
                            "-a", json.dumps(dict(args, cleanup="orphans"))] + (["--check"] if check_mode else []))
        status, result = run.records[0]["status"], run.records[0]["result"]
        assert status == "failed", result
        for word in words:
            assert word in result["msg"], result["msg"]
        assert snapshot(lab, "node2", made) == before  # bpftool: nothing deleted
    # both overrides, taken deliberately: the sweep goes through
    ok = ansible.module("node2", "bpf_map_usage", {"cleanup": "orphans", "allow_empty_services": True,
                                                   "max_orphan_share": 1})["node2"]
    assert ok["changed"] and ok["deleted"] == {made["backends"]: 6, made["reverse_nat"]: 2}
    assert not lb.bpftool_entries(lab, "node2", made["backends"])
    assert not lb.bpftool_entries(lab, "node2", made["reverse_nat"])


def test_orphan_sweep_above_its_share_is_refused_naming_the_option(lab, ansible, clean_bpffs):
    made = lb.cilium_lb_maps(lab, "node2", services=2, backends_per_service=1, orphans=6)
    before = snapshot(lab, "node2", made)
    status, result = statuses(ansible, "node2", {"cleanup": "orphans", "max_orphan_share": 0.5})["node2"]
    assert status == "failed" and "would delete 6 of the 10" in result["msg"] and "max_orphan_share=0.5" in result["msg"]
    assert snapshot(lab, "node2", made) == before
    ok = ansible.module("node2", "bpf_map_usage", {"cleanup": "orphans", "max_orphan_share": 0.6})["node2"]
    assert ok["deleted"] == {made["backends"]: 6}
    assert len(lb.bpftool_entries(lab, "node2", made["backends"])) == 2


def test_playbook_passes_the_orphan_guards_as_role_variables(lab, ansible, clean_bpffs):
    """The role's cilium_maps_max_orphan_share reaches the module, also as the string -e gives."""
    made = lb.cilium_lb_maps(lab, "node2", services=2, backends_per_service=1, orphans=6)
    before = snapshot(lab, "node2", made)
    run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True,
                                                         "cilium_maps_max_orphan_share": "0.5"}, limit="node2")
    assert run.rc != 0
    failed = [r for r in run.records if r["host"] == "node2" and r["status"] == "failed"]
    assert failed and "max_orphan_share=0.5" in failed[0]["result"]["msg"], failed
    assert snapshot(lab, "node2", made) == before  # bpftool: nothing deleted
    ok = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True,
                                                        "cilium_maps_max_orphan_share": 0.6}, limit="node2")
    assert ok.rc == 0, ok
    assert len(lb.bpftool_entries(lab, "node2", made["backends"])) == 2


# ---------------------------------------------------- partial progress is never lost (issue 11)
def test_cleanup_failing_halfway_returns_what_it_deleted(lab, ansible, clean_bpffs):
    """Regression: a cleanup that failed after deleting keys returned only the pin path.

    node2 has LB maps in two directories; the second one's backends map is frozen, so the
    module fails after cleaning the first.  The failure result must hold exactly the keys bpftool
    shows gone, and list the second directory's planned keys as not attempted."""
    first = lb.cilium_lb_maps(lab, "node2", services=2, orphans=6, orphan_revnat=2)
    second_dir = "/sys/fs/bpf/tc/old"
    second = lb.cilium_lb_maps(lab, "node2", services=2, orphans=4, directory=second_dir)
    lb.freeze_map(lab, "node2", directory=second_dir)
    before = {p: lb.bpftool_entries(lab, "node2", first[p]) for p in ("backends", "reverse_nat")}
    status, result = statuses(ansible, "node2", {"cleanup": "orphans"})["node2"]
    assert status == "failed", result
    assert result["msg"].startswith("the cleanup stopped halfway: ")
    assert "tc/old/cilium_lb4_backends_v3 is frozen" in result["msg"]
    for role in ("backends", "reverse_nat"):
        gone = set(before[role]) - set(lb.bpftool_entries(lab, "node2", first[role]))
        assert len(gone) == (6 if role == "backends" else 2)
        assert result["deleted"][first[role]] == len(gone)
        decoded = {str(struct.unpack("<I", k)[0]) if role == "backends" else str(struct.unpack(">H", k)[0])
                   for k in gone}
        assert set(result["deleted_keys"][first[role]]) == decoded
    assert result["not_attempted"] == {second["backends"]: 4}
    assert result["changed"] is True
    # the failed result carries its finding, built like every other (the progress as evidence)
    [failed] = result["findings"]
    assert (failed["check"], failed["severity"], failed["subject"]) == ("bpf.cleanup_incomplete", "critical", "/sys/fs/bpf")
    assert failed["evidence"]["deleted"] == result["deleted"] and failed["evidence"]["not_attempted"] == {second["backends"]: 4}
    assert failed["summary"].startswith("the cleanup failed after deleting 8 keys: the cleanup stopped halfway")
    assert lb.bpftool_count(lab, "node2", second["backends"]) == second["backend_entries"]

    # the role keeps it in the host's report and findings, and fails the host
    lb.cilium_lb_maps(lab, "node2", services=2, orphans=6, orphan_revnat=2)  # the first directory again
    run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True}, limit="node2")
    assert run.rc != 0
    record = task(run, "Keep the findings and a compact report of this host", "node2")[0]["result"]["ansible_facts"]
    assert record["cilium_maps_report"]["deleted"] == {first["backends"]: 6, first["reverse_nat"]: 2}
    assert record["cilium_maps_report"]["not_attempted"] == {second["backends"]: 4}
    incomplete = [f for f in record["cilium_maps_findings"] if f["check"] == "bpf.cleanup_incomplete"]
    assert incomplete and incomplete[0]["severity"] == "critical"
    assert incomplete[0]["evidence"]["deleted"] == {first["backends"]: 6, first["reverse_nat"]: 2}
    final = [r for r in run.records if r["status"] == "failed"][-1]["result"]["msg"]
    assert "Deleted per map" in final and "not attempted per map" in final


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize("args,words", [
    ({"bpffs": "/tmp"}, ["bpffs=/tmp is not a bpf filesystem"]),
    ({"bpffs": "/nonexistent/bpf"}, ["bpffs=/nonexistent/bpf is not a directory"]),
    ({"maps": ["tc/globals/cilium_lb4_services_v2", "tc/globals/cilium_lb6_services"], "cleanup": "orphans"},
     ["no map named tc/globals/cilium_lb6_services is pinned under /sys/fs/bpf"]),
    ({"cleanup": "orphans", "live_frontends": ["198.18.80.21:80/TCP", "198.18.80.999:80"]}, ["'198.18.80.999:80'"]),
    ({"cleanup": "stale"}, ["cleanup=stale needs live_frontends"]),
    ({"cleanup": "orphans", "warn_ratio": 0.99}, ["warn_ratio=0.99 and critical_ratio=0.95"]),
])
def test_bad_input_fails_naming_it_and_changes_nothing(lab, ansible, lb_maps, args, words):
    before = {node: snapshot(lab, node, lb_maps[node]) for node in ("node2", "node3")}
    results = statuses(ansible, "node2:node3", args)
    for node in ("node2", "node3"):
        status, result = results[node]
        assert status == "failed", result
        for word in words:
            assert word in result["msg"]
        assert snapshot(lab, node, lb_maps[node]) == before[node]


def test_without_privilege_fails_naming_the_capability(lab, ansible, lb_maps):
    """An unprivileged user (no CAP_BPF, no access to the pins) gets a message naming CAP_BPF."""
    wrapper = lab.workdir / "python-as-nobody"
    wrapper.write_text('#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups -- /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    before = snapshot(lab, "node2", lb_maps["node2"])
    try:
        run = ansible._run(["ansible", "node2", "-i", str(lab.inventory_path), "-m", "k8snet.triage.bpf_map_usage",
                            "-a", '{"maps": ["tc/globals/*"], "cleanup": "orphans"}',
                            "-e", "ansible_python_interpreter=%s" % wrapper])
    finally:
        wrapper.unlink()
    result = run.records[0]["result"]
    assert run.records[0]["status"] == "failed", result
    assert "CAP_BPF" in result["msg"] and "uid 65534" in result["msg"]
    assert lb.path("") in result["msg"]
    assert snapshot(lab, "node2", lb_maps["node2"]) == before


# ---------------------------------------------------------------- playbook
def test_playbook_fleet_report_and_cleanup_ramp(lab, ansible, lb_maps):
    dry = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True}, check=True)
    assert dry.rc == 0, dry
    for node in NODES:
        assert lb.bpftool_count(lab, node, lb_maps[node]["backends"]) == lb_maps[node]["backend_entries"]
    real = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True})
    assert real.rc == 0, real
    # the ramp: one node, then 10 %, then 25 % (one node each here), each with a post-check
    post = task(real, "Fail the host if what was to be removed is still there")
    assert [r["host"] for r in post] == ["node1", "node2", "node3"]
    for node in NODES:
        assert lb.bpftool_count(lab, node, lb_maps[node]["backends"]) == lb_maps[node]["live_backends"]
        assert task(real, "Keep the findings and a compact report of this host", node)[0]["result"]["ansible_facts"][
            "cilium_maps_report"]["deleted"][lb_maps[node]["backends"]] == lb_maps[node]["orphans"]
    report = real.result("Show the fill and findings of every node", "localhost")["msg"]
    assert len(report) == 3 and all("deleted" in line for line in report)


def test_capped_cleanup_passes_the_post_check_and_says_what_remains(lab, ansible, lb_maps):
    run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True, "cilium_maps_max_delete": 5})
    assert run.rc == 0, run
    for node in NODES:
        post = task(run, "Fail the host if what was to be removed is still there", node)[0]["result"]
        assert "max_delete=5 capped this run" in post["msg"]
        assert lb.bpftool_count(lab, node, lb_maps[node]["backends"]) == lb_maps[node]["backend_entries"] - 5


def test_failed_cleanup_stops_the_ramp(lab, ansible, lb_maps):
    """node1's backends map is frozen: its cleanup fails, nothing changes there, the ramp stops before node2."""
    lb.freeze_map(lab, "node1")
    run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True})
    assert run.rc != 0
    failed = [r for r in run.records if r["status"] == "failed"]
    assert {r["host"] for r in failed} == {"node1"}
    assert "cilium_lb4_backends_v3 is frozen" in failed[-1]["result"]["msg"]
    assert "the cleanup stopped before deleting anything" in failed[-1]["result"]["msg"]
    for node in NODES:  # node1 refused, node2 and node3 never reached
        assert lb.bpftool_count(lab, node, lb_maps[node]["backends"]) == lb_maps[node]["backend_entries"]
        assert lb.bpftool_count(lab, node, lb_maps[node]["reverse_nat"]) == lb_maps[node]["revnat_entries"]


def test_post_check_fails_when_something_re_adds_the_orphans(lab, ansible, lb_maps):
    """A stand-in for an agent that keeps re-adding a leaked backend: the post-check fails node1 and stops the ramp."""
    made = lb_maps["node1"]
    key = lb.backend_key(lb.ORPHAN_BASE, "v3")
    value = lb.backend_value("198.19.64.2", 9090, "v3")
    node = lab.node("node1")
    loop = ("while :; do bpftool map update pinned %s key hex %s value hex %s; sleep 0.1; done"
            % (made["backends"], lb._hex(key), lb._hex(value)))
    agent = subprocess.Popen(["nsenter", "-t", str(node.sshd_pid), "-m", "-n", "--", "sh", "-c", loop],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run = ansible.playbook("playbooks/cilium_maps.yml", {"cilium_maps_cleanup": True})
    finally:
        agent.kill()
        agent.wait(timeout=10)
    assert run.rc != 0
    failed = [r for r in run.records if r["status"] == "failed"]
    assert [(r["host"], r["task"].rsplit(": ", 1)[-1]) for r in failed] == [
        ("node1", "Fail the host if what was to be removed is still there")]
    assert "the cleanup did not hold" in failed[0]["result"]["msg"]
    left = lb.bpftool_entries(lab, "node1", made["backends"])
    assert backend_ids(left, "v3") == list(range(1, made["live_backends"] + 1)) + [lb.ORPHAN_BASE]
    for other in ("node2", "node3"):  # the ramp stopped after node1
        assert lb.bpftool_count(lab, other, lb_maps[other]["backends"]) == lb_maps[other]["backend_entries"]
