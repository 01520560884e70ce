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
import re

from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding

MAC_RE = re.compile(r"^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(\1[0-9a-f]{2}){4}$", re.IGNORECASE)
# Entries the kernel or a CNI manages: never deleted unless force (safety.md).
PROTECTED_STATES = ("PERMANENT", "NOARP")
PROTECTED_FLAGS = ("extern_learn", "managed")
UNRESOLVED_STATES = ("FAILED", "INCOMPLETE")
OUI_FILES = ("/usr/share/ieee-data/oui.txt", "/usr/share/hwdata/oui.txt", "/usr/share/misc/oui.txt",
             "/var/lib/ieee-data/oui.txt")


def normalize_mac(value):
    """'02-DE-AD-00-BE-EF' / '02dead00beef' -> '02:de:ad:00:be:ef'; raise InputError if malformed."""
    text = str(value).strip()
    if not MAC_RE.match(text):
        raise InputError("%r is not a MAC address (expected six hex pairs like 02:de:ad:00:be:ef)" % (value,))
    digits = re.sub(r"[^0-9a-f]", "", text.lower())
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def normalize_address(value, option="addresses"):
    try:
        return str(ipaddress.ip_address(str(value).strip()))
    except ValueError:
        raise InputError("%r in %s is not an IPv4 or IPv6 address (a VIP like 198.18.0.200 is expected)"
                         % (value, option))


def validate(addresses, expected, interface, links):
    """Normalise the options; return (addresses, expected). Raises InputError naming the bad value."""
    if not addresses and not expected:
        raise InputError("addresses is empty: give the VIPs or addresses whose neighbor entries to check")
    wanted = []
    for value in addresses or []:
        address = normalize_address(value)
        if address not in wanted:
            wanted.append(address)
    macs = {}
    for key, mac in (expected or {}).items():
        address = normalize_address(key, option="expected")
        try:
            macs[address] = normalize_mac(mac)
        except InputError as exc:
            raise InputError("expected[%s]: %s" % (key, exc.message))
        if address not in wanted:
            wanted.append(address)
    if interface and interface not in [link["ifname"] for link in links]:
        raise InputError("interface %r does not exist on this host; its interfaces are: %s"
                         % (interface, ", ".join(sorted(link["ifname"] for link in links))))
    return wanted, macs


def local_bindings(addresses, host_addresses, links):
    """Which of ``addresses`` this host holds itself, with the interface's MAC (so we learn a VIP's owner)."""
    macs = dict((link["ifname"], link["mac"]) for link in links)
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
        answered = probes.get(address)
        macs = sorted(set(p["mac"] for p in answered or []))
        if answered is not None and address in local_addresses:
            # we hold it ourselves: any other MAC answering is a rival claimant
            own = [item["mac"] for item in local if item["address"] == address]
            macs = sorted(set(macs) | set(own))
            answered = answered + [{"mac": mac, "vendor": vendor(mac), "self": True} for mac in own]
        truth, source = None, None
        if address in expected:
            truth, source = expected[address], "expected"
        elif len(macs) == 1:
            truth, source = macs[0], "probe"
        if len(macs) > 1:
            findings.append(finding(
                "arp.ip_conflict", "critical", "L2", address,
                "%d different MACs answer ARP for %s: two hosts claim one address" % (len(macs), address),
                {"answers": answered, "expected_mac": expected.get(address)},
                "Find the hosts owning %s (vendor and MAC above) and remove the address from all but one "
                "(e.g. a second keepalived/kube-vip leader)." % ", ".join(macs)))
        problem = False
        for entry in mine:
            if is_unresolved(entry):
                problem = True
                findings.append(finding(
                    "arp.unresolved", "warning", "L2", "%s dev %s" % (address, entry["interface"]),
                    "%s does not resolve on %s (%s): nothing answers ARP for it" % (
                        address, entry["interface"], "/".join(entry["state"])),
                    {"entry": describe(entry), "answers": answered},
                    "Check that the owner of %s is up and holds the address; probe with arp_check probe=true." % address))
                continue
            if truth and entry["mac"] != truth:
                problem = True
                stale.append(entry)
                protected = is_protected(entry)
                findings.append(finding(
                    "arp.stale_entry", "critical", "L2", "%s dev %s" % (address, entry["interface"]),
                    "cached MAC %s for %s is wrong: the %s MAC is %s" % (
                        entry["mac"], address, "owner's" if source == "expected" else "answering", truth),
                    {"entry": describe(entry), "cached_mac": entry["mac"], "true_mac": truth, "truth_from": source,
                     "protected": protected},
                    ("Flush it with arp_check flush=stale%s (deletes only %s dev %s)." % (
                        " force=true (the entry is %s)" % "/".join(entry["flags"] + entry["state"]) if protected else "",
                        address, entry["interface"]))))
        if not mine and address not in local_addresses:
            findings.append(finding(
                "arp.not_cached", "info", "L2", address,
                "no neighbor entry for %s%s: it is resolved on first use" % (address, " on " + interface if interface else ""),
                {"answers": answered} if answered is not None else {}, ""))
        elif mine and not problem:
            findings.append(finding(
                "arp.ok", "ok", "L2", address, "neighbor entry for %s matches %s" % (
                    address, "the expected MAC" if source == "expected" else "the MAC that answers" if source else "no known truth"),
                {"entries": [describe(e) for e in mine], "truth_from": source}, ""))
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


