#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: arp_check
short_description: Find stale and conflicting ARP/NDP neighbor entries, and flush only the stale ones
version_added: 0.1.0
description:
  - Reads this host's neighbor cache (ARP for IPv4, NDP for IPv6) for the given addresses, typically
    control-plane VIPs, and compares each cached MAC with the MAC that is known to own the address.
  - Tells whether this host holds an address itself (RV(local)), so the same module run on the VIP
    owners learns the true MAC.
  - With O(probe=true), sends ARP requests for the IPv4 addresses and collects every MAC that answers
    within O(probe_timeout); more than one MAC means an IP conflict.
  - With O(flush=stale), deletes exactly the entries proven stale (address and device), re-reading each
    entry right before deleting it and keeping it when its MAC changed or it became protected meanwhile.
    What each delete removed is read from the kernel's own notification (RTM_DELNEIGH); an entry another
    writer put there between the re-read and the delete is written back at once and reported (RV(raced)).
    It never runs C(ip neigh flush all). A failure stops the flush and returns what was already deleted.
  - The neighbor table is read before probing; note that the kernel itself learns from ARP replies, so a
    probe may refresh a non-permanent entry that was stale.
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.state_change
  - k8snet.triage.netlink
  - k8snet.triage.neighbors
attributes:
  check_mode:
    details: In check mode nothing is deleted; RV(flushed) lists what would be deleted.
  diff_mode:
    details: The neighbor entries of the checked addresses before and after the flush.
  platform:
    details: Linux nodes. Needs CAP_NET_ADMIN to flush and CAP_NET_RAW to probe (C(become=true)).
options:
  flush:
    description:
      - V(none) only reports.
      - V(stale) deletes the entries proven stale (cached MAC differs from O(expected), or from the single
        MAC that answered the probe).
      - When the probe contradicts O(expected) (MACs answered and the expected one is not among them), no entry of
        that address is deleted; the finding C(arp.expected_contradicted) reports both sides instead.
    type: str
    choices: [none, stale]
    default: none
  force:
    description:
      - Also delete stale entries that are C(permanent), C(noarp), C(extern_learn) or C(managed).
        Those are set by an administrator, a CNI (Cilium installs managed/extern_learn next hops) or the
        kernel, and are kept and reported otherwise.
    type: bool
    default: false
  max_flush:
    description:
      - The most entries one run may delete; the rest are reported in RV(kept).
      - From 0 (delete nothing) to 1024.
    type: int
    default: 32
notes:
  - Read-only unless O(flush=stale). Ordinary entries re-resolve by themselves after a delete.
seealso:
  - name: ip-neighbour(8)
    description: The manual page of the command this module replaces.
    link: https://man7.org/linux/man-pages/man8/ip-neighbour.8.html
"""

EXAMPLES = r"""
- name: Learn which control-plane node holds the VIP and its MAC
  k8snet.triage.arp_check:
    addresses: [198.18.0.200]
  register: owner

- name: Check the admin nodes' caches against the owner's MAC, probing for conflicts
  k8snet.triage.arp_check:
    addresses: [198.18.0.200]
    expected:
      198.18.0.200: "02:18:00:00:00:01"
    probe: true

- name: Flush only the proven-stale entry (dry run first with --check --diff)
  k8snet.triage.arp_check:
    addresses: [198.18.0.200]
    expected:
      198.18.0.200: "02:18:00:00:00:01"
    flush: stale
  become: true
"""

RETURN = r"""
local:
  description: The checked addresses this host holds itself.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The address.
      type: str
      sample: 198.18.0.200
    interface:
      description: The interface it is bound to.
      type: str
      sample: eth0
    mac:
      description: That interface's MAC.
      type: str
      sample: "02:18:00:00:00:01"
neighbors:
  description: The neighbor cache entries of the checked addresses, read before any probe or flush.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The neighbor's address.
      type: str
    family:
      description: The address family, 4 or 6.
      type: int
    interface:
      description: The device.
      type: str
    mac:
      description: The cached MAC; null when unresolved.
      type: str
    state:
      description: NUD states such as C(REACHABLE), C(STALE), C(FAILED), C(PERMANENT).
      type: list
      elements: str
    flags:
      description: Entry flags such as C(router), C(extern_learn), C(managed).
      type: list
      elements: str
probes:
  description: For each probed address, every MAC that answered (with the vendor registered for its OUI).
  returned: always
  type: dict
  sample: {"198.18.0.201": [{"mac": "02:18:00:00:00:01", "vendor": null}, {"mac": "02:18:00:00:00:02", "vendor": null}]}
