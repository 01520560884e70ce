# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The record of one scenario, the one structure the report reads.

Per host, ``triage_results[scenario]``; for the fleet (the controller's ``node_pass_fleet_results``), the
same with the hosts it concerns and its findings marked fleet.  Built here only: by the node_pass
action (node scenarios), the node_pass_fleet filter (fleet conclusions), the report (a scenario
playbook's role facts) and, through the ``scenario_result`` filter, the triage's API plays.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import fleet

# ran: its checks ran (its findings are what they found); skipped: it does not apply (the reason says why);
# failed: it could not run (the reason, and a triage.check_failed finding); not run: its host was not reached;
# not finished: planned, and the run stopped before it recorded anything
STATUSES = ("ran", "skipped", "failed", "not run", "not finished")

# a host's status and reason (triage_host) when the triage found that none of its scenarios applies there: it was
# considered, not missed (the report does not count it as a node that could not be checked)
NO_SCENARIO_APPLIES = ("not checked", "no scenario applies to this host")


def result(status, reason="", findings=None, details=None, data=None):
    """One scenario's record on one host: ``{status, reason, findings, details[, data]}``."""
    if status not in STATUSES:
        raise ValueError("a scenario's status is one of %s, not %r" % (", ".join(STATUSES), status))
    out = {"status": status, "reason": str(reason or ""), "findings": [f for f in findings or [] if isinstance(f, dict)],
           "details": dict(details or {})}
    if data is not None:
        out["data"] = data
    return out


def fleet_result(status, reason, findings, hosts, details=None, data=None):
    """One scenario's fleet record: ``hosts`` it concerns, each finding a fleet finding (its own hosts, else these)."""
    hosts = sorted(set(str(h) for h in hosts))
    out = result(status, reason, [fleet(f, f.get("hosts") or hosts) for f in findings or [] if isinstance(f, dict)], details,
                 data)
    out["hosts"] = hosts
    return out
