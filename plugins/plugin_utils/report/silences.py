# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Silences for the fleet report (controller side), as Alertmanager's: a known problem is shown as
silenced, with who silenced it, why and until when, and does not fail the run.

The file (YAML or JSON) is a list of silences, or a mapping with the key ``silences`` holding one::

    silences:
      - check: arp.stale_entry          # glob (fnmatch, case-sensitive) over the finding's check
        host: "node[0-9]*"              # glob over the finding's host; default "*"
        subject: "10.0.0.*"             # glob over the finding's subject (its text); default "*"
        reason: VIP moved, the router's ARP cache is stale until its timeout (CHG-1234)
        created_by: alice
        expires: 2026-05-01T18:00:00Z   # required; with a timezone; at most max_days ahead

An entry that breaks a rule (an unknown key, a missing or empty check, reason or created_by, no
expiry, an expiry without a timezone or further than ``max_days`` ahead) silences nothing and is
reported as the warning ``triage.silence_invalid``, naming the entry and the fix; an expired one
silences nothing and is reported as ``triage.silence_expired``; a file that cannot be read or is not a
list of silences as ``triage.silences_unreadable``.  None of them is itself silenced.  What is wrong is
said by line number, never by copying the line: the file may hold a secret pasted by mistake, and the
findings go into the report and the AWX artifacts."""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import os
import re

import yaml

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.survey import bounded_int

KEYS = ("check", "host", "subject", "reason", "created_by", "expires")
REQUIRED = ("check", "reason", "created_by", "expires")
CHECKS = ("triage.silence_invalid", "triage.silence_expired", "triage.silences_unreadable")
MAX_FILE = 4 * 1024 * 1024
MAX_DAYS = 3650


def validate_max_days(value):
    """report_silence_max_days as an int in 1..3650 (survey answers arrive as strings)."""
    days = bounded_int(value, 1, MAX_DAYS)
    if days is None:
        raise ValueError("report_silence_max_days must be a whole number of days from 1 to %d, not %r" % (MAX_DAYS, value))
    return days


class NoTimezone(ValueError):
    """An expiry without a timezone (parse_expiry)."""


def parse_expiry(value):
    """An aware UTC datetime from a YAML timestamp, a date (the end of that day, UTC) or ISO 8601 text;
    ValueError says what is wrong."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, 23, 59, 59, tzinfo=dt.timezone.utc)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if len(text) == 10:
            try:
                day = dt.date.fromisoformat(text)
            except ValueError:
                raise ValueError("%r is not a date or time in ISO 8601 (2026-05-01T18:00:00Z)" % value)
            return parse_expiry(day)
        try:
            moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        except ValueError:
            raise ValueError("%r is not a date or time in ISO 8601 (2026-05-01T18:00:00Z)" % value)
    else:
        raise ValueError("%r is not a date or time; write it as 2026-05-01T18:00:00Z" % (value,))
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise NoTimezone("%s has no timezone; add Z (UTC) or an offset such as +02:00" % moment.isoformat())
    return moment.astimezone(dt.timezone.utc)


def _at(lines, key=None):
    """" (line N)" for the entry's key ``key`` (or the entry itself), when the file's lines are known."""
    line = lines.get(key)
    return " (line %d)" % line if line else ""


