# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The stale-ARP domain: validate input, select entries, check them, plan and apply a flush.

Pure functions except ``apply_flush`` (which acts through the Netlink reader).
Models are those of netlink.py.
"""

from __future__ import annotations

import ipaddress
import os

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.interfaces import macs_by_name, require_interface
from ansible_collections.k8snet.triage.plugins.module_utils.core.macs import is_locally_administered, normalize_mac
from ansible_collections.k8snet.triage.plugins.module_utils.arp.events import NeighborEvents
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink

# Entries the kernel or a CNI manages: never deleted unless force (Cilium installs its next hops as
# managed / extern_learn entries; a flush of those breaks XDP forwarding).
PROTECTED_STATES = ("PERMANENT", "NOARP")
PROTECTED_FLAGS = ("extern_learn", "managed")
UNRESOLVED_STATES = ("FAILED", "INCOMPLETE")
OUI_FILES = ("/usr/share/ieee-data/oui.txt", "/usr/share/hwdata/oui.txt", "/usr/share/misc/oui.txt",
             "/var/lib/ieee-data/oui.txt")


def validate(addresses, expected, interface, links):
    """Normalise the options; return (addresses, expected). Raises InputError naming the bad value. The addresses
    and expected's keys arrive checked and normalised by the option rules (neighbors_options.RULES: params.address)."""
    if not addresses and not expected:
        raise InputError("addresses is empty: give the VIPs or addresses whose neighbor entries to check")
    wanted = []
    for address in addresses or []:
        if address not in wanted:
            wanted.append(address)
    macs = {}
    for address, mac in (expected or {}).items():
        try:
            macs[address] = normalize_mac(mac)
        except InputError as exc:
            raise InputError("expected[%s]: %s" % (address, exc.message))
        if address not in wanted:
            wanted.append(address)
    if interface:
        require_interface(interface, links)
    return wanted, macs


def local_bindings(addresses, host_addresses, links):
    """Which of ``addresses`` this host holds itself, with the interface's MAC (so we learn a VIP's owner)."""
    macs = macs_by_name(links)
    out = []
    for item in host_addresses:
        if item["address"] in addresses:
            out.append({"address": item["address"], "interface": item["interface"], "mac": macs.get(item["interface"])})
    return out


def select_neighbors(neighbors, addresses, interface=None):
    return [n for n in neighbors if n["address"] in addresses and (not interface or n["interface"] == interface)]


def is_protected(entry):
    return any(s in entry["state"] for s in PROTECTED_STATES) or any(f in entry["flags"] for f in PROTECTED_FLAGS)


def is_unresolved(entry):
    return any(s in entry["state"] for s in UNRESOLVED_STATES) or not entry.get("mac")


def describe(entry):
    """One line like ``ip neigh`` prints, for evidence and diffs."""
    parts = [entry["address"], "dev", entry["interface"] or "?"]
    if entry.get("mac"):
        parts += ["lladdr", entry["mac"]]
    parts += entry["flags"] + entry["state"]
    return " ".join(parts)


def _answers(address, probes, local, local_addresses):
    """``(answered, macs)``: the probe answers for ``address`` (None: not probed) and the distinct MACs
    among them, sorted."""
    answered = probes.get(address)
    macs = sorted(set(p["mac"] for p in answered or []))
    if answered is not None and address in local_addresses:
        # we hold it ourselves: any other MAC answering is a rival claimant
        own = [item["mac"] for item in local if item["address"] == address]
        macs = sorted(set(macs) | set(own))
        answered = answered + [{"mac": mac, "vendor": vendor(mac), "self": True} for mac in own]
    return answered, macs


def _truth(address, expected, macs):
    """``(mac, source)``: the MAC ``address`` should have, from ``expected`` or else from the single MAC
    that answered (``(None, None)`` when neither says)."""
    if address in expected:
        return expected[address], "expected"
    if len(macs) == 1:
        return macs[0], "probe"
    return None, None


