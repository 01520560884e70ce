"""eBPF map scenario: Cilium load-balancer maps on each node's own bpffs.

Maps are made with ``bpftool map create`` under Cilium's pin names and layouts
(/sys/fs/bpf/tc/globals/cilium_lb4_*) inside the node's mount namespace (the one its
sshd sees), and filled with ``bpftool batch file`` (65536 entries in about a second).
The byte layouts are written here with ``struct`` on their own, independently of the
collection's decoders, from cilium/cilium bpf/lib/common.h:

  lb4_key      be32 address, be16 dport, u16 backend_slot, u8 proto, u8 scope, u8 pad[2]
  lb4_service  u32 backend_id|affinity, u16 count, be16 rev_nat_index, u8 flags, u8 flags2, u16 qcount
  lb4_backend  be32 address, be16 port, u8 proto, u8 flags [, u16 cluster_id, u8 zone, u8 pad] (v3)
  revnat       key be16 rev_nat_index; value be32 address, be16 port

Service IDs and backend IDs are numbered so that an injected orphan, dangling slot or
stale frontend is known exactly and can be asserted against ``bpftool`` dumps.
"""

from __future__ import annotations

import ipaddress
import json
import re
import struct

from . import fault

GLOBALS = "/sys/fs/bpf/tc/globals"
SERVICES = "cilium_lb4_services_v2"
BACKENDS = {"v1": "cilium_lb4_backends", "v2": "cilium_lb4_backends_v2", "v3": "cilium_lb4_backends_v3"}
REVNAT = "cilium_lb4_reverse_nat"
CT = "cilium_ct4_global"
PROTO = {"TCP": 6, "UDP": 17, "SCTP": 132, "ANY": 0}
ORPHAN_BASE = 1_000_000  # backend IDs of injected orphans start here
DANGLING_BASE = 2_000_000  # backend IDs that dangling slots point at (never created)
STALE_REVNAT_BASE = 30_000  # rev_nat indexes of injected orphan reverse-NAT entries


def _hex(data):
    return " ".join("%02x" % b for b in data)


def svc_key(address, port, slot, proto=6, scope=0):
    return ipaddress.IPv4Address(address).packed + struct.pack(">H", port) + struct.pack("<H", slot) + bytes([proto, scope, 0, 0])


def svc_value(backend_id=0, count=0, rev_nat=0, flags=0):
    return struct.pack("<IH", backend_id, count) + struct.pack(">H", rev_nat) + bytes([flags, 0, 0, 0])


def backend_key(backend_id, version):
    return struct.pack("<H", backend_id) if version == "v1" else struct.pack("<I", backend_id)


def backend_value(address, port, version, proto=6):
    value = ipaddress.IPv4Address(address).packed + struct.pack(">H", port) + bytes([proto, 0])
    return value + (b"\0" * 4 if version == "v3" else b"")


def revnat_key(index):
    return struct.pack(">H", index)


def revnat_value(address, port):
    return ipaddress.IPv4Address(address).packed + struct.pack(">H", port)


def path(name, directory=GLOBALS):
    return f"{directory}/{name}"


def _create(lab, node, name, kind, key, value, entries, directory=GLOBALS, flags=1):
    pin = path(name, directory)
    lab.node_run(node, ["mkdir", "-p", directory])
    lab.node_run(node, ["rm", "-f", pin])
    lab.node_run(node, ["bpftool", "map", "create", pin, "type", kind, "key", key, "value", value,
                        "entries", entries, "name", name[:15], "flags", flags])
    return pin


def _fill(lab, node, pin, pairs):
    """Write (key, value) byte pairs with one `bpftool batch file` run."""
    if not pairs:
        return 0
    batch = lab.workdir / f"bpf-batch-{lab.node(node).name}.txt"
    with open(batch, "w") as handle:
        for key, value in pairs:
            handle.write(f"map update pinned {pin} key hex {_hex(key)} value hex {_hex(value)}\n")
    lab.node_run(node, ["bpftool", "batch", "file", batch], timeout=600)
    batch.unlink()
    return len(pairs)


def _service_vip(lab, index):
    return str(lab.service_network[20 + index])


def _backend_ip(lab, node, n):
    """The n-th backend address of ``node``'s pod CIDR (cycling over it; a small CIDR in a large lab too)."""
    pods = ipaddress.ip_network(lab.node(node).pod_cidr)
    return str(pods[2 + n % min(250, pods.num_addresses - 3)])


def frontend(lab, index, port=80, proto="TCP"):
    """The ``ip:port/proto`` of lab service ``index`` (what Kubernetes would list)."""
    return f"{_service_vip(lab, index)}:{port}/{proto}"


