# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Option docs written once, shown in two places.

A scenario's check options are documented once, in the doc fragment of its domain (the
``DOCUMENTATION`` variant: top-level options, as the scenario module has them).  node_triage has
the same options one level down, under the scenario's name, with the triage's defaults:
``nested`` turns the first form into the second (the ``NODE_TRIAGE`` variant of that fragment).
"""

from __future__ import annotations

import re

import yaml


def _refer(text, names, parent):
    """O(name...) of a sibling option -> O(parent.name...); RV(x) (the scenario module's return
    values, not node_triage's) -> C(x)."""
    text = re.sub(r"\bO\(([a-z_]+)(?=[.=)\[])", lambda m: "O(%s.%s" % (parent, m.group(1)) if m.group(1) in names
                  else m.group(0), text)
    return re.sub(r"\bRV\(([^)]*)\)", r"C(\1)", text)


def _rewrite(value, names, parent):
    if isinstance(value, str):
        return _refer(value, names, parent)
    if isinstance(value, list):
        return [_rewrite(item, names, parent) for item in value]
    if isinstance(value, dict):
        return dict((key, _rewrite(item, names, parent)) for key, item in value.items())
    return value


def nested(parent, documentation, extra="", **defaults):
    """The ``options`` of ``documentation`` (one or more fragments' YAML) as the suboptions of
    option ``parent``, with the caller's ``defaults`` (``name=value``; such an option is no longer
    required) and the ``extra`` options (YAML) only that caller has."""
    documentation = documentation if isinstance(documentation, (list, tuple)) else [documentation]
    suboptions = {}
    for text in documentation:
        suboptions.update(yaml.safe_load(text)["options"])
    if extra:
        suboptions.update(yaml.safe_load(extra)["options"])
    for name, value in defaults.items():
        suboptions[name].pop("required", None)
        suboptions[name]["default"] = value
    suboptions = _rewrite(suboptions, set(suboptions), parent)
    return yaml.safe_dump({"options": {parent: {"suboptions": suboptions}}}, default_flow_style=False, sort_keys=True)