def _conflict_finding(address, macs, answered, expected):
    """The ip_conflict finding: several MACs answer for one address."""
    return finding(
        "arp.ip_conflict", "critical", "L2", address,
        "%d different MACs answer ARP for %s: two hosts claim one address" % (len(macs), address),
        {"answers": answered, "expected_mac": expected.get(address)},
        "Find the hosts owning %s (vendor and MAC above) and remove the address from all but one "
        "(e.g. a second keepalived/kube-vip leader)." % ", ".join(macs))


def _contradicted(address, expected, answered, macs):
    """Whether the probe contradicts ``expected`` for ``address``: it was probed, MACs answered, and the expected
    MAC is not among them (nothing answering contradicts nothing)."""
    return address in expected and answered is not None and bool(macs) and expected[address] not in macs


def _contradiction_finding(address, expected, macs, answered, mine):
    """``arp.expected_contradicted``: the given MAC is not the one that answers; nothing is flushed on that word."""
    cached = sorted(set(e["mac"] for e in mine if e.get("mac")))
    return finding(
        "arp.expected_contradicted", "warning", "L2", address,
        "the expected MAC %s for %s is contradicted by the probe: %s answered%s; the entry is not flushed, since the "
        "probe shows %s" % (
            expected[address], address, ", ".join(macs), " (cached: %s)" % ", ".join(cached) if cached else "",
            "the cached MAC is the one answering" if cached and set(cached) <= set(macs) else
            "another MAC than the expected one answering"),
        {"expected_mac": expected[address], "answers": answered, "entries": [describe(e) for e in mine],
         "cached_macs": cached},
        "Find out which is right before any flush: the owner of %s may have moved (failover: update expected), or "
        "another host holds the address while its owner is silent (ip -br addr on the owner, the answering MAC's "
        "host). arp_check deletes an entry only when the probe does not contradict expected." % address)


def _unresolved_finding(address, entry, answered):
    """The unresolved finding of an entry nothing answers for."""
    return finding(
        "arp.unresolved", "warning", "L2", "%s dev %s" % (address, entry["interface"]),
        "%s does not resolve on %s (%s): nothing answers ARP for it" % (
            address, entry["interface"], "/".join(entry["state"])),
        {"entry": describe(entry), "answers": answered},
        "Check that the owner of %s is up and holds the address; probe with arp_check probe=true." % address)


def _stale_finding(address, entry, truth, source):
    """The stale_entry finding of an entry whose cached MAC is not ``truth``."""
    protected = is_protected(entry)
    return finding(
        "arp.stale_entry", "critical", "L2", "%s dev %s" % (address, entry["interface"]),
        "cached MAC %s for %s is wrong: the %s MAC is %s" % (
            entry["mac"], address, "owner's" if source == "expected" else "answering", truth),
        {"entry": describe(entry), "cached_mac": entry["mac"], "true_mac": truth, "truth_from": source,
         "protected": protected},
        ("Flush it with arp_check flush=stale%s (deletes only %s dev %s)." % (
            " force=true (the entry is %s)" % "/".join(entry["flags"] + entry["state"]) if protected else "",
            address, entry["interface"])))


def _entry_problem(address, entry, truth, source, answered):
    """``(finding, stale)`` for one cached entry: unresolved, or stale (``stale`` True), or ``(None, False)``
    when it is fine."""
    if is_unresolved(entry):
        return _unresolved_finding(address, entry, answered), False
    if truth and entry["mac"] != truth:
        return _stale_finding(address, entry, truth, source), True
    return None, False


def _cache_state(address, mine, answered, source, local_addresses, interface):
    """The not_cached finding (no entry, for an address this host does not hold) or the ok finding
    (entries, none of them a problem: the caller checks that)."""
    if not mine:
        if address in local_addresses:
            return None
        return finding(
            "arp.not_cached", "info", "L2", address,
            "no neighbor entry for %s%s: it is resolved on first use" % (
                address, " on " + interface if interface else ""),
            {"answers": answered} if answered is not None else {}, "")
    return finding(
        "arp.ok", "ok", "L2", address, "neighbor entry for %s matches %s" % (
            address, "the expected MAC" if source == "expected" else "the MAC that answers" if source else
            "no known truth"),
        {"entries": [describe(e) for e in mine], "truth_from": source}, "")


