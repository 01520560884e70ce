"""Each scenario's options are declared once (CHECK_SPEC) and documented once (its doc fragment):
node_triage's scenario options are the scenario module's, with the triage's defaults only."""

from __future__ import annotations

import importlib

import pytest
import yaml

from ansible_collections.k8snet.triage.plugins.module_utils import node_triage
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario
from ansible_collections.k8snet.triage.plugins.plugin_utils.doc_options import nested
from tests.unit.plugins.modules.hostile_runner import PACKAGE, argument_spec

# node_triage scenario -> the scenario module, and the defaults the triage (its roles) sets differently
SCENARIOS = {
    "cni": ("cni_config_check", {}),
    "calico": ("calico_bgp_status", {"when_not_calico": "skip"}),
    "cilium_maps": ("bpf_map_usage", {}),
    "pod_network": ("route_check", {}),
    "firewall_drops": ("iptables_drops", {}),
    "connectivity": ("reachability", {"targets": [], "probes": ["icmp", "tcp", "arp"], "tcp_port": 10250, "count": 2}),
    "dns": ("dns_check", {"names": ["kubernetes.default.svc.cluster.local"], "host_resolvers": True}),
    "stale_arp": ("arp_check", {"addresses": [], "probe": True}),
}
# options only node_triage has (a per-node decision the scenario module does not make)
TRIAGE_ONLY = {"cilium_maps": {"when_not_cilium"}}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_node_triage_scenario_options_are_the_modules_with_the_triage_defaults(name):
    module_name, triage_defaults = SCENARIOS[name]
    module_spec = argument_spec(importlib.import_module(PACKAGE + module_name))
    triage = node_triage.ARGUMENT_SPEC[name]
    # (no check of the value of its default: Ansible fills the suboptions' defaults into that dict in place)
    assert triage["type"] == "dict" and isinstance(triage["default"], dict)
    sub = triage["options"]
    shared = set(sub) - TRIAGE_ONLY.get(name, set())
    assert shared <= set(module_spec), name
    for option in shared:
        mine, theirs = dict(sub[option]), dict(module_spec[option])
        if option in triage_defaults:
            assert mine.pop("default") == triage_defaults[option] and "required" not in mine
            theirs.pop("default", None)
            theirs.pop("required", None)
        assert mine == theirs, (name, option)


def test_options_refuses_a_default_for_an_unknown_option():
    with pytest.raises(KeyError, match="nope is not an option"):
        scenario.options({"a": {"type": "int"}}, nope=1)


def test_options_leave_the_shared_spec_alone():
    shared = {"names": {"type": "list", "elements": "str", "required": True}}
    assert scenario.options(shared, names=["x"])["options"]["names"] == {"type": "list", "elements": "str", "default": ["x"]}
    assert shared == {"names": {"type": "list", "elements": "str", "required": True}}


def test_nested_docs_point_at_their_siblings():
    doc = """
options:
  port:
    description: Port of O(servers[].address); with O(retries=0) only once. See RV(rows), O(other) and O(k8snet.triage.x#module:port).
    type: int
    default: 53
  retries:
    description: Retries.
    type: int
    required: true
  servers:
    description: Servers.
    type: list
    elements: dict
"""
    out = yaml.safe_load(nested("dns", doc, extra="options:\n  extra:\n    description: x\n    type: str\n", retries=1))
    sub = out["options"]["dns"]["suboptions"]
    assert sub["port"]["description"] == ("Port of O(dns.servers[].address); with O(dns.retries=0) only once. "
                                          "See C(rows), O(other) and O(k8snet.triage.x#module:port).")
    assert sub["retries"] == {"description": "Retries.", "type": "int", "default": 1}
    assert sub["extra"]["type"] == "str"
