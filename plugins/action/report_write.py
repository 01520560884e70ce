# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report in one task on the controller: gathered from every host's records, written
as triage-report.json and triage-report.html, and published as AWX artifacts."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import jinja2

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.k8snet.triage.plugins.filter.as_list import as_list
from ansible_collections.k8snet.triage.plugins.plugin_utils import report
from ansible_collections.k8snet.triage.plugins.plugin_utils.report_query import report_select

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
    scenario=dict(type="str"),
    output_dir=dict(type="path"),
    template=dict(type="str", default="triage-report.html.j2"),
    set_stats=dict(type="bool", default=False),
    artifact_findings=dict(type="int", default=50),
    select=dict(type="str", default=""),
    scenarios=dict(type="list", elements="str"),
)
NAMES = ("triage-report.json", "triage-report.html")


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
                                                      data_json=report.triage_html_json(data))
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
            limit = task_vars.get("ansible_limit")
            data = report.triage_report(task_vars["hostvars"], args["hosts"], args["scenario"], self._requested(args, task_vars),
                                        str(limit) if limit else None)
        except AnsibleError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        # the files, then the artifacts whatever became of the files: a report that cannot be
        # written is said (write_error, and the role fails after the summary), never a lost summary
        files, changed, error = {}, False, None
        if args["output_dir"]:
            try:
                directory = report.output_directory(args["output_dir"])
                generated = datetime.now(timezone.utc)
                texts = dict(zip(NAMES, (report.report_json(dict(data, generated=generated.isoformat())),
                                         self._html(args["template"], data, generated))))
                # in check mode, said as a change that would be made
                changed = True if self._task.check_mode else report.write_pair(directory, texts)
                files = dict((name, os.path.join(directory, name)) for name in NAMES)
            except AnsibleError as exc:
                error = str(getattr(exc, "message", exc))
                result["warnings"] = ["report_write: the report files were not written: %s" % error]
        if args["set_stats"]:
            try:
                listed = (report_select(data, args["select"], task_vars.get("groups"))
                          if args["select"] else data["findings"])
            except AnsibleError as exc:
                result.update(failed=True, msg=str(exc))
                return result
            artifact = report.artifacts(data, listed, args["artifact_findings"], files.get("triage-report.html"))
            if error:
                artifact["report_error"] = error
            result["ansible_stats"] = {"data": {"k8snet_triage": artifact}, "per_host": False, "aggregate": False}
        result["write_error"] = error
        result.update(changed=changed, files=files, ansible_facts={"report_data": data})
        return result