def check(addresses, expected, entries, probes, local, interface=None):
    """Findings for each address: stale (vs expected, or vs the single MAC that answered), conflict, unresolved.

    ``probes`` maps address -> list of {"mac", "vendor"} that answered (missing key: not probed).
    Returns (findings, stale) where ``stale`` lists the entries proven wrong.
    """
    findings = []
    stale = []
    local_addresses = set(item["address"] for item in local)
    for address in addresses:
        mine = [e for e in entries if e["address"] == address]
        answered, macs = _answers(address, probes, local, local_addresses)
        truth, source = _truth(address, expected, macs)
        if len(macs) > 1:
            findings.append(_conflict_finding(address, macs, answered, expected))
        problem = False
        if _contradicted(address, expected, answered, macs):
            # the given MAC against the kernel's own probe: neither is proven, no entry is stale on that word
            findings.append(_contradiction_finding(address, expected, macs, answered, mine))
            truth, source, problem = None, None, True
        for entry in mine:
            item, wrong = _entry_problem(address, entry, truth, source, answered)
            if item is None:
                continue
            problem = True
            if wrong:
                stale.append(entry)
            findings.append(item)
        if not problem:
            state = _cache_state(address, mine, answered, source, local_addresses, interface)
            findings.extend([state] if state else [])
    return findings, stale


def plan_flush(stale, force, limit):
    """Split proven-stale entries into (to_delete, kept) honouring force and the per-run cap."""
    delete, kept = [], []
    for entry in stale:
        if is_protected(entry) and not force:
            kept.append(dict(entry, reason="protected entry (%s): set force=true to delete it"
                             % "/".join(entry["flags"] + entry["state"])))
        elif len(delete) >= limit:
            kept.append(dict(entry, reason="max_flush=%d reached in this run" % limit))
        else:
            delete.append(entry)
    return delete, kept


def why_not_delete(planned, now, force):
    """Why the entry re-read right before its delete must be kept (None: delete it).

    ``planned`` is the entry as it was read and proven stale; ``now`` the same address and
    device read again just now (None when it is gone).  A different MAC means the entry is no
    longer the one proven wrong (it may be right now), whatever ``force`` says; an entry that
    became permanent/noarp/extern_learn/managed meanwhile is kept unless ``force``.
    """
    if now is None:
        return "gone since it was read: nothing to delete"
    if now["mac"] != planned["mac"]:
        return "changed since it was read (now %s): its MAC is no longer the one proven stale, not deleted" % describe(now)
    if is_protected(now) and not force:
        return ("became protected since it was read (now %s): not deleted; set force=true to delete it"
                % describe(now))
    return None


def not_attempted(entries, failed):
    reason = "not attempted: the flush stopped when deleting %s dev %s failed" % (failed["address"], failed["interface"])
    return [dict(entry, reason=reason) for entry in entries]


def not_the_planned_delete(now, gone, force):
    """Why the entry the kernel says it deleted (``gone``, from its RTM_DELNEIGH) was not the one checked
    right before (``now``) and must be put back (None: it was).  Another MAC means another writer
    replaced the entry between the re-read and the delete; a protected state or flag the re-read did
    not show (PERMANENT, NOARP, extern_learn...) is never deleted without ``force``."""
    if gone["mac"] != now["mac"]:
        return ("the delete took %s, not the stale entry (%s): the entry was replaced between the re-read and "
                "the delete" % (describe(gone), describe(now)))
    if is_protected(gone) and not is_protected(now) and not force:
        return ("the delete took %s, which became protected between the re-read and the delete (force is false)"
                % describe(gone))
    return None


