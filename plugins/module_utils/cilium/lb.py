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

Pure: decode_*, analyze, summaries, lb_findings, parse_frontend (cilium_lb_analysis), plan_cleanup
(cilium_lb_cleanup).  Reader/action: read_group, apply_cleanup (re-reads the maps just before deleting;
cilium_lb_cleanup).  This file: the service (the options' checks, the usage report and its cleanup) and
the node check.
"""

from __future__ import annotations

import os

from ansible_collections.k8snet.triage.plugins.module_utils.kernel import bpf
from ansible_collections.k8snet.triage.plugins.module_utils.core import findings as fnd
from ansible_collections.k8snet.triage.plugins.module_utils.core import frontends
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.lb_analysis import (
    BACKENDS, CLEANUP_MODES, EXAMPLES, LB_MAPS, MAX_ORPHAN_SHARE, frontend_text, layout_ok, lb_findings,
    parse_frontend, summaries)
from ansible_collections.k8snet.triage.plugins.module_utils.cilium.lb_cleanup import (
    analyze_group, apply_cleanup, describe, new_progress, path_index, plan_cleanup, progress_details, read_group)
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError


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
