"""execution-environment.yml with ansible-builder create: the Containerfile it writes names the
base image and its default Python, the ansible-core range, the collection's requirements, installs
the collection from the built artifact (any file name), and leaves the node tools out."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from bindep.depends import Depends

from tests.packaging.conftest import BIN, ROOT, tool_env

BASE_IMAGE = "registry.access.redhat.com/ubi10/ubi:latest"
NODE_TOOLS = {"tcpdump", "iptables", "iptables-nft", "nftables", "iproute", "iproute2", "bpftool"}
RPM_PLATFORM = ["platform:rpm", "platform:redhat", "platform:rhel"]


@pytest.fixture(scope="module")
def ee_context(collection_artifact, tmp_path_factory):
    """Run ansible-builder create as the EE's instructions say: next to dist/ holding the built tarball."""
    tarball = collection_artifact[0]
    work = tmp_path_factory.mktemp("ee")
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(str(ROOT / name), str(work / name))
    (work / "dist").mkdir()
    shutil.copy(str(tarball), str(work / "dist" / tarball.name))
    proc = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "context",
                           "--output-filename", "Containerfile"], cwd=str(work), env=tool_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return work / "context", tarball.name


def args_of(containerfile):
    return dict(re.findall(r'^ARG (\w+)="([^"]*)"$', containerfile, re.M))


def test_base_image_and_its_default_python(ee_context):
    text = (ee_context[0] / "Containerfile").read_text()
    args = args_of(text)
    assert args["EE_BASE_IMAGE"] == BASE_IMAGE
    assert re.search(r"^FROM \$EE_BASE_IMAGE AS base$", text, re.M)
    # the image's own python3 (3.12 on UBI 10), not a second interpreter
    assert args["PYCMD"] == "/usr/bin/python3" and args["PYPKG"] == "python3"
    assert args["PKGMGR"] == "/usr/bin/dnf"


def test_ansible_core_range_and_runner(ee_context):
    refs = args_of((ee_context[0] / "Containerfile").read_text())["ANSIBLE_INSTALL_REFS"].split()
    assert "ansible-core>=2.19,<2.22" in refs
    assert any(r.startswith("ansible-runner") for r in refs)
    runtime = yaml.safe_load((ROOT / "meta/runtime.yml").read_text())
    assert runtime["requires_ansible"].startswith(">=2.19")


def test_controller_python_requirements_are_the_collections(ee_context):
    context = ee_context[0]
    text = (context / "Containerfile").read_text()
    assert "COPY _build/requirements.txt requirements.txt" in text
    assert "--user-pip=requirements.txt" in text
    shipped = [line for line in (context / "_build/requirements.txt").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    ours = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert shipped == ours and any(line.startswith("kubernetes") for line in shipped)
    meta = yaml.safe_load((ROOT / "meta/execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}


def test_collection_installed_from_the_artifact_without_a_hard_coded_name(ee_context):
    context, tarball = ee_context
    assert sorted(p.name for p in (context / "_build/collections").iterdir()) == [tarball]
    text = (context / "Containerfile").read_text()
    assert "COPY _build/collections/ /tmp/k8snet-collections/" in text
    install = [line for line in text.splitlines() if "ansible-galaxy collection install" in line]
    assert len(install) == 1 and "/tmp/k8snet-collections/*.tar.gz" in install[0]
    assert "/usr/share/ansible/collections" in install[0]
    # installed in the base stage: before the builder stage introspects the collections
    assert text.index(install[0]) < text.index("FROM base AS builder")
    assert not re.search(r"k8snet-triage-\d", (ROOT / "execution-environment.yml").read_text())


def test_node_tools_stay_out_of_the_image(ee_context):
    context = ee_context[0]
    text = (context / "Containerfile").read_text()
    assert "--user-bindep=bindep.txt" in text
    rules = Depends((context / "_build/bindep.txt").read_text())
    # ansible-builder installs bindep's default profile (bindep -l newline) on the image's platform
    image = {rule[0] for rule in rules.active_rules(RPM_PLATFORM + ["default"])}
    node = {rule[0] for rule in rules.active_rules(RPM_PLATFORM + ["node"])}
    assert image == {"openssh-clients"}
    assert not image & NODE_TOOLS
    assert {"tcpdump", "iptables-nft", "nftables", "iproute"} <= node
    debian_node = {rule[0] for rule in rules.active_rules(["platform:dpkg", "platform:debian", "node"])}
    assert {"tcpdump", "iptables", "nftables", "iproute2"} <= debian_node
