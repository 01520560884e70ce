# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Domain exceptions.

module_utils raise these; a module catches ``TriageError`` once, at the top, and
turns it into a single ``fail_json`` whose message says what failed, on what, and
what to do.  Nothing else in module_utils calls ``fail_json``.
"""

from __future__ import annotations


class TriageError(Exception):
    """Base class: ``str(exc)`` is the whole message for the operator."""

    def __init__(self, message, **details):
        super(TriageError, self).__init__(message)
        self.message = message
        self.details = details


class InputError(TriageError):
    """An option value is wrong; nothing was read or changed."""


class ReadError(TriageError):
    """State could not be read from the kernel, a daemon, a tool or an API."""


class PrivilegeError(TriageError):
    """A capability or permission is missing (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW, RBAC)."""


class ChangeError(TriageError):
    """A state change was attempted and failed; details say what was already done."""


def fail_from(module, exc, **extra):
    """Fail the module once from a TriageError, keeping its details in the result."""
    result = dict(exc.details)
    result.update(extra)
    module.fail_json(msg=exc.message, **result)
