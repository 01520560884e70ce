"""The report as OpenMetrics text: read back by the Prometheus client library's own parsers (the
OpenMetrics one and the 0.0.4 text one the textfile collector and the Pushgateway follow), hostile
label values included."""

from __future__ import annotations

import time

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import history as report_history
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import metrics as report_metrics

from tests.trickle import Trickle

from .report_samples import build, item

HOSTILE = ['say "hi"', "back\\slash\\", "two\nlines", "} 1\nk8snet_triage_up 0", "# EOF", "end\\", "\\n",
           "esc\x1b[31m", "nul\x00", "bidi\u202e", "\u2028", "ünïcödé ☃", "a=\"b\",c=\"d"]


def samples(text, parser=parse_openmetrics):
    return [(s.name, s.labels, s.value) for family in parser(text) for s in family.samples]


def sample_report():
    found = [item("arp.stale_entry", "critical", "10.0.0.5"), item("dns.ok", "ok", "a")]
    for n, text in enumerate(HOSTILE):
        found.append(item("hostile.%d.%s" % (n, text), "warning", text))
    data = build({"node1": {"stale_arp": found}, "node2": "unreachable"})
    report_history.compare(data, None, "2026-01-01T00:00:00+00:00")
    data["findings"][0]["silenced"] = {"silence": 1}
    return report.recount(data)


@pytest.mark.parametrize("parser", [parse_openmetrics, parse_text], ids=["openmetrics", "text-0.0.4"])
def test_both_parsers_read_every_sample_and_hostile_values_round_trip(parser):
    data = sample_report()
    text = report_metrics.render(data, 1767225600.5, 12.25, {"cluster": 'prod "eu"\n'},
                                 {"collection_version": "0.1.0", "ansible_version": "2.19.0"})
    assert text.endswith("\n# EOF\n")
    got = samples(text, parser)
    findings = [(labels, value) for name, labels, value in got if name == "k8snet_triage_findings"]
    assert len(findings) == len(data["findings"])  # one series per (check, severity, host, silenced) here
    assert all(labels["cluster"] == 'prod "eu"\n' for _name, labels, _value in got)
    checks = dict((labels["check"], labels) for labels, _value in findings)
    for n, hostile in enumerate(HOSTILE):
        # backslash, quote and newline come back as they were; other controls as visible escapes
        expected = hostile.replace("\x1b", "\\x1b").replace("\x00", "\\x00").replace("\u2028", "\\u2028")
        labels = checks["hostile.%d.%s" % (n, expected)]
        assert labels["host"] == "node1" and labels["severity"] == "warning" and labels["silenced"] == "false"
    values = dict(((name, tuple(sorted((k, v) for k, v in labels.items() if k != "cluster"))), value)
                  for name, labels, value in got)
    assert values[("k8snet_triage_findings", (("check", "arp.stale_entry"), ("host", "node1"),
                                              ("severity", "critical"), ("silenced", "true")))] == 1
    assert values[("k8snet_triage_findings_active", (("severity", "critical"),))] == 1  # the node2 unreachable
    assert values[("k8snet_triage_findings_active", (("severity", "warning"),))] == len(HOSTILE)
    assert values[("k8snet_triage_hosts", (("status", "unreachable"),))] == 1
    assert values[("k8snet_triage_hosts", (("status", "reached"),))] == 1
    assert values[("k8snet_triage_hosts", (("status", "failed"),))] == 0  # present at 0, for alerting rules
    assert values[("k8snet_triage_scenarios", (("status", "ran"),))] == 1
    assert values[("k8snet_triage_findings_since_last_run", (("state", "new"),))] == len(HOSTILE) + 2
    assert values[("k8snet_triage_duration_seconds", ())] == 12.25
    assert values[("k8snet_triage_last_run_timestamp_seconds", ())] == 1767225600.5
    assert values[("k8snet_triage_build_info", (("ansible_version", "2.19.0"), ("collection_version", "0.1.0")))] == 1


def test_the_exposition_is_one_sample_per_line_whatever_the_findings_hold():
    text = report_metrics.render(sample_report(), 1.0)
    for line in text.splitlines():
        assert line.startswith("# ") or line.startswith("k8snet_triage_"), line
    assert text.splitlines().count("# EOF") == 1 and text.splitlines()[-1] == "# EOF"
    assert "\x1b" not in text and "\x00" not in text and "\u2028" not in text


def test_without_history_silences_or_duration_those_families_are_left_out():
    data = build({"node1": {"dns": [item("dns.timeout", "critical", "x")]}})
    names = set(f.name for f in parse_openmetrics(report_metrics.render(report.recount(data), 5.0)))
    assert "k8snet_triage_duration_seconds" not in names and "k8snet_triage_silences" not in names
    assert "k8snet_triage_findings_since_last_run" not in names
    assert {"k8snet_triage_findings", "k8snet_triage_hosts", "k8snet_triage_last_run_timestamp_seconds"} <= names


