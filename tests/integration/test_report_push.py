"""The report's metrics pushed to a real Prometheus Pushgateway (Debian's prometheus-pushgateway, bound to the
lab's controller address): what the Pushgateway then exposes is read back over HTTP and parsed with the
Prometheus client library's parser, the independent reader.  A push that fails is said and fails the run after
the reports are written."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.lab.faults import arp
from tests.trickle import Trickle


def free_port(address):
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def pushgateway(lab, tmp_path_factory):
    binary = shutil.which("prometheus-pushgateway")
    assert binary, "scripts/bootstrap installs Debian's prometheus-pushgateway"
    port = free_port(lab.controller_ip)
    address = "%s:%d" % (lab.controller_ip, port)
    log = open(tmp_path_factory.mktemp("pushgateway") / "log", "wb")
    proc = subprocess.Popen([binary, "--web.listen-address=%s" % address], stdout=log, stderr=log)
    deadline = time.time() + 20
    while True:
        try:
            urllib.request.urlopen("http://%s/-/ready" % address, timeout=1).read()
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("the Pushgateway did not start")
            time.sleep(0.1)
    yield "http://%s" % address
    proc.terminate()
    proc.wait(10)
    log.close()


def exposed(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("k8snet_triage"):
                out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_the_runs_metrics_reach_the_pushgateway_grouped_by_cluster(lab, ansible, tmp_path, pushgateway):
    vip = lab.vip(9)
    arp.bind_vip(lab, "node1", vip)
    arp.stale_neighbor(lab, "node3", vip, "02:de:ad:00:be:ef")
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "stale_arp_vips": [vip], "triage_scenarios": ["stale_arp"], "report_output_dir": str(tmp_path / "out"),
        "report_metrics_push_url": pushgateway, "report_metrics_labels": {"cluster": "lab a/b"},
        "report_fail_on_critical": False})
    assert run.rc == 0, run
    metrics = exposed(pushgateway)
    group = (("cluster", "lab a/b"), ("instance", ""), ("job", "k8snet_triage"))
    stale = [(labels, value) for (name, labels), value in metrics.items()
             if name == "k8snet_triage_findings" and ("check", "arp.stale_entry") in labels]
    assert stale and all(set(group) <= set(labels) for labels, _value in stale), stale
    assert ("host", "node3") in stale[0][0] and stale[0][1] == 1
    assert metrics[("k8snet_triage_findings_active", tuple(sorted(group + (("severity", "critical"),))))] >= 1
    report = json.loads((tmp_path / "out" / "triage-report.json").read_text())
    assert report["counts"]["severity"]["critical"] >= 1
    write = run.results(action="report_write")[-1]  # the first one checked the options (validate_only)
    assert write["result"]["push_error"] is None
    assert write["result"]["files"]["pushed"] == pushgateway + "/metrics/job/k8snet_triage/cluster@base64/bGFiIGEvYg=="


def test_a_failed_push_is_said_and_fails_after_the_reports(lab, ansible, tmp_path):
    closed = "http://%s:%d" % (lab.controller_ip, free_port(lab.controller_ip))
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_scenarios": ["stale_arp"], "stale_arp_vips": [lab.vip(9)], "report_output_dir": str(tmp_path / "out"),
        "report_metrics_push_url": closed, "report_fail_on_critical": False})
    assert run.rc != 0, run
    write = run.results(action="report_write")[-1]  # the first one checked the options (validate_only)
    assert write["result"]["write_error"] is None and (tmp_path / "out" / "triage-report.html").exists()
    assert "the metrics could not be pushed to %s/metrics/job/k8snet_triage" % closed in write["result"]["push_error"]
    [failed] = run.results(task="Fail when the metrics could not be pushed to the Pushgateway (the reports are written)")
    assert failed["status"] == "failed"


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_trickling_pushgateway_costs_the_run_one_push_deadline(lab, ansible, tmp_path, mode):
    """A Pushgateway (here a loopback server) that trickles its answer, one byte every second: each byte within the
    socket timeout, so only the push's total deadline (10 s, connect to last byte) ends it; the reports are
    written, the push is said to have failed, and the run fails after them."""
    server = Trickle(mode, interval=1.0).start()
    try:
        run = ansible.playbook("k8snet.triage.triage", extra_vars={
            "triage_scenarios": ["stale_arp"], "stale_arp_vips": [lab.vip(9)], "report_output_dir": str(tmp_path / "out"),
            "report_metrics_push_url": server.url, "report_fail_on_critical": False})
        time.sleep(0.5)  # the server sees the connection closed
        requests = list(server.requests)
    finally:
        server.stop()
    assert run.rc != 0, run
    # the server's clock: one push, held for the deadline (the request is read after the connect: a little less)
    [request] = requests
    assert request["method"] == "PUT" and request["path"] == "/metrics/job/k8snet_triage", request
    assert 9.0 <= request["held"] <= 10.0 * 1.1, request
    # the run's clock: the report_write task that pushed took the deadline and its own work, not minutes
    records = run.records
    [at] = [i for i, r in enumerate(records) if r["action"].endswith("report_write") and r["result"].get("push_error")]
    took = records[at]["time"] - records[at - 1]["time"]
    print("trickling Pushgateway (%s): report_write took %.1f s, the push held %.1f s" % (mode, took, request["held"]))
    assert took <= 10.0 * 1.1 + 5.0, took
    write = records[at]["result"]
    assert write["write_error"] is None and (tmp_path / "out" / "triage-report.json").exists()
    assert "did not answer within 10 s (one deadline from the connect to the last byte)" in write["push_error"]
    [failed] = run.results(task="Fail when the metrics could not be pushed to the Pushgateway (the reports are written)")
    assert failed["status"] == "failed"


@pytest.mark.parametrize("url, message", [
    ("ftp://198.18.0.9:9091", "is not http(s)://HOST[:PORT][/PATH]"),
    ("http://user:secret@198.18.0.9:9091", "is not http(s)://HOST[:PORT][/PATH]"),
    ("http://198.18.0.9:99999", "port 99999 is not 1 to 65535"),
])
def test_a_bad_push_url_is_refused_before_any_host_is_touched(lab, ansible, tmp_path, url, message):
    run = ansible.playbook("k8snet.triage.triage", extra_vars={
        "triage_scenarios": ["stale_arp"], "stale_arp_vips": [lab.vip(9)], "report_output_dir": str(tmp_path / "out"),
        "report_metrics_push_url": url})
    assert run.rc != 0, run
    assert message in run.stdout, run
    assert not [r for r in run.records if r["host"].startswith("node")], "a node was touched"
