# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""IP address text, normalised once (standard library only; node and controller side).

Option values are checked by the rules of ``params`` (``params.address``, ``params.network``);
this is for addresses read from elsewhere (inventory variables, Node annotations, BIRD).
"""

from __future__ import annotations

import functools
import ipaddress


def host_address(value):
    """'10.0.0.5', ' 10.0.0.5/24 ' (an interface address, as in Calico's projectcalico.org/IPv4Address
    annotation) -> '10.0.0.5'; IPv6 likewise, compressed.  ValueError when it is not an IP address."""
    return _host_address(str(value).strip())


# the controller reads every peer's address for every host's lists: the same few hundred texts, parsed once
@functools.lru_cache(maxsize=4096)
def _host_address(text):
    return str(ipaddress.ip_interface(text).ip if "/" in text else ipaddress.ip_address(text))
