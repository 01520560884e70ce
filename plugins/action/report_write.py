# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report in one task on the controller: gathered from every host's records, written
as triage-report.json and triage-report.html, and published as AWX artifacts."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone

import jinja2
import yaml

from ansible.release import __version__ as ansible_version

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import as_list
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.plugin_utils import playbook_run
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report, files as report_files
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import history as report_history
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import metrics as report_metrics
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import silences as report_silences
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.query import report_select

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
    scenario=dict(type="str"),
    nodes_group=dict(type="str"),
    output_dir=dict(type="path"),
    template=dict(type="str", default="triage-report.html.j2"),
    set_stats=dict(type="bool", default=False),
    artifact_findings=dict(type="int", default=50),
    select=dict(type="str", default=""),
    scenarios=dict(type="list", elements="str"),
    history=dict(type="raw", default=20),
    previous=dict(type="path"),
    silences=dict(type="path"),
    silence_max_days=dict(type="raw", default=90),
    metrics_dir=dict(type="path"),
    metrics_file=dict(type="str", default="k8snet_triage.prom"),
    metrics_labels=dict(type="dict", default={}),
    metrics_push_url=dict(type="str", default=""),
    metrics_push_job=dict(type="str", default="k8snet_triage"),
    metrics_push_validate_certs=dict(type="bool", default=True),
    started=dict(type="raw"),
    history_only=dict(type="bool", default=False),
    validate_only=dict(type="bool", default=False),
)
NAMES = ("triage-report.json", "triage-report.html")
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collection_version():
    """The collection's version, from MANIFEST.json (installed) or galaxy.yml (a checkout); None if neither says."""
    try:
        with open(os.path.join(COLLECTION_ROOT, "MANIFEST.json")) as handle:
            return str(json.load(handle)["collection_info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(COLLECTION_ROOT, "galaxy.yml")) as handle:
            return str(yaml.safe_load(handle)["version"])
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None


def _message(exc):
    """An error's text: an AnsibleError's ``message`` (with its causes), else ``str(exc)``."""
    return str(getattr(exc, "message", exc))


def started_at(value, now):
    """The run's start (seconds since the epoch): ``value`` (seconds, or ISO 8601 with a timezone) when
    given, else the ansible-playbook process's start; None when neither is plausible (after now, or
    more than a week before)."""
    if value not in (None, ""):
        try:
            start = float(value)
        except (TypeError, ValueError):
            try:
                start = report_silences.parse_expiry(value).timestamp()
            except ValueError as exc:
                raise AnsibleError("report_write: started %r is not a time: %s" % (value, exc))
    else:
        start = playbook_run.started()
    if start is None or start > now + 1 or now - start > 7 * 86400:
        return None
    return min(start, now)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def _html(self, template, data, generated):
        """The HTML report: the role's template (found like ansible.builtin.template finds it), given
        two strings - when it was generated and the report as JSON escaped for a script element.
        Rendered by Jinja alone: the report is data, and handing it to Ansible's templar as a variable
        would walk every string of every finding again."""
        try:
            source = self._find_needle("templates", template)
            text = self._loader.get_text_file_contents(source)
        except AnsibleError as exc:
            raise AnsibleError("report_write: cannot read the HTML template %s: %s" % (template, exc))
        try:
            page = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
            return page.from_string(str(text)).render(generated=generated.strftime("%Y-%m-%d %H:%M:%S UTC"),
                                                      data_json=report_files.triage_html_json(data))
        except jinja2.TemplateError as exc:
            raise AnsibleError("report_write: the HTML template %s cannot be rendered: %s (it is given only "
                               "generated and data_json)" % (source, exc))

    def _requested(self, args, task_vars):
        """The scenarios the user asked for by name (every one must run somewhere): the list given, else
        the triage's triage_scenarios and triage_api_scenarios when set (their defaults are the
        scenarios that fit the inventory, not a request); a scenario playbook's own is added by the report."""
        if args["scenarios"] is not None:
            return list(args["scenarios"])
        if args["scenario"]:
            return []
        out = []
        for name in ("triage_scenarios", "triage_api_scenarios"):
            if name in task_vars:
                try:
                    value = self._templar.template(task_vars[name])
                    out.extend(as_list(value, name) if isinstance(value, str) else [str(v) for v in value or []])
                except (AnsibleError, TypeError):
                    pass  # refused where it is used, with its own message
        return out

    @staticmethod
    def _nodes(args, task_vars):
        """The nodes group the report's coverage accounts for: its name and its inventory hosts (None when the
        inventory has no such group); None without ``nodes_group``."""
        name = args["nodes_group"]
        if not name:
            return None
        hosts = (task_vars.get("groups") or {}).get(name)
        return {"group": name, "hosts": None if hosts is None else [str(h) for h in hosts]}

    @staticmethod
    def _validated(args):
        """The history, silence and metrics options checked before anything is gathered."""
        try:
            args["history"] = report_history.validate_keep(args["history"])
            args["silence_max_days"] = report_silences.validate_max_days(args["silence_max_days"])
            args["metrics_labels"] = report_metrics.validate_labels(args["metrics_labels"])
            report_metrics.validate_file_name(args["metrics_file"])
            if args["metrics_push_url"]:
                args["metrics_push_target"] = report_metrics.push_url(args["metrics_push_url"], args["metrics_push_job"],
                                                                      args["metrics_labels"])
        except (ValueError, AnsibleError) as exc:
            raise AnsibleError("report_write: %s" % getattr(exc, "message", exc))
        if args["metrics_dir"] and not os.path.isdir(args["metrics_dir"]):
            raise AnsibleError("report_write: report_metrics_dir %s is not an existing directory; give the directory "
                               "node_exporter reads (--collector.textfile.directory)" % args["metrics_dir"])
        return args

    def _run_info(self, task_vars, requested, started, finished):
        """The run's metadata for the report: inventory, limit, scenarios asked, versions, AWX job, duration."""
        def var(name):
            value = task_vars.get(name)
            return None if value in (None, "") else report_files.plain(value)
        job = var("awx_job_id") or var("tower_job_id") or os.environ.get("JOB_ID") or None
        sources = var("ansible_inventory_sources")
        return {"inventory": sources if isinstance(sources, list) else ([sources] if sources else []),
                "limit": var("ansible_limit"), "scenarios": list(requested), "check_mode": bool(task_vars.get("ansible_check_mode")),
                "collection_version": collection_version(), "ansible_version": ansible_version,
                "awx_job_id": str(job) if job is not None else None,
                "awx_job_template": var("awx_job_template_name") or var("tower_job_template_name"),
                "awx_user": var("awx_user_name") or var("tower_user_name"),
                "credentials": var("triage_api_source"),
                "started": datetime.fromtimestamp(started, timezone.utc).isoformat() if started else None,
                "duration_seconds": round(finished - started, 3) if started else None}

    def _annotate(self, args, data, directory, now, generated):
        """Silences, then the comparison with the previous report; returns warnings."""
        warnings, extra = [], []
        if args["silences"]:
            active, problems, summary = report_silences.load(args["silences"], now, args["silence_max_days"])
            extra.extend(problems)
            data["silences"] = summary
        previous, source, error, switches = None, None, None, None
        if args["previous"] or directory:
            try:
                previous, source, switches = report_history.previous_report(directory, args["previous"],
                                                                            args["scenario"] or None)
            except AnsibleError as exc:
                error = _message(exc)
                warnings.append("report_write: %s; every finding counts as new" % error)
                extra.append(finding("triage.history_unreadable", "warning", "control-plane", "previous report",
                                     "the previous report cannot be read, so every finding counts as new: %s" % error,
                                     {"error": error}, "Remove or repair the file named, or give report_previous"))
        report.add_run_findings(data, extra)
        if args["silences"]:
            report_silences.apply(data["findings"], active, summary)
        report_history.compare(data, previous, generated, source, error, switches)
        report.recount(data)
        return warnings

    def _write_extra(self, args, data, directory, generated, finished, started):
        """The history entry, the metrics file and their push; returns (changed, files, the push's error or None)."""
        changed, files = False, {}
        if directory and args["history"]:
            files["history"] = report_history.keep_history(directory, data, generated, args["history"],
                                                           args["scenario"] or None)
            changed = True
        if args["metrics_dir"] or args["metrics_push_url"]:
            text = report_metrics.render(data, finished, (finished - started) if started else None, args["metrics_labels"],
                                         {"collection_version": data["run"]["collection_version"] or "",
                                          "ansible_version": ansible_version})
        if args["metrics_dir"]:
            where = report_files.check_directory(args["metrics_dir"], args["metrics_dir"])
            path = os.path.join(where, args["metrics_file"])
            changed = report_files.write_file(path, text, mode=0o644) or changed
            files[args["metrics_file"]] = path
        push_error = None
        if args["metrics_push_url"]:
            try:
                report_metrics.push(args["metrics_push_target"], text,
                                    validate_certs=args["metrics_push_validate_certs"])
                files["pushed"] = args["metrics_push_target"]
                changed = True
            except ValueError as exc:
                push_error = "report_write: %s; the reports were written, the metrics were not pushed" % exc
        return changed, files, push_error

    def _gathered(self, args, task_vars):
        """(the scenarios asked for, the report gathered from every host's records, now, the run's start)."""
        limit = task_vars.get("ansible_limit")
        requested = self._requested(args, task_vars)
        now = datetime.now(timezone.utc)
        started = started_at(args["started"], now.timestamp())
        # a record older than the run's start is an earlier run's, kept by a fact cache: not this run's word
        data = report.triage_report(task_vars["hostvars"], args["hosts"], args["scenario"], requested,
                                    str(limit) if limit else None, since=started, run=playbook_run.identity(),
                                    nodes=self._nodes(args, task_vars))
        return requested, data, now, started

    @staticmethod
    def _directory(args):
        """(the output directory, else None; why it cannot be used, else None).  Not given (the
        scenario playbooks' artifacts): no files; given empty: why (the summary and artifacts still go out)."""
        if args["output_dir"] is None:
            return None, None
        try:
            return report_files.output_directory(args["output_dir"]), None
        except AnsibleError as exc:
            return None, _message(exc)

    def _report_files(self, args, data, directory, now):
        """(changed, files): triage-report.json and triage-report.html written to ``directory``."""
        texts = dict(zip(NAMES, (report_files.report_json(data), self._html(args["template"], data, now))))
        # in check mode, said as a change that would be made
        changed = True if self._task.check_mode else report_files.write_pair(directory, texts)
        return changed, dict((name, os.path.join(directory, name)) for name in NAMES)

    def _write(self, args, data, directory, error, now, started):
        """(changed, files, error, push_error): the report files, then (not in check mode, and when nothing
        failed before) the history entry and the metrics; ``error`` is the first failure, else None."""
        changed, files, push_error = False, {}, None
        if directory and not args["history_only"]:
            try:
                changed, files = self._report_files(args, data, directory, now)
            except AnsibleError as exc:
                error = _message(exc)
        if not self._task.check_mode and error is None:
            try:
                more, extra, push_error = self._write_extra(args, data, directory, now, now.timestamp(), started)
                changed, files = changed or more, dict(files, **extra)
            except AnsibleError as exc:
                error = _message(exc)
        return changed, files, error, push_error

    @staticmethod
    def _listed(args, data, task_vars):
        """The findings the AWX artifact lists: those ``select`` selects, else all."""
        return report_select(data, args["select"], task_vars.get("groups")) if args["select"] else data["findings"]

    @staticmethod
    def _stats(args, data, listed, files, error):
        """The AWX artifact (set_stats) of the report: its counts and ``listed``, and the write error when any."""
        artifact = report.artifacts(data, listed, args["artifact_findings"], files.get("triage-report.html"))
        if error:
            artifact["report_error"] = error
        return {"data": {"k8snet_triage": artifact}, "per_host": False, "aggregate": False}

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["artifact_findings"] < 0:
            result.update(failed=True, msg="report_write: artifact_findings=%d is negative; give 0 or more"
                          % args["artifact_findings"])
            return result
        try:
            args = self._validated(args)
            if args["validate_only"]:
                # the triage's first play: the options refused before any host is touched, nothing gathered
                # (the report's own run says an unusable directory after the summary and the artifacts)
                if args["output_dir"] is not None:
                    report_files.check_output_dir_given(args["output_dir"])
                result.update(changed=False, msg="report options valid")
                return result
            requested, data, now, started = self._gathered(args, task_vars)
        except AnsibleError as exc:
            result.update(failed=True, msg=_message(exc))
            return result
        # the files, then the artifacts whatever became of the files: a report that cannot be
        # written is said (write_error, and the role fails after the summary), never a lost summary
        directory, error = self._directory(args)
        warnings = self._annotate(args, data, directory, now, now.isoformat())
        data["schema_version"] = report.SCHEMA_VERSION
        data["generated"] = now.isoformat()
        data["run"] = self._run_info(task_vars, requested, started, time.time())
        changed, files, error, push_error = self._write(args, data, directory, error, now, started)
        if error:
            warnings.append("report_write: the report files were not written: %s" % error)
        if push_error:
            # the files are written; the role fails after the summary (push_error), saying why
            warnings.append(push_error)
        if warnings:
            result["warnings"] = warnings
        if args["set_stats"]:
            try:
                listed = self._listed(args, data, task_vars)
            except AnsibleError as exc:
                result.update(failed=True, msg=str(exc))
                return result
            result["ansible_stats"] = self._stats(args, data, listed, files, error)
        result["write_error"] = error
        result["push_error"] = push_error
        # the coverage findings that fail the run whatever report_fail_on says (the report role fails on them)
        result["not_green"] = [str(f.get("summary")) for f in data["findings"] if f.get("check") in report.NOT_GREEN]
        result.update(changed=changed, files=files, ansible_facts={"report_data": data})
        return result
