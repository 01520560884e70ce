# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Logs and events as evidence: bounded readers, secret masking, and the signature matcher.

* Node side (standard library only): ``read_journal`` asks journald (``journalctl -o json``) for the
  units' recent lines, bounded by ``--since`` and ``-n``; ``read_files`` reads the tail of each log
  file that exists, bounded by bytes and lines, skipping (with a note) what is not a regular file under
  /var/log, reading a file given under two names once, and skipping the NUL holes of copytruncate rotation.
* Both sides: ``match`` runs every line through the signature table (``log_signatures``) and
  ``findings`` turns the matches into findings whose evidence holds the matching lines (a few, with
  their timestamps, secrets masked).  The controller side (pod logs and events through the API) is
  ``kube_logs.py``; it uses the same matcher.
* ``node_check(params, runner)`` is the node-side check of one shape (module ``node_logs``).
"""

from __future__ import annotations

import calendar
import json
import os
import re
import stat
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sort_findings
from ansible_collections.k8snet.triage.plugins.module_utils.logs.signatures import SIGNATURES
from ansible_collections.k8snet.triage.plugins.module_utils.logs.options import DEFAULT_FILES, DEFAULT_UNITS, LOG_ROOT, RULES

JOURNAL_SOCKET = "/run/systemd/journal/socket"
JOURNALCTL_DIRS = ("/usr/bin", "/bin")

EXCERPT = 300            # characters of one line kept in evidence
LINES_PER_MATCH = 5      # matching lines kept per finding (the first and the latest ones)
MAX_LINE = 16384         # characters of one line looked at (a longer line is cut)

# ------------------------------------------------------------------ masking
_SECRETS = (
    (re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)?\s*)[^\s\"',;]+"), r"\1***"),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{6,}"), r"\1***"),
    (re.compile(r"eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]+"), "***"),
    (re.compile(r"(?i)\b((?:access_|api_?|auth_|refresh_|client_|id_)?token|password|passwd|secret|api[_-]?key)"
                r"([\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;}]+"), r"\1\2***"),
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1***@"),
)


def mask(text):
    """``text`` with tokens, Authorization headers, passwords and URL credentials replaced by ***."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def excerpt(text, limit=EXCERPT):
    """One line for evidence: secrets masked, control characters dropped, at most ``limit`` characters."""
    text = mask(text)
    text = "".join(c if c >= " " or c == "\t" else " " for c in text).strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


# a line at error or warning level: logfmt (Cilium, Calico's felix), JSON (MetalLB), klog, coredns
_PROBLEM = re.compile(r'(?i)(?:\blevel[=:]\s*"?(?:error|err|fatal|crit|critical|warn|warning)\b|'
                      r'"(?:level|severity)":\s*"(?:error|err|fatal|warn|warning)"|^[EWF]\d{4} |'
                      r'\[(?:ERROR|WARN|WARNING|FATAL)\]|\berror\b)')
UNMATCHED_SHOWN = 10     # lines shown when none matched a signature


def unmatched_lines(entries, limit=UNMATCHED_SHOWN):
    """The lines to show when none matched a signature: ``(lines, kind)``, the newest ``limit`` at error or
    warning level (kind ``errors``), else the newest ``limit`` lines (kind ``last``); each line
    ``{time, subject, origin, text}``, masked and cut as all log evidence is."""
    problems = [e for e in entries if _PROBLEM.search(e.get("text") or "")]
    chosen, kind = (problems, "errors") if problems else (list(entries), "last")
    return [{"time": e.get("time"), "subject": e.get("subject"), "origin": e.get("origin"),
             "text": excerpt(e.get("text") or "")} for e in chosen[-limit:]], kind


# ------------------------------------------------------------------ timestamps
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?")
_KLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)")
_SYSLOG = re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)\b")
_MONTHS = dict((m, i + 1) for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()))


def _epoch(year, month, day, hour, minute, second):
    try:
        return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        return None


