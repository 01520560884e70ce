#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: report_write
short_description: the fleet report in one task - gathered, written as JSON and HTML, published to AWX
version_added: 0.2.0
description:
  - Gathers the report from every host's records, as the P(k8snet.triage.triage_report#filter) filter
    does (each host's C(triage_host) and C(triage_results), or one scenario role's facts with O(scenario)),
    and leaves it as the fact C(report_data).
  - With O(output_dir), writes C(triage-report.json) and the self-contained C(triage-report.html)
    there, together or not at all (each to a temporary file in the same directory, flushed to the
    disk, then both renamed; when the second rename fails the first file gets its old content back,
    so a full disk or a read-only directory leaves the old pair; a symlink in their place is replaced,
    never followed; a directory or other special file in their place is refused).
  - A report that cannot be written does not fail the task - the artifacts and the fact are still
    published, and RV(write_error) says why (the role C(k8snet.triage.report) fails the run after the summary).
  - Every report says when nothing was checked - C(triage.nothing_checked) when no scenario ran on any
    host, C(triage.scenario_not_run) for each scenario asked for (O(scenarios)) that ran on none, and
    C(triage.no_node_checked) when no host of O(nodes_group) was checked - with why (RV(not_green)).
  - Compares the report with the previous one (O(history), O(previous)), marks what O(silences) silence, and
    writes the run as OpenMetrics text for Prometheus (O(metrics_dir)).
  - With O(set_stats), publishes the summary as AWX / Automation Controller job artifacts (key
    C(k8snet_triage), not per host) - what C(ansible.builtin.set_stats) would publish.
  - An action plugin that runs on the controller only - one task instead of a fact, a copy, a
    template and a set_stats, and no module shipped to any host.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.controller_output
  - ansible.builtin.action_common_attributes.facts
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: Everything runs on the controller.
  async:
    support: none
  bypass_host_loop:
    support: none
  facts:
    support: full
    details: Sets C(report_data), the gathered report (C(ansible_facts.report_data) whether or not facts are injected as variables).
