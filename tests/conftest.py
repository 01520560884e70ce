"""Test-wide set-up: make ``ansible_collections.k8snet.triage`` importable from this checkout,
and refuse skipped tests when K8SNET_NO_SKIP=1 (CI): a skipped test is a test that did not run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"


def ensure_collection_link():
    link = BUILD / "ansible_collections" / "k8snet" / "triage"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
    return link


ensure_collection_link()
if str(BUILD) not in sys.path:
    sys.path.insert(0, str(BUILD))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("K8SNET_NO_SKIP") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line("K8SNET_NO_SKIP=1: %d test(s) were skipped; every test must run in CI" % len(skipped), red=True)
        session.exitstatus = 1
