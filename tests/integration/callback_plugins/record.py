# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: append every task result as one JSON line to $K8SNET_RECORD."""

from __future__ import annotations

DOCUMENTATION = """
name: record
type: aggregate
short_description: write task results as JSON lines for the integration tests
description:
  - Appends one JSON object per task and host to the file named by C(K8SNET_RECORD).
requirements:
  - the K8SNET_RECORD environment variable
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "record"
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, result, status):
        path = os.environ.get("K8SNET_RECORD")
        if not path:
            return
        record = {
            "host": result._host.get_name(),
            "task": result._task.get_name(),
            "action": result._task.action,
            "status": status,
            "result": self._clean(result._result),
            "time": time.time(),  # when the controller got the result (bench/fleet_triage.py's phases)
        }
        with open(path, "a") as handle:
            handle.write(json.dumps(record, default=str) + "\n")

    @staticmethod
    def _clean(value):
        return json.loads(json.dumps(value, default=str))

    def v2_runner_on_ok(self, result):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._write(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._write(result, "skipped")
