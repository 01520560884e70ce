"""Shared by the Kubernetes-side integration tests: the stand-in API and kubectl as the independent reader."""

from __future__ import annotations

import json
import shutil
import subprocess

from tests.kube_api import FIXTURES
from tests.lab.faults import kube as kube_faults

KUBECTL = shutil.which("kubectl")


def start(lab, *names, label="kube-api", tokens=None, why=None):
    """The stand-in serving the named fixture files; ``why``: a key of tests.kube_api.WHY."""
    return kube_faults.start_api(lab, [FIXTURES / n for n in names], name=label, tokens=tokens, why=why)


def kubectl(kubeconfig, *args):
    """kubectl against the stand-in (a real client, independent of our code); returns parsed JSON."""
    assert KUBECTL, "kubectl is missing: scripts/bootstrap installs it (Debian package kubernetes-client)"
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args, "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def checks(findings):
    return sorted((f["check"], f["subject"]) for f in findings)
