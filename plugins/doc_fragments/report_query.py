# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options the JMESPath report filters share (report_select, report_fail_on)."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  groups:
    description: The inventory's C(groups) (group name to hosts), to give each finding its host's groups.
    type: dict
    default: {}
requirements:
  - jmespath (Python library, on the controller)
"""
