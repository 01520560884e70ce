# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the neighbor cache check (arp_check, node_triage's stale_arp): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import addresses, params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink_options import NETLINK_ARGUMENT_SPEC

# The options of the neighbor cache check: arp_check's (which adds its flush options), and
# node_triage's stale_arp (with the triage's defaults). Paired one-to-one with the doc fragments
# k8snet.triage.neighbors and k8snet.triage.netlink (reader).
CHECK_SPEC = dict(
    addresses=dict(type="list", elements="str", required=True),
    expected=dict(type="dict", default={}),
    interface=dict(type="str"),
    probe=dict(type="bool", default=False),
    probe_timeout=dict(type="float", default=0.5),
)
CHECK_SPEC.update(NETLINK_ARGUMENT_SPEC)


def vip(option, value):
    """Rule: a VIP, an IP address that one host holds and answers ARP or NDP for on its clients' network: not
    unspecified, loopback, multicast, broadcast, reserved or link-local (``addresses.special``).  Returns it
    normalised."""
    address = params.address()(option, value)
    kind = addresses.special(address)
    if kind:
        raise InputError("%s=%r is invalid: %s is %s, which no VIP can be; give the address the clients connect "
                         "to (the control plane's or the load balancer's VIP)"
                         % (option, address, address, dict(addresses.SPECIAL)[kind]), option=option)
    return address


# The option rules (bounds, shapes) of the neighbors options, used by module arp_check and by node_triage.
RULES = dict(
    addresses=params.each(vip),
    expected=params.mapping(params.address(), lambda option, value: params.text(option, value, max_len=32)),
    interface=params.interface,
    probe_timeout=params.seconds(0.01, 10),
    max_flush=params.count(0, 1024, "entries"),
)
