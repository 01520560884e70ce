# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the node log check (node_logs, node_triage's logs): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

import re

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


LOG_ROOT = "/var/log"
DEFAULT_FILES = ("/var/log/kubelet.log", "/var/log/syslog", "/var/log/messages")
DEFAULT_UNITS = ("kubelet", "containerd", "crio", "docker")
SOURCES = ("auto", "journal", "files")

_UNIT = re.compile(r"^[A-Za-z0-9:_.@\\-]{1,200}$")


def _log_path(option, value):
    rules.absolute_path(option, value)
    if not value.startswith(LOG_ROOT + "/"):
        raise InputError("%s=%r is invalid: log files are read only under %s/ (give a path like /var/log/syslog)"
                         % (option, value[:80], LOG_ROOT), option=option)
    return value


def _unit(option, value):
    rules.text(option, value, max_len=200)
    if not _UNIT.match(value) or value.startswith("-"):
        raise InputError("%s=%r is invalid: give a systemd unit name like kubelet or containerd.service"
                         % (option, value[:80]), option=option)
    return value


# The options of the log check (module node_logs, node_triage's logs option), documented by the doc
# fragment k8snet.triage.logs.
CHECK_SPEC = dict(
    node_log_files=dict(type="list", elements="path", default=list(DEFAULT_FILES)),
    units=dict(type="list", elements="str", default=list(DEFAULT_UNITS)),
    kernel=dict(type="bool", default=True),
    source=dict(type="str", choices=list(SOURCES), default="auto"),
    since=dict(type="int", default=3600),
    max_bytes=dict(type="int", default=1048576),
    max_lines=dict(type="int", default=5000),
)


RULES = dict(
    node_name=rules.node_name,
    node_log_files=rules.each(_log_path, max_items=32),
    units=rules.each(_unit, max_items=32),
    source=rules.choice(*SOURCES),
    since=rules.count(1, 7 * 86400, "seconds"),
    max_bytes=rules.count(1024, 64 * 1024 * 1024, "bytes"),
    max_lines=rules.count(1, 1000000, "lines"),
)
