"""The bpf(2) layer: attr packing, error mapping, discovery and the fill checks (no kernel maps touched)."""

from __future__ import annotations

import errno
import json
import struct
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import bpf
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

FIXTURES = Path(__file__).parent / "fixtures" / "bpf"


def info_from_show(name):
    show = json.loads((FIXTURES / name).read_text())
    return {"type": show["type"], "id": show["id"], "key_size": show["bytes_key"], "value_size": show["bytes_value"],
            "max_entries": show["max_entries"], "flags": show["flags"], "kernel_name": show["name"]}


def test_syscall_numbers(monkeypatch):
    for machine, nr in (("x86_64", 321), ("aarch64", 280)):
        monkeypatch.setattr(bpf.platform, "machine", lambda m=machine: m)
        assert bpf._syscall_nr() == nr
    monkeypatch.setattr(bpf.platform, "machine", lambda: "sparc64")
    with pytest.raises(ReadError, match="sparc64"):
        bpf._syscall_nr()


def test_map_info_layout_offsets():
    # struct bpf_map_info: type @0, id @4, key_size @8, value_size @12, max_entries @16, map_flags @20, name @24
    assert bpf._INFO_FIELDS.size == 40
    raw = struct.pack("=IIIIII16s", 1, 7, 4, 12, 65536, 1, b"cilium_lb4_back")
    assert bpf._INFO_FIELDS.unpack_from(raw.ljust(bpf.MAP_INFO_SIZE, b"\0"), 0)[4] == 65536


@pytest.mark.parametrize("code,exc,words", [
    (errno.EPERM, PrivilegeError, ["CAP_BPF", "/sys/fs/bpf/tc/globals/m"]),
    (errno.ENOENT, InputError, ["/sys/fs/bpf/tc/globals/m does not exist"]),
    (errno.EIO, ReadError, ["/sys/fs/bpf/tc/globals/m", "Input/output error"]),
])
def test_open_errors_name_the_path_and_the_fix(monkeypatch, code, exc, words):
    def refuse(cmd, attr):
        assert cmd == bpf.BPF_OBJ_GET
        # OBJ_GET attr: pathname pointer @0, bpf_fd @8, file_flags @12 (read-only by default)
        assert struct.unpack_from("=I", attr.raw, 12)[0] == bpf.BPF_F_RDONLY
        raise OSError(code, "Input/output error" if code == errno.EIO else "refused")
    monkeypatch.setattr(bpf, "sys_bpf", refuse)
    with pytest.raises(exc) as err:
        bpf.BpfMap("/sys/fs/bpf/tc/globals/m")
    for word in words:
        assert word in err.value.message


def test_parse_cpu_ranges():
    assert bpf.parse_cpu_ranges("0-3") == 4
    assert bpf.parse_cpu_ranges("0") == 1
    assert bpf.parse_cpu_ranges("0-3,5,7-8") == 7