def apply_flush(netlink, planned, check_mode, force=False, events=None):
    """Delete each planned entry, re-reading it right before its own delete; returns (flushed, kept, raced).

    ``flushed`` holds the entries deleted, as the kernel's own RTM_DELNEIGH notification describes
    them when ``events`` (neigh_events.NeighborEvents, subscribed before the first re-read) is given,
    else as re-read just before each delete (address, device, the old MAC, state, flags).  When the
    notification shows that the delete took another entry than the stale one checked (another MAC,
    or a protected state), that entry is put back at once and reported in ``raced`` (``deleted``,
    ``restored``, ``reason``), not in ``flushed``.  The first failure stops the flush: it raises
    FlushIncomplete carrying what was already deleted, what was kept, the entry that failed (with
    the error) and the entries not attempted, so no partial progress is lost.
    """
    flushed, kept, raced = [], [], []
    for index, entry in enumerate(planned):
        try:
            now = netlink.neighbor(entry["address"], entry["interface"])
            reason = why_not_delete(entry, now, force)
            if reason:
                kept.append(dict(entry, reason=reason))
                continue
            gone = now
            if not check_mode:
                ifindex = events.ifindex(now["interface"]) if events is not None else None
                netlink.delete_neighbor(entry["address"], entry["interface"])
                if events is not None:
                    told = events.deleted(now["address"], ifindex, now)
                    if told is None:
                        gone = dict(now, verified=False)
                    else:
                        gone = dict((k, v) for k, v in told.items() if k != "ifindex")
                        gone.update(interface=now["interface"], verified=True)
                        why = not_the_planned_delete(now, gone, force)
                        if why:
                            restored = events.restore(told, ifindex, now["interface"])
                            raced.append(dict(address=now["address"], interface=now["interface"], deleted=gone,
                                              restored=restored, stale_mac=entry["mac"], reason=why))
                            continue
        except TriageError as exc:
            failed = dict(entry, error=exc.message)
            raise FlushIncomplete(exc, flushed, kept, [failed], not_attempted(planned[index + 1:], failed), raced)
        flushed.append(gone)
    return flushed, kept, raced


def race_findings(raced, unverified):
    """Findings for deletes that took another entry (put back) and deletes no notification confirmed."""
    out = []
    for race in raced:
        out.append(finding(
            "arp.flush_race", "critical", "L2", "%s dev %s" % (race["address"], race["interface"]),
            "the flush's delete of %s dev %s (stale MAC %s) took another entry, %s, and put it back: %s"
            % (race["address"], race["interface"], race["stale_mac"], describe(race["deleted"]), race["restored"]),
            {"deleted": describe(race["deleted"]), "restored": race["restored"], "stale_mac": race["stale_mac"],
             "reason": race["reason"]},
            "Something (an admin, a CNI, a keepalived) wrote this entry while the flush ran: it was restored as it "
            "was. Find the writer, then check the entry with `ip neigh show %s dev %s` and run the check again."
            % (race["address"], race["interface"])))
    for entry in unverified:
        out.append(finding(
            "arp.flush_unverified", "warning", "L2", "%s dev %s" % (entry["address"], entry["interface"]),
            "the kernel's notification of the delete of %s dev %s did not arrive in time: what it deleted is not "
            "confirmed" % (entry["address"], entry["interface"]),
            {"entry": describe(entry)},
            "Check the entry with `ip neigh show %s dev %s`." % (entry["address"], entry["interface"])))
    return out


class FlushIncomplete(ChangeError):
    """A flush stopped halfway; ``details`` say what was deleted, kept, failed and not attempted."""

    def __init__(self, cause, flushed, kept, failed, rest, raced=()):
        message = "flushing the stale neighbor entries %s: %s. %s" % (
            "stopped halfway" if flushed or raced else "failed before any was deleted", cause.message,
            progress_text(flushed, failed, rest))
        super(FlushIncomplete, self).__init__(message, flushed=flushed, kept=kept, flush_failed=failed,
                                              not_attempted=rest, raced=list(raced), changed=bool(flushed or raced))
        self.cause = cause


def progress_text(flushed, failed, rest):
    """One plain sentence per list: what was deleted, what failed, what was not attempted."""
    def lines(entries):
        return "; ".join(describe(e) for e in entries) or "none"

    return ("Already deleted (%d): %s. Attempted and failed (%d): %s. Not attempted (%d): %s."
            % (len(flushed), lines(flushed), len(failed), lines(failed), len(rest), lines(rest)))


