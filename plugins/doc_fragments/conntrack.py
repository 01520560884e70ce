# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the conntrack check (conntrack_check, node_triage conntrack)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.conntrack_check); paired one-to-one with conntrack_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  warn_ratio:
    description: Fill ratio (count / max) from which C(conntrack.pressure) is a warning; more than 0, at most 1.
    type: float
    default: 0.75
  critical_ratio:
    description: Fill ratio from which C(conntrack.pressure) is critical; at least O(warn_ratio), at most 1.
    type: float
    default: 0.9
  interval:
    description: Seconds between the two reads of the counters, 0 to 60; 0 reads them once (no growth is judged).
    type: float
    default: 5.0
  top:
    description: How many source/destination pairs to name (0 to 50); 0 reads no entry.
    type: int
    default: 10
  top_pairs:
    description:
      - When to read the entries for the top pairs; V(pressure) only past O(warn_ratio), V(always), or V(never).
    type: str
    choices: [pressure, always, never]
    default: pressure
  reader:
    description:
      - How the entries are read; V(auto) reads C(/proc/net/nf_conntrack), else runs C(conntrack -L -o extended)
        once; when neither works the fill and counters are still reported and the evidence says why the pairs are
        missing.
      - V(pyroute2) (its netlink dump) only when asked for; it parses in pure Python, minutes at 250k entries.
    type: str
    choices: [auto, proc, pyroute2, conntrack]
    default: auto
"""


# The same options as node_triage's conntrack option: built from the DOCUMENTATION above, not written twice
# (set here, after the class, as ansible-test's yamllint reads only the string literals of the class body).
ModuleDocFragment.NODE_TRIAGE = nested("conntrack", ModuleDocFragment.DOCUMENTATION)
