# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the BGP session check (calico_bgp_status, node_triage's calico): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

import os

from ansible_collections.k8snet.triage.plugins.module_utils.core import params

# calicoctl's BIRD control sockets, and the directory it falls back to
CALICO_SOCKETS = ("/var/run/calico/bird.ctl", "/var/run/calico/bird6.ctl")
FALLBACK_DIR = "/var/run/bird"

# The options of the BGP session check: calico_bgp_status', and node_triage's calico (with the
# triage's defaults). Paired one-to-one with the doc fragment k8snet.triage.bird.
CHECK_SPEC = dict(
    sockets=dict(type="list", elements="path"),
    expected_peers=dict(type="list", elements="str", default=[]),
    node_to_node_mesh=dict(type="bool", default=True),
    stuck_after=dict(type="int", default=300),
    timeout=dict(type="int", default=5),
    when_not_calico=dict(type="str", choices=["critical", "skip"], default="critical"),
    cni_conf_dir=dict(type="path", default="/etc/cni/net.d"),
)


# The option rules (bounds, shapes) of the bird options, used by module calico_bgp_status and by node_triage.
RULES = dict(
    sockets=params.each(params.absolute_path, max_items=16),
    # the node pass gives every Node's address (two with dual stack): Kubernetes' own limit is 5,000 nodes
    expected_peers=params.each(params.address_or_network, max_items=16384),
    stuck_after=params.count(0, 86400, "seconds"),
    timeout=params.count(1, 60, "seconds"),
    cni_conf_dir=params.absolute_path,
)


def default_sockets():
    """calicoctl's sockets: (path, required) with the /var/run/bird fallback; bird6 is optional."""
    return [(CALICO_SOCKETS[0], True), (CALICO_SOCKETS[1], False)]


def resolve_socket(path, fallback=True):
    """``path``, or its twin under /var/run/bird when ``path`` does not exist (calicoctl's fallback)."""
    if fallback and not os.path.exists(path):
        twin = os.path.join(FALLBACK_DIR, os.path.basename(path))
        if os.path.exists(twin):
            return twin
    return path


def not_calico_reason(paths):
    """Why the BGP check does not apply to a node without BIRD and Calico (``paths``: the sockets looked at)."""
    return "not a Calico node: no BIRD socket (%s) and no Calico CNI configuration" % ", ".join(paths)


def skip_reason(params_, calico_config):
    """The check's own ``when_not_calico=skip`` decision, made before its code is loaded (node_triage.plan):
    every socket it would read is absent (nothing at the path, as BirdClient finds it) and
    ``calico_config()`` (a Calico CNI configuration on the node) is false.  None when the check must
    run: ``when_not_calico=critical``, a socket path that exists or cannot be looked at (the check
    says why), or a Calico configuration."""
    if params_.get("when_not_calico") != "skip":
        return None
    given = params_.get("sockets")
    paths = [resolve_socket(path, fallback=not given) for path in (given or [path for path, _required in default_sockets()])]
    for path in paths:
        try:
            os.stat(path)
        except FileNotFoundError:
            continue
        except OSError:
            return None  # permission denied, not a directory: the check reports it
        return None
    return None if calico_config() else not_calico_reason(paths)
