# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the neighbor cache check (arp_check, node_triage stale_arp)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.doc_fragments.netlink import ModuleDocFragment as Netlink
from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested


class ModuleDocFragment(object):

    # The options of M(k8snet.triage.arp_check); paired one-to-one with neighbors_options.CHECK_SPEC
    # (with netlink_options.NETLINK_ARGUMENT_SPEC: its C(reader) option is the k8snet.triage.netlink fragment).
    DOCUMENTATION = r"""
options:
  addresses:
    description:
      - The IPv4 or IPv6 addresses whose neighbor entries are checked, for example a control-plane VIP.
      - Each must be an address one host can hold; unspecified, loopback, multicast, broadcast, reserved
        (240.0.0.0/4) and link-local addresses are refused.
      - Addresses that are keys of O(expected) are checked too.
      - At most 1024 addresses.
    type: list
    elements: str
    required: true
  expected:
    description:
      - The true MAC of each address, as learned from the address's owner (the O(addresses) result
        RV(local) of this module run on the owner).
      - MACs may be written with colons, dashes or no separator, in any case.
      - Without it, the single MAC that answers a probe is taken as the truth.
      - At most 1024 entries.
    type: dict
    default: {}
  interface:
    description:
      - Only look at neighbor entries on this interface, and probe out of it.
      - By default every interface is looked at, and probes leave by the interface the route to the address uses.
      - A Linux interface name (1 to 15 bytes, no V(/), V(:) or whitespace).
    type: str
  probe:
    description:
      - Send ARP requests for the IPv4 addresses and collect every MAC that answers.
      - For an address this host holds itself, the request is an RFC 5227 probe (sender 0.0.0.0), so only
        other hosts claiming the address answer.
      - NDP probing of IPv6 addresses is not implemented; IPv6 entries are compared with O(expected).
    type: bool
    default: false
  probe_timeout:
    description:
      - Seconds to wait for ARP answers (all addresses are probed at once; on a LAN they come within milliseconds).
      - A finite number from 0.01 to 10.
    type: float
    default: 0.5
"""


# The same options as node_triage's stale_arp option, with the triage's defaults: built from the DOCUMENTATION
# above, not written twice (set here, after the class, as ansible-test's yamllint reads only the
# string literals of the class body; validate-modules checks the result through node_triage).
ModuleDocFragment.NODE_TRIAGE = nested("stale_arp", [ModuleDocFragment.DOCUMENTATION, Netlink.DOCUMENTATION], addresses=[], probe=True)
