"""tests/kubernetes/versions.env names the lab's Kubernetes; the Go module files that build it must pin the same
versions (``scripts/build-kubernetes --update`` rewrites them from it), or the cache key would name one release
while the binaries are another."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "tests" / "kubernetes" / "modules"


def versions():
    out = {}
    for line in (ROOT / "tests" / "kubernetes" / "versions.env").read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key] = value
    return out


def requires(module, path):
    text = (MODULES / module / "go.mod").read_text()
    found = re.findall(r"^\s*(?:require\s+)?%s (v\S+)" % re.escape(path), text, re.M)
    assert found, "%s/go.mod does not require %s" % (module, path)
    return set(found)


def test_versions_file_names_each_component_once():
    assert set(versions()) == {"KUBERNETES_VERSION", "ETCD_VERSION", "COREDNS_VERSION", "CONTAINERD_VERSION",
                               "METALLB_VERSION"}
    for value in versions().values():
        assert re.fullmatch(r"v\d+\.\d+\.\d+", value), value


def test_go_modules_pin_the_named_versions():
    v = versions()
    assert requires("kubernetes", "k8s.io/kubernetes") == {v["KUBERNETES_VERSION"]}
    assert requires("etcd", "go.etcd.io/etcd/server/v3") == {v["ETCD_VERSION"]}
    assert requires("coredns", "github.com/coredns/coredns") == {v["COREDNS_VERSION"]}
    assert requires("containerd", "github.com/containerd/containerd/v2") == {v["CONTAINERD_VERSION"]}
    assert requires("metallb", "go.universe.tf/metallb") == {v["METALLB_VERSION"]}


def test_staging_modules_replaced_by_the_same_release():
    """k8s.io/kubernetes's staging modules are replaced by their release (kubernetes/kubernetes#79384): each replace
    names v0.<minor>.<patch> of the Kubernetes version, and every k8s.io module it requires is replaced."""
    v = versions()["KUBERNETES_VERSION"]
    staging = "v0." + v[len("v1."):]
    text = (MODULES / "kubernetes" / "go.mod").read_text()
    replaced = dict(re.findall(r"^\s*(k8s\.io/[a-z0-9-]+) => k8s\.io/[a-z0-9-]+ (v\S+)$", text, re.M))
    assert len(replaced) > 20
    assert set(replaced.values()) == {staging}
    tools = set(re.findall(r"^\s*(k8s\.io/kubernetes/cmd/\S+)$", text, re.M))
    assert tools == {"k8s.io/kubernetes/cmd/" + c for c in ("kube-apiserver", "kube-controller-manager", "kube-proxy",
                                                            "kubectl", "kubelet")}


def test_containerd_module_builds_the_runtime_its_shim_and_ctr():
    text = (MODULES / "containerd" / "go.mod").read_text()
    tools = set(re.findall(r"^\s*(github\.com/containerd/containerd/v2/cmd/\S+)$", text, re.M))
    assert tools == {"github.com/containerd/containerd/v2/cmd/" + c
                     for c in ("containerd", "containerd-shim-runc-v2", "ctr")}
