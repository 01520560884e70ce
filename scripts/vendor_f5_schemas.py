# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Vendor F5's CIS virtual-server schemas, schema test cases and example ConfigMaps (not shipped).

Usage: python scripts/vendor_f5_schemas.py <git dir of github.com/F5Networks/k8s-bigip-ctlr>

Writes, from the commits named below:
- tests/unit/plugins/module_utils/fixtures/f5/: the upstream files byte for byte (schemas, examples),
  F5's schema test cases (schemas/test/test-bigip-virtual-server.js of each schema version, run by
  node with scripts/f5_schema_cases.js, which records each document validated and the expectation),
  and SOURCES.json (each file's repository, path and commit);
- plugins/module_utils/f5/schema.py: one Python dict per schema version (AnsiballZ ships Python, not
  .json), equal to the upstream file (tests/unit/plugins/module_utils/test_f5_schema.py checks it).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = "F5Networks/k8s-bigip-ctlr"
URI = "f5schemadb://bigip-virtual-server_%s.json"
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/unit/plugins/module_utils/fixtures/f5"
MODULE = ROOT / "plugins/module_utils/f5/schema.py"
# the last commit before CIS 2.0 removed schemas/ (8fd31df4): v0.1.0 .. v0.1.7 unchanged since they were added
SCHEMAS_COMMIT = "7c845c534ba59ca27e691b7643d26c82642890ca"
# v0.1.8 (sourceAddressTranslation) was published on master from 51a8bc61 (2018-03-09) and removed by
# 7442ae5b (2018-03-23, "Redid SNAT pool config"); no release tag holds it
V018_COMMIT = "51a8bc61fb0588a50daa0599b33426407408090c"
VERSIONS = ["v0.1.%d" % n for n in range(9)]
# schemas/test/test-bigip-virtual-server.js: the last commit whose CURRENT_VERSION / testSchema is each version
# (F5 published no test file for v0.1.0 .. v0.1.3: the schemas were imported with v0.1.4 at 5fa3ce2f)
TEST_COMMITS = {
    "v0.1.4": "6a0a99ab6ab3b2a0b4b2d2465fc2c3e36ddbef83",
    "v0.1.5": "89835ff86c1927899c87ee60009180ecbe50a644",
    "v0.1.6": "706bdd30352e55912edce36c67f30303d3eaaf9e",
    "v0.1.7": "7442ae5bf68b36b9a231052e3a803a802da13fd7",
    "v0.1.8": "51a8bc61fb0588a50daa0599b33426407408090c",
}
# (fixture name, upstream path, commit)
EXAMPLES = [
    ("example-vs-resource_v0.1.0.configmap.yaml.upstream", "docs/_static/config_examples/example-vs-resource.configmap.yaml",
     "4b7d5836503fc2bbfbda05175924de4bb1eebd21"),
    ("example-vs-resource_v0.1.7.configmap.yaml.upstream", "docs/_static/config_examples/example-vs-resource.configmap.yaml",
     "900de544dece393a7fbd34ea52d6eb9119f31073"),
    ("example-vs-resource-udp_v0.1.6.configmap.yaml.upstream", "docs/_static/config_examples/example-vs-resource-udp.configmap.yaml",
     "f09ffb0d3f40662d7abece1a83d9e42063b0c0b4"),
    ("example-vs-resource-iapp.json", "docs/_static/config_examples/example-vs-resource-iapp.json",
     "22a0344caf33595759589e57421ed680aaf3fb20"),
    ("sample-as3-cm-with-pool-member-disable.yaml.upstream",
     "docs/config_examples/configmap/user-defined-configmap/sample-as3-cm-with-pool-member-disable.yaml",
     "97bb49f8b67dd6ce6c27c3765e8498174bb7b541"),
    ("f5-hello-world-service.yaml.upstream",
     "docs/config_examples/configmap/user-defined-configmap/deployments/f5-hello-world-service.yaml",
     "5c170e59ead22356229e12d8d024724cc19198e0"),
]


def blob(git_dir, commit, path):
    """The git blob id of path at commit (the test recomputes it from the fixture: byte for byte)."""
    return subprocess.run(["git", "-C", git_dir, "rev-parse", "%s:%s" % (commit, path)], check=True,
                          capture_output=True, text=True).stdout.strip()


def show(git_dir, commit, path):
    return subprocess.run(["git", "-C", git_dir, "show", "%s:%s" % (commit, path)], check=True,
                          capture_output=True).stdout


def main(git_dir):
    sources = {}
    schemas = {}
    for version in VERSIONS:
        commit = V018_COMMIT if version == "v0.1.8" else SCHEMAS_COMMIT
        path = "schemas/bigip-virtual-server_%s.json" % version
        raw = show(git_dir, commit, path)
        out = FIXTURES / "schemas" / Path(path).name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(raw)
        sources["schemas/" + out.name] = {"repo": REPO, "path": path, "commit": commit,
                                          "blob": blob(git_dir, commit, path)}
        schemas[version] = (json.loads(raw), commit)
    for version, commit in TEST_COMMITS.items():
        path = "schemas/test/test-bigip-virtual-server.js"
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "test.js").write_bytes(show(git_dir, commit, path))
            cases = subprocess.run(["node", str(ROOT / "scripts/f5_schema_cases.js"), tmp], check=True,
                                   capture_output=True, text=True).stdout
        out = FIXTURES / "schema_cases" / ("%s.json" % version)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(cases)
        sources["schema_cases/" + out.name] = {"repo": REPO, "path": path, "commit": commit,
                                               "how": "run with scripts/f5_schema_cases.js"}
    for name, path, commit in EXAMPLES:
        out = FIXTURES / "examples" / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(show(git_dir, commit, path))
        sources["examples/" + name] = {"repo": REPO, "path": path, "commit": commit,
                                       "blob": blob(git_dir, commit, path)}
    (FIXTURES / "SOURCES.json").write_text(json.dumps(sources, indent=1, sort_keys=True) + "\n")
    write_module(schemas)


