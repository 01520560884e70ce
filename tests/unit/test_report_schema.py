"""The published schema of triage-report.json (docs/triage-report.schema.json): a valid JSON Schema, met by a
report the report code builds from every host status and scenario status, and refusing what breaks the
contract. Every report the integration tests write is checked against it as well (tests/integration/conftest.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import files as report_files
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.history import compare

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "triage-report.schema.json").read_text())


def _finding(check, severity, **extra):
    return dict({"check": check, "severity": severity, "layer": "L3", "subject": "node1", "summary": check,
                 "evidence": {}, "remediation": ""}, **extra)


def _report():
    hostvars = {
        "node1": {"triage_host": {"status": "reached", "reason": ""},
                  "triage_results": {"pod_network": {"status": "ran", "reason": "", "details": {},
                                                     "findings": [_finding("route.missing", "critical")]},
                                     "calico": {"status": "skipped", "reason": "not a Calico node", "findings": [],
                                                "details": {}}}},
        "node2": {"triage_host": {"status": "unreachable", "reason": "Connection refused"},
                  "triage_results": {"pod_network": {"status": "not run", "reason": "host unreachable", "findings": [],
                                                     "details": {}}}},
        "localhost": {"triage_host": {"status": "controller", "reason": ""},
                      "triage_results": {"connectivity": {"status": "ran", "reason": "", "details": {}, "findings": [
                          _finding("connectivity.node_isolated", "critical", scope="fleet", hosts=["node1", "node2"])]}}},
    }
    data = report.triage_report(hostvars, ["localhost", "node1", "node2", "node3"], None, ["pod_network", "calico"])
    compare(data, None, "2026-12-04T00:00:00+00:00", None, None)
    # a silenced finding as report_silences marks it
    data["findings"][0]["silenced"] = {"silence": 1, "reason": "CHG-7", "created_by": "oncall",
                                       "expires": "2026-12-14T00:00:00Z"}
    report.recount(data)
    data.update(schema_version=report.SCHEMA_VERSION, generated="2026-12-04T00:00:00+00:00", run={
        "inventory": ["inventory.yml"], "limit": None, "scenarios": ["pod_network", "calico"], "check_mode": False,
        "collection_version": "0.3.0", "ansible_version": "2.19.0", "awx_job_id": None, "awx_job_template": None,
        "awx_user": None, "credentials": None, "started": None, "duration_seconds": None})
    return json.loads(report_files.report_json(data))


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"]["const"] == report.SCHEMA_VERSION


def test_a_report_of_every_status_meets_the_schema():
    data = _report()
    assert {h["status"] for h in data["hosts"].values()} >= {"reached", "unreachable", "controller", "not checked"}
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("path, value", [
    (("findings", 0, "severity"), "fatal"),
    (("findings", 0, "scope"), "cluster"),
    (("findings", 0, "check"), "No Prefix"),
    (("hosts", "node1", "scenarios", "calico", "status"), "maybe"),
    (("schema_version",), 2),
    (("findings", 0, "silenced"), True),
])
def test_the_schema_refuses_a_broken_contract(path, value):
    data = copy.deepcopy(_report())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
