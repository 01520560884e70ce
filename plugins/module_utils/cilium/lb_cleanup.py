# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cilium's LB maps, the cleanup: the plan (pure: which orphan or stale entries to delete, in which order) and the
group reader and its safe execution (apply_cleanup re-reads the maps just before deleting, within a budget).
"""

from __future__ import annotations

import os
import struct

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import bpf
from ansible_collections.k8snet.triage.plugins.module_utils.core import findings as fnd
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.lb_analysis import (
    BACKENDS, EXAMPLES, LB_MAPS, REVNAT, SERVICES, _backend_text, _revnat_text, analyze, decode_backend_key,
    decode_revnat_key, decode_service_key, decode_service_value, frontend_text, layout_ok)
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, TriageError


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