def apply_flush(netlink, planned, check_mode):
    """Delete each planned entry after re-reading it; returns (flushed, kept)."""
    flushed, kept = [], []
    if not planned:
        return flushed, kept
    current = netlink.neighbors()
    for entry in planned:
        now = [n for n in current if n["address"] == entry["address"] and n["interface"] == entry["interface"]]
        if not now or now[0]["mac"] != entry["mac"]:
            kept.append(dict(entry, reason="changed since it was read (now %s): not deleted"
                             % (describe(now[0]) if now else "gone")))
            continue
        if not check_mode:
            netlink.delete_neighbor(entry["address"], entry["interface"])
        flushed.append(entry)
    return flushed, kept


def diff(entries, flushed):
    before = sorted(describe(e) for e in entries)
    gone = set(describe(e) for e in flushed)
    return {"before": "\n".join(before) + "\n" if before else "",
            "after": "\n".join(line for line in before if line not in gone) + "\n" if set(before) - gone else ""}


_OUI_CACHE = {}


def vendor(mac):
    """The vendor registered for a MAC's OUI (netaddr's registry, else the system's oui.txt); None if unknown."""
    if not mac:
        return None
    if int(mac.split(":")[0], 16) & 0x02:
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
    address (we own it: only rival claimants answer), or the one the route to it uses."""
    macs = dict((link["ifname"], link["mac"]) for link in links)
    held = dict((item["address"], item["interface"]) for item in local)
    requests = []
    for address in addresses:
        if ipaddress.ip_address(address).version != 4:
            continue  # NDP probing is not implemented: IPv6 entries are checked against `expected` only
        device = interface or held.get(address) or netlink.route_get(address).get("dev")
        if not device or device == "lo" or not macs.get(device):
            continue
        requests.append({"interface": device, "src_mac": macs[device], "target": address})
    return requests


def arp_check(netlink, prober, params, check_mode):
    """The whole arp_check run: read, validate, probe, check, and flush when asked. Returns the result dict."""
    links = netlink.links()
    addresses, expected = validate(params["addresses"], params["expected"], params["interface"], links)
    local = local_bindings(addresses, netlink.addresses(), links)
    entries = select_neighbors(netlink.neighbors(), addresses, params["interface"])
    probes = {}
    if params["probe"]:
        requests = probe_requests(addresses, local, links, netlink, params["interface"])
        answers = prober(requests, params["probe_timeout"]) if requests else {}
        probes = dict((ip, [{"mac": mac, "vendor": vendor(mac)} for mac in macs]) for ip, macs in answers.items())
    findings, stale = check(addresses, expected, entries, probes, local, params["interface"])
    result = {"reader": netlink.name, "local": local, "neighbors": entries, "probes": probes,
              "findings": findings, "flushed": [], "kept": [], "changed": False}
    if params["flush"] == "stale":
        planned, kept = plan_flush(stale, params["force"], params["max_flush"])
        flushed, changed_meanwhile = apply_flush(netlink, planned, check_mode)
        result.update(flushed=flushed, kept=kept + changed_meanwhile, changed=bool(flushed),
                      diff=diff(entries, flushed))
    return result


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The read-only arp_check on this node: ``params`` (addresses, expected, interface, probe,
    probe_timeout, reader; a plain dict) in, ``{"data": {reader, local, neighbors, probes},
    "findings": [...]}`` out.  No flush option reaches ``arp_check`` from here: repairs stay
    with the arp_check module.  ``runner`` runs ``ip`` when pyroute2 is missing."""
    from ansible_collections.k8snet.triage.plugins.module_utils.arp_probe import probe
    from ansible_collections.k8snet.triage.plugins.module_utils.netlink import Netlink

    options = {"addresses": params.get("addresses") or [], "expected": params.get("expected") or {},
               "interface": params.get("interface"), "probe": params.get("probe", False),
               "probe_timeout": params.get("probe_timeout", 0.5), "flush": "none"}
    netlink = Netlink(runner, params.get("reader") or "auto")
    try:
        result = arp_check(netlink, probe, options, check_mode=True)
    finally:
        netlink.close()
    data = dict((key, result[key]) for key in ("reader", "local", "neighbors", "probes"))
    return {"data": data, "findings": result["findings"]}
