# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report as OpenMetrics text, for node_exporter's textfile collector or a Pushgateway.

Only gauges, without timestamps, ``# EOF`` last: the same text is valid OpenMetrics 1.0 and valid
Prometheus text format 0.0.4 (which reads ``# EOF`` as a comment), the two formats the textfile
collector and the Pushgateway read.  Label values are escaped as the spec says (backslash, double
quote, newline); other control characters are written as visible escapes (``\\x1b`` as the four
characters), so no text from a finding can end a line, a label or the exposition."""

from __future__ import annotations

import math
import re
from collections import Counter

from ansible_collections.k8snet.triage.plugins.module_utils.kube import transport
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import SEVERITIES

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
RESERVED = ("check", "severity", "host", "silenced", "status", "state", "le", "quantile",
            "collection_version", "ansible_version")
FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.prom$")
HOST_STATUSES = ("reached", "controller", "unreachable", "no usable Python", "failed", "not checked")
SCENARIO_STATUSES = ("ran", "skipped", "failed", "not run")
VALUE_LIMIT = 256
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def label_value(value):
    """A label value as written between the quotes: \\ as \\\\, \" as \\\", newline as \\n; other
    control characters (and lone surrogates) as visible escapes; cut to 256 characters."""
    text = "" if value is None else str(value)
    if len(text) > VALUE_LIMIT:
        text = text[:VALUE_LIMIT - 3] + "..."
    text = text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")
    return _CONTROL.sub(lambda m: "\\\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100
                        else "\\\\u%04x" % ord(m.group()), text)


def validate_labels(labels):
    """The constant labels given (report_metrics_labels): a mapping of label names to text.  Returns
    them as {name: str}; ValueError names what is wrong."""
    if labels in (None, ""):
        return {}
    if not isinstance(labels, dict):
        raise ValueError("report_metrics_labels must be a mapping of label names to values, e.g. {cluster: prod}, not %r"
                         % (labels,))
    out = {}
    for name, value in labels.items():
        name = str(name)
        if not LABEL_NAME.match(name) or name.startswith("__"):
            raise ValueError("report_metrics_labels: %r is not a label name (letters, digits and _, not first a digit, "
                             "not starting with __)" % name)
        if name in RESERVED:
            raise ValueError("report_metrics_labels: %s is a label the metrics set themselves (%s); choose another name"
                             % (name, ", ".join(RESERVED)))
        if isinstance(value, (dict, list)) or value is None:
            raise ValueError("report_metrics_labels: the value of %s must be text, not %r" % (name, value))
        out[name] = str(value)
    return out


def validate_file_name(name):
    if not isinstance(name, str) or not FILE_NAME.match(name):
        raise ValueError("report_metrics_file must be a file name ending in .prom (letters, digits, _ . -; no /), "
                         "as the textfile collector reads only *.prom, not %r" % (name,))
    return name


def _number(value):
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("a metric value must be finite")
    return repr(round(value, 6))


class _Out(object):
    def __init__(self, constant):
        self.lines = []
        self.constant = constant

    def family(self, name, help_text):
        self.lines.append("# HELP %s %s" % (name, help_text))
        self.lines.append("# TYPE %s gauge" % name)

    def sample(self, name, labels, value):
        pairs = sorted(dict(self.constant, **labels).items())
        text = ",".join('%s="%s"' % (k, label_value(v)) for k, v in pairs)
        self.lines.append("%s%s %s" % (name, "{%s}" % text if text else "", _number(value)))


def _by_label(out, name, help_text, label, values, counts):
    """One family: a sample per value of ``label`` in ``values`` order, its count in ``counts`` (0 when absent)."""
    out.family(name, help_text)
    for value in values:
        out.sample(name, {label: value}, counts.get(value, 0))


def _findings_families(out, data):
    """The findings by check, severity, host and whether silenced; then those no silence covers, by severity."""
    findings = Counter()
    for item in data.get("findings") or []:
        findings[(str(item.get("check")), str(item.get("severity")), str(item.get("host") or ""),
                  "true" if item.get("silenced") else "false")] += 1
    out.family("k8snet_triage_findings", "Findings of the last triage run by check, severity, host and whether silenced.")
    for (check, severity, host, silenced), n in sorted(findings.items()):
        out.sample("k8snet_triage_findings", {"check": check, "severity": severity, "host": host, "silenced": silenced}, n)
    active = Counter(str(item.get("severity")) for item in data.get("findings") or [] if not item.get("silenced"))
    _by_label(out, "k8snet_triage_findings_active",
              "Findings of the last triage run that no silence covers, by severity.", "severity", SEVERITIES, active)


def _coverage_families(out, data):
    """The hosts by status and the scenario runs (host x scenario) by status, every known status listed."""
    coverage = data.get("coverage") or {}
    hosts = Counter(dict((str(k), v) for k, v in (coverage.get("hosts") or {}).items()))
    _by_label(out, "k8snet_triage_hosts",
              "Hosts of the last triage run by status (reached, unreachable, failed, not checked...).",
              "status", sorted(set(HOST_STATUSES) | set(hosts)), hosts)
    scenarios = Counter(dict((str(k), v) for k, v in (coverage.get("scenarios") or {}).items()))
    _by_label(out, "k8snet_triage_scenarios", "Scenario runs (host x scenario) of the last triage run by status.",
              "status", sorted(set(SCENARIO_STATUSES) | set(scenarios)), scenarios)


def _run_families(out, finished, duration, versions):
    """The run's duration (when known), its end and its versions (when given)."""
    if duration is not None:
        out.family("k8snet_triage_duration_seconds", "How long the last triage run took, from its start to its report.")
        out.sample("k8snet_triage_duration_seconds", {}, duration)
    out.family("k8snet_triage_last_run_timestamp_seconds", "When the last triage run wrote its report (Unix time).")
    out.sample("k8snet_triage_last_run_timestamp_seconds", {}, finished)
    if versions:
        out.family("k8snet_triage_build_info", "The collection and ansible-core versions of the last triage run (always 1).")
        out.sample("k8snet_triage_build_info", dict((k, str(v)) for k, v in versions.items()), 1)


def render(data, finished, duration=None, labels=None, versions=None):
    """The OpenMetrics text of report ``data`` (annotated by the history and the silences when they ran).
    ``finished``: the run's end as seconds since the epoch; ``duration``: seconds, or None (left out);
    ``labels``: constant labels on every sample; ``versions``: {collection_version, ansible_version}."""
    out = _Out(validate_labels(labels))
    _findings_families(out, data)
    counts = (data.get("counts") or {}).get("state")
    if isinstance(counts, dict):
        _by_label(out, "k8snet_triage_findings_since_last_run",
                  "Problems compared with the previous run: new, ongoing, resolved, unverified (not checked again).",
                  "state", ("new", "ongoing", "resolved", "unverified"), counts)
    _coverage_families(out, data)
    silences = data.get("silences")
    if isinstance(silences, list):
        states = Counter(str(entry.get("state")) for entry in silences if isinstance(entry, dict))
        _by_label(out, "k8snet_triage_silences", "Entries of the silences file by state (active, expired, invalid).",
                  "state", ("active", "expired", "invalid"), states)
    _run_families(out, finished, duration, versions)
    return "\n".join(out.lines + ["# EOF"]) + "\n"


# ------------------------------------------------------------------ the Pushgateway
PUSH_TIMEOUT = 10.0  # seconds for the whole push: connect, request, answer
PUSH_ANSWER_BYTES = 64 * 1024
_PUSH_BASE = re.compile(r"^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$")


def _grouping_value(value):
    """A grouping-key value in the URL: as it is when it is plain, else Pushgateway's base64 form (``@base64``)."""
    import base64

    if value and re.match(r"^[A-Za-z0-9._~-]+$", value):
        return "", value
    return "@base64", base64.urlsafe_b64encode(value.encode("utf-8")).decode("ascii") or "="


def push_url(base, job, labels=None):
    """``<base>/metrics/job/<job>[/<label>/<value>...]``: the Pushgateway's grouping key is the job and the constant
    labels (so that two clusters pushing do not replace each other's metrics).  ValueError names what is wrong with
    ``base`` (http(s)://host[:port][/prefix], no credentials, query or fragment) or ``job``."""
    if not isinstance(base, str) or not _PUSH_BASE.match(base.strip()):
        raise ValueError("report_metrics_push_url %r is not http(s)://HOST[:PORT][/PATH] (no user or password in it, "
                         "no query), e.g. http://pushgateway.monitoring:9091" % (base,))
    port = _PUSH_BASE.match(base.strip()).group(3)
    if port and not 0 < int(port[1:]) < 65536:
        raise ValueError("report_metrics_push_url %r: port %s is not 1 to 65535" % (base, port[1:]))
    if not isinstance(job, str) or not job.strip() or len(job) > VALUE_LIMIT or _CONTROL.search(job) or "\n" in job:
        raise ValueError("report_metrics_push_job must be a name (at most %d characters, no control characters), not %r"
                         % (VALUE_LIMIT, job))
    parts = [base.strip().rstrip("/"), "metrics"]
    for name, value in [("job", job)] + sorted(validate_labels(labels).items()):
        suffix, encoded = _grouping_value(value)
        parts += [name + suffix, encoded]
    return "/".join(parts)


def push(url, text, timeout=PUSH_TIMEOUT, validate_certs=True, opener=None):
    """PUT the metrics to the Pushgateway (replacing the group's previous push); returns the HTTP status.
    ValueError says why the push failed (its answer, the connection's error, or the deadline).

    ``timeout`` is ONE total deadline, from the connect to the last byte of the answer (kube_transport's: the
    socket timeouts never beyond what is left, the answer read in chunks against the clock, and SIGALRM for a
    status line or headers that trickle), not a timeout per socket operation that a trickling server renews."""
    from ansible.module_utils.urls import open_url
    from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError

    opener = opener or open_url
    deadline = transport.Deadline(timeout)
    try:
        with transport.alarm(deadline):
            return _push_within(opener, url, text, deadline, validate_certs, HTTPError)
    except transport.Expired:
        raise ValueError("the Pushgateway at %s did not answer within %g s (one deadline from the connect to the last "
                         "byte): it, or a proxy in between, hangs or trickles" % (url, timeout))
    except transport.TooLarge:
        raise ValueError("the Pushgateway at %s answered more than %d bytes: refused (not a Pushgateway?)"
                         % (url, PUSH_ANSWER_BYTES))
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if "timed out" in str(reason):
            raise ValueError("the Pushgateway at %s did not answer within %g s (one deadline from the connect to the "
                             "last byte): it, or a proxy in between, hangs or trickles" % (url, timeout))
        raise ValueError("the metrics could not be pushed to %s: %s" % (url, reason))


def _push_within(opener, url, text, deadline, validate_certs, http_error):
    """The push's request and its answer (status, body read whole) within ``deadline``; its status."""
    try:
        response = opener(url, data=text.encode("utf-8"), method="PUT", timeout=max(deadline.left(), 0.05),
                          validate_certs=validate_certs, follow_redirects="none",
                          headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})
    except http_error as exc:
        try:
            body = transport.read_body(exc, deadline, PUSH_ANSWER_BYTES) if hasattr(exc, "read") else b""
        except transport.TooLarge:
            body = b""
        body = body[:2000].decode("utf-8", "replace").strip()
        raise ValueError("the Pushgateway at %s answered HTTP %s%s" % (url, exc.code, ": " + body if body else ""))
    try:
        status = response.getcode()
        transport.read_body(response, deadline, PUSH_ANSWER_BYTES)
    finally:
        response.close()
    if not 200 <= status < 300:
        raise ValueError("the Pushgateway at %s answered HTTP %s" % (url, status))
    return status
