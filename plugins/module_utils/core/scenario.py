# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every scenario's node check shares with its two callers.

Each domain declares its check's options once, ``CHECK_SPEC`` and their ``RULES`` in
``<domain>_options.py`` (paired one-to-one with the doc fragment of the domain's name), and its
``node_check(params, runner)`` in ``<domain>.py``.  The scenario module takes ``CHECK_SPEC`` as it
is (plus its own options) and runs ``module_main``; node_triage takes it as one dict option per
scenario, with the triage's defaults (``options``), and imports the checks' code only when it runs
them (node_triage.load).
"""

from __future__ import annotations

import copy

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import new_module


def with_defaults(spec, **defaults):
    """A copy of the argument spec ``spec`` with other defaults: ``name=value`` sets the default
    of option ``name`` (an option given a default is no longer required)."""
    spec = copy.deepcopy(spec)
    for name, value in defaults.items():
        if name not in spec:
            raise KeyError("%s is not an option of this spec" % name)
        spec[name].pop("required", None)
        spec[name]["default"] = value
    return spec


def options(spec, extra=None, **defaults):
    """One scenario of node_triage: a dict option whose suboptions are ``spec`` with this caller's
    ``defaults``, plus the ``extra`` options only that caller has."""
    suboptions = with_defaults(spec, **defaults)
    suboptions.update(extra or {})
    return dict(type="dict", default={}, options=suboptions)


def module_main(module_class, check, rules, argument_spec, **kwargs):
    """The whole ``main()`` of a read-only scenario module: the options checked against ``rules``,
    ``check(params, module)`` run, its findings and data returned, a domain error failing the
    module once."""
    module = new_module(module_class, rules, argument_spec=argument_spec, supports_check_mode=True, **kwargs)
    try:
        result = check(module.params, module)
    except TriageError as exc:
        fail_from(module, exc)
    module.exit_json(changed=False, findings=result["findings"], **result["data"])


def picked(data, *keys):
    """The entries ``keys`` of ``data`` that it has (a report's compact view of a scenario's data)."""
    return dict((key, data[key]) for key in keys if key in data)


def top(rows, key, fields, count=8):
    """The ``count`` rows of ``rows`` with the largest numeric ``key``, each cut to ``fields`` (a report's
    compact view of a scenario's data)."""
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get(key), (int, float))]
    return [dict((name, r.get(name)) for name in fields) for r in sorted(rows, key=lambda r: -r[key])[:count]]
