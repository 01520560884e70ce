# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pinned eBPF maps read and changed through the bpf(2) syscall (ctypes, standard library only).

Neither ``bpftool`` nor a compiled extension is needed on the node: the syscall is made
with ``libc.syscall`` and the ``union bpf_attr`` members are packed with ``struct``
(layouts: include/uapi/linux/bpf.h).

Readers:  ``is_bpffs``, ``find_pinned``, ``BpfMap`` (open, info, items, lookup).
Action:   ``BpfMap.delete_key`` (DELETE_ELEM, one key; never on LRU maps).
Checks:   ``usage_model`` and ``pressure_findings`` are pure.
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import os
import platform
import struct

from ansible_collections.k8snet.triage.plugins.module_utils.core import findings as fnd
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError, PrivilegeError, ReadError

# bpf(2) syscall numbers (libbpf src/bpf.c)
SYSCALL_NR = {
    "x86_64": 321, "amd64": 321, "aarch64": 280, "arm64": 280, "i386": 357, "i686": 357,
    "s390x": 351, "loongarch64": 280, "riscv64": 280,
}

# enum bpf_cmd
BPF_MAP_LOOKUP_ELEM = 1
BPF_MAP_DELETE_ELEM = 3
BPF_MAP_GET_NEXT_KEY = 4
BPF_OBJ_GET = 7
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_LOOKUP_BATCH = 24

BPF_F_RDONLY = 1 << 3
BPF_FS_MAGIC = 0xCAFE4A11
ENOTSUPP = 524  # kernel-internal errno that leaks out of bpf(2) for unsupported batch ops

# enum bpf_map_type, named as bpftool names them
MAP_TYPES = (
    "unspec", "hash", "array", "prog_array", "perf_event_array", "percpu_hash", "percpu_array",
    "stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash", "lpm_trie", "array_of_maps",
    "hash_of_maps", "devmap", "sockmap", "cpumap", "xskmap", "sockhash", "cgroup_storage",
    "reuseport_sockarray", "percpu_cgroup_storage", "queue", "stack", "sk_storage", "devmap_hash",
    "struct_ops", "ringbuf", "inode_storage", "task_storage", "bloom_filter", "user_ringbuf",
    "cgrp_storage", "arena",
)
PERCPU_TYPES = frozenset(("percpu_hash", "percpu_array", "lru_percpu_hash", "percpu_cgroup_storage"))
LRU_TYPES = frozenset(("lru_hash", "lru_percpu_hash"))
# Every slot exists from creation: "entries" is max_entries by construction, fill means nothing.
ARRAY_TYPES = frozenset((
    "array", "percpu_array", "prog_array", "perf_event_array", "cgroup_array", "array_of_maps",
    "devmap", "cpumap", "xskmap", "reuseport_sockarray",
))

# struct bpf_map_info, the fields we read (offsets in bytes)
MAP_INFO_SIZE = 104
_INFO_FIELDS = struct.Struct("=IIIIII16s")  # type, id, key_size, value_size, max_entries, map_flags, name

_NOT_SUPPORTED = (errno.EINVAL, errno.EOPNOTSUPP, ENOTSUPP)

_libc = None


def _syscall_nr():
    machine = platform.machine().lower()
    try:
        return SYSCALL_NR[machine]
    except KeyError:
        raise ReadError("the bpf(2) syscall number of architecture %r is not known; supported: %s"
                        % (machine, ", ".join(sorted(SYSCALL_NR))))


def _libc_handle():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        libc.statfs.restype = ctypes.c_int
        _libc = libc
    return _libc


_NR = []


def sys_bpf(cmd, attr):
    """bpf(cmd, attr, sizeof attr); ``attr`` is a ctypes buffer.  Returns the result or raises OSError."""
    libc = _libc_handle()
    if not _NR:
        _NR.append(_syscall_nr())
    ret = libc.syscall(ctypes.c_long(_NR[0]), ctypes.c_int(cmd), ctypes.byref(attr), ctypes.c_uint(len(attr)))
    if ret < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code) if code != ENOTSUPP else "Operation not supported")
    return ret