@fault
def cilium_lb_maps(lab, node, services=4, backends_per_service=3, version="v3", max_entries=65536,
                   orphans=0, dangling=0, orphan_revnat=0, fill=None, directory=GLOBALS):
    """Create Cilium's LB maps on ``node`` with ``services`` frontends and their backends, plus faults.

    ``orphans`` backends no slot references, ``dangling`` slots (on one extra service)
    pointing at backend IDs that do not exist, ``orphan_revnat`` reverse-NAT entries no
    service uses.  ``fill`` (0..1) sets the backends map's fill level instead of
    ``orphans``: the entries above the live backends are orphans.  Backends are numbered
    1..services*backends_per_service.
    """
    services, per, orphans, dangling = int(services), int(backends_per_service), int(orphans), int(dangling)
    orphan_revnat, max_entries = int(orphan_revnat), int(max_entries)
    if fill is not None:
        orphans = max(int(float(fill) * max_entries) - services * per, 0)
    vsize = 12 if version == "v3" else 8
    ksize = 2 if version == "v1" else 4
    svc_pin = _create(lab, node, SERVICES, "hash", 12, 12, max_entries, directory)
    be_pin = _create(lab, node, BACKENDS[version], "hash", ksize, vsize, max_entries, directory)
    rn_pin = _create(lab, node, REVNAT, "hash", 2, 6, max_entries, directory)
    svc, backends, revnat = [], [], []
    backend_id = 0
    for s in range(1, services + 1):
        vip = _service_vip(lab, s)
        svc.append((svc_key(vip, 80, 0), svc_value(0, per, s)))
        revnat.append((revnat_key(s), revnat_value(vip, 80)))
        for slot in range(1, per + 1):
            backend_id += 1
            svc.append((svc_key(vip, 80, slot), svc_value(backend_id, 0, s)))
            backends.append((backend_key(backend_id, version), backend_value(_backend_ip(lab, node, backend_id), 8080, version)))
    live_ids = backend_id
    for o in range(orphans):
        oid = (ORPHAN_BASE + o) if version != "v1" else (65536 - orphans + o)  # u16 IDs: the top of the range
        backends.append((backend_key(oid, version), backend_value(_backend_ip(lab, node, o), 9090, version)))
    dangling_service = None
    if dangling:
        s = services + 1
        vip = _service_vip(lab, s)
        dangling_service = f"{vip}:80/TCP"
        svc.append((svc_key(vip, 80, 0), svc_value(0, dangling, s)))
        revnat.append((revnat_key(s), revnat_value(vip, 80)))
        for slot in range(1, dangling + 1):
            did = (DANGLING_BASE + slot) if version != "v1" else (live_ids + slot)
            svc.append((svc_key(vip, 80, slot), svc_value(did, 0, s)))
    for r in range(orphan_revnat):
        revnat.append((revnat_key(STALE_REVNAT_BASE + r), revnat_value(_service_vip(lab, 900 + r), 443)))
    _fill(lab, node, svc_pin, svc)
    _fill(lab, node, be_pin, backends)
    _fill(lab, node, rn_pin, revnat)
    info = {"node": lab.node(node).name, "services": svc_pin, "backends": be_pin, "reverse_nat": rn_pin,
            "frontends": [frontend(lab, s) for s in range(1, services + 1)], "live_backends": live_ids,
            "orphans": orphans, "dangling": dangling, "dangling_service": dangling_service,
            "orphan_revnat": orphan_revnat, "service_entries": len(svc), "backend_entries": len(backends),
            "revnat_entries": len(revnat), "version": version}
    return info


@fault
def lb_frontends(lab, node, frontends, backends_per_service=2, directory=GLOBALS):
    """Cilium LB maps (v3 backends) holding exactly ``frontends`` (``ip:port/proto`` texts), each with its slots.

    Frontend n (1-based, in the order given) gets rev_nat index n, ``backends_per_service``
    slots and backends numbered from (n - 1) * backends_per_service + 1.  Returns the keys of
    each frontend's services entries, backends and reverse-NAT entry, for exact bpftool checks.
    """
    per = int(backends_per_service)
    svc_pin = _create(lab, node, SERVICES, "hash", 12, 12, 65536, directory)
    be_pin = _create(lab, node, BACKENDS["v3"], "hash", 4, 12, 65536, directory)
    rn_pin = _create(lab, node, REVNAT, "hash", 2, 6, 65536, directory)
    svc, backends, revnat, keys = [], [], [], {}
    for n, text in enumerate(frontends, 1):
        hostport, _sep, proto = text.partition("/")
        address, _sep, port = hostport.rpartition(":")
        proto, port = PROTO[proto or "TCP"], int(port)
        entry = {"services": [svc_key(address, port, 0, proto)], "backends": [], "reverse_nat": [revnat_key(n)]}
        svc.append((entry["services"][0], svc_value(0, per, n)))
        revnat.append((revnat_key(n), revnat_value(address, port)))
        for slot in range(1, per + 1):
            backend_id = (n - 1) * per + slot
            entry["services"].append(svc_key(address, port, slot, proto))
            entry["backends"].append(backend_key(backend_id, "v3"))
            svc.append((entry["services"][-1], svc_value(backend_id, 0, n)))
            backends.append((entry["backends"][-1], backend_value(_backend_ip(lab, node, backend_id), 8080, "v3")))
        keys[text] = entry
    _fill(lab, node, svc_pin, svc)
    _fill(lab, node, be_pin, backends)
    _fill(lab, node, rn_pin, revnat)
    return {"node": lab.node(node).name, "services": svc_pin, "backends": be_pin, "reverse_nat": rn_pin,
            "frontends": list(frontends), "keys": keys}