options:
  hosts:
    description: The hosts whose records are gathered (usually every inventory host and the controller); a host with no record is listed as not checked.
    type: list
    elements: str
    required: true
  scenario:
    description:
      - For the report of one scenario playbook, the scenario whose role facts (C(<scenario>_findings),
        C(<scenario>_fleet_findings)) stand in for C(triage_results) on hosts without them.
    type: str
  nodes_group:
    description:
      - The inventory group of the nodes the run was to check (the triage's C(triage_nodes_group)). The report's
        C(coverage.nodes) says how many of its hosts the run reached and, when none was, why (no such group, no host
        in it, or each host's status); a run in which other steps ran (the Kubernetes API's side) but no node of it
        was checked gets the critical finding C(triage.no_node_checked), which the report role fails on whatever
        C(report_fail_on) says.
      - Left out, the report does not account for nodes (a scenario playbook's report).
    type: str
  output_dir:
    description:
      - The directory on the controller for C(triage-report.json) and C(triage-report.html), created when
        missing (each new directory mode 0700).
      - Refused when another user could swap what it holds - a symlink owned by another user (not root), a
        directory of another user that group or others may write, or a directory anyone may write without
        the sticky bit.
      - Left out, no file is written.
    type: path
  template:
    description: The HTML template, looked up like M(ansible.builtin.template) looks up its source (the role's C(templates/)).
    type: str
    default: triage-report.html.j2
  set_stats:
    description: Publish the summary as job artifacts (key C(k8snet_triage), C(per_host=false)).
    type: bool
    default: false
  artifact_findings:
    description: How many findings that are not ok (most severe first) the artifacts carry.
    type: int
    default: 50
  select:
    description:
      - A JMESPath expression over the findings (each with C(groups), its host's groups) that selects the
        ones the artifacts carry, as P(k8snet.triage.report_select#filter) does. Empty, all of them.
    type: str
    default: ""
  scenarios:
    description:
      - The scenarios asked for by name; each that ran on no host gives the critical finding
        C(triage.scenario_not_run) with its reasons.
      - Left out, the C(triage_scenarios) and C(triage_api_scenarios) variables when they are set (their
        defaults are the scenarios that fit the inventory, not a request), or O(scenario).
    type: list
    elements: str
  history:
    description:
      - How many past reports to keep in C(history/) under O(output_dir), 0 to 1000 (text such as V("20") is
        read as the number). Each entry is written atomically, mode 0600, with what a comparison needs (each
        finding's identity, check, host, subject, scenario, severity, state, first_seen, the summary cut to 300
        characters; at most 10,000 findings); the oldest beyond the number are removed. V(0) keeps none.
      - Every run compares with the newest entry, or without one with the C(triage-report.json) already in
        O(output_dir) (or O(previous)) - each finding gets C(id) (the first 16 hex digits of the SHA-256 of
        the JSON array C([check, host, subject])), and each that is not ok C(state) (V(new) or V(ongoing)),
        C(first_seen) and, when more severe than before, C(escalated) and C(previous_severity). The report's
        C(since) lists C(resolved) (checked again and gone) and C(unverified) (host not reached, scenario not run).
    type: raw
    default: 20
  previous:
    description:
      - A report to compare with instead of the newest in O(output_dir). One that cannot be read gives the
        warning C(triage.history_unreadable), and every finding counts as new.
    type: path
  silences:
    description:
      - A YAML or JSON file of silences - a list, or a mapping whose only key is C(silences) - each with C(check),
        C(host), C(subject) (fnmatch globs, case-sensitive; C(host) and C(subject) default to V(*)), C(reason),
        C(created_by) and C(expires) (ISO 8601 with a timezone, or a date meaning the end of that day UTC).
      - A finding that is not ok and that an active entry covers gets C(silenced) (the entry's number, reason,
        created_by, expires) and is left out of C(counts.active).
      - An entry with an unknown key, a missing field, an expiry without timezone or more than O(silence_max_days)
        ahead silences nothing and gives the warning C(triage.silence_invalid) naming the entry and the fix; an
        expired one C(triage.silence_expired); an unreadable file C(triage.silences_unreadable). Those are
        never silenced.
    type: path
  silence_max_days:
    description: The furthest ahead, in days (1 to 3650), a silence may expire.
    type: raw
    default: 90
  metrics_dir:
    description:
      - An existing directory (node_exporter's C(--collector.textfile.directory)) for the run as OpenMetrics
        text, written atomically with mode 0644 - gauges only, no timestamps, C(# EOF) last, which the
        textfile collector and a Pushgateway also read as Prometheus text 0.0.4.
      - Label values are escaped as OpenMetrics says (backslash, double quote, newline); other control
        characters are written as visible escapes.
    type: path
  metrics_file:
    description: The file name in O(metrics_dir); it must end in C(.prom).
    type: str
    default: k8snet_triage.prom
  metrics_labels:
    description: Labels added to every metric, such as C(cluster); not one the metrics set themselves.
    type: dict
    default: {}
  metrics_push_url:
    description:
      - A Prometheus Pushgateway, C(http(s)://HOST[:PORT][/PATH]) (no credentials or query in it). The metrics are PUT
        to C(/metrics/job/<metrics_push_job>) with O(metrics_labels) in the grouping key. A failed push is
        C(push_error) (the reports are written); empty pushes nothing.
    type: str
    default: ""
  metrics_push_job:
    description: The Pushgateway job name.
    type: str
    default: k8snet_triage
  metrics_push_validate_certs:
    description: Verify the Pushgateway's TLS certificate (https).
    type: bool
    default: true
  started:
    description:
      - When the run started (seconds since the epoch, or ISO 8601 with a timezone), for the duration. Left out,
        the start of the ansible-playbook process (Linux C(/proc)); no duration when neither is known.
    type: raw
  history_only:
    description:
      - Only record this run in O(output_dir)'s history (and compare it with the history); C(triage-report.json)
        and C(triage-report.html) there are left as they are. A scenario playbook's run recorded so (O(scenario))
        never stands for the triage's - each run compares with the newest entry of its own kind.
      - The lb_health playbook does it with C(lb_health_report_dir), so that the Services it switched to
        C(Cluster) are in the history (C(since.lb_switches)), and a later run that finds one back at C(Local) reports
        C(lb.policy_reverted) instead of C(lb.nodes_without_endpoints).
    type: bool
    default: false
  validate_only:
    description:
      - Only check O(history), O(silence_max_days), O(metrics_dir), O(metrics_file) and O(metrics_labels), and
        return; nothing is gathered or written. The triage does it in its first play, so that a wrong value fails
        the run before any host is touched, not after the scan.
    type: bool
    default: false
seealso:
  - plugin: k8snet.triage.triage_report
    plugin_type: filter
notes:
  - The role C(k8snet.triage.report) runs it once, with C(check_mode=false), so the report is written in
    check mode too.
"""

EXAMPLES = r"""
- name: The fleet report, written beside the playbook and published to AWX
  k8snet.triage.report_write:
    hosts: "{{ groups['all'] + ['localhost'] }}"
    output_dir: "{{ playbook_dir }}"
    set_stats: true
  run_once: true
"""

RETURN = r"""
files:
  description:
    - The files written (or, in check mode, that would be written), by name; also C(history) (this run's
      history entry) and the metrics file when they were written (not in check mode).
  returned: always
  type: dict
  sample: {"triage-report.json": "/srv/triage/triage-report.json", "triage-report.html": "/srv/triage/triage-report.html"}
write_error:
  description: Why the report files were not written (the directory refused or not creatable, a full disk, a read-only directory), or null.
  returned: always
  type: str
  sample: "cannot write the report in /srv/triage: No space left on device (/srv/triage); the previous ... are left as they were"
push_error:
  description: Why the metrics could not be pushed to O(metrics_push_url) (the reports are written), or null.
  returned: always
  type: str
  sample: "report_write: the Pushgateway at http://198.18.0.9:9091/metrics/job/k8snet_triage answered HTTP 400: ..."
not_green:
  description:
    - The summaries of the report's findings that make the run not green whatever a fail condition says - it did
      not check what it was to check - C(triage.nothing_checked), C(triage.scenario_not_run),
      C(triage.no_node_checked) (see O(nodes_group)) and C(triage.kube_credentials_unusable) (Kubernetes
      credentials that were found but cannot be used); empty when none. The role C(k8snet.triage.report) fails on
      them after the report and the artifacts are published.
  returned: success
  type: list
  elements: str
  sample: ["no node was checked: group k8s_nodes has no host; only the Kubernetes API's side ran (cni, f5, lb_health), ..."]
ansible_facts:
  description: The gathered report.
  returned: success
  type: complex
  contains:
    report_data:
      description:
        - C(findings), C(counts), C(hosts), C(coverage), C(details) and C(worst), as the P(k8snet.triage.triage_report#filter)
          filter returns them, and C(generated), C(since) (the comparison with the previous run), C(silences)
          (each entry of O(silences) with its state and matches) and C(run) (inventory, limit, scenarios asked,
          versions, AWX job, Kubernetes credentials' source, start and duration).
        - C(counts) also has C(active) (by severity, silenced findings left out), C(silenced) and C(state).
      type: dict
"""
