# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Connection-tracking pressure: the table's fill, its drop counters and who fills it (stdlib only).

Readers, all of the current network namespace (the count, the table and the statistics are
kept per namespace; ``nf_conntrack_max`` is the kernel's limit each namespace is held to):

* ``/proc/sys/net/netfilter/nf_conntrack_count`` and ``nf_conntrack_max`` (``nf_conntrack_buckets``);
* ``/proc/net/stat/nf_conntrack``: one row of hexadecimal counters per CPU under a header that
  names them (the set differs between kernels), summed here; ``entries`` is the same on every row;
* the entries themselves, only when the table is under pressure, to name the top
  source/destination pairs: one read of ``/proc/net/nf_conntrack`` (kernels with
  CONFIG_NF_CONNTRACK_PROCFS, the common case), else one netlink dump through pyroute2's
  ``Conntrack`` when importable, else one ``conntrack -L -o extended`` call.  Never a command
  per entry.

Model:
  usage   {"count", "max", "buckets", "ratio"}
  stats   {counter name: sum over CPUs}
  pairs   {"entries", "reader", "pairs": [{"src", "dst", "proto", "count"}], "protos": {proto: count}}

Parsers and checks are pure; ``sample_counters`` samples the counters before and after a
window (the DNS-from-a-pod check reuses it for ``insert_failed``).
"""

from __future__ import annotations

import ipaddress
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import pyroute2

SYSCTL_DIR = "/proc/sys/net/netfilter"
STAT_PATH = "/proc/net/stat/nf_conntrack"
TABLE_PATH = "/proc/net/nf_conntrack"
# the counters whose growth means lost or refused flows
DROP_COUNTERS = ("drop", "early_drop", "insert_failed")
WINDOW_COUNTERS = ("insert_failed", "drop", "early_drop", "invalid", "search_restart")

REMEDIATION = (
    "raise the limit: sysctl -w net.netfilter.nf_conntrack_max=<n> (persist it in /etc/sysctl.d; with "
    "kube-proxy set conntrack.maxPerCore/min in its configuration instead, or it resets the value). Each entry "
    "costs about 300 bytes of kernel memory, so 1M entries is about 300 MB; raise "
    "net.netfilter.nf_conntrack_buckets (or the hashsize module parameter) with it, about max/4, or lookups "
    "slow down. Shorter timeouts free entries sooner (net.netfilter.nf_conntrack_udp_timeout, "
    "nf_conntrack_tcp_timeout_time_wait) at the cost of forgetting idle flows, whose next packet is then "
    "treated as new (NAT may pick another port). First look at the top pairs: a client opening flows in a "
    "loop, a scan or a DNS storm is fixed at its source.")


# ------------------------------------------------------------------ parsers (pure)


def parse_stat(text):
    """``/proc/net/stat/nf_conntrack`` -> {counter: sum over the per-CPU rows} (pure).

    The header names the columns (their set and order differ between kernels); values are
    hexadecimal.  ``entries`` is the namespace's total, repeated on each row: taken once."""
    lines = [line.split() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return {}
    header, out = lines[0], {}
    for row in lines[1:]:
        if len(row) != len(header):
            continue
        for name, value in zip(header, row):
            try:
                number = int(value, 16)
            except ValueError:
                continue
            if name == "entries":
                out[name] = number
            else:
                out[name] = out.get(name, 0) + number
    return out


def parse_entries(text):
    """Lines of ``/proc/net/nf_conntrack`` or ``conntrack -L -o extended`` -> [(src, dst, proto)] (pure).

    The first ``src=`` and ``dst=`` of a line are the original direction's."""
    out = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        src = dst = None
        for item in fields[3:]:
            if src is None and item.startswith("src="):
                src = item[4:]
            elif dst is None and item.startswith("dst="):
                dst = item[4:]
                break
        if src and dst:
            out.append((src, dst, fields[2]))
    return out


def top_pairs(entries, top):
    """[(src, dst, proto)] -> {"entries", "pairs" (the ``top`` commonest src/dst pairs), "protos"} (pure)."""
    pairs, protos = {}, {}
    for src, dst, proto in entries:
        key = (src, dst)
        pairs[key] = pairs.get(key, 0) + 1
        protos[proto] = protos.get(proto, 0) + 1
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {"entries": len(entries),
            "pairs": [{"src": _short(src), "dst": _short(dst), "count": count} for (src, dst), count in ranked],
            "protos": protos}


def _short(address):
    """/proc/net/nf_conntrack prints IPv6 addresses unabbreviated (0000:...:0001): the usual form."""
    if ":" not in address:
        return address
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def is_full(usage):
    """The table is full: at the limit, or within 0.1% (at least 64 entries) of it.  When full, the kernel
    evicts unreplied entries to make room (early_drop), so the count hovers just below the limit."""
    return usage["count"] >= usage["max"] - max(64, usage["max"] // 1000)


# ------------------------------------------------------------------ readers


def _read_int(path):
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (IOError, OSError, ValueError):
        return None


def read_usage(sysctl_dir=SYSCTL_DIR):
    """{"count", "max", "buckets", "ratio"} of this namespace, or None when conntrack is not loaded."""
    count = _read_int(sysctl_dir + "/nf_conntrack_count")
    limit = _read_int(sysctl_dir + "/nf_conntrack_max")
    if count is None or limit is None:
        return None
    return {"count": count, "max": limit, "buckets": _read_int(sysctl_dir + "/nf_conntrack_buckets"),
            "ratio": round(float(count) / limit, 4) if limit > 0 else None}


def read_stat(path=STAT_PATH):
    """The summed counters of ``/proc/net/stat/nf_conntrack`` ({} when the file is missing)."""
    try:
        with open(path) as handle:
            return parse_stat(handle.read())
    except (IOError, OSError):
        return {}


def sample_counters(window, read=read_stat, sleep=time.sleep, clock=time.monotonic, names=WINDOW_COUNTERS):
    """The conntrack counters read before and after ``window`` seconds.

    Returns {"seconds", "before", "after", "delta"}, each a {counter: value} of ``names`` (a counter
    this kernel does not have is left out); ``delta`` holds after - before."""
    started = clock()
    before = read()
    if window > 0:
        sleep(window)
    after = read()
    keep = [n for n in names if n in before and n in after]
    return {"seconds": round(clock() - started, 3),
            "before": dict((n, before[n]) for n in keep), "after": dict((n, after[n]) for n in keep),
            "delta": dict((n, after[n] - before[n]) for n in keep)}


def _entries_pyroute2():
    Conntrack = pyroute2()["Conntrack"]  # pylint: disable=invalid-name
    names = {1: "icmp", 6: "tcp", 17: "udp", 58: "ipv6-icmp", 132: "sctp"}
    out = []
    ct = Conntrack()
    try:
        for entry in ct.dump_entries():
            orig = entry.tuple_orig
            out.append((orig.saddr, orig.daddr, names.get(orig.proto, str(orig.proto))))
    finally:
        ct.close()
    return out


def _has_pyroute2():
    return pyroute2()["Conntrack"] is not None


def read_entries(runner, reader="auto", table_path=TABLE_PATH):
    """(reader used, [(src, dst, proto)]) of every entry of this namespace, read at once.

    ``auto`` reads ``/proc/net/nf_conntrack``, else runs ``conntrack -L -o extended`` once.  pyroute2's
    netlink dump is used only when asked for by name: it parses in pure Python and took 270 s for
    262k entries where the /proc read took 1.7 s (bench/conntrack_read.py)."""
    if reader in ("auto", "proc"):
        try:
            with open(table_path) as handle:
                return "proc", parse_entries(handle.read())
        except (IOError, OSError) as exc:
            if reader == "proc":
                raise ReadError("reader=proc: %s cannot be read (%s): this kernel has no CONFIG_NF_CONNTRACK_PROCFS "
                                "or this is not root; use reader=auto" % (table_path, exc.strerror or exc))
    if reader == "pyroute2":
        if not _has_pyroute2():
            raise ReadError("reader=pyroute2 was asked for but pyroute2 is not importable on this host; "
                            "install python3-pyroute2 or use reader=auto")
        try:
            return "pyroute2", _entries_pyroute2()
        except Exception as exc:  # pylint: disable=broad-except
            raise ReadError("the conntrack netlink dump through pyroute2 failed: %s (is nf_conntrack_netlink "
                            "loaded? run as root)" % exc)
    tool = Tool(runner, "conntrack", required=False)
    if not tool.available:
        raise ReadError("the conntrack entries cannot be read: %s is not readable and the conntrack tool is not "
                        "installed; install conntrack (conntrack-tools) or run as root" % table_path)
    out = tool.run_large(["-L", "-o", "extended"])[1]
    return "conntrack", parse_entries(out)


# ------------------------------------------------------------------ checks (pure)


def _check_evidence(usage, stats, delta, pairs, window):
    """The evidence of the conntrack findings: the fill, the drop counters, the window's growth, the top pairs."""
    evidence = {"count": usage["count"], "max": usage["max"], "ratio": usage["ratio"], "buckets": usage["buckets"],
                "counters": dict((k, stats[k]) for k in DROP_COUNTERS if k in stats)}
    if delta is not None:
        evidence["window"] = {"seconds": window, "delta": delta}
    if pairs:
        evidence["top_pairs"] = pairs["pairs"]
        evidence["protos"] = pairs["protos"]
        evidence["reader"] = pairs["reader"]
        if pairs.get("error"):
            evidence["top_pairs_error"] = pairs["error"]
    return evidence


def _top_text(pairs):
    """The summary's mention of the commonest pair ("" when no pair was named)."""
    if not (pairs and pairs["pairs"]):
        return ""
    first = pairs["pairs"][0]
    return "; the commonest pair %s -> %s holds %d entries" % (first["src"], first["dst"], first["count"])


def _full_finding(full, grew, percent, top, window, subject, evidence):
    """``conntrack.table_full`` (critical): the table is full now, or flows were dropped in the window."""
    cause = ("the table is full, " if full else "the table holds ") + percent
    lost = (": new flows were dropped or evicted in the %gs window (%s)" % (
        window, ", ".join("%s +%d" % item for item in sorted(grew.items()))) if grew else
        ": new flows are dropped (the kernel logs 'nf_conntrack: table full, dropping packet')")
    return finding("conntrack.table_full", "critical", "L4", subject, cause + lost + top, evidence, REMEDIATION)


def _ratio_finding(ratio, percent, top, warn_ratio, critical_ratio, subject, evidence):
    """``conntrack.pressure`` (warning or critical) when the fill is past a ratio, else None."""
    if not (ratio >= critical_ratio or ratio >= warn_ratio):
        return None
    severity = "critical" if ratio >= critical_ratio else "warning"
    return finding("conntrack.pressure", severity, "L4", subject,
                   "the conntrack table holds %s, past the %s ratio %g%s" % (
                       percent, severity, critical_ratio if severity == "critical" else warn_ratio, top),
                   evidence, REMEDIATION)


def _past_full_finding(stats, percent, subject, evidence):
    """``conntrack.table_full`` (info) when the drop counters say the table was full once, else None."""
    since = dict((k, stats[k]) for k in ("drop", "early_drop") if stats.get(k))
    if not since:
        return None
    return finding("conntrack.table_full", "info", "L4", subject,
                   "the conntrack table holds %s now, but it was full at some time since its counters started (%s)"
                   % (percent, ", ".join("%s %d" % item for item in sorted(since.items()))), evidence,
                   "not full now: compare the counters over time (conntrack_check with an interval) and, "
                   "if they grow, " + REMEDIATION)


def _no_limit_finding(usage, grew, subject, evidence):
    """``conntrack.pressure`` (warning) when ``nf_conntrack_max`` reads 0: the kernel then sets no limit (or the
    limit could not be read), so the fill cannot be judged; a full table it is not."""
    lost = (" (the drop counters grew in the window: %s)" % ", ".join("%s +%d" % item for item in sorted(grew.items()))
            if grew else "")
    return finding("conntrack.pressure", "warning", "L4", subject,
                   "nf_conntrack_max reads 0: the conntrack table has no limit set (or it could not be read), so its "
                   "fill (%d entries) cannot be judged%s" % (usage["count"], lost), evidence,
                   "check sysctl net.netfilter.nf_conntrack_max: 0 lets the table grow until kernel memory runs "
                   "out; set a limit (sysctl -w net.netfilter.nf_conntrack_max=<n>, persisted in /etc/sysctl.d, "
                   "or kube-proxy's conntrack.maxPerCore/min)")


def check(usage, stats, delta, pairs, subject, warn_ratio=0.75, critical_ratio=0.9, window=0.0):
    """Findings from the table's fill, the drop counters (and their growth in the window) and the top pairs."""
    if usage is None:
        return [finding("conntrack.pressure", "info", "L4", subject,
                        "connection tracking is not loaded in this network namespace (no %s/nf_conntrack_count): "
                        "no table to fill" % SYSCTL_DIR, {})]
    evidence = _check_evidence(usage, stats, delta, pairs, window)
    grew = dict((k, v) for k, v in (delta or {}).items() if k in ("drop", "early_drop") and v > 0)
    if usage["max"] <= 0:
        return [_no_limit_finding(usage, grew, subject, evidence)]
    ratio = usage["ratio"] or 0.0
    percent = "%d of %d entries (%.0f%%)" % (usage["count"], usage["max"], ratio * 100)
    top = _top_text(pairs)
    full = is_full(usage)
    if full or grew:
        return [_full_finding(full, grew, percent, top, window, subject, evidence)]
    found = (_ratio_finding(ratio, percent, top, warn_ratio, critical_ratio, subject, evidence)
             or _past_full_finding(stats, percent, subject, evidence))
    if found is not None:
        return [found]
    return [finding("conntrack.pressure", "ok", "L4", subject,
                    "the conntrack table holds %s, below the warning ratio %g" % (percent, warn_ratio), evidence)]


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The conntrack check of this node's namespace: ``params`` (conntrack_check's options) in,
    ``{"data": {usage, stats, window, top_pairs}, "findings": [...]}`` out.

    The counters are sampled ``interval`` seconds apart (0: one read); the entries are read,
    once, only when the table is past ``warn_ratio`` (or ``top_pairs: always``)."""
    warn, crit = params.get("warn_ratio", 0.75), params.get("critical_ratio", 0.9)
    if not 0 < warn <= crit <= 1:
        raise InputError("warn_ratio must be more than 0 and at most critical_ratio, and critical_ratio at most 1 "
                         "(got %s and %s)" % (warn, crit))
    interval, top = params.get("interval", 0), params.get("top", 10)
    subject = params.get("node_name") or "this node"
    usage = read_usage()
    window = None
    if usage is not None:
        window = sample_counters(interval)
        usage = read_usage() or usage  # after the window: the newest fill
    stats = read_stat() if usage is not None else {}
    pairs = None
    wanted = params.get("top_pairs") or "pressure"
    if usage is not None and top > 0 and (wanted == "always" or (wanted == "pressure" and (usage["ratio"] or 0) >= warn)):
        try:
            reader, entries = read_entries(runner, params.get("reader") or "auto")
            pairs = dict(top_pairs(entries, top), reader=reader)
        except ReadError as exc:
            if params.get("reader") not in (None, "auto"):
                raise
            # the fill and the counters still stand: the finding says the pairs could not be named
            pairs = {"entries": None, "pairs": [], "protos": {}, "reader": None, "error": exc.message}
    delta = window["delta"] if window and interval > 0 else None
    findings = check(usage, stats, delta, pairs, subject, warn, crit, interval)
    data = {"usage": usage, "stats": stats, "window": window, "top_pairs": pairs}
    return {"data": data, "findings": findings}
