# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    # Paired with RATE_SPEC in plugins/module_utils/core/pacing.py: the option of every check that sends probes
    DOCUMENTATION = r"""
options:
  rate:
    description:
      - At most this many probe packets a second from this node, whatever the number of targets (each packet waits
        for its slot; the probes of every target share them). At fleet size every node probes at once, and a burst
        fills the node's own socket buffers and the peers' ICMP answer budget (net.ipv4.icmp_ratelimit), which would
        read as peers that do not answer.
      - 0 sends without a limit; at most 100000.
    type: float
    default: 200.0
"""