@fault
def full_map(lab, node, name="cilium_lb4_backends_v2", entries=1024, directory=GLOBALS):
    """A backends map (u32 key, 8-byte value) of ``entries`` max_entries, filled to the last slot."""
    entries = int(entries)
    pin = _create(lab, node, name, "hash", 4, 8, entries, directory)
    _fill(lab, node, pin, [(backend_key(i, "v2"), backend_value(_backend_ip(lab, node, i), 80, "v2"))
                           for i in range(1, entries + 1)])
    return {"node": lab.node(node).name, "path": pin, "entries": entries, "max_entries": entries}


@fault
def ct_map(lab, node, entries=100, max_entries=4096, directory=GLOBALS):
    """A connection-tracking LRU map (14-byte tuple key, 56-byte value) with ``entries`` entries."""
    entries, max_entries = int(entries), int(max_entries)
    pin = _create(lab, node, CT, "lru_hash", 14, 56, max_entries, directory, flags=0)
    pairs = []
    for i in range(entries):
        key = ipaddress.IPv4Address(_service_vip(lab, 1)).packed + ipaddress.IPv4Address(_backend_ip(lab, node, i)).packed
        key += struct.pack(">HH", 80, 10000 + i) + bytes([6, 0])
        pairs.append((key, bytes(56)))
    _fill(lab, node, pin, pairs)
    return {"node": lab.node(node).name, "path": pin, "entries": entries, "max_entries": max_entries}


@fault
def other_maps(lab, node, directory=GLOBALS):
    """Maps of other types Cilium pins: an LPM trie (no batch lookup: read by GET_NEXT_KEY) and a per-CPU hash."""
    # cilium_lb4_source_range: LPM_TRIE, key {u32 prefixlen, u16 rev_nat_id, u16 pad, be32 addr}, u8 value
    lpm = _create(lab, node, "cilium_lb4_source_range", "lpm_trie", 12, 1, 1024, directory)
    ranges = [(struct.pack("=IHH", 32 + 24, 1 + i % 3, 0) + bytes([198, 18, i, 0]), b"\x01") for i in range(40)]
    _fill(lab, node, lpm, ranges)
    # cilium_metrics: PERCPU_HASH, key 8 bytes, value 16 bytes per CPU
    metrics = _create(lab, node, "cilium_metrics", "percpu_hash", 8, 16, 1024, directory, flags=0)
    _fill(lab, node, metrics, [(struct.pack("=BBHI", 1, i, 0, 0), bytes(16)) for i in range(1, 31)])
    return {"node": lab.node(node).name, "lpm": lpm, "lpm_entries": 40, "percpu": metrics, "percpu_entries": 30}


@fault
def freeze_map(lab, node, name="cilium_lb4_backends_v3", directory=GLOBALS):
    """Freeze a pinned map (`bpftool map freeze`): from then on user space cannot change it."""
    pin = path(name, directory)
    lab.node_run(node, ["bpftool", "map", "freeze", "pinned", pin])
    return {"node": lab.node(node).name, "path": pin}


@fault
def remove_bpf_maps(lab, node):
    """Remove every pinned object under the node's /sys/fs/bpf (the node's own bpffs).

    The kernel's own iterator files (maps.debug, progs.debug) cannot be removed and stay."""
    lab.node_run(node, ["find", "/sys/fs/bpf", "-mindepth", "1", "-not", "-name", "*.debug", "-delete"])
    return {"node": lab.node(node).name}


# ------------------------------------------------------- independent readers
def bpftool_count(lab, node, pin):
    """Entry count as `bpftool map dump` prints it (`Found N elements`)."""
    out = lab.node_run(node, ["bpftool", "map", "dump", "pinned", pin], timeout=300).stdout
    match = re.search(r"Found (\d+) elements?", out)
    if not match:
        raise AssertionError(f"no element count in bpftool output for {pin}: {out[-300:]}")
    return int(match.group(1))


def bpftool_entries(lab, node, pin):
    """{key bytes: value bytes} from `bpftool -j map dump`."""
    dump = json.loads(lab.node_run(node, ["bpftool", "-j", "map", "dump", "pinned", pin], timeout=300).stdout or "[]")
    return {bytes(int(b, 16) for b in e["key"]): bytes(int(b, 16) for b in e["value"]) for e in dump}


def bpftool_show(lab, node, pin):
    return json.loads(lab.node_run(node, ["bpftool", "-j", "map", "show", "pinned", pin]).stdout)
