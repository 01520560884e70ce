# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cilium's IPv4 load-balancer maps: decoders, checks, a cleanup plan and its safe execution.

Layouts (cilium/cilium bpf/lib/common.h; byte order per pkg/loadbalancer/maps ToNetwork()):

  cilium_lb4_services_v2   key  lb4_key      be32 address, be16 dport, u16 backend_slot (host),
                                             u8 proto (0 = ANY), u8 scope, u8 pad[2]          12 B
                           value lb4_service u32 backend_id (slot > 0), u16 count (slot 0),
                                             be16 rev_nat_index, u8 flags, u8 flags2, u16 qcount 12 B
  cilium_lb4_backends      key u16 id, value be32 address, be16 port, u8 proto, u8 flags       (v1)
  cilium_lb4_backends_v2   key u32 id, same 8-byte value                                       (v2)
  cilium_lb4_backends_v3   key u32 id, 12-byte value (adds cluster id)                         (v3)
  cilium_lb4_reverse_nat   key be16 rev_nat_index, value be32 address, be16 port               (6 B)

Offline orphan rule (what the agent's own deleteOrphanBackends does): a backend is an
orphan when no services entry with backend_slot > 0 holds its ID.  A reverse-NAT entry
is an orphan when no frontend (slot 0) carries its index.

Pure: decode_*, analyze, summaries, lb_findings, plan_cleanup, parse_frontend.
Reader/action: read_group, apply_cleanup (re-reads the maps just before deleting).
"""

from __future__ import annotations

import ipaddress
import os
import struct

from ansible_collections.k8snet.triage.plugins.module_utils import bpf
from ansible_collections.k8snet.triage.plugins.module_utils import frontends
from ansible_collections.k8snet.triage.plugins.module_utils import findings as fnd
from ansible_collections.k8snet.triage.plugins.module_utils.errors import ChangeError, InputError, TriageError

SERVICES = "services"
BACKENDS = "backends"
REVNAT = "reverse_nat"

# pin name: (role, backend version, key size, value size)
LB_MAPS = {
    "cilium_lb4_services_v2": (SERVICES, None, 12, 12),
    "cilium_lb4_backends_v3": (BACKENDS, "v3", 4, 12),
    "cilium_lb4_backends_v2": (BACKENDS, "v2", 4, 8),
    "cilium_lb4_backends": (BACKENDS, "v1", 2, 8),
    "cilium_lb4_reverse_nat": (REVNAT, None, 2, 6),
}
# the datapath looks backends up in the newest map present
BACKEND_PREFERENCE = ("v3", "v2", "v1")
CLEANUP_MODES = ("none", "orphans", "stale")
MAX_ORPHAN_SHARE = 0.95

EXAMPLES = 5


# ------------------------------------------------------------------ decoders
proto_name = frontends.proto_name
frontend_text = frontends.text
parse_frontend = frontends.parse


def decode_service_key(raw):
    address, port = raw[0:4], struct.unpack(">H", raw[4:6])[0]
    slot = struct.unpack("=H", raw[6:8])[0]
    return {"address": str(ipaddress.IPv4Address(address)), "port": port, "slot": slot,
            "proto": raw[8], "scope": raw[9]}


def decode_service_value(raw):
    backend_id, count = struct.unpack("=IH", raw[0:6])
    rev_nat = struct.unpack(">H", raw[6:8])[0]
    return {"backend_id": backend_id, "count": count, "rev_nat_index": rev_nat, "flags": raw[8], "flags2": raw[9]}


def decode_backend_key(raw):
    return struct.unpack("=H" if len(raw) == 2 else "=I", raw)[0]


def decode_backend_value(raw):
    return {"address": str(ipaddress.IPv4Address(raw[0:4])), "port": struct.unpack(">H", raw[4:6])[0],
            "proto": raw[6], "state": raw[7]}


def decode_revnat_key(raw):
    return struct.unpack(">H", raw)[0]


def decode_revnat_value(raw):
    return {"address": str(ipaddress.IPv4Address(raw[0:4])), "port": struct.unpack(">H", raw[4:6])[0]}


# ------------------------------------------------------------------ analysis
def layout_ok(name, info):
    """Whether a pinned map has the type and sizes this module decodes for its Cilium name."""
    _role, _version, ksize, vsize = LB_MAPS[name]
    return info["type"] == "hash" and info["key_size"] == ksize and info["value_size"] == vsize


def _split_services(services):
    """(masters {(frontend, scope): entry}, slots [entry]) of a services map's items: slot 0 is the frontend."""
    masters, slots = {}, []
    for key, value in services or []:
        k, v = decode_service_key(key), decode_service_value(value)
        fe = (k["address"], k["port"], k["proto"])
        if k["slot"] == 0:
            masters[(fe, k["scope"])] = {"key": key, "value": value, "k": k, "v": v}
        else:
            slots.append({"key": key, "value": value, "k": k, "v": v, "fe": fe})
    return masters, slots


def _by_backend_id(items):
    """{backend id: (key, value)} of one backends map's items."""
    entries = {}
    for key, value in items:
        entries[decode_backend_key(key)] = (key, value)
    return entries


def _slot_problems(slots, masters, active_entries):
    """(dangling, headless, beyond, present): slots whose backend is not in ``active_entries`` (the active backends
    map; None: not checked), slots with no frontend, slots beyond their frontend's count, and the number of slots
    each frontend has."""
    dangling, headless, beyond = [], [], []
    present = {}
    for s in slots:
        master = masters.get((s["fe"], s["k"]["scope"]))
        if master is None:
            headless.append(s)
        else:
            present[(s["fe"], s["k"]["scope"])] = present.get((s["fe"], s["k"]["scope"]), 0) + 1
            if s["k"]["slot"] > master["v"]["count"]:
                beyond.append(s)
        if active_entries is not None and s["v"]["backend_id"] not in active_entries:
            dangling.append(s)
    return dangling, headless, beyond, present


def _count_mismatch(masters, present):
    """(frontend, scope, count, slots present) of every frontend whose count disagrees with its slots."""
    return sorted(
        (frontend_text(*fe), scope, m["v"]["count"], present.get((fe, scope), 0))
        for (fe, scope), m in masters.items()
        if not (m["v"]["flags2"] & 0x4) and m["v"]["count"] != present.get((fe, scope), 0))


def _revnat_model(revnat, services_read, masters):
    """(entries {index: (key, value)}, orphan indexes, frontends without an entry) of the reverse-NAT map; the
    last two only when the services map was read."""
    entries, orphans, missing = {}, [], []
    if revnat is None:
        return entries, orphans, missing
    for key, value in revnat:
        entries[decode_revnat_key(key)] = (key, value)
    if services_read:
        used_revnat = set(m["v"]["rev_nat_index"] for m in masters.values())
        orphans = sorted(i for i in entries if i not in used_revnat)
        missing = sorted(set(
            frontend_text(*fe) for (fe, _s), m in masters.items() if m["v"]["rev_nat_index"] not in entries))
    return entries, orphans, missing


def _stale_frontends(known, live):
    """The frontends of ``known`` that ``live`` (parsed frontends or LiveFrontends; None: not given) lacks."""
    if live is None:
        return []
    index = live if isinstance(live, frontends.LiveFrontends) else frontends.LiveFrontends(live)
    return [fe for fe in known if fe not in index]


def analyze(services, backends, revnat, live=None):
    """Cross-check the LB maps of one directory (pure).

    ``services``: list of (key, value) bytes or None when the map is absent; ``backends``:
    {version: list of (key, value)}; ``revnat``: list or None; ``live``: set of parsed
    frontends or None.  Returns a model with everything the checks and the plan need.
    """
    model = {"services_present": services is not None, "backends_present": sorted(backends),
             "revnat_present": revnat is not None, "live_given": live is not None}
    masters, slots = _split_services(services)
    referenced = set(s["v"]["backend_id"] for s in slots)
    model["frontends"] = sorted(set(fe for fe, _scope in masters))
    model["masters"] = masters
    model["slots"] = slots

    active = next((ver for ver in BACKEND_PREFERENCE if ver in backends), None)
    model["active_backends"] = active
    backend_maps = dict((version, _by_backend_id(items)) for version, items in backends.items())
    model["backend_maps"] = backend_maps

    # backends no slot references (only provable when the services map was read)
    model["orphan_backends"] = {}
    if services is not None:
        for version, entries in backend_maps.items():
            model["orphan_backends"][version] = sorted(i for i in entries if i not in referenced)

    # slots pointing at backends the datapath cannot find, slots with no frontend, counts that disagree
    dangling, headless, beyond, present = _slot_problems(slots, masters,
                                                         None if active is None else backend_maps[active])
    model["dangling_slots"] = dangling
    model["headless_slots"] = headless
    model["slots_beyond_count"] = beyond
    model["count_mismatch"] = _count_mismatch(masters, present)

    model["revnat"], model["orphan_revnat"], model["missing_revnat"] = _revnat_model(
        revnat, services is not None, masters)
    model["stale_frontends"] = _stale_frontends(model["frontends"], live)
    return model


def _backend_text(backend_id, value):
    b = decode_backend_value(value)
    return "%d -> %s" % (backend_id, frontend_text(b["address"], b["port"], b["proto"]))


def _slot_text(s):
    return "%s slot %d -> backend %d" % (frontend_text(*s["fe"]), s["k"]["slot"], s["v"]["backend_id"])


def _revnat_text(index, value):
    r = decode_revnat_value(value)
    return "%d -> %s:%d" % (index, r["address"], r["port"])


def summaries(model):
    """Per-role decoded summaries, with a few examples, never whole maps (pure)."""
    out = {}
    if model["services_present"]:
        out[SERVICES] = {
            "role": SERVICES,
            "frontends": len(model["frontends"]),
            "backend_slots": len(model["slots"]),
            "dangling_slots": len(model["dangling_slots"]),
            "slots_without_frontend": len(model["headless_slots"]),
            "count_mismatches": len(model["count_mismatch"]),
            "stale_frontends": len(model["stale_frontends"]) if model["live_given"] else None,
            "examples": {
                "frontends": [frontend_text(*fe) for fe in model["frontends"][:EXAMPLES]],
                "dangling_slots": [_slot_text(s) for s in model["dangling_slots"][:EXAMPLES]],
                "stale_frontends": [frontend_text(*fe) for fe in model["stale_frontends"][:EXAMPLES]],
            },
        }
    for version, entries in model["backend_maps"].items():
        orphans = model["orphan_backends"].get(version)
        out["%s_%s" % (BACKENDS, version)] = {
            "role": BACKENDS, "version": version, "active": version == model["active_backends"],
            "backends": len(entries),
            "orphans": None if orphans is None else len(orphans),
            "examples": {"orphans": [_backend_text(i, entries[i][1]) for i in (orphans or [])[:EXAMPLES]]},
        }
    if model["revnat_present"]:
        out[REVNAT] = {
            "role": REVNAT, "entries": len(model["revnat"]),
            "orphans": len(model["orphan_revnat"]) if model["services_present"] else None,
            "frontends_without_entry": len(model["missing_revnat"]),
            "examples": {"orphans": [_revnat_text(i, model["revnat"][i][1]) for i in model["orphan_revnat"][:EXAMPLES]],
                         "frontends_without_entry": model["missing_revnat"][:EXAMPLES]},
        }
    return out


def lb_findings(model, subject):
    """Findings for one directory of LB maps (pure)."""
    out = []
    active = model["active_backends"]
    if not model["services_present"] and model["backend_maps"]:
        out.append(fnd.finding(
            "bpf.orphan_backends", "info", "L4", subject,
            "backends are pinned but cilium_lb4_services_v2 is not, so orphans cannot be proven",
            {"backend_maps": model["backends_present"]},
            "include cilium_lb4_services_v2 (same directory) in the maps read"))
    for version, orphans in sorted(model["orphan_backends"].items()):
        if not orphans:
            continue
        entries = model["backend_maps"][version]
        out.append(fnd.finding(
            "bpf.orphan_backends", "warning", "L4", "%s/%s" % (subject, _name_of(BACKENDS, version)),
            "%d of %d backends in the %s backends map are referenced by no service slot"
            % (len(orphans), len(entries), version),
            {"count": len(orphans), "backends": len(entries), "active_map": version == active,
             "examples": [_backend_text(i, entries[i][1]) for i in orphans[:EXAMPLES]]},
            "remove them with k8snet.triage.bpf_map_usage cleanup=orphans (check mode first); the agent "
            "also drops them on restart (deleteOrphanBackends): role cilium_maps with cilium_maps_cleanup and "
            "cilium_maps_restart_agent does both, the restart last"))
    if model["dangling_slots"] or model["headless_slots"] or model["slots_beyond_count"]:
        out.append(fnd.finding(
            "bpf.dangling_service_slots", "critical" if model["dangling_slots"] else "warning", "L4",
            "%s/cilium_lb4_services_v2" % subject,
            "%d service slots point at backends missing from the %s map, %d slots have no frontend, "
            "%d lie beyond their frontend's count"
            % (len(model["dangling_slots"]), _name_of(BACKENDS, active) if active else "backends",
               len(model["headless_slots"]), len(model["slots_beyond_count"])),
            {"dangling": len(model["dangling_slots"]), "without_frontend": len(model["headless_slots"]),
             "beyond_count": len(model["slots_beyond_count"]),
             "examples": [_slot_text(s) for s in (model["dangling_slots"] + model["headless_slots"]
                                                  + model["slots_beyond_count"])[:EXAMPLES]],
             "count_mismatch": [list(c) for c in model["count_mismatch"][:EXAMPLES]]},
            "traffic hashed to a dangling slot is dropped (`backend N not found` in cilium-dbg bpf lb list): "
            "restart the cilium agent on this node so it rewrites the service (k8snet.triage.cilium_agent_restart "
            "with the node's agent pod, check mode first); this module never deletes slots of live services"))
    if model["orphan_revnat"]:
        out.append(fnd.finding(
            "bpf.orphan_reverse_nat", "info", "L4", "%s/cilium_lb4_reverse_nat" % subject,
            "%d reverse-NAT entries belong to no frontend" % len(model["orphan_revnat"]),
            {"count": len(model["orphan_revnat"]),
             "examples": [_revnat_text(i, model["revnat"][i][1]) for i in model["orphan_revnat"][:EXAMPLES]]},
            "k8snet.triage.bpf_map_usage cleanup=orphans removes them"))
    if model["stale_frontends"]:
        out.append(fnd.finding(
            "bpf.stale_frontends", "warning", "L4", "%s/cilium_lb4_services_v2" % subject,
            "%d frontends in the services map are not services Kubernetes knows" % len(model["stale_frontends"]),
            {"count": len(model["stale_frontends"]), "frontends": len(model["frontends"]),
             "examples": [frontend_text(*fe) for fe in model["stale_frontends"][:EXAMPLES]]},
            "check them against `kubectl get svc -A`; k8snet.triage.bpf_map_usage cleanup=stale removes them "
            "with their slots, backends and reverse-NAT entries"))
    return out


def _name_of(role, version=None):
    for name, (r, v, _k, _vs) in LB_MAPS.items():
        if r == role and v == version:
            return name
    return role


# ---------------------------------------------------------------------- plan
def plan_cleanup(model, mode):
    """What ``mode`` would delete, in order: (role, version, key, expected value) tuples (pure).

    Services entries of stale frontends first (the frontend slot before its backend slots, so
    the datapath stops choosing the service at once), then backends no remaining slot
    references, then reverse-NAT entries no remaining frontend uses.  Nothing is planned
    when the services map is absent: without it no reference can be proven missing.
    """
    if mode == "none" or not model["services_present"]:
        return []
    stale = set(model["stale_frontends"]) if mode == "stale" else set()
    plan, keep_slots, keep_masters = _plan_stale(model, stale)
    plan.extend(_plan_backends(model, keep_slots))
    plan.extend(_plan_revnat(model, keep_masters))
    return plan


def _plan_stale(model, stale):
    """(the services entries of the ``stale`` frontends, frontends before slots, each sorted by key; the slots
    and the frontends that stay)."""
    if not stale:
        return [], model["slots"], model["masters"]
    gone_masters = sorted((m for (fe, _s), m in model["masters"].items() if fe in stale), key=lambda m: m["key"])
    gone_slots = sorted((s for s in model["slots"] if s["fe"] in stale), key=lambda s: s["key"])
    plan = [(SERVICES, None, entry["key"], entry["value"]) for entry in gone_masters + gone_slots]
    keep_slots = [s for s in model["slots"] if s["fe"] not in stale]
    keep_masters = dict((k, m) for k, m in model["masters"].items() if k[0] not in stale)
    return plan, keep_slots, keep_masters


def _plan_backends(model, keep_slots):
    """The backends (every map, by version then ID) that no slot of ``keep_slots`` references."""
    referenced = set(s["v"]["backend_id"] for s in keep_slots)
    plan = []
    for version in sorted(model["backend_maps"]):
        entries = model["backend_maps"][version]
        for backend_id in sorted(entries):
            if backend_id not in referenced:
                key, value = entries[backend_id]
                plan.append((BACKENDS, version, key, value))
    return plan


def _plan_revnat(model, keep_masters):
    """The reverse-NAT entries (by index) that no frontend of ``keep_masters`` uses."""
    used = set(m["v"]["rev_nat_index"] for m in keep_masters.values())
    plan = []
    for index in sorted(model["revnat"]):
        if index not in used:
            key, value = model["revnat"][index]
            plan.append((REVNAT, None, key, value))
    return plan


def describe(item):
    """One planned deletion as text, for samples in the result and the diff."""
    role, _version, key, value = item
    if role == BACKENDS:
        return _backend_text(decode_backend_key(key), value)
    if role == REVNAT:
        return _revnat_text(decode_revnat_key(key), value)
    k, v = decode_service_key(key), decode_service_value(value)
    fe = frontend_text(k["address"], k["port"], k["proto"])
    if k["slot"] == 0:
        return "%s slot 0 (frontend, %d slots)" % (fe, v["count"])
    return "%s slot %d -> backend %d" % (fe, k["slot"], v["backend_id"])


def key_text(role, key):
    """A deleted key, compact: backend ID, reverse-NAT index, or ``ip:port/proto slot N`` (+ scope)."""
    if role == BACKENDS:
        return str(decode_backend_key(key))
    if role == REVNAT:
        return str(decode_revnat_key(key))
    k = decode_service_key(key)
    out = "%s slot %d" % (frontend_text(k["address"], k["port"], k["proto"]), k["slot"])
    return out + (" scope %d" % k["scope"] if k["scope"] else "")


def references(services):
    """Backend IDs held by slots and reverse-NAT indexes held by frontends, in a services map read now."""
    backend_ids, revnat = set(), set()
    for key, value in services:
        if struct.unpack("=H", key[6:8])[0]:
            backend_ids.add(struct.unpack("=I", value[0:4])[0])
        else:
            revnat.add(struct.unpack(">H", value[6:8])[0])
    return backend_ids, revnat


# ------------------------------------------------------------ reader / action
def read_group(paths):
    """Read the LB maps among ``paths`` (one directory): {(role, version): (path, items, info)}."""
    group = {}
    for path in paths:
        spec = LB_MAPS.get(os.path.basename(path))
        if spec is None:
            continue
        with bpf.BpfMap(path) as bmap:
            info = bmap.info
            if not layout_ok(os.path.basename(path), info):
                continue
            group[(spec[0], spec[1])] = (path, bmap.items(), info)
    return group


def analyze_group(group, live):
    services = group.get((SERVICES, None))
    revnat = group.get((REVNAT, None))
    backends = dict((ver, val[1]) for (role, ver), val in group.items() if role == BACKENDS)
    return analyze(services[1] if services else None, backends, revnat[1] if revnat else None, live)


def path_index(paths):
    """{(role, version): path} for the LB maps among ``paths``."""
    out = {}
    for path in paths:
        spec = LB_MAPS.get(os.path.basename(path))
        if spec is not None:
            out[(spec[0], spec[1])] = path
    return out


def new_progress():
    """What a cleanup did: counts, keys and frontends deleted, planned and not attempted, per map path."""
    return {"deleted": {}, "deleted_keys": {}, "deleted_frontends": [], "planned": {}, "not_attempted": {},
            "skipped": {"changed": 0, "gone": 0, "now_referenced": 0}, "samples": {}, "capped": False}


def _record(result, path, role, key):
    result["deleted"][path] = result["deleted"].get(path, 0) + 1
    result["deleted_keys"].setdefault(path, []).append(key_text(role, key))
    if role == SERVICES:
        k = decode_service_key(key)
        if k["slot"] == 0:
            fe = frontend_text(k["address"], k["port"], k["proto"])
            if fe not in result["deleted_frontends"]:
                result["deleted_frontends"].append(fe)


def _not_attempted(result, attempted):
    result["not_attempted"] = dict((path, n - attempted.get(path, 0)) for path, n in result["planned"].items()
                                   if n - attempted.get(path, 0) > 0)


def apply_cleanup(paths, max_delete, check_mode, plan):
    """Carry out the plan for one directory of LB maps, at most ``max_delete`` keys; check mode only counts.

    Phase by phase (stale services entries, then backends, then reverse NAT): the services map
    is read again (what is referenced now), then each key is looked up again right before it is
    deleted, and deleted only if it is still there, still holds the planned value and nothing
    references it now.  Returns ``new_progress()`` filled in.  If a delete or a read fails
    halfway, raises ChangeError whose details hold the progress (``deleted``, ``deleted_keys``,
    ``deleted_frontends``, ``not_attempted``): what was already deleted is never lost.
    """
    result = new_progress()
    path_of = path_index(paths)
    _count_planned(result, path_of, plan)
    attempted = {}
    if check_mode:
        _count_only(result, path_of, plan, max_delete, attempted)
        _not_attempted(result, attempted)
        return result
    budget = max_delete
    try:
        _refuse_frozen(sorted(set(path_of[(item[0], item[1])] for item in plan)))
        for phase in (SERVICES, BACKENDS, REVNAT):
            budget = _delete_phase(path_of, plan, phase, budget, result, attempted)
    except TriageError as exc:
        _not_attempted(result, attempted)
        details = dict(exc.details)
        details.update(progress_details(result))
        raise ChangeError(exc.message, **details)
    _not_attempted(result, attempted)
    return result


def _count_planned(result, path_of, plan):
    """Count the planned deletions per map path, with a few of them described as samples."""
    for item in plan:
        path = path_of[(item[0], item[1])]
        result["planned"][path] = result["planned"].get(path, 0) + 1
        samples = result["samples"].setdefault(path, [])
        if len(samples) < EXAMPLES:
            samples.append(describe(item))


def _count_only(result, path_of, plan, max_delete, attempted):
    """Check mode: record the first ``max_delete`` planned keys as deleted, without touching a map."""
    for role, ver, key, _value in plan[:max_delete]:
        path = path_of[(role, ver)]
        attempted[path] = attempted.get(path, 0) + 1
        _record(result, path, role, key)
    result["capped"] = len(plan) > max_delete


def _refuse_frozen(paths):
    """Refuse before deleting anything when one of ``paths`` is a frozen map."""
    for path in paths:
        with bpf.BpfMap(path, write=True) as bmap:
            if bmap.frozen:
                raise ChangeError("%s is frozen (BPF_MAP_FREEZE, `bpftool map freeze`): user space cannot delete "
                                  "from it, so nothing was deleted in %s; its owner must recreate it"
                                  % (path, os.path.dirname(path)), pin=path)


def _delete_phase(path_of, plan, phase, budget, result, attempted):
    """Delete the planned keys of one role (``phase``), map by map, the services map read again before each map
    (what is referenced now); returns the budget left."""
    todo = {}
    for role, ver, key, value in plan:
        if role == phase:
            todo.setdefault((role, ver), []).append((key, value))
    for (role, ver), pairs in sorted(todo.items(), key=lambda kv: str(kv[0])):
        if budget <= 0:
            result["capped"] = True
            break
        with bpf.BpfMap(path_of[(SERVICES, None)]) as services:
            referenced = references(services.items())  # what is referenced now
        path = path_of[(role, ver)]
        with bpf.BpfMap(path, write=True) as bmap:
            budget = _delete_pairs(bmap, path, role, pairs, budget, referenced, result, attempted)
    return budget


def _delete_pairs(bmap, path, role, pairs, budget, referenced, result, attempted):
    """Delete the (key, expected value) ``pairs`` from one open map while the budget lasts; returns what is left."""
    for key, value in pairs:
        if budget <= 0:
            result["capped"] = True
            break
        attempted[path] = attempted.get(path, 0) + 1
        if _delete_one(bmap, role, key, value, referenced, result["skipped"]):
            _record(result, path, role, key)
            budget -= 1
    return budget


def _delete_one(bmap, role, key, value, referenced, skipped):
    """Delete ``key`` if it is still there, still holds ``value`` and nothing references it now (``referenced``:
    backend IDs, reverse-NAT indexes); else count in ``skipped`` why not.  Whether it was deleted."""
    backend_ids, revnat = referenced
    now = bmap.lookup(key)  # this key, re-read right before deleting it
    if now is None:
        skipped["gone"] += 1
    elif now != value:
        skipped["changed"] += 1
    elif (role == BACKENDS and decode_backend_key(key) in backend_ids) or (
            role == REVNAT and decode_revnat_key(key) in revnat):
        skipped["now_referenced"] += 1
    elif bmap.delete_key(key):
        return True
    else:
        skipped["gone"] += 1
    return False


def progress_details(progress):
    """The part of a progress record a failed run returns."""
    return dict((k, progress[k]) for k in ("deleted", "deleted_keys", "deleted_frontends", "not_attempted"))


def cleanup_failed_finding(bpffs, exc):
    """``bpf.cleanup_incomplete`` (critical) for a cleanup that failed: its error, what it had already deleted
    and what it did not attempt (the failed result's ``deleted``, ``deleted_keys``, ``not_attempted``)."""
    details = exc.details or {}
    deleted = details.get("deleted") or {}
    return fnd.finding(
        "bpf.cleanup_incomplete", "critical", "L4", bpffs,
        "the cleanup failed after deleting %d keys: %s" % (sum(deleted.values()), exc.message),
        {"deleted": deleted, "deleted_frontends": details.get("deleted_frontends") or [],
         "not_attempted": details.get("not_attempted") or {},
         "deleted_keys": dict((path, fnd.sample(keys)) for path, keys in (details.get("deleted_keys") or {}).items())},
        "read the maps again (cleanup=none) before going on; every key already deleted is in the failed task's "
        "deleted_keys")


# ------------------------------------------------------------------ service
def check_options(bpffs, warn_ratio, critical_ratio, cleanup, live_frontends, max_delete, max_stale_share=0.25,
                  allow_empty_live_frontends=False, verify_deleted=None, max_orphan_share=MAX_ORPHAN_SHARE):
    """Validate the options before anything is read; returns the live frontends (LiveFrontends) or None."""
    if not 0 < warn_ratio <= critical_ratio <= 1:
        raise InputError("warn_ratio=%s and critical_ratio=%s must satisfy 0 < warn_ratio <= critical_ratio <= 1"
                         % (warn_ratio, critical_ratio))
    if cleanup not in CLEANUP_MODES:
        raise InputError("cleanup=%s is not one of %s" % (cleanup, ", ".join(CLEANUP_MODES)))
    if max_delete < 1:
        raise InputError("max_delete=%d must be at least 1 (use cleanup=none to delete nothing)" % max_delete)
    if not 0 < max_stale_share <= 1:  # also refuses NaN
        raise InputError("max_stale_share=%s must be a fraction in (0, 1], e.g. 0.25 (at most a quarter of the "
                         "frontends may be deleted as stale in one run)" % (max_stale_share,))
    if not 0 < max_orphan_share <= 1:  # also refuses NaN
        raise InputError("max_orphan_share=%s must be a fraction in (0, 1], e.g. 0.95 (at most 95%% of the backend "
                         "and reverse-NAT entries may be deleted as orphans in one run)" % (max_orphan_share,))
    if cleanup == "stale" and live_frontends is None:
        raise InputError("cleanup=stale needs live_frontends (the ip:port/proto of every Kubernetes service "
                         "frontend); without it every frontend would look stale")
    if cleanup == "stale" and not live_frontends:
        refuse_empty("stale", "an empty live_frontends list", "every frontend stale",
                     "the Kubernetes API read failed or returned nothing (every cluster has the kubernetes Service)",
                     "allow_empty_live_frontends", allow_empty_live_frontends, "max_stale_share")
    if verify_deleted and live_frontends is None:
        raise InputError("verify_deleted needs live_frontends: it says which deleted frontends are live")
    for value in verify_deleted or []:
        parse_frontend(value, "verify_deleted")
    live = None if live_frontends is None else frontends.LiveFrontends(parse_frontend(f) for f in live_frontends)
    bpf.check_bpffs(bpffs)
    return live


def refuse_empty(mode, given, effect, usually, override, allowed, share_option):
    """The guard of both cleanups against an empty live set: refused unless ``override`` (``allowed``) says so."""
    if allowed:
        return
    raise InputError("cleanup=%s was given %s, which would make %s: refusing to delete anything. That usually means "
                     "%s. If it really is empty, set %s=true (and %s=1)"
                     % (mode, given, effect, usually, override, share_option))


def refuse_share(mode, directory, count, total, cap, option, noun, examples):
    """The guard of both cleanups against an implausible share: refused when ``count`` of ``total`` is above ``cap``."""
    if total and float(count) / total > cap:
        raise InputError(
            "cleanup=%s would delete %d of the %d %s in %s (%.0f%%), more than %s=%s allows: refusing to delete "
            "anything. A live set this far from the maps is implausible; compare the examples with "
            "`kubectl get svc -A` (and the agent's `cilium-dbg service list`), and raise %s only if they really "
            "are to go. Examples: %s" % (mode, count, total, noun, directory, 100.0 * count / total, option, cap,
                                         option, ", ".join(examples)),
            **{mode: count, noun.replace(" ", "_").replace("-", "_"): total})


def refuse_implausible(models, max_stale_share):
    """Refuse a stale cleanup that would take more than ``max_stale_share`` of any directory's frontends."""
    for directory, model in sorted(models.items()):
        refuse_share("stale", directory, len(model["stale_frontends"]), len(model["frontends"]), max_stale_share,
                     "max_stale_share", "frontends",
                     [frontend_text(*fe) for fe in model["stale_frontends"][:EXAMPLES]])


def refuse_orphan_sweep(models, plans, allow_empty_services, max_orphan_share):
    """Refuse an orphans cleanup that reads an empty services map (every backend and reverse-NAT entry would go)
    or would take more than ``max_orphan_share`` of a directory's backend and reverse-NAT entries."""
    for directory, model in sorted(models.items()):
        plan = plans.get(directory, (None, []))[1]
        if not plan:
            continue
        if not model["masters"] and not model["slots"]:
            refuse_empty("orphans", "an empty services map (%s/cilium_lb4_services_v2)" % directory,
                         "every backend and reverse-NAT entry an orphan",
                         "the agent is restarting and has not written its services yet, or the map was replaced",
                         "allow_empty_services", allow_empty_services, "max_orphan_share")
        total = sum(len(entries) for entries in model["backend_maps"].values()) + len(model["revnat"])
        refuse_share("orphans", directory, len(plan), total, max_orphan_share, "max_orphan_share",
                     "backend and reverse-NAT entries", [describe(item) for item in plan[:EXAMPLES]])


def deleted_live_findings(verify_deleted, live, subject):
    """Frontends a cleanup deleted that the live set (read again) counts as live: one critical finding."""
    hits = [f for f in verify_deleted or [] if parse_frontend(f, "verify_deleted") in live]
    if not verify_deleted:
        return hits, []
    if not hits:
        return hits, [fnd.finding(
            "bpf.deleted_live_frontends", "ok", "L4", subject,
            "none of the %d deleted frontends is live" % len(verify_deleted or []),
            {"deleted": len(verify_deleted or []), "live_frontends": len(live)})]
    return hits, [fnd.finding(
        "bpf.deleted_live_frontends", "critical", "L4", subject,
        "%d of the %d frontends the cleanup deleted are live Services now" % (len(hits), len(verify_deleted)),
        {"count": len(hits), "examples": hits[:EXAMPLES], "live_frontends": len(live)},
        "the cilium agent rewrites a live Service's frontend when it resyncs: restart the agent on this node "
        "(k8snet.triage.cilium_agent_restart with the node's agent pod, check mode first) and check the live set "
        "given to the cleanup before running it on more nodes")]


def _halfway(exc, result, plans, done_dirs):
    """A ChangeError for a cleanup that stopped halfway, with every directory's progress in its details."""
    progress = new_progress()
    for part in [result["cleanup"][d] for d in done_dirs] + [exc.details]:
        for path, count in part.get("deleted", {}).items():
            progress["deleted"][path] = progress["deleted"].get(path, 0) + count
        for path, keys in part.get("deleted_keys", {}).items():
            progress["deleted_keys"].setdefault(path, []).extend(keys)
        progress["deleted_frontends"].extend(part.get("deleted_frontends", []))
        progress["not_attempted"].update(part.get("not_attempted", {}))
    for directory, (paths, plan) in plans.items():
        if directory in done_dirs or directory == exc.details.get("directory"):
            continue
        path_of = path_index(paths)
        for role, ver, _key, _value in plan:
            path = path_of[(role, ver)]
            progress["not_attempted"][path] = progress["not_attempted"].get(path, 0) + 1
    deleted = sum(progress["deleted"].values())
    left = sum(progress["not_attempted"].values())
    message = ("the cleanup stopped %s: %s. Already deleted: %d keys (%s; every key is in deleted_keys). "
               "Not attempted: %d keys (%s). Read the maps again (cleanup=none) before going on."
               % ("halfway" if deleted else "before deleting anything", exc.message.rstrip("."), deleted,
                  ", ".join("%s %d" % (os.path.basename(p), n) for p, n in sorted(progress["deleted"].items())) or "none",
                  left,
                  ", ".join("%s %d" % (os.path.basename(p), n) for p, n in sorted(progress["not_attempted"].items()))
                  or "none"))
    details = dict((k, v) for k, v in exc.details.items() if k != "directory")
    details.update(progress_details(progress))
    details["changed"] = deleted > 0
    return ChangeError(message, **details)


def usage_report(bpffs, maps=None, warn_ratio=0.8, critical_ratio=0.95, cleanup="none", live_frontends=None,
                 max_delete=10000, check_mode=False, max_stale_share=0.25, allow_empty_live_frontends=False,
                 verify_deleted=None, max_orphan_share=MAX_ORPHAN_SHARE, allow_empty_services=False):
    """Everything bpf_map_usage returns: maps, findings, deleted, changed, diff."""
    bpffs = os.path.realpath(bpffs)
    live = check_options(bpffs, warn_ratio, critical_ratio, cleanup, live_frontends, max_delete, max_stale_share,
                         allow_empty_live_frontends, verify_deleted, max_orphan_share)
    pins, unmatched = bpf.find_pinned(bpffs, maps)
    models, skipped, groups = _read_pins(pins, bpffs)
    findings = bpf.pressure_findings(models, warn_ratio, critical_ratio, scope=bpffs)
    for pattern in unmatched:
        findings.append(fnd.finding("bpf.map_pressure", "info", "L4", "%s/%s" % (bpffs, pattern),
                                    "no pinned map matches %s" % pattern, {"bpffs": bpffs}, ""))
    by_path = dict((m["path"], m) for m in models)
    result = {"deleted": {}, "deleted_keys": {}, "deleted_frontends": [], "not_attempted": {}, "changed": False,
              "cleanup": {}}
    before, after = {}, {}
    lb_models, plans = {}, {}
    for directory in sorted(groups):
        model, plan = _check_group(directory, groups[directory], live, by_path, cleanup, findings)
        lb_models[directory] = model
        if plan:
            plans[directory] = ([val[0] for val in groups[directory].values()], plan)
    if cleanup == "stale":
        refuse_implausible(lb_models, max_stale_share)  # before anything is deleted, in check mode too
    if cleanup == "orphans":
        refuse_orphan_sweep(lb_models, plans, allow_empty_services, max_orphan_share)  # likewise
    if verify_deleted is not None:
        result["deleted_live"], found = deleted_live_findings(verify_deleted, live, bpffs)
        findings.extend(found)
    done_dirs = []
    for directory in sorted(plans):
        paths, plan = plans[directory]
        budget = max_delete - sum(sum(result["cleanup"][d]["deleted"].values()) for d in done_dirs)
        try:
            done = apply_cleanup(paths, budget, check_mode, plan)
        except ChangeError as exc:
            exc.details["directory"] = directory
            raise _halfway(exc, result, plans, done_dirs)
        done_dirs.append(directory)
        _record_cleanup(result, directory, done, groups[directory], before, after)
    for done in result["cleanup"].values():
        done.pop("deleted_keys", None)  # returned once, at the top level
    result["changed"] = bool(result["deleted"])
    result["diff"] = {"before": before, "after": after}
    result["maps"] = models
    result["not_maps"] = {"count": len(skipped), "examples": skipped[:EXAMPLES]}
    result["findings"] = fnd.sort_findings(findings)
    return result


def _read_pins(pins, bpffs):
    """(map models, paths that are not maps, the LB maps by directory {directory: {(role, version): (path, items,
    model)}}) of the pinned ``pins``; an LB map of a layout this module does not know gets a note instead."""
    models, skipped, groups = [], [], {}
    for path in pins:
        try:
            model, items = bpf.read_map(path, bpffs, with_items=os.path.basename(path) in LB_MAPS)
        except bpf.NotAMap:
            skipped.append(os.path.relpath(path, bpffs))
            continue
        models.append(model)
        spec = LB_MAPS.get(model["name"])
        if spec is not None and items is not None and layout_ok(model["name"], model):
            groups.setdefault(os.path.dirname(path), {})[(spec[0], spec[1])] = (path, items, model)
        elif spec is not None:
            model["note"] = ("not decoded: a %s map with %d-byte keys and %d-byte values is not the layout this "
                             "module knows for %s"
                             % (model["type"], model["key_size"], model["value_size"], model["name"]))
    return models, skipped, groups


def _check_group(directory, group, live, by_path, cleanup, findings):
    """Analyze one directory's LB maps (reading the siblings the patterns left out into ``group``), put their
    decoded summaries on the map models of ``by_path``, add their findings to ``findings``: (model, plan)."""
    for name in sorted(LB_MAPS):  # siblings the patterns did not select are still needed as evidence
        spec = LB_MAPS[name]
        sibling = os.path.join(directory, name)
        if (spec[0], spec[1]) not in group and os.path.exists(sibling):
            group.update(read_group([sibling]))
    model = analyze_group(group, live)
    decoded = summaries(model)
    for (role, ver), (path, _items, _info) in group.items():
        if path in by_path:
            by_path[path]["cilium"] = decoded.get(role if role != BACKENDS else "%s_%s" % (role, ver))
    findings.extend(lb_findings(model, directory))
    return model, plan_cleanup(model, cleanup)


def _record_cleanup(result, directory, done, group, before, after):
    """Add one directory's finished cleanup to ``result`` and its deleted maps' entry counts to the diff."""
    result["cleanup"][directory] = done
    result["deleted_frontends"].extend(done["deleted_frontends"])
    result["not_attempted"].update(done["not_attempted"])
    for path, count in done["deleted"].items():
        if not count:
            continue
        result["deleted"][path] = count
        result["deleted_keys"][path] = done["deleted_keys"][path]
        entries = len(group[[k for k, v in group.items() if v[0] == path][0]][1])
        before[path] = {"entries": entries}
        after[path] = {"entries": entries - count, "deleted_examples": done["samples"].get(path, [])}


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner=None):
    """The read-only bpf_map_usage on this node: ``params`` (bpffs, maps, warn_ratio,
    critical_ratio, live_frontends; a plain dict) in, ``{"data": {"maps": ...}, "findings": [...]}``
    out.  Cleanup is never asked for here (it stays with the bpf_map_usage module).  Maps are
    read with the bpf(2) syscall: no runner needed."""
    result = usage_report(params.get("bpffs") or "/sys/fs/bpf", maps=params.get("maps") or [],
                          warn_ratio=params.get("warn_ratio", 0.8), critical_ratio=params.get("critical_ratio", 0.95),
                          cleanup="none", live_frontends=params.get("live_frontends"), check_mode=True)
    data = dict((key, value) for key, value in result.items() if key not in ("findings", "changed", "diff", "deleted", "cleanup"))
    return {"data": data, "findings": result["findings"]}
