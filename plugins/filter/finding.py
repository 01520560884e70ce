# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One finding built in a playbook through the same constructor the modules use."""

from __future__ import annotations

DOCUMENTATION = """
name: finding
short_description: build one finding of the collection's findings contract in a playbook
version_added: 0.2.0
description:
  - Builds one finding (C(check), C(severity), C(layer), C(subject), C(summary), C(evidence), C(remediation)) with
    the constructor every module uses, so that a finding a playbook writes (a check that could not run, a repair
    that did not complete) has the same shape and the same checks as the modules' own.
  - Refuses, naming the problem, a check name that is not C(<prefix>.<name>) in lower case, a severity or layer
    outside the contract, a subject or summary that is not text, and evidence that is not a mapping.
options:
  _input:
    description: The check name, C(<prefix>.<name>) (lower-case letters, digits and C(_)).
    type: str
    required: true
  severity:
    description: One of C(ok), C(info), C(warning), C(critical).
    type: str
    required: true
  layer:
    description: One of the contract's layers (C(L2), C(L3), C(L4), C(L7), C(control-plane), ...).
    type: str
    required: true
  subject:
    description: What the finding is about (a node, C(node/pod), a Service).
    type: str
    required: true
  summary:
    description: One sentence an operator understands.
    type: str
    required: true
  evidence:
    description: What was seen (a mapping).
    type: dict
    default: {}
  remediation:
    description: The next step.
    type: str
    default: ""
"""

EXAMPLES = """
- name: Record that a check could not run on this host
  ansible.builtin.set_fact:
    failure: >-
      {{ 'triage.check_failed' | k8snet.triage.finding('warning', 'control-plane', inventory_hostname,
         'the dns check could not run', {'error': error}, 'run playbook k8snet.triage.dns alone with -v') }}
"""

RETURN = """
_value:
  description: The finding.
  type: dict
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import LAYERS, SEVERITIES
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding as _finding
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

CHECK_NAME = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")


def finding(check, severity, layer, subject, summary, evidence=None, remediation=""):
    if not isinstance(check, str) or not CHECK_NAME.fullmatch(check):
        raise AnsibleFilterError("finding: the check name must be <prefix>.<name> in lower-case letters, digits and _ "
                                 "(like triage.check_failed), got %r" % (check,))
    if severity not in SEVERITIES:
        raise AnsibleFilterError("finding %s: severity %r is not one of %s" % (check, severity, ", ".join(SEVERITIES)))
    if layer not in LAYERS:
        raise AnsibleFilterError("finding %s: layer %r is not one of %s" % (check, layer, ", ".join(LAYERS)))
    for name, value in (("subject", subject), ("summary", summary), ("remediation", remediation)):
        if not isinstance(value, str):
            raise AnsibleFilterError("finding %s: %s must be text, got %s" % (check, name, kind(value)))
    if evidence is not None and not isinstance(evidence, Mapping):
        raise AnsibleFilterError("finding %s: evidence must be a mapping, got %s" % (check, kind(evidence)))
    return _finding(str(check), str(severity), str(layer), str(subject), str(summary), dict(evidence or {}),
                    str(remediation))


class FilterModule(object):
    def filters(self):
        return guard_all({"finding": finding})
