# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report over time (controller side): each finding's stable identity, the comparison with
the previous report (new, ongoing with first_seen, resolved, unverified) and the history of the last
reports kept in the report directory.

Identity: the first 16 hex digits of the SHA-256 of the JSON array ``[check, host, subject]``
(``host`` as recorded, the controller's name for fleet findings).  The summary, the evidence and the
severity are not part of it: a finding whose numbers change, or that turns from warning to critical,
is the same finding (``escalated`` says the latter).

The Services lb_health switched to externalTrafficPolicy Cluster (an ``lb.policy_switched`` ok finding) are
carried from report to report (``since.lb_switches``, ``lb_switches`` in each history entry): a later run that
finds one of them back at Local reports ``lb.policy_reverted`` (something put the policy back: an OpenShift
update reconciles the router's Service) instead of the generic ``lb.nodes_without_endpoints``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections import Counter

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import SEVERITIES, finding
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import files as report_files
from ansible_collections.k8snet.triage.plugins.plugin_utils.survey import bounded_int

HISTORY_DIR = "history"
HISTORY_NAME = re.compile(r"^triage-report-(\d{8}T\d{6}\.\d{6}Z)\.json$")
HISTORY_FORMAT = 1
MAX_HISTORY = 1000
MAX_HISTORY_FINDINGS = 10000
TEXT_LIMIT = 300
REACHED = ("reached", "controller")
RANK = dict((name, i) for i, name in enumerate(SEVERITIES))
SWITCHED, SWITCH_REVERTED, REVERTED = "lb.policy_switched", "lb.nodes_without_endpoints", "lb.policy_reverted"
MAX_SWITCHES = 1000
MAX_GONE = 200  # resolved and unverified findings listed in a report's "since" (its counts.state has them all)
MAX_SCENARIO_READS = 20  # history entries read, newest first, to find the last one of the same kind of run


def finding_id(item):
    """The finding's stable identity: sha256 of the JSON array [check, host, subject], 16 hex digits."""
    key = [str(item.get("check")), item.get("host"), item.get("subject")]
    text = json.dumps(report_files.plain(key), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _problems(findings):
    """{id: finding} of the findings that are not ok (ok findings have no state)."""
    out = {}
    for item in findings or []:
        if isinstance(item, dict) and item.get("severity") in SEVERITIES and item.get("severity") != "ok":
            out.setdefault(item.get("id") or finding_id(item), item)
    return out


def _rechecked(data, item):
    """Whether this run looked again where ``item`` (a finding of the previous report) was found: its host
    is in the report, reached, and its scenario ran there (the triage's own findings are made every run)."""
    info = (data.get("hosts") or {}).get(item.get("host"))
    if not isinstance(info, dict):
        return False, "its host %s is not in this report" % item.get("host")
    scenario = item.get("scenario")
    if scenario in (None, "triage"):
        return True, ""
    if info.get("status") not in REACHED:
        return False, "its host was %s this time" % info.get("status")
    entry = (info.get("scenarios") or {}).get(scenario) or {}
    if entry.get("status") != "ran":
        return False, "scenario %s %s on %s this time" % (scenario, entry.get("status") or "was not run", item.get("host"))
    return True, ""


def _gone(item, previous, why=None):
    out = {"id": item.get("id") or finding_id(item), "check": item.get("check"), "host": item.get("host"),
           "subject": item.get("subject"), "severity": item.get("severity"), "scenario": item.get("scenario"),
           "summary": _short(item.get("summary")), "first_seen": item.get("first_seen") or previous.get("generated"),
           "last_seen": previous.get("generated")}
    if why:
        out["why"] = why
    return out


def _switches(report_or_entry):
    """{Service: {"at", "host"}} of the Services lb_health switched, as a report (``since.lb_switches``) or a
    history entry (``lb_switches``) carries them; anything else in their place is ignored."""
    if not isinstance(report_or_entry, dict):
        return {}
    raw = report_or_entry.get("lb_switches")
    if raw is None:
        raw = (report_or_entry.get("since") or {}).get("lb_switches") if isinstance(report_or_entry.get("since"), dict) else None
    if not isinstance(raw, dict):
        return {}
    return dict((str(ref), {"at": str(switch.get("at")), "host": switch.get("host")})
                for ref, switch in sorted(raw.items())[:MAX_SWITCHES] if isinstance(switch, dict))


def _reverted(item, switch):
    """``lb.policy_reverted`` in place of ``lb.nodes_without_endpoints`` (``item``) for a Service lb_health switched
    to Cluster at ``switch["at"]``: the policy was put back, which the generic finding calls expected."""
    ref = item.get("subject")
    namespace, _sep, name = str(ref).partition("/")
    severity = item.get("severity") if RANK.get(item.get("severity"), 0) > RANK["warning"] else "warning"
    out = dict(item)
    out.update(finding(
        REVERTED, severity, item.get("layer") or "L4", ref,
        "%s is back at externalTrafficPolicy Local although lb_health switched it to Cluster on %s (report "
        "history): something put the policy back - the Service's owner (an OpenShift update reconciles the "
        "router's Service) or a redeploy - and its nodes without a local endpoint fail the load balancer's health "
        "check again; now: %s" % (ref, switch["at"], _short(item.get("summary"))),
        dict(item.get("evidence") or {}, switched_at=switch["at"], replaces=SWITCH_REVERTED),
        "switch it again (k8snet.triage.lb_health with remediate: cluster, remediate_services: [%s] and "
        "force_policy_switch: true, check mode and --diff first) and make it hold where the owner keeps the "
        "Service's settings (evidence.owner), or, if Local is wanted now, silence %s for it (kubectl -n %s get svc "
        "%s -o yaml shows who changed it in managedFields)" % (ref, REVERTED, namespace, name)))
    return out


def _apply_switches(data, switched, now):
    """The findings of Services switched before and back at Local become ``lb.policy_reverted``; returns the
    switches to carry on: those before, and those this run made (``lb.policy_switched`` ok)."""
    for index, item in enumerate(data["findings"]):
        if item.get("check") == SWITCH_REVERTED and item.get("subject") in switched:
            data["findings"][index] = _reverted(item, switched[item["subject"]])
    carried = dict(switched)
    for item in data["findings"]:
        if item.get("check") == SWITCHED and item.get("severity") == "ok" and isinstance(item.get("subject"), str):
            carried[item["subject"]] = {"at": now, "host": item.get("host")}
    return dict(sorted(carried.items())[-MAX_SWITCHES:])


def compare(data, previous, now, source=None, error=None, switches=None):
    """Annotate ``data`` (the report, changed in place) against ``previous`` (a report or history entry,
    or None): every finding gets ``id``; every finding that is not ok gets ``state`` (``new`` or
    ``ongoing``), ``first_seen``, and ``escalated`` when it is more severe than before.  ``data["since"]``
    lists what was in the previous report and is not now: ``resolved`` when this run checked again
    where it was found, ``unverified`` when it did not (host not reached, scenario not run).
    ``now``: this run's time (ISO 8601), the first_seen of new findings.  ``switches``: the report or history
    entry whose ``lb_switches`` to carry on (by default ``previous``); ``data["since"]["lb_switches"]`` holds them
    with this run's own."""
    previous = previous if isinstance(previous, dict) else None
    carried = _apply_switches(data, _switches(previous if switches is None else switches), now)
    before = _problems(previous.get("findings")) if previous else {}
    for item in data["findings"]:
        item["id"] = finding_id(item)
        if item.get("severity") == "ok":
            continue
        old = before.get(item["id"])
        if old is None:
            item["state"], item["first_seen"] = "new", now
        else:
            item["state"] = "ongoing"
            item["first_seen"] = str(old.get("first_seen") or previous.get("generated") or now)
            if RANK.get(item["severity"], 0) > RANK.get(old.get("severity"), 0):
                item["escalated"] = True
                item["previous_severity"] = old.get("severity")
    now_ids = set(_problems(data["findings"]))
    resolved, unverified = [], []
    for key, item in sorted(before.items(), key=lambda kv: (str(kv[1].get("check")), str(kv[1].get("host")), kv[0])):
        if key in now_ids:
            continue
        checked, why = _rechecked(data, item)
        if checked:
            resolved.append(_gone(item, previous))
        else:
            unverified.append(_gone(item, previous, why))
    states = Counter(item.get("state") for item in data["findings"] if item.get("state"))
    # the lists say the first MAX_GONE; the counts say them all (15,000 probes resolved were 3.8 MB of report)
    data["since"] = {"previous": previous.get("generated") if previous else None, "source": source, "error": error,
                     "new": states.get("new", 0), "ongoing": states.get("ongoing", 0),
                     "resolved": resolved[:MAX_GONE], "unverified": unverified[:MAX_GONE],
                     "resolved_total": len(resolved), "unverified_total": len(unverified), "lb_switches": carried}
    data["counts"]["state"] = {"new": states.get("new", 0), "ongoing": states.get("ongoing", 0),
                               "resolved": len(resolved), "unverified": len(unverified)}
    return data


def _short(text):
    text = "" if text is None else str(text)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT - 3] + "..."


def history_entry(data, scenario=None):
    """What the history keeps of a report: enough to compare with (each finding's identity, check, host,
    subject, scenario, severity, state, first_seen, the summary cut to 300 characters) and the hosts'
    coverage; at most 10,000 findings (the most severe first), so an entry stays a few megabytes at most.
    ``scenario``: the scenario playbook's run it records (None: the triage's), and the Services lb_health switched
    (``lb_switches``)."""
    kept = []
    for item in data["findings"][:MAX_HISTORY_FINDINGS]:
        entry = dict((key, item.get(key)) for key in ("id", "check", "host", "scenario", "severity", "state", "first_seen"))
        entry["subject"] = item.get("subject") if isinstance(item.get("subject"), (str, int, float)) else report_files.plain(item.get("subject"))
        entry["summary"] = _short(item.get("summary"))
        if item.get("silenced"):
            entry["silenced"] = True
        kept.append(entry)
    hosts = dict((name, {"status": info.get("status"),
                         "scenarios": dict((s, {"status": v.get("status")}) for s, v in (info.get("scenarios") or {}).items())})
                 for name, info in (data.get("hosts") or {}).items())
    return {"format": HISTORY_FORMAT, "generated": data.get("generated"), "findings": kept, "hosts": hosts,
            "counts": data.get("counts"), "truncated": max(0, len(data["findings"]) - MAX_HISTORY_FINDINGS),
            "scenario": scenario, "lb_switches": _switches(data.get("since") or {})}


def history_dir(directory):
    return os.path.join(directory, HISTORY_DIR)


def _entries(path):
    """The history files in ``path`` (regular files named as the history names them), oldest first."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise AnsibleFilterError("cannot read the report history %s: %s" % (path, exc.strerror))
    out = []
    for name in sorted(names):
        if HISTORY_NAME.match(name):
            try:
                if stat.S_ISREG(os.lstat(os.path.join(path, name)).st_mode):
                    out.append(name)
            except OSError:
                continue
    return out


def read_report(path):
    """A previous report (triage-report.json, or a history entry) as a dict; AnsibleFilterError says why not."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(256 * 1024 * 1024 + 1)
    except OSError as exc:
        raise AnsibleFilterError("cannot read the previous report %s: %s" % (path, exc.strerror))
    if len(text) > 256 * 1024 * 1024:
        raise AnsibleFilterError("the previous report %s is larger than 256 MiB; give another report_previous" % path)
    try:
        data = json.loads(text.decode("utf-8"))
    except ValueError as exc:
        raise AnsibleFilterError("the previous report %s is not JSON (%s)" % (path, exc))
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise AnsibleFilterError("the previous report %s is not a triage report (no list of findings)" % path)
    return data


def previous_report(directory=None, path=None, scenario=None):
    """(report, source, the newest report or entry, whose lb_switches carry on) of the run before: ``path`` when
    given, else the newest history entry in ``directory`` of the same kind of run (the triage's, or ``scenario``'s
    playbook: a scenario playbook's entry never stands for the triage's findings; the newest 20 are looked at),
    else its triage-report.json; (None, None, None) when there is none."""
    if path:
        found = read_report(path)
        return found, path, found
    if not directory:
        return None, None, None
    names = _entries(history_dir(directory))
    newest = None
    for name in reversed(names[-MAX_SCENARIO_READS:]):
        source = os.path.join(history_dir(directory), name)
        entry = read_report(source)
        newest = entry if newest is None else newest
        if entry.get("scenario") == scenario:
            return entry, source, newest
    source = os.path.join(directory, "triage-report.json")
    if scenario is None and os.path.isfile(source):
        found = read_report(source)
        return found, source, newest or found
    return None, None, newest


def history_name(generated):
    """The history file name of a report generated at ``generated`` (an aware datetime)."""
    return "triage-report-%s.json" % generated.strftime("%Y%m%dT%H%M%S.%fZ")


def keep_history(directory, data, generated, keep, scenario=None):
    """Write this report's history entry into ``directory``/history (atomically: a temporary file renamed)
    and remove the oldest entries beyond ``keep``.  Returns the entry's path (None when keep is 0).
    ``scenario``: the scenario playbook whose run it records (None: the triage's)."""
    if keep <= 0:
        return None
    path = history_dir(directory)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise AnsibleFilterError("cannot create the report history %s: %s" % (path, exc.strerror))
    report_files.check_directory(path, path)
    target = os.path.join(path, history_name(generated))
    report_files.write_file(target, json.dumps(report_files.plain(history_entry(data, scenario)), sort_keys=True,
                                               ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n", mode=0o600)
    names = _entries(path)
    for name in names[:max(0, len(names) - keep)]:
        try:
            os.unlink(os.path.join(path, name))
        except OSError:
            pass
    return target


def validate_keep(value):
    """report_history as an int in 0..1000 (survey answers arrive as strings)."""
    keep = bounded_int(value, 0, MAX_HISTORY)
    if keep is None:
        raise AnsibleFilterError("report_history must be a whole number from 0 (keep none) to %d, not %r"
                                 % (MAX_HISTORY, value))
    return keep