def flush_failed_finding(exc):
    """The finding that tells the report a flush stopped halfway, and what it had already done."""
    details = exc.details
    failed = details["flush_failed"][0]
    return finding(
        "arp.flush_incomplete", "critical", "L2", "%s dev %s" % (failed["address"], failed["interface"]),
        "the flush stopped halfway: %d entr%s deleted, deleting %s dev %s failed, %d not attempted" % (
            len(details["flushed"]), "y" if len(details["flushed"]) == 1 else "ies", failed["address"],
            failed["interface"], len(details["not_attempted"])),
        {"error": failed["error"], "deleted": sample(describe(e) for e in details["flushed"]),
         "failed": [describe(e) for e in details["flush_failed"]],
         "not_attempted": sample(describe(e) for e in details["not_attempted"])},
        "Fix the cause named in the error, then run arp_check flush=stale again: it re-reads the entries and "
        "deletes only those still stale (the deleted ones re-resolve by themselves).")


def diff(entries, flushed):
    """Before/after lines of the checked entries; an entry is gone when its address and device were flushed."""
    gone = set((e["address"], e["interface"]) for e in flushed)
    before = sorted(describe(e) for e in entries)
    after = sorted(describe(e) for e in entries if (e["address"], e["interface"]) not in gone)
    return {"before": "\n".join(before) + "\n" if before else "",
            "after": "\n".join(after) + "\n" if after else ""}


_OUI_CACHE = {}


def vendor(mac):
    """The vendor registered for a MAC's OUI (netaddr's registry, else the system's oui.txt); None if unknown."""
    if not mac:
        return None
    if is_locally_administered(mac):
        return None  # locally administered: no registered vendor
    try:
        from netaddr import EUI  # optional on nodes
        from netaddr.core import NotRegisteredError

        try:
            return EUI(mac).oui.registration().org
        except (NotRegisteredError, IndexError):
            return None
    except ImportError:
        pass
    prefix = mac.replace(":", "").upper()[:6]
    if not _OUI_CACHE:
        for path in OUI_FILES:
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    for raw in handle:
                        line = raw.decode("utf-8", "replace")
                        if "(base 16)" in line:
                            key, dummy, org = line.partition("(base 16)")
                            _OUI_CACHE[key.strip().upper()] = org.strip()
                break
        _OUI_CACHE.setdefault("", "")
    return _OUI_CACHE.get(prefix) or None


def probe_requests(addresses, local, links, netlink, interface=None):
    """ARP probes for the IPv4 addresses: out of ``interface``, the interface holding the
    address (we own it: only rival claimants answer), or the one the route to it uses.
    Returns (requests, off_subnet): an address this host reaches through a gateway is not probed (its ARP
    requests would ask for it on a segment it is not on: no answer proves nothing); ``off_subnet`` maps it to
    {gateway, interface}."""
    macs = macs_by_name(links)
    held = dict((item["address"], item["interface"]) for item in local)
    requests, off_subnet = [], {}
    for address in addresses:
        if ipaddress.ip_address(address).version != 4:
            continue  # NDP probing is not implemented: IPv6 entries are checked against `expected` only
        device = interface or held.get(address)
        if not device:
            route = netlink.route_get(address)
            device = route.get("dev")
            if route.get("gateway"):
                off_subnet[address] = {"gateway": route["gateway"], "interface": device}
                continue
        if not device or device == "lo" or not macs.get(device):
            continue
        requests.append({"interface": device, "src_mac": macs[device], "target": address})
    return requests, off_subnet


def gateway_neighbor(table, gateway, interface):
    """The neighbour entry of ``gateway`` on ``interface`` from ``table``: ``gateway_neighbor`` as ``ip neigh`` prints it
    (None: no entry) and ``gateway_resolved``: True (a MAC in a usable state), False (FAILED / INCOMPLETE: the last
    resolution failed), None (no entry: the kernel resolves it when a packet needs it)."""
    found = [n for n in table if n["address"] == gateway and n["interface"] == interface]
    if not found:
        return {"gateway_neighbor": None, "gateway_resolved": None}
    return {"gateway_neighbor": describe(found[0]), "gateway_resolved": not is_unresolved(found[0])}


def open_events():
    return NeighborEvents()


def _after(netlink, addresses, expected, probes, local, interface):
    """``{neighbors, findings}``: the entries of ``addresses`` re-read once a flush is done, and what the check says
    of them now (the re-check, in the same call: no second run on the node), or None when the re-read failed."""
    try:
        entries = select_neighbors(netlink.neighbors(), addresses, interface)
    except TriageError:
        return None
    return {"neighbors": entries, "findings": check(addresses, expected, entries, probes, local, interface)[0]}


