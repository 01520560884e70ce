# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cilium's LB maps, the analysis: the maps' names and layouts, the decoders of their keys and values, and the pure
analysis (analyze, summaries, lb_findings): orphan backends and reverse-NAT entries, slot problems, stale frontends.
"""

from __future__ import annotations

import ipaddress
import struct

from ansible_collections.k8snet.triage.plugins.module_utils.core import findings as fnd
from ansible_collections.k8snet.triage.plugins.module_utils.core import frontends

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
