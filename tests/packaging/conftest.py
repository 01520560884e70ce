"""Packaging fixtures: the collection built the way a release is built, from a copy of the
tracked tree (plus stray files a working checkout collects), with ansible-galaxy."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# Files a working checkout collects that must never ship (build_ignore has to catch them).
STRAYS = (
    "demo-output/report.html",
    "triage-report.json",
    "triage-report.html",
    ".ansible/collections/x.txt",
    "bench/results/arp.json",
    "build/leftover.txt",
    "plugins/module_utils/__pycache__/kube.cpython-311.pyc",
    "tests/output/junit.xml",
    "k8snet-triage-0.0.1.tar.gz",
    "changelogs/.plugin-cache.yaml",
)


def tool_env():
    """The venv's tools first on PATH, no ansible.cfg of the checkout (Galaxy has none)."""
    env = dict(os.environ)
    env["PATH"] = "%s:%s" % (BIN, env.get("PATH", ""))
    env.pop("ANSIBLE_CONFIG", None)
    env["ANSIBLE_NOCOLOR"] = "1"
    env["NO_COLOR"] = "1"
    return env


def copy_tracked_tree(dest):
    """Copy what git tracks (and untracked files not ignored) to dest, as a fresh clone would have."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=str(ROOT),
                            check=True, capture_output=True).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file() or src.is_symlink():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read_bytes())
        target.chmod(src.stat().st_mode & 0o777)


@pytest.fixture(scope="session")
def collection_artifact(tmp_path_factory):
    """(tarball path, list of member names) of the collection built from a copy with strays planted."""
    src = tmp_path_factory.mktemp("collection-src") / "ansible_collections" / "k8snet" / "triage"
    src.mkdir(parents=True)
    copy_tracked_tree(src)
    for rel in STRAYS:
        stray = src / rel
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_text("stray\n")
    out = tmp_path_factory.mktemp("collection-artifact")
    proc = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(src)],
                          cwd=str(out), env=tool_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tarballs = sorted(out.glob("k8snet-triage-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    with tarfile.open(str(tarballs[0])) as tar:
        names = [m.name for m in tar.getmembers()]
    return tarballs[0], names