def arp_check(netlink, prober, params, check_mode, events=open_events):
    """The whole arp_check run: read, validate, probe, check, and flush when asked. Returns the result dict."""
    links = netlink.links()
    addresses, expected = validate(params["addresses"], params["expected"], params["interface"], links)
    local = local_bindings(addresses, netlink.addresses(), links)
    table = netlink.neighbors()
    entries = select_neighbors(table, addresses, params["interface"])
    probes, off_subnet = {}, {}
    if params["probe"]:
        requests, off_subnet = probe_requests(addresses, local, links, netlink, params["interface"])
        for via in off_subnet.values():
            via.update(gateway_neighbor(table, via["gateway"], via["interface"]))
        answers = prober(requests, params["probe_timeout"]) if requests else {}
        probes = dict((ip, [{"mac": mac, "vendor": vendor(mac)} for mac in macs]) for ip, macs in answers.items())
    findings, stale = check(addresses, expected, entries, probes, local, params["interface"])
    for address, via in sorted(off_subnet.items()):
        findings.append(finding(
            "arp.not_probed_off_subnet", "info", "L2", address,
            "%s is reached through the gateway %s on %s: it is not on this host's segment, so no ARP probe was sent "
            "for it (no answer would prove nothing about who holds it)" % (address, via["gateway"], via["interface"]),
            dict(via),
            "ask from a host on the address's own segment (a node of its subnet), or read the holders' side"))
    result = {"reader": netlink.name, "local": local, "neighbors": entries, "probes": probes, "off_subnet": off_subnet,
              "findings": findings, "flushed": [], "kept": [], "flush_failed": [], "not_attempted": [],
              "changed": False}
    if params["flush"] == "stale":
        planned, kept = plan_flush(stale, params["force"], params["max_flush"])
        result["raced"] = []
        subscribe, events = events, None
        if planned and not check_mode:
            events = subscribe()  # subscribed before the first re-read: every delete's notification is seen
        try:
            try:
                flushed, changed_meanwhile, raced = apply_flush(netlink, planned, check_mode, params["force"], events)
            finally:
                if events is not None:
                    events.close()
        except FlushIncomplete as exc:
            # fail with everything this run saw and did, not only the message
            done = exc.details
            exc.details = dict(result, findings=findings + race_findings(done["raced"], []) + [flush_failed_finding(exc)],
                               flushed=done["flushed"], kept=kept + done["kept"], flush_failed=done["flush_failed"],
                               not_attempted=done["not_attempted"], raced=done["raced"],
                               changed=bool(done["flushed"] or done["raced"]), diff=diff(entries, done["flushed"]),
                               after=_after(netlink, addresses, expected, probes, local, params["interface"]))
            raise
        unverified = [e for e in flushed if e.get("verified") is False]
        result.update(flushed=flushed, kept=kept + changed_meanwhile, raced=raced, changed=bool(flushed or raced),
                      findings=findings + race_findings(raced, unverified), diff=diff(entries, flushed))
        if not check_mode:
            result["after"] = _after(netlink, addresses, expected, probes, local, params["interface"])
    return result


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The read-only arp_check on this node: ``params`` (addresses, expected, interface, probe,
    probe_timeout, reader; a plain dict) in, ``{"data": {reader, local, neighbors, probes},
    "findings": [...]}`` out.  No flush option reaches ``arp_check`` from here: repairs stay
    with the arp_check module.  ``runner`` runs ``ip`` (the netlink reader)."""
    from ansible_collections.k8snet.triage.plugins.module_utils.arp.probe import probe

    options = {"addresses": params.get("addresses") or [], "expected": params.get("expected") or {},
               "interface": params.get("interface"), "probe": params.get("probe", False),
               "probe_timeout": params.get("probe_timeout", 0.5), "flush": "none"}
    with Netlink(runner, params.get("reader") or "auto") as netlink:
        result = arp_check(netlink, probe, options, check_mode=True)
    data = dict((key, result[key]) for key in ("reader", "local", "neighbors", "probes", "off_subnet"))
    return {"data": data, "findings": result["findings"]}