def _addr(buf):
    return ctypes.addressof(buf) if buf is not None else 0


def is_bpffs(path):
    """True when ``path`` is on a bpf filesystem (statfs f_type == BPF_FS_MAGIC)."""
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if _libc_handle().statfs(os.fsencode(path), buf) != 0:
        return False
    # f_type is the first member (a C long) on every Linux ABI
    f_type = struct.unpack_from("l" if ctypes.sizeof(ctypes.c_long) == 8 else "i", buf.raw, 0)[0]
    return (f_type & 0xFFFFFFFF) == BPF_FS_MAGIC


def _privilege_error(action, path, exc):
    return PrivilegeError(
        "%s %s was refused by the kernel (%s) for uid %d: the bpf(2) syscall needs CAP_BPF (CAP_SYS_ADMIN before "
        "Linux 5.8) and read/write access to the pin; run the module as root (become: true)"
        % (action, path, exc.strerror, os.geteuid()), pin=path, errno=exc.errno)


class NotAMap(InputError):
    """The pin exists but holds a program, a link or a bpffs file, not a map."""


class BpfMap(object):
    """One pinned map, opened read-only (the default) or read-write."""

    def __init__(self, path, write=False):
        self.path = path
        self.write = write
        self.fd = -1
        attr = ctypes.create_string_buffer(20)
        pathname = ctypes.create_string_buffer(os.fsencode(path))
        struct.pack_into("=QII", attr, 0, _addr(pathname), 0, 0 if write else BPF_F_RDONLY)
        try:
            self.fd = sys_bpf(BPF_OBJ_GET, attr)
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.EACCES):
                raise _privilege_error("opening the pinned map", path, exc)
            if exc.errno == errno.ENOENT and not os.path.lexists(path):
                raise InputError("%s does not exist: name a map pinned under the bpf filesystem" % path, pin=path)
            if exc.errno in (errno.ENOENT, errno.EINVAL, errno.EBADF):
                raise NotAMap("%s is not a pinned bpf object (%s)" % (path, exc.strerror), pin=path)
            raise ReadError("opening %s with bpf(BPF_OBJ_GET) failed: %s" % (path, exc.strerror), pin=path)
        try:
            kind = os.readlink("/proc/self/fd/%d" % self.fd)
        except OSError:
            kind = "anon_inode:bpf-map"
        if kind != "anon_inode:bpf-map":
            self.close()
            raise NotAMap("%s is pinned but is not a map (%s)" % (path, kind.split(":")[-1]), pin=path)
        self.info = self._read_info()

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ info
    def _read_info(self):
        info = ctypes.create_string_buffer(MAP_INFO_SIZE)
        attr = ctypes.create_string_buffer(16)
        struct.pack_into("=IIQ", attr, 0, self.fd, MAP_INFO_SIZE, _addr(info))
        try:
            sys_bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.EACCES):
                raise _privilege_error("reading the map info of", self.path, exc)
            raise ReadError("reading the map info of %s failed: %s" % (self.path, exc.strerror), pin=self.path)
        mtype, map_id, key_size, value_size, max_entries, flags, name = _INFO_FIELDS.unpack_from(info.raw, 0)
        type_name = MAP_TYPES[mtype] if mtype < len(MAP_TYPES) else "type_%d" % mtype
        return {
            "type": type_name, "id": map_id, "key_size": key_size, "value_size": value_size,
            "max_entries": max_entries, "flags": flags,
            "kernel_name": name.split(b"\0", 1)[0].decode("ascii", "replace"),
        }

    @property
    def frozen(self):
        """True after BPF_MAP_FREEZE (`bpftool map freeze`): user space can no longer write or delete."""
        try:
            with open("/proc/self/fdinfo/%d" % self.fd) as handle:
                for line in handle:
                    if line.startswith("frozen:"):
                        return line.split(":", 1)[1].strip() == "1"
        except (IOError, OSError):
            pass
        return False

    @property
    def key_size(self):
        return self.info["key_size"]

    @property
    def value_buf_size(self):
        """Bytes one value takes in a lookup buffer (per-CPU maps hold one 8-aligned value per possible CPU)."""
        size = self.info["value_size"]
        if self.info["type"] in PERCPU_TYPES:
            size = ((size + 7) // 8 * 8) * possible_cpus()
        return size

    # --------------------------------------------------------------- reading
    def items(self, chunk=4096):
        """Every (key, value) as bytes: LOOKUP_BATCH where the kernel has it, GET_NEXT_KEY otherwise."""
        return self._walk(chunk, collect=True)

    def count(self, chunk=4096):
        """The number of entries, counted in the kernel without keeping them (CT maps hold 512Ki)."""
        return self._walk(chunk, collect=False)

    def _walk(self, chunk, collect):
        try:
            return self._batch(chunk, collect)
        except OSError as exc:
            if exc.errno not in _NOT_SUPPORTED:
                raise self._read_error("batch lookup", exc)
        try:
            if collect:
                return self._items_next_key()
            total, key = 0, self.next_key(None)
            while key is not None:
                total += 1
                key = self.next_key(key)
            return total
        except OSError as exc:
            raise self._read_error("iterating", exc)

    def _read_error(self, what, exc):
        if exc.errno in (errno.EPERM, errno.EACCES):
            return _privilege_error(what, self.path, exc)
        return ReadError("%s %s failed: %s" % (what, self.path, exc.strerror), pin=self.path, errno=exc.errno)

    def _batch(self, chunk, collect):
        ksize, vsize = self.key_size, self.value_buf_size
        token_size = max(ksize, 8)
        tokens = [ctypes.create_string_buffer(token_size), ctypes.create_string_buffer(token_size)]
        out = []
        total = 0
        first = True
        while True:
            keys = ctypes.create_string_buffer(ksize * chunk)
            values = ctypes.create_string_buffer(max(vsize, 1) * chunk)
            attr = ctypes.create_string_buffer(56)
            in_batch = 0 if first else _addr(tokens[0])
            struct.pack_into("=QQQQIIQQ", attr, 0, in_batch, _addr(tokens[1]), _addr(keys), _addr(values),
                             chunk, self.fd, 0, 0)
            done = False
            try:
                sys_bpf(BPF_MAP_LOOKUP_BATCH, attr)
            except OSError as exc:
                if exc.errno == errno.ENOSPC and chunk < (1 << 20):
                    chunk *= 4  # one hash bucket holds more than the buffers: grow them and retry
                    continue
                if exc.errno != errno.ENOENT:
                    raise
                done = True
            count = struct.unpack_from("=I", attr.raw, 32)[0]
            total += count
            if collect:
                kraw, vraw = keys.raw, values.raw
                for i in range(count):
                    out.append((kraw[i * ksize:(i + 1) * ksize], vraw[i * vsize:(i + 1) * vsize]))
            if done:
                return out if collect else total
            first = False
            ctypes.memmove(tokens[0], tokens[1], token_size)

    def _items_next_key(self):
        out = []
        key = None
        while True:
            nxt = self.next_key(key)
            if nxt is None:
                return out
            value = self.lookup(nxt)
            if value is not None:  # deleted between the two calls
                out.append((nxt, value))
            key = nxt

    def _elem(self, cmd, key, out=None):
        """One *_ELEM / GET_NEXT_KEY call (map_fd @0, key @8, value|next_key @16); False when the key is absent."""
        bufs = self.__dict__.get("_elem_bufs")
        if bufs is None:  # reused: a cleanup makes one lookup and one delete per key
            bufs = self.__dict__["_elem_bufs"] = (ctypes.create_string_buffer(self.key_size),
                                                  ctypes.create_string_buffer(32))
        kbuf, attr = bufs
        if key is not None:
            ctypes.memmove(kbuf, bytes(key[:self.key_size]).ljust(self.key_size, b"\0"), self.key_size)
        struct.pack_into("=I4xQQQ", attr, 0, self.fd, _addr(kbuf) if key is not None else 0, _addr(out), 0)
        try:
            sys_bpf(cmd, attr)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise
        return True

    def next_key(self, key):
        """The key after ``key`` (the first one for None); None at the end."""
        nbuf = ctypes.create_string_buffer(self.key_size)
        return nbuf.raw if self._elem(BPF_MAP_GET_NEXT_KEY, key, nbuf) else None

    def lookup(self, key):
        """The value stored under ``key`` (bytes), or None when the key is absent."""
        vbuf = ctypes.create_string_buffer(max(self.value_buf_size, 1))
        try:
            found = self._elem(BPF_MAP_LOOKUP_ELEM, key, vbuf)
        except OSError as exc:
            raise self._read_error("looking up a key in", exc)
        return vbuf.raw[:self.value_buf_size] if found else None

    # --------------------------------------------------------------- deleting
    def delete_key(self, key):
        """Delete one key (bytes) with BPF_MAP_DELETE_ELEM; True if deleted, False if it was already gone.

        Refused for read-only handles and for LRU maps (connection tracking, NAT: they evict by
        themselves, and deleting a live entry breaks its connection silently).
        """
        if not self.write:
            raise ChangeError("%s was opened read-only; nothing was deleted" % self.path, pin=self.path)
        if self.info["type"] in LRU_TYPES:
            raise ChangeError("%s is an LRU map (%s): this collection never deletes from LRU maps, they evict by "
                              "themselves; nothing was deleted from it" % (self.path, self.info["type"]), pin=self.path)
        try:
            return self._elem(BPF_MAP_DELETE_ELEM, key)
        except OSError as exc:
            raise self._change_error(exc)

    def _change_error(self, exc):
        if exc.errno in (errno.EPERM, errno.EACCES):
            return _privilege_error("deleting entries of", self.path, exc)
        return ChangeError("deleting entries of %s failed: %s" % (self.path, exc.strerror), pin=self.path,
                           errno=exc.errno)


def possible_cpus(path="/sys/devices/system/cpu/possible"):
    """Number of possible CPUs, from ranges like ``0-3,5``."""
    with open(path) as handle:
        text = handle.read().strip()
    return parse_cpu_ranges(text)


def parse_cpu_ranges(text):
    total = 0
    for part in text.split(","):
        if not part:
            continue
        low, _sep, high = part.partition("-")
        total += (int(high) if high else int(low)) - int(low) + 1
    return total


# ---------------------------------------------------------------- discovery
def check_bpffs(path):
    """Refuse anything that is not a directory on a bpf filesystem."""
    if not os.path.isdir(path):
        raise InputError("bpffs=%s is not a directory: give the mount point of the bpf filesystem "
                         "(usually /sys/fs/bpf, or /run/cilium/bpffs)" % path, pin=path)
    if not is_bpffs(path):
        raise InputError("bpffs=%s is not a bpf filesystem (statfs type is not BPF_FS_MAGIC): give the mount "
                         "point of the bpf filesystem (usually /sys/fs/bpf; `mount -t bpf` lists them)" % path,
                         pin=path)
    if not os.access(path, os.R_OK | os.X_OK):
        raise PrivilegeError("bpffs=%s cannot be listed by uid %d (permission denied): reading pinned maps needs root, "
                             "or CAP_BPF (CAP_SYS_ADMIN before Linux 5.8) and access to the pins; run the module "
                             "with become: true" % (path, os.geteuid()), pin=path)


def _has_glob(pattern):
    return any(c in pattern for c in "*?[")


def find_pinned(bpffs, patterns=None):
    """Pinned files under ``bpffs`` matching ``patterns`` (relative paths or basenames, globs allowed).

    Returns (matches, unmatched_globs): sorted absolute paths, and the globs that matched nothing.
    A literal name that matches nothing raises InputError.
    """
    pinned = []
    for root, dirs, files in os.walk(bpffs):
        dirs.sort()
        for name in sorted(files):
            pinned.append(os.path.join(root, name))
    if not patterns:
        return pinned, []
    selected = []
    unmatched = []
    for pattern in patterns:
        pattern = pattern.strip("/")
        hits = [p for p in pinned
                if fnmatch.fnmatchcase(os.path.relpath(p, bpffs), pattern)
                or ("/" not in pattern and fnmatch.fnmatchcase(os.path.basename(p), pattern))]
        if not hits:
            if _has_glob(pattern):
                unmatched.append(pattern)
                continue
            raise InputError("no map named %s is pinned under %s (searched %d pinned objects): check the name, "
                             "or use a glob" % (pattern, bpffs, len(pinned)), pin=os.path.join(bpffs, pattern))
        selected.extend(h for h in hits if h not in selected)
    return sorted(selected), unmatched


def read_map(path, bpffs, with_items=False):
    """Open one pinned map read-only: its usage model, plus its items when asked."""
    with BpfMap(path) as bmap:
        info = dict(bmap.info)
        items = entries = error = None
        try:
            if with_items:
                items = bmap.items()
                entries = len(items)
            else:
                entries = bmap.count()
        except ReadError as exc:
            if exc.details.get("errno") not in _NOT_SUPPORTED:
                raise
            error = "this map type cannot be iterated"
    model = usage_model(path, bpffs, info, entries)
    if error:
        model["note"] = error
    return model, (items if with_items else None)


# -------------------------------------------------------------------- checks
def usage_model(path, bpffs, info, entries):
    """One item of the ``maps`` result (pure)."""
    ratio = None
    fillable = info["type"] not in ARRAY_TYPES
    if entries is not None and info["max_entries"] and fillable:
        ratio = round(float(entries) / info["max_entries"], 4)
    return {
        "name": os.path.basename(path),
        "path": path,
        "pin": os.path.relpath(path, bpffs),
        "type": info["type"],
        "id": info["id"],
        "kernel_name": info["kernel_name"],
        "key_size": info["key_size"],
        "value_size": info["value_size"],
        "flags": info["flags"],
        "entries": entries,
        "max_entries": info["max_entries"],
        "ratio": ratio,
    }


def pressure_findings(models, warn_ratio, critical_ratio, scope="bpffs"):
    """bpf.map_full / bpf.map_pressure findings, and one ok summary when nothing is under pressure (pure)."""
    out = []
    for m in models:
        ratio = m.get("ratio")
        if ratio is None or ratio < warn_ratio:
            continue
        subject = m["path"]
        evidence = {"entries": m["entries"], "max_entries": m["max_entries"], "ratio": ratio, "type": m["type"]}
        lb = m["name"].startswith("cilium_lb")
        resize = ("raise bpf-lb-map-max (cilium-config) and restart the agent, or remove stale entries with "
                  "k8snet.triage.bpf_map_usage cleanup=orphans / cleanup=stale" if lb else
                  "raise the map size in the owner's configuration")
        if m["type"] in LRU_TYPES:
            out.append(fnd.finding(
                "bpf.map_pressure", "info", "L4", subject,
                "LRU map %s holds %d of %d entries (%.0f%%); it evicts the oldest entries instead of failing"
                % (m["name"], m["entries"], m["max_entries"], ratio * 100), evidence,
                "nothing to clean: LRU maps evict by themselves; if connections are dropped, size it with "
                "bpf-ct-global-*-max / bpf-map-dynamic-size-ratio"))
        elif m["entries"] >= m["max_entries"]:
            out.append(fnd.finding(
                "bpf.map_full", "critical", "L4", subject,
                "map %s is full: %d of %d entries, every new insert fails with E2BIG (\"the map is full\")"
                % (m["name"], m["entries"], m["max_entries"]), evidence, resize))
        else:
            severity = "critical" if ratio >= critical_ratio else "warning"
            out.append(fnd.finding(
                "bpf.map_pressure", severity, "L4", subject,
                "map %s is %.1f%% full (%d of %d entries)" % (m["name"], ratio * 100, m["entries"], m["max_entries"]),
                evidence, resize))
    if not out:
        counted = [m for m in models if m.get("ratio") is not None]
        top = sorted(counted, key=lambda m: -m["ratio"])[:3]
        out.append(fnd.finding(
            "bpf.map_pressure", "ok", "L4", scope,
            "%d maps read, none at or above %.0f%% of max_entries" % (len(models), warn_ratio * 100),
            {"maps": len(models), "fullest": [{"name": m["name"], "ratio": m["ratio"]} for m in top]}))
    return out
