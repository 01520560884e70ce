"""triage.yml end to end: faults in the lab, the run through ansible-runner (as AWX runs it),
its artifacts, the JSON report, and the HTML report rendered by a real headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.lab.faults import arp

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def triage_run(lab, tmp_path_factory):
    """One triage.yml run through ansible-runner with a stale ARP entry and a node that is down."""
    import ansible_runner
    vip = lab.vip(5)
    arp.bind_vip(lab, "node1", vip)
    arp.stale_neighbor(lab, "node3", vip, "02:de:ad:00:be:ef")
    private = tmp_path_factory.mktemp("runner")
    inventory = json.loads(Path(lab.inventory_path).read_text())
    # a node that is in the inventory but down: it must become a finding, not stop the run
    inventory["all"]["children"]["k8s_nodes"]["hosts"]["node99"] = {"ansible_host": str(lab.network[99])}
    (private / "inventory").mkdir()
    (private / "inventory" / "hosts.json").write_text(json.dumps(inventory))
    out = private / "report"
    out.mkdir()
    result = ansible_runner.run(
        private_data_dir=str(private), playbook=str(ROOT / "playbooks" / "triage.yml"), quiet=True,
        extravars={"stale_arp_vips": [vip], "report_output_dir": str(out), "triage_scenarios": ["cni", "stale_arp", "connectivity"]},
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_SSH_ARGS": "-o ConnectTimeout=3"},
    )
    yield {"runner": result, "out": out, "vip": vip}
    lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
    lab.ns_run("node3", ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)


def stats_event(result):
    events = [e for e in result.events if e.get("event") == "playbook_on_stats"]
    assert events, "ansible-runner wrote no playbook_on_stats event"
    return events[-1]["event_data"]


def test_run_ends_with_the_report_and_fails_on_critical(triage_run):
    result = triage_run["runner"]
    assert result.status == "failed" and result.rc != 0  # critical findings exist: report_fail_on_critical
    report = json.loads((triage_run["out"] / "triage-report.json").read_text())
    checks = {(f["host"], f["check"]) for f in report["findings"]}
    assert ("node3", "arp.stale_entry") in checks
    assert ("node99", "triage.host_unreachable") in checks
    assert report["hosts"]["node99"]["status"] == "unreachable" and report["hosts"]["node99"]["verdict"] == "critical"
    assert report["hosts"]["node3"]["scenarios"]["stale_arp"]["status"] == "ran"
    assert report["counts"]["severity"]["critical"] >= 2
    # the healthy client got its stale_arp verdict too: the unreachable node did not stop the run
    assert any(f["host"] == "node2" and f["scenario"] == "stale_arp" for f in report["findings"])


def test_awx_artifacts_are_the_summary(triage_run):
    data = stats_event(triage_run["runner"])
    artifact = data["artifact_data"]["k8snet_triage"]
    report = json.loads((triage_run["out"] / "triage-report.json").read_text())
    assert artifact["counts"] == report["counts"]
    assert artifact["worst"] == "critical"
    assert all(f["severity"] != "ok" for f in artifact["findings"])
    assert len(json.dumps(artifact)) < 100_000  # AWX keeps every event: the artifact stays small


def test_html_report_renders_in_chromium_without_external_resources(triage_run):
    html_path = triage_run["out"] / "triage-report.html"
    html = html_path.read_text()
    for marker in ("src=\"http", "href=\"http", "url(http", "@import"):
        assert marker not in html
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by scripts/bootstrap"
    profile = triage_run["out"] / "chromium-profile"
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--dump-dom",
                          html_path.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    # rows exist only if the embedded script ran: the table is built in the browser
    assert "<td>arp.stale_entry</td>" in dom and "<td>triage.host_unreachable</td>" in dom
    assert "node99" in dom
    assert '<td class="st-unreachable">unreachable</td>' in dom  # the coverage table, built in the browser
    # node99 is down (SSH times out, no prober reached it): its isolation is part of its one root-cause finding,
    # not one finding per prober, nor a second finding beside its SSH failure
    findings = dom.split('<table id="findings"', 1)[1].split("</table>", 1)[0]
    assert findings.count("<td>connectivity.node_isolated</td>") == 0
    assert "the fleet agrees the node is down or cut off: node99 answered none of the 3 nodes" in findings
    by_check = dom.split('<table id="bycheck"', 1)[1].split("</table>", 1)[0]
    assert by_check.count("<td>connectivity.node_isolated</td>") == 0
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / "triage-report.png"
    subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--window-size=1400,1600",
                    "--screenshot=%s" % shot, html_path.as_uri()], capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 20_000


def test_the_owners_are_read_once_delegated_in_or_out_of_the_play(lab, ansible, tmp_path):
    """The VIP owners' reads before the pass: one task for the fleet, delegated to each owner in the owners
    group's order, whether the owner is in the play or not (a per-host task would cost every host a worker
    on the controller), and an owner that is down is arp.owner_unreachable without stopping the run (its
    pass records it unreachable)."""
    vip = lab.vip(6)
    arp.bind_vip(lab, "node1", vip)
    arp.stale_neighbor(lab, "node3", vip, "02:de:ad:00:be:ef")
    inventory = json.loads(Path(lab.inventory_path).read_text())
    children = inventory["all"]["children"]
    common = inventory["all"]["vars"]["ansible_ssh_common_args"] + " -o ConnectTimeout=3"
    children["k8s_nodes"]["hosts"]["node99"] = {"ansible_host": str(lab.network[99]), "ansible_ssh_common_args": common}
    # outside1 is in no group of the play: node1 under another name, the only owner holding the VIP
    children["vip_owners"] = {"hosts": {"node2": {}, "node99": {}, "outside1": dict(children["k8s_nodes"]["hosts"]["node1"])}}
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inventory))
    out = tmp_path / "report"
    out.mkdir()
    try:
        run = ansible.playbook("k8snet.triage.triage", {
            "stale_arp_vips": [vip], "stale_arp_owners_group": "vip_owners", "triage_scenarios": ["stale_arp", "cni"],
            "report_output_dir": str(out), "report_fail_on_critical": False}, inventory=path)
        assert run.rc == 0, run
        reads = run.results(task="Learn which VIPs each owner node holds, and their MACs (once, delegated to each owner)")
        assert len(reads) == 1, reads  # one task result for the fleet, not one per host
        items = reads[0]["result"]["results"]
        assert [item["item"] for item in items] == ["node2", "node99", "outside1"], items
        node2 = items[0]
        assert node2["local"] == [], node2  # node2 was read, and holds nothing
        assert items[1].get("unreachable"), items[1]
        report = json.loads((out / "triage-report.json").read_text())
        checks = {(f["host"], f["check"], f["subject"]) for f in report["findings"]}
        # the true MAC came from the delegated read: node3's wrong entry is stale, not unowned
        assert any(c == "arp.stale_entry" and h == "node3" for h, c, _s in checks), report["findings"]
        assert any(c == "arp.owner_unreachable" and s == "node99" for _h, c, s in checks), report["findings"]
        assert not any(c in ("arp.vip_unowned", "arp.vip_owner_unknown", "arp.ip_conflict") for _h, c, _s in checks)
        assert report["hosts"]["node99"]["status"] == "unreachable", [
            (r["task"], r["status"]) for r in run.records if r["host"] == "node99"]
    finally:
        lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        lab.ns_run("node3", ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)


def test_a_host_left_out_by_limit_is_not_shown_with_the_record_a_fact_cache_kept(lab, ansible, tmp_path, monkeypatch):
    """A fact cache (AWX's fact storage; here fact_caching=jsonfile) keeps node_pass's record between runs. A run
    that --limit keeps from node2 must not show node2's record of the run before as checked now."""
    cache = tmp_path / "facts"
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN", "jsonfile")
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", str(cache))
    extra = {"triage_scenarios": ["sysctl"], "triage_api_scenarios": [], "report_fail_on_critical": False}
    reports = []
    for name, limit in (("first", None), ("second", "node1,localhost")):
        out = tmp_path / name
        run = ansible.playbook(ROOT / "playbooks" / "triage.yml", dict(extra, report_output_dir=str(out)), limit=limit)
        assert run.rc == 0, run
        reports.append(json.loads((out / "triage-report.json").read_text()))
    first, second = reports
    assert first["hosts"]["node2"]["status"] == "reached"
    # the cache really holds node2's record of the first run (read from the cache's own file)
    [path] = cache.glob("*node2")  # ansible-core 2.19 names it s1_node2 and wraps the facts in __payload__
    cached = json.loads(path.read_text())
    cached = json.loads(cached["__payload__"]) if "__payload__" in cached else cached
    assert cached["triage_host"]["status"] == "reached"
    assert second["hosts"]["node1"]["status"] == "reached"
    node2 = second["hosts"]["node2"]
    assert node2["status"] == "not checked" and "its record is from an earlier run" in node2["reason"], node2
    assert node2["scenarios"] == {}