def _without_year(month, day, hour, minute, second, now):
    """A time printed without its year (klog, syslog): this year, or last year when that is in the future."""
    year = time.gmtime(now).tm_year
    value = _epoch(year, month, day, hour, minute, second)
    if value is not None and value > now + 86400:
        value = _epoch(year - 1, month, day, hour, minute, second)
    return value


def line_time(text, now=None):
    """(timestamp text, epoch seconds) of a log line, from its first timestamp in a known format
    (RFC 3339 / ISO 8601, klog ``E0416 22:26:30.150357``, syslog ``Apr 16 22:26:30``); (None, None)."""
    now = time.time() if now is None else now
    head = text[:200]
    match = _ISO.search(head)
    if match and match.start() < 120:
        year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
        value = _epoch(year, month, day, hour, minute, second)
        zone = match.group(8)
        if value is not None and zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            value -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
        return match.group(0), value
    match = _KLOG.match(head)
    if match:
        month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 6))
        return match.group(0)[1:], _without_year(month, day, hour, minute, second, now)
    match = _SYSLOG.match(head)
    if match and match.group(1) in _MONTHS:
        day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
        return match.group(0), _without_year(_MONTHS[match.group(1)], day, hour, minute, second, now)
    return None, None


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


# ------------------------------------------------------------------ the matcher
_COMPILED = tuple((sig, re.compile(sig["pattern"])) for sig in SIGNATURES)


def classify(text):
    """(signature, match) of the first signature matching one line, else (None, None)."""
    text = text[:MAX_LINE]
    for sig, pattern in _COMPILED:
        found = pattern.search(text)
        if found:
            return sig, found
    return None, None


