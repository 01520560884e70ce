"""The stale_arp job template as AWX runs it: survey answers as AWX passes them (a textarea is one
string, a multiple choice "true"/"false"), dry_run selecting check mode, and the set_stats artifacts.

Every change is verified with ``ip -j neigh`` in the node's namespace (lab.neighbors), never with
arp_check.
"""

from __future__ import annotations

import pytest

from tests.lab.faults import arp

WRONG = "02:de:ad:00:be:ef"
PLAYBOOK = "playbooks/stale_arp.yml"


@pytest.fixture(scope="module")
def vips(lab):
    """Two VIPs held by node1 (control_plane); node2 and node3 are the clients (admin_control_plane)."""
    held = [lab.vip(0), lab.vip(1)]
    for vip in held:
        arp.bind_vip(lab, "node1", vip)
    yield held
    for vip in held:
        lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        for node in ("node2", "node3"):
            lab.ns_run(node, ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)


def lladdr(lab, node, address):
    entries = lab.neighbors(node, address)
    return entries[0].get("lladdr") if entries else None


def artifacts(run):
    # whichever task published them (the report's report_write action): what AWX stores as artifacts
    stats = [r["result"]["ansible_stats"] for r in run.results() if "ansible_stats" in r["result"]]
    assert len(stats) == 1, run
    assert stats[0]["per_host"] is False
    return stats[0]["data"]["k8snet_triage"]


def test_survey_answers_dry_run_then_real_run(lab, ansible, vips):
    arp.stale_neighbor(lab, "node3", vips[0], WRONG)
    arp.stale_neighbor(lab, "node2", vips[1], WRONG)
    survey = {"stale_arp_vips": "%s\n%s\n" % (vips[0], vips[1]),  # an AWX textarea answer
              "stale_arp_flush": "true", "dry_run": "true"}        # AWX multiple choice answers

    dry = ansible.playbook(PLAYBOOK, survey, diff=True)
    assert dry.rc == 0, dry
    assert lladdr(lab, "node3", vips[0]) == WRONG and lladdr(lab, "node2", vips[1]) == WRONG
    checks = {r["host"]: r["result"] for r in dry.results(task="Flush the stale entries of this client")}
    assert set(checks) == {"node2", "node3"}
    assert checks["node3"]["changed"] and checks["node2"]["changed"]  # what would change, in check mode
    assert "-%s dev eth0 lladdr %s STALE" % (vips[0], WRONG) in dry.stdout
    assert {r["status"] for r in dry.results(task="Re-check after the flush")} == {"skipped"}
    published = artifacts(dry)
    assert published["worst"] == "critical" and published["report"] is None
    stale = {(f["host"], f["subject"]) for f in published["findings"] if f["check"] == "arp.stale_entry"}
    assert stale == {("node3", "%s dev eth0" % vips[0]), ("node2", "%s dev eth0" % vips[1])}
    assert set(published["counts"]["severity"]) == {"ok", "info", "warning", "critical"}

    # --check (AWX's Check job type) wins over dry_run=false: still nothing changes.
    checked = ansible.playbook(PLAYBOOK, dict(survey, dry_run="false"), check=True)
    assert checked.rc == 0, checked
    assert lladdr(lab, "node3", vips[0]) == WRONG and lladdr(lab, "node2", vips[1]) == WRONG

    real = ansible.playbook(PLAYBOOK, dict(survey, dry_run="false"))
    assert real.rc == 0, real
    for node, vip in (("node3", vips[0]), ("node2", vips[1])):
        assert lladdr(lab, node, vip) in (None, lab.node("node1").mac), (node, lab.neighbors(node, vip))
    assert {r["host"] for r in real.results(task="Re-check after the flush") if r["status"] == "ok"} == {"node2", "node3"}
    assert not [f for f in artifacts(real)["findings"] if f["check"] == "arp.stale_entry"]


def test_survey_flush_false_string_does_not_flush(lab, ansible, vips):
    """A multiple choice answers "false" as a string: Jinja would call it true; the role must not flush."""
    arp.stale_neighbor(lab, "node3", vips[0], WRONG)
    run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": vips[0], "stale_arp_flush": "false", "dry_run": "false"})
    assert run.rc == 0, run
    assert lladdr(lab, "node3", vips[0]) == WRONG
    assert not any(r["result"].get("changed") for r in run.results(action="arp_check"))
    lab.ns_run("node3", ["ip", "neigh", "del", vips[0], "dev", "eth0"], check=False)
