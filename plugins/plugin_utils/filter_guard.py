# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One guard for every filter of the collection: bad input gives an AnsibleFilterError with a message.

A filter checks the shape of what it is given where it matters; anything it did not foresee
(``None`` inside a list, a number where a dict was expected, a huge integer) would otherwise
surface as a Python traceback in the middle of a play.  ``guarded(name, func)`` turns such
errors into one ``AnsibleFilterError`` naming the filter, what went wrong and where to read
what the filter expects.  Errors the filter raises itself pass through unchanged.
"""

from __future__ import annotations

import functools
import re

from ansible.errors import AnsibleFilterError

INPUT_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError)
# the classes that hold the controller's values (ansible-core 2.19+), named in Python's own error messages
_INTERNAL_TYPES = re.compile(r"\b_Ansible(?:Tagged|LazyTemplate)([A-Z][a-z]*)\b")


def plain_names(text):
    """``text`` (Python's words about a value) with Ansible's internal classes named as the plain types they
    hold: "'<' not supported between instances of '_AnsibleTaggedStr' and 'int'" says 'str'."""
    return _INTERNAL_TYPES.sub(lambda m: m.group(1).lower(), text)


def guarded(name, func, domain_errors=()):
    """``func`` wrapped so that malformed input raises AnsibleFilterError, never a traceback.
    ``domain_errors``: exception types whose message is already written for the operator (it names
    the host or item and the fix); it becomes the AnsibleFilterError's message as it is."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except AnsibleFilterError:
            raise
        except tuple(domain_errors) as exc:
            raise AnsibleFilterError(str(exc))
        except INPUT_ERRORS as exc:
            detail = plain_names(str(exc)) or type(exc).__name__
            if len(detail) > 200:
                detail = detail[:200] + "..."
            raise AnsibleFilterError(
                "%s was given input it cannot use (%s: %s); see `ansible-doc -t filter k8snet.triage.%s` for "
                "what it expects" % (name, type(exc).__name__, detail, name))
    return wrapper


def guard_all(filters, domain_errors=()):
    """``{name: func}`` with every function guarded (for ``FilterModule.filters``)."""
    return dict((name, guarded(name, func, domain_errors)) for name, func in filters.items())
