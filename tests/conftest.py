"""Test-wide set-up: make ``ansible_collections.k8snet.triage`` importable from this checkout,
give each pytest-xdist worker a lab slot of its own, and refuse skipped tests when K8SNET_NO_SKIP=1 (CI):
a skipped test is a test that did not run."""

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
        try:
            link.symlink_to(ROOT, target_is_directory=True)
        except FileExistsError:  # another xdist worker made it first
            pass
    return link


def worker_lab_slot(environ):
    """pytest-xdist worker ``gwN`` builds its labs in slot base + N (base: $K8SNET_LAB_SLOT, default 0), so
    workers never share a namespace, an address or a lab directory."""
    worker = environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    base = int(environ.get("K8SNET_LAB_SLOT") or 0)
    slot = base + int(worker.lstrip("gw"))
    if slot > 7:
        raise RuntimeError("pytest worker %s would need lab slot %d: slots are 0..7; give fewer workers (-n) or a "
                           "lower K8SNET_LAB_SLOT" % (worker, slot))
    return slot


ensure_collection_link()
_SLOT = worker_lab_slot(os.environ)
if _SLOT is not None:
    os.environ["K8SNET_LAB_SLOT"] = str(_SLOT)
    if os.environ.get("K8SNET_LAB_DIR"):
        os.environ["K8SNET_LAB_DIR"] += "-" + os.environ["PYTEST_XDIST_WORKER"]
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


def pytest_terminal_summary(terminalreporter):
    """Where the time went, by test directory (unit, integration, packaging, ...): the tests' own durations summed
    (set-up, call and tear-down; with two workers the sum is about twice the wall time), and how many tests of the
    integration directory ran on the lab's real control plane (they use the ``kube_cluster`` fixture)."""
    seconds, tests, real = {}, {}, set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if not nodeid.startswith("tests/") or not hasattr(report, "duration"):
                continue
            area = nodeid.split("/")[1].split("::")[0]
            area = area if "." not in area else "tests"
            seconds[area] = seconds.get(area, 0.0) + report.duration
            if report.when == "call":
                tests[area] = tests.get(area, 0) + 1
            if report.when == "call" and ("api", "real") in getattr(report, "user_properties", ()):
                real.add(nodeid)
    if not seconds:
        return
    terminalreporter.write_sep("=", "time by test directory")
    for area in sorted(seconds, key=seconds.get, reverse=True):
        terminalreporter.write_line("%-14s %5d tests %8.0f s" % (area, tests.get(area, 0), seconds[area]))
    terminalreporter.write_line("on the lab's real control plane: %d tests" % len(real))


def pytest_runtest_setup(item):
    """Mark the tests that use the real control plane (see pytest_terminal_summary)."""
    if "kube_cluster" in getattr(item, "fixturenames", ()):
        item.user_properties.append(("api", "real"))
