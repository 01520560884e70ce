"""The vendored CIS schemas are F5's files, and the validator agrees with F5's own schema tests.

Fixtures under fixtures/f5/ are F5Networks/k8s-bigip-ctlr files byte for byte (SOURCES.json names each one's
path and commit; scripts/vendor_f5_schemas.py fetched them): schemas/bigip-virtual-server_v0.1.0..8.json, the
cases of schemas/test/test-bigip-virtual-server.js of each version F5 tested (v0.1.4 to v0.1.8; F5 published
no test file for v0.1.0 to v0.1.3), and example ConfigMaps from docs/.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.module_utils.f5 import configmaps as f5
from ansible_collections.k8snet.triage.plugins.module_utils.f5 import parsers as f5_parsers
from ansible_collections.k8snet.triage.plugins.module_utils.f5 import schema as f5_schema

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "f5"
SOURCES = json.loads((FIXTURES / "SOURCES.json").read_text())
VERSIONS = ["v0.1.%d" % n for n in range(9)]


def cases(version):
    path = FIXTURES / "schema_cases" / ("%s.json" % version)
    return [(version, i, c) for i, c in enumerate(json.loads(path.read_text()))]


ALL_CASES = [c for v in ("v0.1.4", "v0.1.5", "v0.1.6", "v0.1.7", "v0.1.8") for c in cases(v)]


@pytest.mark.parametrize("version", VERSIONS)
def test_vendored_schema_is_the_upstream_file(version):
    name = "schemas/bigip-virtual-server_%s.json" % version
    commit, schema = f5_schema.SCHEMAS[version]
    assert schema == json.loads((FIXTURES / name).read_text())
    assert commit == SOURCES[name]["commit"] and SOURCES[name]["path"] == name
    assert schema["id"] == f5_schema.URI_FORMAT % version


@pytest.mark.parametrize("name", sorted(n for n in SOURCES if "blob" in SOURCES[n]))
def test_fixture_is_the_upstream_file_byte_for_byte(name):
    """Each fixture's git blob id is the one upstream's tree holds for that path at that commit."""
    data = (FIXTURES / name).read_bytes()
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == SOURCES[name]["blob"]


def test_every_published_version_and_no_other():
    assert list(f5_schema.SCHEMAS) == VERSIONS
    assert f5_schema.SCHEMA_URI == "f5schemadb://bigip-virtual-server_v0.1.7.json"


def test_f5_tests_cover_both_outcomes_for_every_tested_version():
    for version in ("v0.1.4", "v0.1.5", "v0.1.6", "v0.1.7", "v0.1.8"):
        got = cases(version)
        assert {c["expected"] for dummy, dummy2, c in got} == {"valid", "invalid"}
        assert {c["schema"] for dummy, dummy2, c in got} == {f5_schema.URI_FORMAT % version}


@pytest.mark.parametrize("version, index, case", ALL_CASES,
                         ids=["%s-%d-%s" % (v, i, c["test"]) for v, i, c in ALL_CASES])
def test_f5_schema_test_case(version, index, case):
    errors = f5_parsers.schema_errors(case["data"], version)
    assert (errors == []) is (case["expected"] == "valid"), errors


def example(name):
    return yaml.safe_load((FIXTURES / "examples" / name).read_text())


@pytest.mark.parametrize("name, version", [
    ("example-vs-resource_v0.1.0.configmap.yaml.upstream", "v0.1.0"),
    ("example-vs-resource-udp_v0.1.6.configmap.yaml.upstream", "v0.1.6"),
    ("example-vs-resource_v0.1.7.configmap.yaml.upstream", "v0.1.7"),
])
def test_f5_example_configmaps_validate_against_the_version_they_name(name, version):
    parsed = f5_parsers.parse_configmap(example(name), mode="cis")
    assert (parsed["kind"], parsed["schema_version"], parsed["validated_with"], parsed["errors"]) == (
        "virtual-server", version, version, [])
    assert parsed["service"] == "example-service"


def test_iapp_example_validates_from_the_version_with_iapp_pool_member_tables():
    """F5's iApp example (2017-03) uses iappPoolMemberTable, which came with v0.1.2; v0.1.0 required
    iappTableName instead."""
    data = json.loads((FIXTURES / "examples" / "example-vs-resource-iapp.json").read_text())
    valid = [v for v in VERSIONS if not f5_parsers.schema_errors(data, v)]
    assert valid == VERSIONS[2:]
    assert "iappTableName" in f5_schema.SCHEMAS["v0.1.0"][1]["definitions"]["frontendIAppType"]["required"]


def test_v0_1_0_schema_defect_is_named():
    """F5's v0.1.0 gives f5ProfileName "minLength": "1" (a string); CIS's gojsonschema refuses to load it."""
    assert f5_parsers.schema_defects(f5_schema.SCHEMAS["v0.1.0"][1]) == [
        ("#/definitions/sslProfileType/properties/f5ProfileName", "minLength", "1")]
    assert [v for v in VERSIONS if f5_parsers.schema_defects(f5_schema.SCHEMAS[v][1])] == ["v0.1.0"]


def test_v0_1_0_refuses_what_v0_1_6_added():
    """udp mode came with a later schema: the same data is valid for v0.1.6 and invalid for v0.1.0 (its enum)."""
    cm = example("example-vs-resource-udp_v0.1.6.configmap.yaml.upstream")
    data = json.loads(cm["data"]["data"])
    assert f5_parsers.schema_errors(data, "v0.1.6") == []
    assert f5_parsers.schema_errors(data, "v0.1.0") != []


def test_as3_example_is_read():
    parsed = f5_parsers.parse_configmap(example("sample-as3-cm-with-pool-member-disable.yaml.upstream"), mode="cis")
    assert parsed["kind"] == "as3" and parsed["errors"] == []
    assert parsed["tenants"] == {"test": {"app1": {
        "virtual_addresses": ["10.8.1.183"],
        "pools": [{"name": "app_pool", "members": [{"servicePort": 80, "serviceName": None, "serviceNamespace": None}]}]}}}
    assert f5.partitions_of([parsed]) == {"test": ["default/as3cm"]}


@pytest.mark.parametrize("template, error", [
    ("{", "data.template is not JSON"),
    ('{"class": "AS3", "declaration": {"class": "Tenant"}}', "is not an AS3 declaration"),
])
def test_broken_as3_is_invalid(template, error):
    cm = {"metadata": {"name": "x", "namespace": "default", "labels": {"f5type": "virtual-server", "as3": "true"}},
          "data": {"template": template}}
    parsed = f5_parsers.parse_configmap(cm, mode="cis")
    assert error in parsed["errors"][0][1]


@pytest.mark.parametrize("uri, named, nearest", [
    ("f5schemadb://bigip-virtual-server_v0.1.3.json", "v0.1.3", "v0.1.3"),
    ("f5schemadb://bigip-virtual-server_v0.1.9.json", "v0.1.9", "v0.1.8"),
    ("f5schemadb://bigip-virtual-server_v0.2.0.json", "v0.2.0", "v0.1.8"),
    ("f5schemadb://bigip-virtual-server_v0.0.9.json", "v0.0.9", "v0.1.0"),
    ("f5schemadb://other_v0.1.7.json", None, None),
    (None, None, None),
])
def test_schema_version(uri, named, nearest):
    assert f5_parsers.schema_version(uri) == (named, nearest)