def _check_entry(index, entry, now, max_days, lines=None):
    """(silence, None) or (None, why and how to fix it).  ``lines``: {key: its line, None: the entry's line}.
    ``why`` names keys and lines, never a value the file holds."""
    lines = lines or {}
    if not isinstance(entry, dict):
        return None, "it is %s, not a mapping with check, host, subject, reason, created_by and expires" % kind(entry)
    unknown = [k for k in entry if k not in KEYS]
    if unknown:
        where = sorted(set(lines.get(k) for k in unknown if isinstance(k, str) and lines.get(k)))
        return None, ("it has %d unknown key(s)%s; the keys are %s (a typo here would silence nothing, or too much)"
                      % (len(unknown), " at line %s" % ", ".join(str(n) for n in where) if where else "",
                         ", ".join(KEYS)))
    missing = [key for key in REQUIRED if entry.get(key) in (None, "")]
    if missing:
        return None, "it has no %s; give %s" % (" and no ".join(missing), ", ".join(missing))
    for key in ("check", "host", "subject", "reason", "created_by"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
            return None, "its %s%s must be non-empty text (quote it), not %s" % (
                key, _at(lines, key), "blank text" if isinstance(entry[key], str) else kind(entry[key]))
    try:
        expires = parse_expiry(entry["expires"])
    except NoTimezone:
        return None, "its expires%s has no timezone; add Z (UTC) or an offset such as +02:00" % _at(lines, "expires")
    except ValueError:
        return None, ("its expires%s is not a date or time; write it in ISO 8601 with a timezone (2026-05-01T18:00:00Z)"
                      % _at(lines, "expires"))
    if expires > now + dt.timedelta(days=max_days):
        return None, ("it expires %s, more than %d days ahead (report_silence_max_days); silence for less and renew "
                      "it if the problem is still known then" % (expires.strftime("%Y-%m-%dT%H:%M:%SZ"), max_days))
    return {"index": index, "check": entry["check"], "host": entry.get("host", "*"), "subject": entry.get("subject", "*"),
            "reason": entry["reason"], "created_by": entry["created_by"],
            "expires": expires.strftime("%Y-%m-%dT%H:%M:%SZ"), "expires_at": expires}, None


# a check glob as findings' ids are written (lower case, dots, glob characters): what an entry's name shows of it
CHECK_GLOB = re.compile(r"^[a-z0-9_.*?\[\]!-]{1,100}$")


def _check_of(entry):
    """The entry's check glob when it reads as one (a value that does not is not copied into the report)."""
    check = entry.get("check") if isinstance(entry, dict) else None
    return check if isinstance(check, str) and CHECK_GLOB.match(check) else None


def _name(index, entry):
    check = _check_of(entry)
    return "silence #%d%s" % (index, (" (check %s)" % check) if check else "")


def _bad(check, severity, subject, summary, evidence, remediation):
    return finding(check, severity, "control-plane", subject, summary, evidence, remediation)


def _where(mark):
    return " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark is not None else ""


def _compose(text):
    """(the YAML document's data, its root node) with YAML's safe constructors."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _entry_lines(node):
    """[{None: the entry's line, key: its line}] for each entry of the silences list ``node`` (a YAML node)."""
    if isinstance(node, yaml.MappingNode) and len(node.value) == 1:
        node = node.value[0][1]
    if not isinstance(node, yaml.SequenceNode):
        return []
    out = []
    for item in node.value:
        lines = {None: item.start_mark.line + 1}
        if isinstance(item, yaml.MappingNode):
            for key, _value in item.value:
                if isinstance(key, yaml.ScalarNode):
                    lines.setdefault(key.value, key.start_mark.line + 1)
        out.append(lines)
    return out


def read_file(path):
    """(the entries of the silences file at ``path``, the lines of each entry), or raise ValueError with
    what is wrong and where (line and column, not the line's text)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE + 1)
    except OSError as exc:
        raise ValueError("cannot read %s: %s" % (path, exc.strerror))
    if len(raw) > MAX_FILE:
        raise ValueError("%s is larger than %d bytes" % (path, MAX_FILE))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("%s is not UTF-8 text (byte %d)" % (path, exc.start + 1))
    node = None
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            # JSONDecodeError's msg says what was expected, never the document's text
            raise ValueError("%s is not valid JSON: %s at line %s, column %s"
                             % (path, getattr(exc, "msg", "a syntax error"), getattr(exc, "lineno", "?"),
                                getattr(exc, "colno", "?")))
        try:
            node = _compose(text)[1]
        except yaml.YAMLError:
            node = None  # valid JSON that YAML reads otherwise: the entries are named by number alone
    else:
        try:
            data, node = _compose(text)
        except yaml.MarkedYAMLError as exc:
            # problem and context are YAML's words ("could not find expected ':'"); the marks' snippets,
            # which quote the line, are left out
            problem = exc.problem or exc.context or "a syntax error"
            raise ValueError("%s is not valid YAML: %s%s" % (path, problem, _where(exc.problem_mark or exc.context_mark)))
        except yaml.YAMLError:
            raise ValueError("%s is not valid YAML" % path)
    if data is None:
        return [], []
    if isinstance(data, dict) and set(data) == {"silences"}:
        data = data["silences"] if data["silences"] is not None else []
    if not isinstance(data, list):
        raise ValueError("%s must hold a list of silences, or a mapping whose only key is silences, not %s"
                         % (path, kind(data)))
    lines = _entry_lines(node)
    return data, lines if len(lines) == len(data) else []


def load(path, now, max_days=90):
    """(active silences, findings about the file, summary of every entry) for the file at ``path``.
    ``now``: an aware datetime."""
    try:
        entries, lines = read_file(path)
    except ValueError as exc:
        return [], [_bad("triage.silences_unreadable", "warning", "silences file %s" % os.path.basename(path),
                         "the silences file cannot be used, nothing is silenced: %s" % exc, {"path": path},
                         "Fix the file (a YAML list of silences with check, host, subject, reason, created_by, "
                         "expires), or give another report_silences")], []
    active, problems, summary = [], [], []
    for index, entry in enumerate(entries, 1):
        at = lines[index - 1] if lines else {}
        silence, why = _check_entry(index, entry, now, max_days, at)
        name = _name(index, entry)
        if silence is None:
            problems.append(_bad("triage.silence_invalid", "warning", name,
                                 "%s in %s%s silences nothing: %s" % (name, path, _at(at), why),
                                 dict({"path": path, "entry": index, "why": why}, **({"line": at[None]} if at else {})),
                                 "Correct %s in %s as said, or remove it" % (name, path)))
            summary.append({"index": index, "state": "invalid", "why": why, "check": _check_of(entry)})
            continue
        view = dict((k, v) for k, v in silence.items() if k != "expires_at")
        if silence["expires_at"] <= now:
            problems.append(_bad("triage.silence_expired", "warning", name,
                                 "%s expired at %s (by %s: %s); what it matched is no longer silenced"
                                 % (name, silence["expires"], silence["created_by"], silence["reason"]),
                                 {"path": path, "entry": index, "expires": silence["expires"]},
                                 "Remove %s from %s, or renew its expiry if the problem is still known" % (name, path)))
            summary.append(dict(view, state="expired", matched=0))
            continue
        active.append(silence)
        summary.append(dict(view, state="active", matched=0))
    return active, problems, summary


def matches(silence, item):
    """Whether ``silence`` covers the finding ``item`` (the triage's own silence findings never are)."""
    if item.get("check") in CHECKS:
        return False
    subject = item.get("subject")
    subject = subject if isinstance(subject, str) else json.dumps(subject, sort_keys=True, default=str)
    return (fnmatch.fnmatchcase(str(item.get("check")), silence["check"])
            and fnmatch.fnmatchcase(str(item.get("host") or ""), silence["host"])
            and fnmatch.fnmatchcase(subject, silence["subject"]))


def apply(findings, active, summary):
    """Mark each finding that is not ok and that an active silence covers (the first one in the file)
    with ``silenced``: {silence, reason, created_by, expires}.  Counts the matches in ``summary``."""
    by_index = dict((entry["index"], entry) for entry in summary)
    count = 0
    for item in findings:
        if item.get("severity") == "ok":
            continue
        for silence in active:
            if matches(silence, item):
                item["silenced"] = {"silence": silence["index"], "reason": silence["reason"],
                                    "created_by": silence["created_by"], "expires": silence["expires"]}
                by_index[silence["index"]]["matched"] += 1
                count += 1
                break
    return count