off_subnet:
  description:
    - With O(probe=true), the addresses not probed because this host reaches them through a gateway (they are not on
      its segment, so ARP for them proves nothing), each with the C(gateway) and C(interface) of its route; finding
      C(arp.not_probed_off_subnet) (info) for each.
    - C(gateway_neighbor) is this host's neighbour entry for that gateway as C(ip neigh) prints it (null when there is
      none, the kernel resolving it when a packet needs it); C(gateway_resolved) is true for a MAC in a usable state,
      false for FAILED or INCOMPLETE (the last resolution failed), null without an entry.
  returned: always
  type: dict
  sample: {"198.18.128.202": {"gateway": "198.18.0.11", "interface": "eth0",
                              "gateway_neighbor": "198.18.0.11 dev eth0 lladdr 02:18:00:00:00:0b REACHABLE",
                              "gateway_resolved": true}}
findings:
  description:
    - Findings (the k8snet.triage findings contract) with checks C(arp.stale_entry), C(arp.ip_conflict),
      C(arp.unresolved), C(arp.not_cached), C(arp.ok), C(arp.flush_incomplete) when a flush failed halfway,
      C(arp.flush_race) (critical) when a delete took another entry than the stale one (put back, see RV(raced)),
      and C(arp.flush_unverified) when the kernel's notification of a delete did not arrive in time.
  returned: always
  type: list
  elements: dict
flushed:
  description:
    - The entries deleted (in check mode, that would be deleted), as the kernel's own RTM_DELNEIGH notification
      describes them (address, interface, the old MAC, state, flags, C(verified) true), or as re-read right before
      the delete with C(verified) false when no notification came in time.
    - Also returned when the flush fails halfway, with the entries deleted before the failure.
  returned: always
  type: list
  elements: dict
kept:
  description:
    - Stale entries not deleted, each with a C(reason) (protected, cap reached, gone, or changed between the
      check and its delete, to another MAC or to C(permanent)/C(noarp)/C(extern_learn)/C(managed)).
  returned: always
  type: list
  elements: dict
raced:
  description:
    - Deletes that took another entry than the stale one checked right before (another writer replaced it in
      between, with another MAC, or C(permanent)/C(noarp) without O(force)). Each such entry was put back at once;
      each item has C(address), C(interface), C(deleted) (the entry the kernel deleted), C(restored) (the entry
      written back, as C(ip neigh replace) arguments), C(stale_mac) and C(reason).
  returned: when O(flush=stale)
  type: list
  elements: dict
flush_failed:
  description:
    - When the flush fails halfway, the entry whose re-read or delete failed, with the C(error). The flush stops
      there; the module fails and still returns RV(flushed), RV(kept) and RV(not_attempted).
  returned: always
  type: list
  elements: dict
not_attempted:
  description: When the flush fails halfway, the stale entries after the failed one, not attempted, each with a C(reason).
  returned: always
  type: list
  elements: dict
after:
  description:
    - After a flush (not in check mode), the entries of O(addresses) re-read once the deletes are done and the
      findings the same check gives on them (C(neighbors), C(findings)); this is the re-check, in the same run.
      Also returned when the flush fails halfway. Null when the re-read itself failed.
  returned: when O(flush=stale) and not in check mode
  type: dict
  contains:
    neighbors:
      description: The entries as re-read, in the shape of RV(neighbors).
      type: list
      elements: dict
    findings:
      description: The findings on the re-read entries (the flush's race and failure findings are in RV(findings) only).
      type: list
      elements: dict
reader:
  description: Which reader filled the result, C(pyroute2) or C(iproute2).
  returned: always
  type: str
  sample: iproute2
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.arp.probe import probe
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.arp.neighbors import arp_check
from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.arp import options as neighbors_options


def main():
    argument_spec = dict(
        neighbors_options.CHECK_SPEC,
        flush=dict(type="str", choices=["none", "stale"], default="none"),
        force=dict(type="bool", default=False),
        max_flush=dict(type="int", default=32),
    )
    module = rules.new_module(AnsibleModule, neighbors_options.RULES, argument_spec=argument_spec, supports_check_mode=True)
    try:
        with Netlink(module, module.params["reader"]) as netlink:
            result = arp_check(netlink, probe, module.params, module.check_mode)
    except TriageError as exc:
        fail_from(module, exc)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
