# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the log check (node_logs, node_triage logs)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.node_logs); paired one-to-one with logs_options.CHECK_SPEC.
    DOCUMENTATION = r"""
options:
  node_log_files:
    description:
      - Log files read when journald is not running (or with O(source=files)), those that exist.
      - Absolute paths under C(/var/log/), at most 32, without V(..) segments.
    type: list
    elements: path
    default: [/var/log/kubelet.log, /var/log/syslog, /var/log/messages]
  units:
    description: The systemd units whose journal is read (at most 32 unit names).
    type: list
    elements: str
    default: [kubelet, containerd, crio, docker]
  kernel:
    description: Also read the kernel's messages from the journal (C(journalctl -k)), for C(nf_conntrack) drops.
    type: bool
    default: true
  source:
    description: V(auto) reads the journal when journald runs and the files otherwise; V(journal) or V(files) force one.
    type: str
    choices: [auto, journal, files]
    default: auto
  since:
    description: How far back to read, in seconds (1 to 604800).
    type: int
    default: 3600
  max_bytes:
    description: The most bytes read from one file or one journal query (1024 to 67108864); the latest ones are kept.
    type: int
    default: 1048576
  max_lines:
    description: The most lines read from one file or one journal query (1 to 1000000); the latest ones are kept.
    type: int
    default: 5000
"""


# The same options as node_triage's logs option: built from the DOCUMENTATION above, not written twice
# (set here, after the class, as ansible-test's yamllint reads only the string literals of the class body).
ModuleDocFragment.NODE_TRIAGE = nested("logs", ModuleDocFragment.DOCUMENTATION)