def test_silences_are_counted_by_state():
    data = report.recount(build({"node1": {"dns": []}}))
    data["silences"] = [{"state": "active"}, {"state": "expired"}, {"state": "invalid"}, {"state": "invalid"}]
    got = dict((s.labels["state"], s.value) for f in parse_openmetrics(report_metrics.render(data, 1.0))
               if f.name == "k8snet_triage_silences" for s in f.samples)
    assert got == {"active": 1, "expired": 1, "invalid": 2}


@pytest.mark.parametrize("labels,message", [
    ({"1abc": "x"}, "is not a label name"), ({"__name__": "x"}, "is not a label name"),
    ({"host": "x"}, "a label the metrics set themselves"), ({"cluster": ["a"]}, "must be text"), ("cluster=prod", "mapping"),
])
def test_constant_labels_are_validated(labels, message):
    with pytest.raises(ValueError, match=message):
        report_metrics.validate_labels(labels)


@pytest.mark.parametrize("name,ok", [("k8snet_triage.prom", True), ("prod-cluster.prom", True), ("x.txt", False),
                                     ("../x.prom", False), ("a/b.prom", False), (".prom", False)])
def test_the_file_name_must_be_a_prom_file_in_the_directory(name, ok):
    if ok:
        assert report_metrics.validate_file_name(name) == name
    else:
        with pytest.raises(ValueError, match="must be a file name ending in .prom"):
            report_metrics.validate_file_name(name)


@pytest.mark.parametrize("base, job, labels, url", [
    ("http://198.18.0.9:9091", "k8snet_triage", {}, "http://198.18.0.9:9091/metrics/job/k8snet_triage"),
    ("https://pgw.example/prefix/", "triage", {"cluster": "prod", "az": "b"},
     "https://pgw.example/prefix/metrics/job/triage/az/b/cluster/prod"),
    # Pushgateway's base64 form for a value with a / or none (its README: "@base64" suffix, URL-safe base64)
    ("http://[2001:db8::1]:9091", "a/b", {"cluster": ""},
     "http://[2001:db8::1]:9091/metrics/job@base64/YS9i/cluster@base64/="),
])
def test_the_push_url_and_its_grouping_key(base, job, labels, url):
    assert report_metrics.push_url(base, job, labels) == url


@pytest.mark.parametrize("base, job, message", [
    ("198.18.0.9:9091", "j", "is not http(s)://HOST[:PORT][/PATH]"),
    ("http://u:p@198.18.0.9:9091", "j", "no user or password"),
    ("http://198.18.0.9:9091/?x=1", "j", "is not http(s)://"),
    ("http://198.18.0.9:0", "j", "port 0 is not 1 to 65535"),
    ("http://198.18.0.9:9091", "", "report_metrics_push_job must be a name"),
    ("http://198.18.0.9:9091", "a\nb", "report_metrics_push_job must be a name"),
])
def test_a_bad_push_target_is_refused(base, job, message):
    with pytest.raises(ValueError) as caught:
        report_metrics.push_url(base, job)
    assert message in str(caught.value)


# ------------------------------------------------------------------ the push's one deadline
@pytest.fixture
def trickle():
    servers = []

    def make(mode, interval=0.3):
        servers.append(Trickle(mode, interval).start())
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_trickling_pushgateway_ends_the_push_at_its_one_deadline(trickle, mode):
    """Each byte comes within the socket timeout (0.3 s apart): only a total deadline ends the push."""
    import ansible.module_utils.urls  # noqa: F401  (imported by push: its import time is not the network's)
    said = "did not answer within 1.5 s (one deadline from the connect to the last byte)"
    server = trickle(mode)
    started = time.monotonic()
    with pytest.raises(ValueError) as info:
        report_metrics.push(server.url + "/metrics/job/k8snet_triage", "# EOF\n", timeout=1.5)
    took = time.monotonic() - started
    assert 1.4 <= took <= 1.5 * 1.1 + 0.2, took
    assert said in str(info.value) and server.url in str(info.value), info.value
    time.sleep(0.3)  # the server sees the connection closed
    [request] = server.requests
    assert request["method"] == "PUT" and request["bytes"] == len("# EOF\n")
    assert 1.0 <= request["held"] <= 1.5 * 1.1 + 0.2, request


def test_a_pushgateway_that_answers_at_once_is_pushed(trickle):
    server = trickle("ok")
    assert report_metrics.push(server.url + "/metrics/job/k8snet_triage", "# EOF\n", timeout=1.5) == 200
    assert [r["method"] for r in server.requests] == ["PUT"]
