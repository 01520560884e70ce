# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""List variables as users give them: a list, text with one item a line or comma-separated, or JSON text
(extra vars and AWX survey answers arrive as text).  The as_list filter and the node_pass action read
their list variables with it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind, show

SEPARATORS = re.compile(r"[\r\n,]+")


def as_list(value, name="value"):
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError as err:
                raise AnsibleFilterError(
                    "%s looks like a JSON list but is not valid JSON (%s); give a list, JSON text such as "
                    "'[\"a\", \"b\"]', or items separated by newlines or commas" % (name, err))
            if not isinstance(parsed, list):
                raise AnsibleFilterError("%s must be a JSON list; got %s" % (name, kind(parsed)))
            return parsed
        return [item.strip() for item in SEPARATORS.split(value) if item.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    given = kind(value) if isinstance(value, Mapping) else "%s (%s)" % (kind(value), show(value))
    raise AnsibleFilterError(
        "%s must be a list, or a string of items separated by newlines or commas; got %s" % (name, given))


def first_names(names, limit=5):
    """The first ``limit`` of ``names`` joined with commas, then how many more there are ("a, b and 3 more")."""
    names = list(names)
    return ", ".join(names[:limit]) + (" and %d more" % (len(names) - limit) if len(names) > limit else "")
