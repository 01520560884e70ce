"""Integration fixtures: the namespace lab (one per test session) and runners that
call our modules and playbooks through real ansible over real SSH."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest

from tests.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
CALLBACKS = Path(__file__).resolve().parent / "callback_plugins"
BIN = Path(sys.executable).parent  # ansible and ansible-playbook of the venv running the tests
os.environ["PATH"] = "%s:%s" % (BIN, os.environ.get("PATH", ""))  # also for ansible-runner


class Ansible(object):
    """Run ad-hoc modules and playbooks against the lab inventory and collect results."""

    def __init__(self, lab):
        self.lab = lab

    def _env(self, record):
        env = dict(os.environ)
        env["PATH"] = "%s:%s" % (BIN, env.get("PATH", ""))
        # the report's default directory is $PWD: a run that names none writes into the lab's work directory
        # (removed with the lab), never into the checkout
        env["PWD"] = str(self.lab.workdir)
        env.update({
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
            "ANSIBLE_CALLBACKS_ENABLED": "record",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "K8SNET_RECORD": record,
        })
        return env

    def _run(self, argv):
        with tempfile.NamedTemporaryFile(prefix="k8snet-record-", suffix=".jsonl", delete=False) as handle:
            record = handle.name
        try:
            proc = subprocess.run(argv, cwd=ROOT, env=self._env(record), capture_output=True, text=True, timeout=900, check=False)
            with open(record) as handle:
                records = [json.loads(line) for line in handle if line.strip()]
        finally:
            os.unlink(record)
        return Run(proc, records)

    def module(self, pattern, module, args=None, check=False, diff=False, inventory=None):
        """Run one module on ``pattern`` (of the lab's inventory, or ``inventory``); returns {host: result}."""
        name = module if "." in module else "k8snet.triage." + module
        argv = [str(BIN / "ansible"), pattern, "-i", str(inventory or self.lab.inventory_path), "-m", name]
        argv += ["-a", json.dumps(args)] if args else []
        argv += ["--check"] if check else []
        argv += ["--diff"] if diff else []
        run = self._run(argv)
        results = {r["host"]: dict(r["result"], failed=r["status"] == "failed") for r in run.records}
        if not results:
            raise AssertionError("ansible returned no result\nstdout:\n%s\nstderr:\n%s" % (run.stdout, run.stderr))
        return results

    def playbook(self, playbook, extra_vars=None, check=False, diff=False, limit=None, inventory=None):
        """Run a playbook (a path, or a collection playbook name); returns a Run."""
        argv = [str(BIN / "ansible-playbook"), "-i", str(inventory or self.lab.inventory_path), str(playbook)]
        if extra_vars:
            argv += ["-e", json.dumps(extra_vars)]
        argv += ["--check"] if check else []
        argv += ["--diff"] if diff else []
        argv += ["--limit", limit] if limit else []
        return self._run(argv)


class Run(object):
    def __init__(self, proc, records):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.records = records

    def results(self, task=None, host=None, action=None):
        return [r for r in self.records
                if (task is None or r["task"] == task or r["task"].endswith(" : " + task)) and (host is None or r["host"] == host)
                and (action is None or r["action"].endswith(action))]

    def result(self, task, host):
        found = self.results(task=task, host=host)
        if not found:
            raise AssertionError("no result for task %r on %s\n%s" % (task, host, self.stdout[-4000:]))
        return found[-1]["result"]

    def __repr__(self):
        return "Run(rc=%s)\n%s\n%s" % (self.rc, self.stdout[-6000:], self.stderr[-2000:])


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: the test module's timings hold only on a machine no other pytest "
                                       "worker loads (it runs while the other workers wait)")


# pytest-xdist runs test files on two workers at once. A module marked ``alone`` (its assertions bound wall times)
# holds this run's lock exclusively; every other module holds it shared, so the two never overlap. The lock's name
# carries the run's random id (no other process can plant it) and is opened without following a symlink.
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID")


def _run_lock():
    return os.path.join(tempfile.gettempdir(), "k8snet-tests-%s.lock" % RUN_ID)


def pytest_sessionfinish(session, exitstatus):
    """A worker that is done takes no lock again: it removes the lock's file (a worker still running keeps its own)."""
    if RUN_ID:
        try:
            os.unlink(_run_lock())
        except FileNotFoundError:
            pass


@pytest.fixture(scope="module", autouse=True)
def machine_share(request):
    """Before the module's lab is built: the run's lock, exclusive for a module marked ``alone``, else shared."""
    if not RUN_ID:  # one process runs every test: nothing runs beside it
        yield
        return
    fd = os.open(_run_lock(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if request.node.get_closest_marker("alone") else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def lab():
    """A fresh lab for every test module: scenarios leave daemons, rules, pods and traffic
    behind that other scenarios' assertions must not see (a 3-node lab builds in about 2 s)."""
    lab = Lab().up()
    yield lab
    if os.environ.get("K8SNET_KEEP_LAB") != "1":
        lab.down(quiet=True)


@pytest.fixture(scope="module")
def ansible(lab):
    return Ansible(lab)


@pytest.fixture(scope="module")
def kube_cluster(request, lab):
    """The real control plane and kube-proxies on the module's lab (tests/lab/cluster.py). When a test of the module
    failed, the components' logs are kept under tests/output/kube-logs/<module>."""
    from tests.lab.cluster import Cluster

    failed_before = request.session.testsfailed
    cluster = Cluster(lab).up()
    yield cluster
    if request.session.testsfailed > failed_before:
        keep = ROOT / "tests" / "output" / "kube-logs" / request.module.__name__.rsplit(".", 1)[-1]
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(cluster.logs, keep)


# Every triage-report.json a test's run writes is checked against the published schema
# (docs/triage-report.schema.json), whatever the test itself asserts: the reports written since the last
# check, under pytest's temporary directories. A file a test planted (a previous report, a symlink's
# target) has no "run" and is not a report of ours.
REPORT_SCHEMA = json.loads((ROOT / "docs" / "triage-report.schema.json").read_text())
_REPORTS_SEEN = {}  # path -> the mtime checked (each version of a file is checked once)


def _new_reports(base):
    for path in base.rglob("triage-report.json"):
        try:
            if path.is_symlink() or _REPORTS_SEEN.get(path) == path.stat().st_mtime_ns:
                continue
            _REPORTS_SEEN[path] = path.stat().st_mtime_ns
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "run" in data:
            yield path, data


@pytest.fixture(autouse=True)
def reports_match_the_schema(tmp_path_factory):
    yield
    validator = jsonschema.Draft202012Validator(REPORT_SCHEMA)
    for path, data in _new_reports(tmp_path_factory.getbasetemp()):
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        assert not errors, "%s does not match docs/triage-report.schema.json: %s" % (
            path, "; ".join("%s: %s" % ("/".join(map(str, e.path)), e.message[:200]) for e in errors[:5]))
