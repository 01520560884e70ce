from __future__ import annotations

import json

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

# The conflist calico's install-cni writes (projectcalico/calico cni-plugin, 10-calico.conflist), trimmed.
CALICO = json.dumps({"name": "k8s-pod-network", "cniVersion": "0.3.1", "plugins": [
    {"type": "calico", "datastore_type": "kubernetes", "ipam": {"type": "calico-ipam"}, "policy": {"type": "k8s"},
     "kubernetes": {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"}},
    {"type": "bandwidth", "capabilities": {"bandwidth": True}},
    {"type": "portmap", "snat": True, "capabilities": {"portMappings": True}}]})


def make(tmp_path, configs=None, binaries=()):
    conf, bins = tmp_path / "net.d", tmp_path / "bin"
    if configs is not None:
        conf.mkdir()
        for name, text in configs.items():
            (conf / name).write_text(text)
    bins.mkdir()
    for name in binaries:
        (bins / name).write_text("#!/bin/sh\n")
        (bins / name).chmod(0o755)
    return cni_files.read_dir(str(conf), str(bins))


def test_ok(tmp_path):
    found, active = cni_files.check(make(tmp_path, {"10-calico.conflist": CALICO, "calico-kubeconfig": "x"},
                                         ["calico", "calico-ipam", "bandwidth", "portmap"]), "node1")
    assert [f["check"] for f in found] == ["node.cni_files_ok"]
    assert active == {"file": "10-calico.conflist", "network": "k8s-pod-network",
                      "plugins": ["calico", "bandwidth", "portmap"], "other_files": []}


def test_missing_dir_and_empty_dir(tmp_path):
    found, dummy = cni_files.check(make(tmp_path), "node1")
    assert found[0]["check"] == "node.cni_config_missing" and found[0]["evidence"]["exists"] is False
    found, dummy = cni_files.check(cni_files.read_dir(str(tmp_path / "bin"), str(tmp_path / "bin")), "node1")
    assert found[0]["evidence"]["exists"] is True


def test_first_file_wins_and_invalid_json(tmp_path):
    found, active = cni_files.check(make(tmp_path, {"00-broken.conf": "{", "10-calico.conflist": CALICO}), "n")
    assert found[0]["check"] == "node.cni_config_invalid" and active["other_files"] == ["10-calico.conflist"]


def test_missing_and_non_executable_binaries(tmp_path):
    state = make(tmp_path, {"10-calico.conflist": CALICO}, ["calico"])
    (tmp_path / "bin" / "portmap").write_text("x")
    state = cni_files.read_dir(state["conf_dir"], state["bin_dir"])
    found, dummy = cni_files.check(state, "n")
    assert found[0]["check"] == "node.cni_binary_missing"
    assert found[0]["evidence"]["missing"] == ["bandwidth"] and found[0]["evidence"]["not_executable"] == ["portmap"]


def test_single_conf_and_relative_path():
    assert cni_files.parse_config("10-bridge.conf", json.dumps({"name": "b", "type": "bridge"})) == ("b", ["bridge"], None)
    assert cni_files.parse_config("x.conflist", json.dumps({"name": "b", "plugins": []}))[2] == "no plugins"
    with pytest.raises(InputError):
        cni_files.read_dir("etc/cni", "/opt/cni/bin")


@pytest.mark.parametrize("plugin_type", [5, ["calico"], {"a": 1}, "../../bin/sh", ""])
def test_plugin_type_that_is_not_a_binary_name_is_a_finding_not_a_traceback(tmp_path, plugin_type):
    """issue 11: a `type` given as an int or a list raised TypeError in the module."""
    (tmp_path / "net.d").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "net.d" / "10-x.conflist").write_text(json.dumps(
        {"name": "k8s-pod-network", "plugins": [{"type": plugin_type}, {"type": "portmap"}]}))
    found, active = cni_files.check(cni_files.read_dir(str(tmp_path / "net.d"), str(tmp_path / "bin")), "node1")
    [item] = found
    assert item["check"] == "node.cni_config_invalid" and item["severity"] == "critical"
    assert active["plugins"] == ["portmap"]
