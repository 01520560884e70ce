"""A scheduled triage run twice on the lab, as AWX would run it every 15 minutes, with one report
directory: the second run says what is new, ongoing and resolved since the first, a silenced problem
fails neither run, a malformed silence is itself reported, and the OpenMetrics file for node_exporter's
textfile collector is read back by the Prometheus client library's parser."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests.lab.faults import arp

MAC = "02:de:ad:00:be:ef"


def findings(report, check):
    return dict((f["host"], f) for f in report["findings"] if f["check"] == check)


def metrics(path):
    out = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


@pytest.fixture(scope="module")
def two_runs(lab, ansible, tmp_path_factory):
    """Run 1: stale ARP entries for VIP a on node3 (not silenced) and VIP b on node2 (silenced).
    Run 2: node3's entry removed, node2's still there, and a silence without an expiry added."""
    base = tmp_path_factory.mktemp("over-time")
    out, prom = base / "report", base / "textfile"
    prom.mkdir()
    silences = base / "silences.yml"
    vip_a, vip_b = lab.vip(7), lab.vip(8)
    arp.bind_vip(lab, "node1", vip_a)
    arp.bind_vip(lab, "node1", vip_b)
    arp.stale_neighbor(lab, "node3", vip_a, MAC)
    arp.stale_neighbor(lab, "node2", vip_b, MAC)
    known = ("- check: arp.stale_entry\n  host: node[2]\n  subject: '%s dev *'\n  reason: router cache, CHG-7 \"quoted\"\n"
             "  created_by: oncall\n  expires: %s\n" % (vip_b, (datetime.now(timezone.utc) + timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")))
    silences.write_text(known)
    extra = {"stale_arp_vips": [vip_a, vip_b], "triage_scenarios": ["stale_arp"], "report_output_dir": str(out),
             "report_metrics_dir": str(prom), "report_silences": str(silences), "report_fail_on": "new_critical",
             # survey answers arrive as text
             "report_history": "5", "report_silence_max_days": "30", "report_metrics_labels": "cluster=lab"}
    try:
        first = ansible.playbook("k8snet.triage.triage", extra)
        report1 = json.loads((out / "triage-report.json").read_text())
        prom1 = metrics(prom / "k8snet_triage.prom")
        lab.ns_run("node3", ["ip", "neigh", "del", vip_a, "dev", "eth0"], check=False)
        silences.write_text(known + "- check: dns.*\n  reason: no expiry given\n  created_by: someone\n")
        second = ansible.playbook("k8snet.triage.triage", extra)
        report2 = json.loads((out / "triage-report.json").read_text())
    finally:
        for vip in (vip_a, vip_b):
            lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        lab.ns_run("node3", ["ip", "neigh", "del", vip_a, "dev", "eth0"], check=False)
        lab.ns_run("node2", ["ip", "neigh", "del", vip_b, "dev", "eth0"], check=False)
    return {"first": first, "second": second, "report1": report1, "report2": report2, "prom1": prom1,
            "out": out, "prom": prom, "vips": (vip_a, vip_b)}


def test_first_run_fails_on_the_new_critical_and_not_on_the_silenced_one(two_runs):
    assert two_runs["first"].rc != 0, two_runs["first"]
    assert "report_fail_on holds (new_critical)" in two_runs["first"].stdout
    stale = findings(two_runs["report1"], "arp.stale_entry")
    assert stale["node3"]["state"] == "new" and not stale["node3"].get("silenced")
    assert stale["node2"]["silenced"]["created_by"] == "oncall" and stale["node2"]["silenced"]["silence"] == 1
    assert two_runs["report1"]["since"]["previous"] is None
    assert two_runs["report1"]["counts"]["silenced"] == 1


def test_second_run_resolved_ongoing_silenced_and_the_malformed_silence(two_runs):
    second, report1, report2 = two_runs["second"], two_runs["report1"], two_runs["report2"]
    # only the silenced (ongoing) critical is left, and a warning: new_critical does not hold
    assert second.rc == 0, second
    assert report2["since"]["previous"] == report1["generated"]
    resolved = [(r["check"], r["host"]) for r in report2["since"]["resolved"]]
    assert ("arp.stale_entry", "node3") in resolved
    stale = findings(report2, "arp.stale_entry")
    assert set(stale) == {"node2"} and stale["node2"]["state"] == "ongoing"
    assert stale["node2"]["first_seen"] == report1["generated"] and stale["node2"]["silenced"]
    assert stale["node2"]["id"] == findings(report1, "arp.stale_entry")["node2"]["id"]
    invalid = findings(report2, "triage.silence_invalid")["localhost"]
    assert invalid["severity"] == "warning" and invalid["state"] == "new" and "silence #2 (check dns.*)" in invalid["summary"]
    assert "has no expires" in invalid["summary"]
    assert [s["state"] for s in report2["silences"]] == ["active", "invalid"]
    # the summary leads with what changed
    summary = second.result("Summary", "localhost")["msg"]
    assert summary[0].startswith("since the last run (%s): " % report1["generated"])
    assert any(line.startswith("RESOLVED arp.stale_entry  node3  %s dev eth0" % two_runs["vips"][0]) for line in summary)
    assert any(line.startswith("NEW WARNING triage.silence_invalid") for line in summary)
    # two history entries, private, each a compact copy
    entries = sorted(os.listdir(two_runs["out"] / "history"))
    assert len(entries) == 2 and all(stat.S_IMODE(os.stat(two_runs["out"] / "history" / e).st_mode) == 0o600 for e in entries)


def test_the_textfile_collector_file_parses_and_says_what_alerting_needs(two_runs):
    path = two_runs["prom"] / "k8snet_triage.prom"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(two_runs["prom"])) == ["k8snet_triage.prom"]  # no temporary file left
    first, second = two_runs["prom1"], metrics(path)
    lab = (("cluster", "lab"),)

    def findings_key(host, silenced):
        return ("k8snet_triage_findings", tuple(sorted(lab + (("check", "arp.stale_entry"), ("host", host),
                                                              ("severity", "critical"), ("silenced", silenced)))))
    assert first[findings_key("node3", "false")] == 1 and first[findings_key("node2", "true")] == 1
    assert findings_key("node3", "false") not in second and second[findings_key("node2", "true")] == 1
    active = ("k8snet_triage_findings_active", tuple(sorted(lab + (("severity", "critical"),))))
    assert first[active] == 1 and second[active] == 0
    resolved = ("k8snet_triage_findings_since_last_run", tuple(sorted(lab + (("state", "resolved"),))))
    assert second[resolved] >= 1
    reached = ("k8snet_triage_hosts", tuple(sorted(lab + (("status", "reached"),))))
    assert second[reached] == sum(1 for h in two_runs["report2"]["hosts"].values() if h["status"] == "reached") >= 2
    assert second[("k8snet_triage_scenarios", tuple(sorted(lab + (("status", "ran"),))))] >= 3
    assert 0 < second[("k8snet_triage_duration_seconds", lab)] < 900
    stamp = second[("k8snet_triage_last_run_timestamp_seconds", lab)]
    assert stamp > first[("k8snet_triage_last_run_timestamp_seconds", lab)]
    invalid = ("k8snet_triage_silences", tuple(sorted(lab + (("state", "invalid"),))))
    assert first[invalid] == 0 and second[invalid] == 1
