"""The built collection as Galaxy / Automation Hub receive it: what ships, its licences, and the
checks Galaxy runs (galaxy-importer with ansible-lint), antsibull-docs and antsibull-changelog."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tarfile

import yaml

from tests.packaging.conftest import BIN, ROOT, STRAYS, tool_env

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())
PLAYBOOKS = sorted(p.name for p in (ROOT / "playbooks").glob("*.yml"))
COLLECTION_LINK = ROOT / "build" / "ansible_collections" / "k8snet" / "triage"

MUST_SHIP = [
    "README.md", "LICENSE", "LICENSES/GPL-3.0-or-later.txt", "LICENSES/Apache-2.0.txt", "CHANGELOG.rst",
    "changelogs/changelog.yaml", "changelogs/config.yaml", "meta/runtime.yml", "meta/execution-environment.yml",
    "requirements.txt", "requirements-node.txt", "bindep.txt", "docs/awx.md", "plugins/module_utils/f5/schema.py",
] + ["roles/%s/README.md" % r for r in ROLES] + ["roles/%s/meta/argument_specs.yml" % r for r in ROLES] \
  + ["playbooks/%s" % p for p in PLAYBOOKS]

# Prefixes and patterns that stay in the repository.
MUST_NOT_SHIP = ["tests/", "scripts/", "bench/", "build/", ".venv", ".ci/", ".ansible/", "demo-output/",
                 "docs/developing.md", "requirements-dev.txt", "ansible.cfg", "execution-environment.yml",
                 ".gitignore", "changelogs/.plugin-cache.yaml", "importer_result.json"]
MUST_NOT_MATCH = ["triage-report.*", "*.tar.gz", "*/__pycache__/*", "*.pyc"]

# Licence text markers in shipped files, and the licence file that has to ship with them.
LICENCE_MARKERS = {
    "Apache License": "LICENSES/Apache-2.0.txt",
    "GNU General Public License": "LICENSES/GPL-3.0-or-later.txt",
}


def run(cmd, cwd, timeout=600):
    return subprocess.run(cmd, cwd=str(cwd), env=tool_env(), capture_output=True, text=True, timeout=timeout, check=False)


def test_tarball_holds_the_content_and_its_documentation(collection_artifact):
    names = collection_artifact[1]
    missing = [path for path in MUST_SHIP if path not in names]
    assert not missing, "not in the tarball: %s" % missing


def test_tarball_leaves_out_the_repository_and_the_strays_of_a_working_checkout(collection_artifact):
    names = collection_artifact[1]
    shipped_bad = [n for n in names
                   if any(n == p.rstrip("/") or n.startswith(p if p.endswith("/") else p + "/") or n == p
                          for p in MUST_NOT_SHIP)
                   or any(fnmatch.fnmatch(n, pat) for pat in MUST_NOT_MATCH)]
    assert not shipped_bad, "shipped but should not: %s" % shipped_bad
    # The strays were planted in the built tree, so their absence is the ignore list working.
    assert not [s for s in STRAYS if s in names]


def test_every_licence_named_in_a_shipped_file_ships(collection_artifact):
    tarball, names = collection_artifact
    needed = {}
    with tarfile.open(str(tarball)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or member.name.startswith("LICENSE"):
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            for marker, licence in LICENCE_MARKERS.items():
                if marker in text:
                    needed.setdefault(licence, member.name)
    assert "LICENSES/Apache-2.0.txt" in needed, "the vendored F5 schema names its Apache-2.0 licence"
    assert needed["LICENSES/Apache-2.0.txt"] == "plugins/module_utils/f5/schema.py"
    assert not [lic for lic in needed if lic not in names]
    assert "Apache License" in (ROOT / "LICENSES/Apache-2.0.txt").read_text()
    assert (ROOT / "LICENSES/GPL-3.0-or-later.txt").read_text() == (ROOT / "LICENSE").read_text()


def test_every_role_readme_documents_every_variable_of_its_argument_spec():
    undocumented = {}
    for role in ROLES:
        readme = (ROOT / "roles" / role / "README.md").read_text()
        spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
        for entry, body in spec["argument_specs"].items():
            assert body.get("description"), "%s entry point %s has no description" % (role, entry)
            missing = [o for o in (body.get("options") or {}) if "`%s`" % o not in readme]
            if missing:
                undocumented[role] = missing
        assert "```yaml" in readme, "%s README has no example play" % role
    assert not undocumented, undocumented


def test_roles_require_the_ansible_core_the_collection_requires():
    runtime = yaml.safe_load((ROOT / "meta/runtime.yml").read_text())
    minimum = re.match(r">=\s*(\d+\.\d+)", runtime["requires_ansible"]).group(1)
    wrong = {}
    for role in ROLES:
        meta = yaml.safe_load((ROOT / "roles" / role / "meta/main.yml").read_text())
        if str(meta["galaxy_info"]["min_ansible_version"]) != minimum:
            wrong[role] = meta["galaxy_info"]["min_ansible_version"]
    assert not wrong, "requires_ansible is %s: %s" % (runtime["requires_ansible"], wrong)


def test_galaxy_importer_accepts_the_tarball(collection_artifact, tmp_path):
    tarball = collection_artifact[0]
    # What Galaxy runs, without a container engine or network: ansible-doc and ansible-lint
    # (offline), the changelog check; ansible-test is Galaxy's optional container step.
    cfg = tmp_path / "galaxy-importer.cfg"
    cfg.write_text("[galaxy-importer]\nrun_ansible_test = False\nrun_ansible_doc = True\nrun_ansible_lint = True\n"
                   "offline_ansible_lint = True\ncheck_changelog = True\nlocal_image_docker = False\n"
                   "ansible_local_tmp = %s\n" % (tmp_path / "ansible-tmp"))
    env = tool_env()
    env["GALAXY_IMPORTER_CONFIG"] = str(cfg)
    proc = subprocess.run([str(BIN / "python"), "-m", "galaxy_importer.main", str(tarball)], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "Linting collection via ansible-lint" in log, log
    assert "Importer processing completed successfully" in log, log
    problems = [line for line in log.splitlines() if re.match(r"\s*(ERROR|WARNING)\b", line)]
    assert not problems, "\n".join(problems)
    assert "Loading role stale_arp" in log and "Loading playbook triage.yml" in log


def test_antsibull_docs_lint_collection_docs_passes():
    proc = run([str(BIN / "antsibull-docs"), "lint-collection-docs", "--plugin-docs", "."], COLLECTION_LINK)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_antsibull_changelog_lint_passes_and_the_release_is_the_galaxy_version():
    proc = run([str(BIN / "antsibull-changelog"), "lint"], COLLECTION_LINK)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    changes = yaml.safe_load((ROOT / "changelogs/changelog.yaml").read_text())
    assert version in changes["releases"]
    assert "v%s" % version in (ROOT / "CHANGELOG.rst").read_text()
    assert (ROOT / "changelogs/fragments").is_dir(), "later fragments need their directory"
