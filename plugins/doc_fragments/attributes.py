# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The modules' C(attributes): what each attribute means, and one variant per kind of module.

A module names both, e.g. ``k8snet.triage.attributes`` and ``k8snet.triage.attributes.node_check``,
and may still give its own ``attributes:`` block with only the keys that differ (usually ``details``):
the module's keys win over the fragments'.
"""

from __future__ import annotations


class ModuleDocFragment(object):

    # What each attribute means.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
"""

    # A read-only check that runs on a node.
    NODE_CHECK = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: Read-only; check mode runs the same reads and checks.
  diff_mode:
    support: none
    details: Nothing is changed, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
    details: Linux nodes, Python 3.9 or later (standard library; optional libraries are used when importable).
"""

    # A read-only module that runs on the controller and reads the Kubernetes API.
    API_READ = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: Read-only; check mode sends the same reads.
  diff_mode:
    support: none
    details: Nothing is changed, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost)); talks to the Kubernetes API.
"""

    # A module that changes state only when an option asks for it.
    STATE_CHANGE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: In check mode the module reports what it would change and changes nothing.
  diff_mode:
    support: full
    details: The changed objects before and after the change.
  platform:
    support: full
    platforms: posix
    details: Linux nodes, Python 3.9 or later (standard library).
"""

    # An action that writes the run's own output files on the controller (the report).
    CONTROLLER_OUTPUT = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: In check mode nothing is written; the files that would be written are returned and reported as changed.
  diff_mode:
    support: none
    details: The files are the run's new output (each carries the time it was generated), not a change to diff.
  platform:
    support: full
    platforms: posix
    details: Runs on the controller only; never uses the connection to the host.
"""
