# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario cilium_maps: how full Cilium's pinned bpf maps are, and stale frontends (module bpf_map_usage, read-only)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_options as cilium_lb_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "cilium_maps"
MODULE = "bpf_map_usage"
PREFIXES = ("bpf",)
OPTIONS = scenario.options(cilium_lb_options.CHECK_SPEC, extra=dict(
    when_not_cilium=dict(type="str", choices=["check", "skip"], default="skip"),
))
RULES = rules.fields(**cilium_lb_options.RULES)
ROLE_VARIABLES = (("bpffs", "cilium_maps_bpffs"), ("maps", "cilium_maps_maps"),
                  ("warn_ratio", "cilium_maps_warn_ratio"), ("critical_ratio", "cilium_maps_critical_ratio"))
# the fleet half: the live Service frontends (API_READS), else cilium_maps_live_frontends
API_READS = ("kube_network_info",)
FLEET_VARIABLES = ("cilium_maps_live_frontends",)
FLEET_LISTS = ("cilium_maps_live_frontends",)
NOT_CILIUM = "not a Cilium node: no pinned cilium_* maps under /sys/fs/bpf/tc/globals and no Cilium agent socket"


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb as cilium_lb  # pylint: disable=import-outside-toplevel

    return cilium_lb.node_check


def skip_reason(sub, params):
    """With when_not_cilium=skip, a node that shows nothing of Cilium (cni_files.detect: pinned maps,
    agent socket, a cilium-cni configuration read where the cni scenario reads them)."""
    if sub.get("when_not_cilium") != "skip":
        return None
    from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files  # pylint: disable=import-outside-toplevel
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError  # pylint: disable=import-outside-toplevel

    cni = params.get("cni") or {}
    try:
        configs = cni_files.read_dir(cni.get("conf_dir") or "/etc/cni/net.d", cni.get("bin_dir") or "/opt/cni/bin")["configs"]
    except TriageError:
        configs = []
    return None if cni_files.detect(configs)["cilium"] else NOT_CILIUM


def applies(fleet):
    return fleet.not_a_node() or fleet.cni_is_not("cilium")


def needs(fleet, sub):
    """The live Service frontends (from the API, else cilium_maps_live_frontends), to tell stale entries."""
    # a role's run reads every pinned map of its hosts (the fill of any eBPF map); the triage, under triage_cni
    # auto, skips a node that shows nothing of Cilium
    sub["when_not_cilium"] = "skip" if fleet.auto and fleet.nodes is None else "check"
    live = fleet.kube.get("service_frontends") if fleet.api else fleet.variables.get("cilium_maps_live_frontends")
    if live is not None:
        sub["live_frontends"] = live


def details(data):
    if not isinstance(data.get("maps"), list):
        return {}
    return {"map_fill": scenario.top(data["maps"], "ratio", ("name", "type", "entries", "max_entries", "ratio"))}
