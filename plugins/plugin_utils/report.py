# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report on the controller: every host's coverage and findings gathered into one
structure (filter triage_report, action report_write), its JSON for the HTML page (filter
triage_html_json), the AWX artifacts, and the report files written atomically."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.findings import SEVERITIES, finding, sort_findings, worst

REACHED = ("reached", "controller")
HOST_FINDINGS = {
    "unreachable": ("triage.host_unreachable", "%s could not be reached over SSH: none of its checks ran (%s)",
                    "Check the node is up and sshd answers (ssh %s); a node that is down is itself a cause."),
    "no usable Python": ("triage.no_python", "%s answers over SSH but has no usable Python: none of its checks ran (%s)",
                         "Install Python 3.9+ on %s or set ansible_python_interpreter to one that exists."),
    "failed": ("triage.host_failed", "%s failed during the triage: the checks listed as failed did not run (%s)",
               "Run the failed scenarios' playbooks alone with -v on %s to see why."),
}


def _get(facts, name):
    try:
        return facts.get(name) if hasattr(facts, "get") else None
    except Exception:  # pylint: disable=broad-except
        return None


def host_facts(hostvars, host):
    """One host's variables as stored. From Ansible's hostvars, read raw (``raw_get``): the records
    are data the triage stored, and templating them again would walk every string of every
    finding (seconds for a fleet); from a plain mapping (tests), as they are. {} for an unknown host."""
    try:
        raw_get = getattr(hostvars, "raw_get", None)
        facts = raw_get(host) if callable(raw_get) else hostvars[host]
    except Exception:  # pylint: disable=broad-except
        return {}
    return facts if isinstance(facts, Mapping) else {}


def _scenario_results(facts, scenario):
    """{scenario: result} from the facts one scenario role leaves (named, not scanned); {} when it left none."""
    found = _get(facts, scenario + "_findings")
    if not isinstance(found, list):
        return {}
    fleet = _get(facts, scenario + "_fleet_findings")
    details = _get(facts, scenario + "_details")
    return {scenario: {"status": "ran", "reason": "", "findings": list(found) + (list(fleet) if isinstance(fleet, list) else []),
                       "details": details if isinstance(details, dict) else {}}}


def _host_entry(host, facts, scenario=None):
    """(status, reason, {scenario: result}) of one host, with unfinished scenarios resolved."""
    state = _get(facts, "triage_host")
    results = _get(facts, "triage_results")
    results = dict(results) if isinstance(results, dict) else {}
    if not results and scenario:
        results = _scenario_results(facts, scenario)
        if not results:
            return "not checked", "the %s playbook recorded nothing here (not in its play, or it stopped before)" % scenario, {}
    if not isinstance(state, dict):
        if not results:
            return "not checked", "the triage did not target this host (it is in none of its groups)", {}
        state = {"status": "reached", "reason": ""}
    status, reason = str(state.get("status", "failed")), str(state.get("reason", "") or "")
    scenarios, unfinished = {}, []
    for name in sorted(results):
        result = results[name] if isinstance(results[name], dict) else {}
        s_status = str(result.get("status", "not finished"))
        s_reason = str(result.get("reason", "") or "")
        findings = [f for f in (result.get("findings") or []) if isinstance(f, dict)]
        if s_status not in ("ran", "skipped", "failed"):
            if status in REACHED:
                unfinished.append(name)
                s_status, s_reason = "failed", "did not finish: the host stopped answering or failed before this check recorded its outcome"
            else:
                s_status, s_reason = "not run", "host %s" % status
        scenarios[name] = {"status": s_status, "reason": s_reason, "findings": findings,
                           "details": result.get("details") if isinstance(result.get("details"), dict) else {}}
    if unfinished and status in REACHED and status != "controller":
        status, reason = "failed", "stopped during %s" % ", ".join(unfinished)
    return status, reason, scenarios


def _fleet_key(item):
    return (item.get("check"), str(item.get("subject")), str(item.get("summary")))


def _gaps(per_host):
    """What did not run on reached hosts, grouped: [{scenario, status, reason, hosts}] (compact for big fleets)."""
    groups = {}
    for host in sorted(per_host):
        if per_host[host]["status"] not in REACHED:
            continue
        for name, entry in sorted(per_host[host]["scenarios"].items()):
            if entry["status"] != "ran":
                groups.setdefault((name, entry["status"], entry["reason"]), []).append(host)
    return [{"scenario": name, "status": status, "reason": reason, "hosts": hosts}
            for (name, status, reason), hosts in sorted(groups.items())]