def match(entries):
    """Group the lines that match a signature: one group per (signature, subject).

    ``entries``: dicts with ``text``, ``time`` (text or None), ``subject`` (what the line is about: a node,
    ``node/pod``) and ``origin`` (where it was read: ``journal:kubelet``, ``/var/log/syslog``,
    ``kube-system/calico-node-x calico-node previous``).  Returns a list of groups
    ``{check, subject, count, first, last, lines, targets, origins}`` in the table's order, each keeping
    the first and the latest few lines (masked, cut to EXCERPT characters)."""
    groups = {}
    for entry in entries:
        sig, found = classify(entry["text"])
        if sig is None:
            continue
        key = (sig["check"], entry["subject"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"check": sig["check"], "subject": entry["subject"], "count": 0,
                                   "first": None, "last": None, "lines": [], "targets": [], "origins": []}
        group["count"] += 1
        line = {"time": entry.get("time"), "origin": entry["origin"], "text": excerpt(entry["text"])}
        if group["first"] is None:
            group["first"] = line["time"]
        group["last"] = line["time"] or group["last"]
        if len(group["lines"]) < LINES_PER_MATCH:
            group["lines"].append(line)
        else:  # keep the first LINES_PER_MATCH - 1 and the latest one
            group["lines"][-1] = line
        target = (found.groupdict().get("target") or "").strip()
        if target and target not in group["targets"] and len(group["targets"]) < LINES_PER_MATCH:
            group["targets"].append(target[:100])
        if entry["origin"] not in group["origins"] and len(group["origins"]) < LINES_PER_MATCH:
            group["origins"].append(entry["origin"])
    order = dict((sig["check"], i) for i, (sig, _pattern) in enumerate(_COMPILED))
    return sorted(groups.values(), key=lambda g: (order[g["check"]], g["subject"]))


SIGNATURE_BY_CHECK = dict((sig["check"], sig) for sig in SIGNATURES)


def group_data(group):
    """A match group as result data: what matched and which findings it explains (data, not evidence)."""
    sig = SIGNATURE_BY_CHECK[group["check"]]
    return dict(group, explains=list(sig["explains"]), severity=sig["severity"], layer=sig["layer"])


def findings(groups):
    """One finding per match group: the signature's severity, layer, meaning and next step, the lines as
    evidence (with their timestamps and where they were read) and the signature's source."""
    found = []
    for group in groups:
        sig = SIGNATURE_BY_CHECK[group["check"]]
        when = " (%s .. %s)" % (group["first"], group["last"]) if group["first"] and group["last"] else ""
        about = " about %s" % ", ".join(group["targets"]) if group["targets"] else ""
        evidence = {"count": group["count"], "lines": group["lines"], "origins": group["origins"],
                    "explains": list(sig["explains"]), "signature_source": sig["sources"][0]}
        if group["targets"]:
            evidence["targets"] = group["targets"]
        found.append(finding(
            group["check"], sig["severity"], sig["layer"], group["subject"],
            "%d log line%s%s%s: %s" % (group["count"], "" if group["count"] == 1 else "s", about, when, sig["meaning"]),
            evidence, sig["remediation"]))
    return found


# ------------------------------------------------------------------ node-side readers
def journald_present(exists=os.path.exists):
    return exists(JOURNAL_SOCKET)


def parse_journal(text, subject, now=None):
    """Entries from ``journalctl -o json`` output (one JSON object per line)."""
    entries = []
    for raw in text.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        message = record.get("MESSAGE")
        if isinstance(message, list):  # journald gives non-UTF-8 messages as a list of bytes
            try:
                message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
            except (TypeError, ValueError):
                message = None
        if not isinstance(message, str):
            continue
        stamp = None
        try:
            stamp = iso(int(record.get("__REALTIME_TIMESTAMP")) / 1e6)
        except (TypeError, ValueError, OverflowError):
            stamp = line_time(message, now)[0]
        unit = record.get("_SYSTEMD_UNIT") or record.get("SYSLOG_IDENTIFIER") or "kernel"
        entries.append({"text": message[:MAX_LINE], "time": stamp, "subject": subject,
                        "origin": "journal:%s" % str(unit)[:64]})
    return entries


def read_journal(runner, units, since, max_lines, max_bytes, subject, kernel=True):
    """(entries, read rows) from journald: the units' lines of the last ``since`` seconds (and the kernel's,
    for conntrack), at most ``max_lines`` per query and ``max_bytes`` of output."""
    tool = _journalctl(runner)
    if not tool.available:
        raise _no_journalctl()
    queries = [("units", [a for unit in units for a in ("-u", unit)])]
    if kernel:
        queries.append(("kernel", ["-k"]))
    entries, rows = [], []
    for label, selection in queries:
        args = ["-o", "json", "--no-pager", "-q", "--since", "-%ds" % int(since), "-n", str(int(max_lines))] + selection
        _rc, out, _err = tool.run(args)
        size = len(out)
        cut = out[-max_bytes:] if size > max_bytes else out
        if size > max_bytes:
            cut = cut.split("\n", 1)[1] if "\n" in cut else ""
        found = parse_journal(cut, subject)
        entries.extend(found)
        rows.append({"origin": "journal:%s" % (",".join(units) if label == "units" else "kernel"), "status": "read",
                     "lines": len(found), "bytes": min(size, max_bytes), "truncated": size > max_bytes})
    return entries, rows


def _journalctl(runner):
    return Tool(runner, "journalctl", required=False, opt_dirs=JOURNALCTL_DIRS)


def _no_journalctl():
    return ReadError("journalctl is not installed on this node: set source: files (logs_source: files) and list the "
                     "log files (node_log_files, logs_node_log_files) to read them instead", tool="journalctl")


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _open_log(path):
    """(file object, stat, None) for ``path`` when it resolves inside /var/log to a regular file that can be
    read; (None, None, None) when it does not exist; (None, None, reason) when it cannot be read.

    The type is checked with lstat before anything is opened (a FIFO or a device is never opened, so a
    FIFO cannot block the read), and the open uses O_NOFOLLOW | O_NONBLOCK and is checked again with fstat
    against the same inode (a file swapped in between is not read)."""
    real = os.path.realpath(path)
    if real != LOG_ROOT and not real.startswith(LOG_ROOT + "/"):
        return None, None, ("resolves to %s, outside %s: log files are read only under %s (give the real file's "
                            "path under %s, or leave it out of node_log_files)" % (real, LOG_ROOT, LOG_ROOT, LOG_ROOT))
    try:
        before = os.lstat(real)
    except FileNotFoundError:
        return None, None, None  # a dangling symlink inside /var/log: nothing to read
    except OSError as exc:
        return None, None, "cannot be examined: %s" % exc.strerror
    if not stat.S_ISREG(before.st_mode):
        return None, None, "is %s, not a regular file: only log files are read (leave it out of node_log_files)" % (
            _kind(before.st_mode))
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        return None, None, "cannot be opened: %s (run as root)" % exc.strerror
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        return None, None, "was replaced while it was opened: not read (run the check again)"
    return os.fdopen(fd, "rb"), info, None


_NUL_RUN = re.compile(b"\0+")


def tail_lines(data, cut):
    """(lines, NUL bytes) of the bytes read from a log file's tail.  ``cut``: the first line starts before
    ``data`` (it is dropped).  A run of NUL bytes (the hole copytruncate rotation leaves when the writer goes
    on at its old offset, or a crash's unwritten blocks) is not a line: it ends the line before it, and the
    line after it starts whole."""
    nuls = data.count(b"\0")
    if nuls:
        if cut and data.startswith(b"\0"):
            cut = False  # the tail starts inside a hole: what follows it is a whole line
        data = _NUL_RUN.sub(b"\n", data)
    lines = data.decode("utf-8", "replace").splitlines()
    if cut and lines:
        lines = lines[1:]
    return [line for line in lines if line.strip()] if nuls else lines, nuls


def read_file_tail(path, max_bytes, max_lines):
    """(lines, size, truncated, info, note): the last ``max_lines`` complete lines within the last ``max_bytes``
    of a log file (runs of NUL bytes skipped); lines None when it does not exist or cannot be read (``note``
    says why), ``info`` its stat."""
    handle, info, note = _open_log(path)
    if handle is None:
        return None, 0, False, None, note
    with handle:
        size = info.st_size
        start = max(0, size - max_bytes)
        cut = False
        if start > 0:  # the byte before the window says whether its first line is whole
            handle.seek(start - 1)
            cut = handle.read(1) not in (b"\n", b"\0")
        handle.seek(start)
        data = handle.read(max_bytes)
    lines, nuls = tail_lines(data, cut)
    truncated = start > 0 or len(lines) > max_lines
    note = "%d NUL bytes skipped (a hole left by copytruncate rotation or a crash)" % nuls if nuls else None
    return lines[-max_lines:], size, truncated, info, note


def read_files(paths, since, max_bytes, max_lines, subject, now=None):
    """(entries, read rows) from the log files that exist; lines older than ``since`` seconds are dropped
    (lines without a known timestamp are kept: they are within the size bound).

    A file that cannot be read (outside /var/log through a symlink, a FIFO, a device, unreadable) is
    skipped with a row saying why, and the others are read; a file given twice, or under two names (a
    symlink or a hard link to the same inode), is read once, its other rows say ``duplicate``."""
    now = time.time() if now is None else now
    entries, rows, seen = [], [], {}
    for path in paths:
        row = {"origin": path, "status": "missing", "lines": 0, "bytes": 0, "truncated": False}
        rows.append(row)
        if not os.path.lexists(path):
            continue
        try:
            identity = os.stat(path)
        except OSError:
            identity = None
        if identity is not None and (identity.st_dev, identity.st_ino) in seen:
            row.update(status="duplicate", same_as=seen[(identity.st_dev, identity.st_ino)],
                       note="the same file as %s (same device and inode): read once" % seen[(identity.st_dev, identity.st_ino)])
            continue
        lines, size, truncated, info, note = read_file_tail(path, max_bytes, max_lines)
        if lines is None:
            if note:
                row.update(status="skipped", note=note)
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:  # the path now names a file read already
            row.update(status="duplicate", same_as=seen[key],
                       note="the same file as %s (same device and inode): read once" % seen[key])
            continue
        seen[key] = path
        kept = 0
        for text in lines:
            stamp, epoch = line_time(text, now)
            if epoch is not None and epoch < now - since:
                continue
            kept += 1
            entries.append({"text": text[:MAX_LINE], "time": stamp, "subject": subject, "origin": path})
        row.update(status="read", lines=kept, bytes=min(size, max_bytes), truncated=truncated)
        if note:
            row["note"] = note
    return entries, rows


# ----------------------------------------------------------------- the node check (one shape)


def _journal_chosen(source, journald, runner):
    """Whether the journal is read (else the log files): ``source: journal``, or ``auto`` when journald runs and
    journalctl is installed; ``journal`` without journalctl or without journald raises."""
    if source == "files":
        return False
    installed = _journalctl(runner).available
    if source == "journal" and not installed:
        raise _no_journalctl()
    if journald is None:
        journald = journald_present()
    if source == "journal" and not journald:
        raise ReadError("journald is not running on this host (no %s): set source: files" % JOURNAL_SOCKET)
    return bool(journald and installed)


def _skipped_finding(rows, node):
    """``log.file_skipped`` (info) naming the log files that were not read, or None."""
    skipped = [row for row in rows if row["status"] == "skipped"]
    if not skipped:
        return None
    return finding(
        "log.file_skipped", "info", "control-plane", node,
        "%d log file%s not read on %s: %s" % (len(skipped), "" if len(skipped) == 1 else "s", node, "; ".join(
            "%s %s" % (row["origin"], row["note"]) for row in skipped)),
        {"skipped": skipped},
        "give node_log_files the real log files under /var/log (a log moved elsewhere is not read through its "
        "symlink; a FIFO or device is never read)")


def _nothing_read_reason(used, units, since, files):
    """Why no log line was read: the journal's units had none, or the files are missing, unreadable or empty."""
    if used == "journal":
        return "the journal had no line of %s in the last %ds" % (", ".join(units), since)
    if files:
        return "none of %s exists, can be read or has recent lines" % ", ".join(files)
    return "node_log_files is empty"


def _coverage_finding(groups, rows, node, since, used, units, files):
    """``log.no_signature`` (lines read, none matched) or ``log.nothing_read`` (no line read), else None."""
    read = sum(row["lines"] for row in rows)
    if not groups and read:
        origins = [row["origin"] for row in rows if row["status"] == "read"]
        return finding(
            "log.no_signature", "info", "control-plane", node,
            "%d log lines of the last %ds read (%s): none matches a known network signature" % (
                read, since, ", ".join(origins)),
            {"read": rows}, "")
    if not read:
        return finding(
            "log.nothing_read", "info", "control-plane", node,
            "no log line was read on %s: %s" % (node, _nothing_read_reason(used, units, since, files)),
            {"read": rows, "source": used},
            "set node_log_files to kubelet's and the runtime's log files on this host (under /var/log)")
    return None


def node_check(params, runner, now=None, journald=None):
    """The whole node_logs run on this node: kubelet's and the runtime's recent lines (the journal when
    journald runs, else the log files that exist), matched against the signature table.

    ``{"data": {"source", "read", "matches"}, "findings": [...]}``: one finding per signature matched (its
    lines as evidence), or ``log.no_signature`` (info) naming what was read, or ``log.nothing_read``."""
    import socket

    checked = rules.validate(params, RULES)
    node = checked.get("node_name") or socket.gethostname()
    since = checked.get("since", 3600)
    max_bytes = checked.get("max_bytes", 1048576)
    max_lines = checked.get("max_lines", 5000)
    source = checked.get("source", "auto")
    files = checked.get("node_log_files")
    files = list(DEFAULT_FILES) if files is None else files
    units = checked.get("units") or list(DEFAULT_UNITS)
    if _journal_chosen(source, journald, runner):
        entries, rows = read_journal(runner, units, since, max_lines, max_bytes, node,
                                     kernel=params.get("kernel", True) is not False)
        used = "journal"
    else:
        entries, rows = read_files(files, since, max_bytes, max_lines, node, now)
        used = "files"
    groups = match(entries)
    found = findings(groups)
    for extra in (_skipped_finding(rows, node), _coverage_finding(groups, rows, node, since, used, units, files)):
        if extra is not None:
            found.append(extra)
    return {"data": {"source": used, "read": rows, "matches": [group_data(g) for g in groups]},
            "findings": sort_findings(found)}
