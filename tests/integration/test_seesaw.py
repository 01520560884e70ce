"""The Seesaw pair on the lab: node1 acts as Seesaw's master (VRRP v3 advertisements, gratuitous ARP replies for
the VIP from the VRRP virtual MAC, as Seesaw's ha and engine send them: tests/lab/faults/seesaw.py), node2 is its
backup.  The seesaw playbook captures on both for real (tcpdump) and judges the pair.  Independent reader: the
emitter's own count of what it sent."""

from __future__ import annotations

import json

import pytest

from tests.lab.faults import seesaw


def inventory(lab, tmp_path, hosts=("node1", "node2")):
    data = json.loads(open(lab.inventory_path).read())
    data["all"]["children"]["seesaw_nodes"] = {"hosts": dict((h, {}) for h in hosts)}
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    return path


def run(ansible, lab, tmp_path, **extra):
    extra = dict({"seesaw_window": 3.5, "seesaw_garp_interval": 1.0}, **extra)
    result = ansible.playbook("k8snet.triage.seesaw", extra_vars=extra, inventory=inventory(lab, tmp_path))
    assert result.rc == 0, result
    facts = dict((r["host"], r["result"]["ansible_facts"]) for r in result.results(task="Keep each node's findings, "
                                                                                   "and the pair's once for the fleet"))
    return facts


@pytest.fixture()
def master(lab):
    yield seesaw.seesaw_master(lab, "node1", vips=[lab.vip(0)], advert=0.5, garp=1.0)
    seesaw.seesaw_stop(lab, "node1")
    seesaw.seesaw_stop(lab, "node2")


def test_the_master_its_backup_and_its_vips(lab, ansible, tmp_path, master):
    facts = run(ansible, lab, tmp_path)
    sent = seesaw.sent(lab, "node1")
    assert sent["vrrp"] >= 6 and sent["garp"] >= 3, sent
    [pair] = facts["node1"]["seesaw_fleet_findings"]
    assert (pair["check"], pair["severity"], pair["subject"]) == ("seesaw.pair", "ok", "seesaw VRID 60"), pair
    assert pair["summary"].startswith("node1 is the Seesaw master (VRID 60, priority 255, advertising every 0.5s); "
                                      "node2 hears it; it announces %s by gratuitous ARP every " % lab.vip(0))
    assert pair["summary"].endswith("from the VRRP virtual MAC 00:00:5e:00:01:3c"), pair["summary"]
    assert pair["evidence"]["vips"] == [lab.vip(0)] and pair["evidence"]["master"] == "node1"
    assert 0.8 <= pair["evidence"]["garp"][0]["mean_gap"] <= 1.3
    assert facts["node2"]["seesaw_fleet_findings"] == facts["node1"]["seesaw_fleet_findings"]
    assert facts["node1"]["seesaw_findings"] == [] and facts["node2"]["seesaw_findings"] == []


def test_no_master_and_split_brain(lab, ansible, tmp_path):
    try:
        facts = run(ansible, lab, tmp_path)
        [none] = facts["node1"]["seesaw_fleet_findings"]
        assert (none["check"], none["severity"]) == ("seesaw.no_master", "critical")
        seesaw.seesaw_master(lab, "node1", advert=0.5, garp=1.0)
        seesaw.seesaw_master(lab, "node2", vips=[lab.vip(0)], priority=100, advert=0.5, garp=1.0)
        facts = run(ansible, lab, tmp_path)
        [split] = facts["node1"]["seesaw_fleet_findings"]
        assert (split["check"], split["severity"]) == ("seesaw.split_brain", "critical")
        assert split["summary"].startswith("node1 and node2 all send VRRP advertisements for VRID 60")
        assert seesaw.sent(lab, "node2")["vrrp"] >= 6
    finally:
        seesaw.seesaw_stop(lab, "node1")
        seesaw.seesaw_stop(lab, "node2")


def test_a_master_that_announces_nothing(lab, ansible, tmp_path):
    seesaw.seesaw_master(lab, "node1", advert=0.5, garp=0)
    try:
        facts = run(ansible, lab, tmp_path)
    finally:
        seesaw.seesaw_stop(lab, "node1")
    [missing] = facts["node1"]["seesaw_findings"]
    assert (missing["check"], missing["severity"], missing["subject"]) == ("seesaw.garp_missing", "warning", "node1")
    assert facts["node1"]["seesaw_fleet_findings"] == []