def triage_report(hostvars, hosts, scenario=None):
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_report needs the list of hosts to include (inventory host names)")
    if not hasattr(hostvars, "get"):
        raise AnsibleFilterError("triage_report needs hostvars (a mapping of host name to variables), got %s"
                                 % type(hostvars).__name__)
    if scenario is not None and (not isinstance(scenario, str) or not scenario.isidentifier()):
        raise AnsibleFilterError("triage_report: scenario must be a scenario name such as stale_arp, not %r" % (scenario,))
    flat, per_host, details, fleet_seen = [], {}, {}, set()
    for host in hosts:
        facts = host_facts(hostvars, host)
        status, reason, scenarios = _host_entry(host, facts, scenario)
        mine = []
        if status in HOST_FINDINGS:
            check, summary, remediation = HOST_FINDINGS[status]
            mine.append(dict(finding(check, "critical", "L3", host, summary % (host, reason or status), {"reason": reason},
                                     remediation % host), scenario="triage", scope="host"))
        summary_scenarios = {}
        for name, result in scenarios.items():
            kept = []
            for item in result["findings"]:
                item = dict(item, scenario=name)
                item.setdefault("scope", "host")
                if item["scope"] == "fleet":
                    key = _fleet_key(item)
                    if key in fleet_seen:
                        continue
                    fleet_seen.add(key)
                kept.append(item)
            mine.extend(kept)
            summary_scenarios[name] = {"status": result["status"], "reason": result["reason"], "findings": len(kept),
                                       "worst": worst(kept) if result["status"] in ("ran", "failed") else None}
            if result["details"]:
                details.setdefault(host, {})[name] = result["details"]
        for item in mine:
            item["host"] = host
        flat.extend(mine)
        ran = [s for s in summary_scenarios.values() if s["status"] == "ran"]
        verdict = worst(mine) if (ran or mine) else "not checked"
        per_host[host] = {"status": status, "reason": reason, "verdict": verdict,
                          "worst": verdict, "counts": dict(Counter(f["severity"] for f in mine)),
                          "scenarios": summary_scenarios}
    flat = sort_findings(flat)
    problems = [f for f in flat if f["severity"] != "ok"]
    return {
        "findings": flat,
        "counts": {
            "severity": dict((name, sum(1 for f in flat if f["severity"] == name)) for name in SEVERITIES),
            "layer": dict(Counter(f["layer"] for f in problems)),
            "check": dict(Counter(f["check"] for f in problems)),
        },
        "hosts": per_host,
        "coverage": {
            "hosts": dict(Counter(h["status"] for h in per_host.values())),
            "scenarios": dict(Counter(s["status"] for h in per_host.values() for s in h["scenarios"].values())),
            "gaps": _gaps(per_host),
        },
        "details": details,
        "worst": worst(flat),
    }


ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ESCAPE_TABLE = str.maketrans(ESCAPES)


def _plain(value):
    """Ansible's lazy containers and tagged strings as plain JSON types."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def triage_html_json(data):
    try:
        text = json.dumps(_plain(data), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise AnsibleFilterError("triage_html_json: the data cannot be written as JSON: %s" % exc)
    return text.translate(_ESCAPE_TABLE)


def report_json(data):
    """The report as the text of triage-report.json (plain JSON, keys sorted, indented)."""
    try:
        return json.dumps(_plain(data), sort_keys=True, indent=4, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise AnsibleFilterError("the report cannot be written as JSON: %s" % exc)


def artifacts(report, listed, limit, html=None):
    """The AWX / Automation Controller job artifacts (set_stats key k8snet_triage): worst, counts,
    coverage, per host its status, reason, verdict and counts, the first ``limit`` listed findings
    that are not ok, and where the HTML report is."""
    hosts = dict((name, {"status": info["status"], "reason": _truncate(info["reason"], 200), "verdict": info["verdict"],
                         "counts": info["counts"]}) for name, info in report["hosts"].items())
    findings = [item for item in listed if isinstance(item, dict) and item.get("severity") != "ok"][:max(0, limit)]
    return {"worst": report["worst"], "counts": report["counts"], "coverage": report["coverage"], "hosts": hosts,
            "findings": findings, "report": html}


def _truncate(text, length):
    text = str(text or "")
    return text if len(text) <= length else text[:length - 3] + "..."


def write_file(path, text, mode=0o644):
    """Write ``text`` to ``path`` atomically: a new file in the same directory, then renamed over
    ``path``. A symlink at ``path`` is replaced, never followed; anything else that is not a regular
    file (a directory, a fifo) is refused. Returns whether the content changed."""
    directory = os.path.dirname(path) or "."
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise AnsibleFilterError("cannot write %s: %s" % (path, exc.strerror))
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise AnsibleFilterError("cannot write %s: it exists and is not a regular file; remove it or give another "
                                 "report_output_dir" % path)
    data = text.encode("utf-8")
    if st is not None and stat.S_ISREG(st.st_mode):
        try:
            with open(path, "rb") as handle:
                if handle.read(len(data) + 1) == data:
                    return False
        except OSError:
            pass
    if not os.path.isdir(directory):
        raise AnsibleFilterError("cannot write %s: the directory %s does not exist; create it or give another "
                                 "report_output_dir" % (path, directory))
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path))
    except OSError as exc:
        raise AnsibleFilterError("cannot write in %s: %s; give a report_output_dir you can write to" % (directory, exc.strerror))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(temp, path)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise AnsibleFilterError("cannot write %s: %s" % (path, exc.strerror))
    return True
