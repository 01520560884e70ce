"""cni_files.detect: which CNI a node shows (BIRD socket / Calico config; Cilium maps / socket / config)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files

CALICO = ("10-calico.conflist", '{"name": "k8s-pod-network", "plugins": [{"type": "calico"}, {"type": "portmap"}]}')
CILIUM = ("05-cilium.conflist", '{"name": "cilium", "plugins": [{"type": "cilium-cni"}]}')


def test_nothing_seen_is_neither():
    out = cni_files.detect([], exists=lambda p: False, matches=lambda g: [])
    assert out["calico"] is False and out["cilium"] is False


def test_bird_socket_alone_is_calico():
    out = cni_files.detect([], exists=lambda p: p == "/var/run/bird/bird.ctl", matches=lambda g: [])
    assert out["calico"] is True and out["cilium"] is False
    assert out["evidence"]["calico"]["bird_sockets"] == ["/var/run/bird/bird.ctl"]


def test_calico_config_alone_is_calico():
    assert cni_files.detect([CALICO], exists=lambda p: False, matches=lambda g: [])["calico"] is True


def test_pinned_maps_or_agent_socket_or_config_is_cilium():
    maps = cni_files.detect([], exists=lambda p: False, matches=lambda g: ["/sys/fs/bpf/tc/globals/cilium_lb4_services_v2"])
    assert maps["cilium"] is True and maps["evidence"]["cilium"]["pinned_maps"] == 1
    sock = cni_files.detect([], exists=lambda p: p == "/var/run/cilium/cilium.sock", matches=lambda g: [])
    assert sock["cilium"] is True and sock["calico"] is False
    assert cni_files.detect([CILIUM], exists=lambda p: False, matches=lambda g: [])["cilium"] is True


def test_invalid_config_types_are_ignored():
    bad = ("10-x.conflist", '{"plugins": [{"type": 5}, {"type": ["calico"]}]}')
    assert cni_files.plugin_types([bad, ("x.conf", "not json")]) == set()


def test_has_calico_config_reads_the_directory(tmp_path):
    assert cni_files.has_calico_config(str(tmp_path)) is False
    (tmp_path / CALICO[0]).write_text(CALICO[1])
    assert cni_files.has_calico_config(str(tmp_path)) is True
    assert cni_files.has_calico_config(str(tmp_path / "absent")) is False
