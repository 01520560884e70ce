# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    # Paired with NETLINK_ARGUMENT_SPEC in plugins/module_utils/kernel/netlink_options.py
    DOCUMENTATION = r"""
options:
  reader:
    description:
      - How the kernel's tables are read.
      - V(auto) uses C(ip -json) when C(ip) is installed, and pyroute2 (netlink) when it is not. Importing
        pyroute2 0.9 loads the whole library, about 0.25 s of CPU per run, where an C(ip -json) read of
        a node's table costs a few milliseconds.
      - V(pyroute2) and V(iproute2) force one reader; both fill the same result.
    type: str
    choices: [auto, pyroute2, iproute2]
    default: auto
"""
