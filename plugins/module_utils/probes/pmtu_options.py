# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the path-MTU check (pmtu_check, node_triage's pmtu): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core import addresses, params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.pacing import RATE_SPEC, rate_rule


MIN_SIZE = 576
MAX_SIZE = 65535
MAX_PEERS = 64

# The argument spec of one target (pmtu_check's targets, the one-pass pmtu targets).
TARGET_SPEC = dict(
    address=dict(type="str", required=True),
    name=dict(type="str"),
)

# The options of the path-MTU check: pmtu_check's (with node_name and netns_pid), and node_triage's
# pmtu (targets default to none there). Paired one-to-one with the doc fragment k8snet.triage.pmtu.
CHECK_SPEC = dict(
    targets=dict(type="list", elements="dict", required=True, options=TARGET_SPEC),
    min_size=dict(type="int", default=MIN_SIZE),
    max_size=dict(type="int"),
    timeout=dict(type="float", default=0.5),
    reader=dict(type="str", choices=["auto", "pyroute2", "iproute2"], default="auto"),
    **RATE_SPEC
)

# what a probe to each kind of address (addresses.special) would do; a link-local peer is measured
_NOT_A_PEER = dict(addresses.SPECIAL, **{
    "unspecified": "the unspecified address (the kernel sends probes to it through lo, to this host)",
    "loopback": "a loopback address (probes to it never leave this host)",
    "multicast": "a multicast address, not one peer",
    "broadcast": "the limited broadcast address, not one peer",
})
del _NOT_A_PEER["link-local"]


def not_a_peer(address):
    """Why an IPv4 address cannot be a peer whose path MTU is measured (None when it can): probes to it
    would stay on this host (loopback, unspecified: the kernel routes them through lo) or reach no one
    host (multicast, broadcast, reserved)."""
    return _NOT_A_PEER.get(addresses.special(address))


def refusal(option, address, why):
    return InputError("%s=%r is invalid: %s is %s; the path MTU is measured to another node or a pod: give a "
                      "peer's unicast address (a node's InternalIP, a pod IP on another node)"
                      % (option, address, address, why), option=option)


def peer_address(option, value):
    """Rule: a peer's IPv4 unicast address (not unspecified, loopback, multicast, broadcast or reserved)."""
    address = params.address(4)(option, value)
    why = not_a_peer(address)
    if why:
        raise refusal(option, address, why)
    return address


# The option rules (bounds, shapes) of the pmtu options, used by module pmtu_check and by node_triage.
TARGET_RULE = params.fields(address=peer_address, name=params.short_text)
RULES = dict(
    targets=params.each(TARGET_RULE, max_items=MAX_PEERS, non_empty=True, what="give at least one peer address"),
    min_size=params.count(68, 9000, "bytes"),
    max_size=params.count(68, MAX_SIZE, "bytes"),
    timeout=params.seconds(0, 5),
    rate=rate_rule,
    node_name=params.node_name,
    netns_pid=params.count(1, 4194304),
)
# node_triage: no targets is not an error there, the scenario is skipped and says why; a target that is
# not a peer (a fleet's peer whose variables give 0.0.0.0, this node's own address) is skipped with a note
# by the check (pmtu.node_check), the other peers are measured
PASS_RULES = dict(RULES)
del PASS_RULES["netns_pid"]
PASS_RULES["targets"] = params.each(params.fields(address=params.address(4), name=params.short_text),
                                    max_items=MAX_PEERS)