def test_find_pinned_globs_and_literals(tmp_path):
    for rel in ("tc/globals/cilium_lb4_services_v2", "tc/globals/cilium_lb4_backends_v3", "tc/globals/cilium_ct4_global",
                "other/map_a"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    root = str(tmp_path)
    everything, unmatched = bpf.find_pinned(root)
    assert unmatched == []
    assert len(everything) == 4
    lb, unmatched = bpf.find_pinned(root, ["tc/globals/cilium_lb4_*", "nothing*"])
    assert [p.rsplit("/", 1)[1] for p in lb] == ["cilium_lb4_backends_v3", "cilium_lb4_services_v2"]
    assert unmatched == ["nothing*"]
    by_name, unmatched = bpf.find_pinned(root, ["map_a"])
    assert by_name == [str(tmp_path / "other/map_a")]
    with pytest.raises(InputError, match="no map named cilium_lb4_backends_v2 is pinned under"):
        bpf.find_pinned(root, ["cilium_lb4_backends_v2"])


def test_usage_model_from_bpftool_show():
    info = info_from_show("v3_cilium_lb4_backends_v3.show.json")
    model = bpf.usage_model("/sys/fs/bpf/tc/globals/cilium_lb4_backends_v3", "/sys/fs/bpf", info, 9)
    assert model["max_entries"] == 1024 and model["ratio"] == round(9 / 1024, 4)
    assert model["pin"] == "tc/globals/cilium_lb4_backends_v3" and model["kernel_name"] == "cilium_lb4_back"
    array = dict(info, type="array")
    assert bpf.usage_model("/sys/fs/bpf/a", "/sys/fs/bpf", array, 1024)["ratio"] is None


def _model(name, entries, max_entries, kind="hash"):
    return {"name": name, "path": "/sys/fs/bpf/tc/globals/" + name, "type": kind, "entries": entries,
            "max_entries": max_entries, "ratio": round(entries / max_entries, 4)}


def test_pressure_findings_levels():
    models = [_model("cilium_lb4_backends_v2", 65536, 65536), _model("cilium_lb4_services_v2", 63000, 65536),
              _model("cilium_lb4_reverse_nat", 54000, 65536), _model("cilium_ct4_global", 524288, 524288, "lru_hash"),
              _model("cilium_lb4_affinity", 10, 65536)]
    found = {f["subject"].rsplit("/", 1)[1]: f for f in bpf.pressure_findings(models, 0.8, 0.95)}
    assert found["cilium_lb4_backends_v2"]["check"] == "bpf.map_full"
    assert found["cilium_lb4_backends_v2"]["severity"] == "critical"
    assert found["cilium_lb4_services_v2"]["severity"] == "critical"
    assert found["cilium_lb4_reverse_nat"]["severity"] == "warning"
    assert found["cilium_ct4_global"]["severity"] == "info"  # LRU evicts: reported, never cleaned
    assert "cilium_lb4_affinity" not in found
    assert "bpf-lb-map-max" in found["cilium_lb4_backends_v2"]["remediation"]


def test_pressure_ok_summary_when_nothing_is_full():
    found = bpf.pressure_findings([_model("m", 1, 100)], 0.8, 0.95, scope="/sys/fs/bpf")
    assert [(f["check"], f["severity"], f["subject"]) for f in found] == [("bpf.map_pressure", "ok", "/sys/fs/bpf")]


# ------------------------------------------------------------ the delete path, on an in-memory kernel
class MemoryKernel(object):
    """Answers bpf(2) *_ELEM calls from a dict of one map's keys; records every command."""

    def __init__(self, entries, refuse=None):
        self.entries = dict(entries)
        self.calls = []
        self.refuse = refuse  # errno for DELETE_ELEM

    def __call__(self, cmd, attr):
        import ctypes
        fd, key_ptr, out_ptr = struct.unpack_from("=I4xQQ", attr.raw, 0)
        key = ctypes.string_at(key_ptr, 4)
        self.calls.append((cmd, key))
        if cmd == bpf.BPF_MAP_DELETE_ELEM:
            if self.refuse:
                raise OSError(self.refuse, "Operation not permitted")
            if key not in self.entries:
                raise OSError(errno.ENOENT, "No such file or directory")
            del self.entries[key]
            return 0
        if cmd == bpf.BPF_MAP_LOOKUP_ELEM:
            if key not in self.entries:
                raise OSError(errno.ENOENT, "No such file or directory")
            ctypes.memmove(out_ptr, self.entries[key], len(self.entries[key]))
            return 0
        raise AssertionError("unexpected bpf command %d" % cmd)


def opened(kind="hash", write=True):
    bmap = bpf.BpfMap.__new__(bpf.BpfMap)
    bmap.path, bmap.write, bmap.fd = "/sys/fs/bpf/tc/globals/m", write, 1000  # never closed: no real fd
    bmap.info = {"type": kind, "id": 1, "key_size": 4, "value_size": 8, "max_entries": 16, "flags": 1, "kernel_name": "m"}
    return bmap


def test_delete_key_deletes_one_key_and_reports_a_gone_one(monkeypatch):
    kernel = MemoryKernel({b"\x01\0\0\0": b"a" * 8, b"\x02\0\0\0": b"b" * 8})
    monkeypatch.setattr(bpf, "sys_bpf", kernel)
    bmap = opened()
    assert bmap.lookup(b"\x01\0\0\0") == b"a" * 8
    assert bmap.delete_key(b"\x01\0\0\0") is True
    assert bmap.delete_key(b"\x01\0\0\0") is False  # already gone: not an error
    assert list(kernel.entries) == [b"\x02\0\0\0"]


@pytest.mark.parametrize("kind", ["lru_hash", "lru_percpu_hash"])
def test_delete_key_never_touches_an_lru_map(monkeypatch, kind):
    kernel = MemoryKernel({b"\x01\0\0\0": b"a" * 8})
    monkeypatch.setattr(bpf, "sys_bpf", kernel)
    with pytest.raises(ChangeError, match="never deletes from LRU maps"):
        opened(kind).delete_key(b"\x01\0\0\0")
    assert kernel.calls == [] and len(kernel.entries) == 1


def test_delete_key_refused_by_the_kernel_names_the_capability(monkeypatch):
    kernel = MemoryKernel({b"\x01\0\0\0": b"a" * 8}, refuse=errno.EPERM)
    monkeypatch.setattr(bpf, "sys_bpf", kernel)
    with pytest.raises(PrivilegeError, match="CAP_BPF"):
        opened().delete_key(b"\x01\0\0\0")
    with pytest.raises(ChangeError, match="opened read-only"):
        opened(write=False).delete_key(b"\x01\0\0\0")