def literal(obj, indent=""):
    """A Python literal of a JSON value, on one line when it fits in 120 columns, else with hanging indents."""
    one = repr(obj)
    if len(indent) + len(one) <= 100 or not isinstance(obj, (dict, list)) or not obj:
        return one
    inner = indent + "    "
    if isinstance(obj, dict):
        body = ["%s%r: %s," % (inner, k, literal(v, inner)) for k, v in obj.items()]
        return "{\n%s\n%s}" % ("\n".join(body), indent)
    return "[\n%s\n%s]" % ("\n".join("%s%s," % (inner, literal(v, inner)) for v in obj), indent)


def write_module(schemas):
    lines = [
        "# -*- coding: utf-8 -*-",
        "# The JSON schemas below are data from F5 Networks' k8s-bigip-ctlr (Container Ingress Services),",
        "# https://github.com/%s, schemas/bigip-virtual-server_<version>.json:" % REPO,
    ]
    for version, (dummy, commit) in schemas.items():
        lines.append("#   %s at commit %s" % (version, commit))
    lines += [
        "# Copyright F5 Networks, Inc., licensed under the Apache License, Version 2.0",
        "# (LICENSES/Apache-2.0.txt, https://www.apache.org/licenses/LICENSE-2.0); each is reproduced as the",
        "# Python dict json.loads() makes of it (generated by scripts/vendor_f5_schemas.py, do not edit).",
        "# The surrounding Python is k8snet.triage's:",
        "# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)",
        "",
        '"""The CIS virtual-server ConfigMap schemas ``f5schemadb://bigip-virtual-server_v0.1.0.json`` to',
        "``_v0.1.8.json``, shipped as a Python module so that AnsiballZ carries them with the module utilities",
        'that use them (a plain .json file next to module_utils would not be sent to the host)."""',
        "",
        "from __future__ import annotations",
        "",
        'URI_FORMAT = "f5schemadb://bigip-virtual-server_%s.json"',
        "",
    ]
    for version, (schema, commit) in schemas.items():
        lines += ["", "# %s" % (URI % version), "SCHEMA_%s = %s" % (version.upper().replace(".", "_"), literal(schema))]
    lines += ["", "# version -> (upstream commit, schema)", "SCHEMAS = {"]
    for version, (schema, commit) in schemas.items():
        lines.append('    "%s": ("%s", SCHEMA_%s),' % (version, commit, version.upper().replace(".", "_")))
    lines += [
        "}",
        "",
        "VERSIONS = tuple(SCHEMAS)",
        "# what GDC's load-balancer-f5 writes",
        'SCHEMA_URI = URI_FORMAT % "v0.1.7"',
        'SCHEMA = SCHEMAS["v0.1.7"][1]',
        "",
    ]
    MODULE.write_text("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
