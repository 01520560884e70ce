# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A node's probe budget: at most ``rate`` packets a second from one check, however many threads send them.

At fleet size every node probes its peers at the same moment; a burst of hundreds of probes fills the
node's own socket buffers (ENOBUFS) and the peers' ICMP rate limits (net.ipv4.icmp_ratelimit: by default
the kernel answers at most about 1,000 ICMP errors and echo replies a second, in bursts of 50), which then
read as a peer that does not answer.  The probes of one check share one Pacer: each send waits for its
slot, 1 / rate seconds after the previous one.  ``rate`` 0 sends without waiting.
"""

from __future__ import annotations

import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core import params

# packets a second a probing check sends by default: below the kernel's ICMP answer budget, and enough for
# the triage's samples (8 peers: some 50 packets of reachability, some 200 of path-MTU searches)
DEFAULT_RATE = 200.0
MAX_RATE = 100000.0
# the option of every check that sends probes (documented once: doc fragment k8snet.triage.pacing)
RATE_SPEC = dict(rate=dict(type="float", default=DEFAULT_RATE))


def rate_rule(option, value):
    """The rule of a check's ``rate`` option: packets a second, 0 (no limit) to MAX_RATE."""
    return params.number(option, value, 0, MAX_RATE, unit="packets a second", fix="0 sends without a limit")


class Pacer(object):
    """``wait()`` before each packet: returns when this packet's slot has come (thread-safe)."""

    def __init__(self, rate, clock=time.monotonic, sleep=time.sleep):
        self.interval = 1.0 / rate if rate else 0.0
        self.clock, self.sleep = clock, sleep
        self.lock = threading.Lock()
        self.next_slot = None
        self.waited = 0.0

    def wait(self):
        if not self.interval:
            return
        with self.lock:
            now = self.clock()
            slot = now if self.next_slot is None or self.next_slot < now else self.next_slot
            self.next_slot = slot + self.interval
            delay = slot - now
            self.waited += delay
        if delay > 0:
            self.sleep(delay)
