# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The modules' C(attributes), one variant per kind of module.

A module names one variant, e.g. ``k8snet.triage.attributes.node_check``, and may still give its
own ``attributes:`` block with only the keys that differ (usually ``details``): the module's keys
win over the fragment's.
"""

from __future__ import annotations

_CHECK_MODE = "Can run in check_mode and return changed status prediction without modifying target."
_DIFF_MODE = "Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode."
_PLATFORM = "Target OS/families that can be operated against."


def _attributes(check_mode, diff_support, diff_mode, platform):
    return r"""
attributes:
  check_mode:
    description: %s
    support: full
    details: %s
  diff_mode:
    description: %s
    support: %s
    details: %s
  platform:
    description: %s
    support: full
    platforms: posix
    details: %s
""" % (_CHECK_MODE, check_mode, _DIFF_MODE, diff_support, diff_mode, _PLATFORM, platform)


class ModuleDocFragment(object):

    # A read-only check that runs on a node.
    NODE_CHECK = _attributes(
        "Read-only; check mode runs the same reads and checks.",
        "none", "Nothing is changed, so there is nothing to diff.",
        "Linux nodes, Python 3.9 or later (standard library; optional libraries are used when importable).")

    # A read-only module that runs on the controller and reads the Kubernetes API.
    API_READ = _attributes(
        "Read-only; check mode sends the same reads.",
        "none", "Nothing is changed, so there is nothing to diff.",
        "Runs on the controller (C(delegate_to=localhost)); talks to the Kubernetes API.")

    # A module that changes state only when an option asks for it.
    STATE_CHANGE = _attributes(
        "In check mode the module reports what it would change and changes nothing.",
        "full", "The changed objects before and after the change.",
        "Linux nodes, Python 3.9 or later (standard library).")
