# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Scenario dns: the cluster DNS answers from this node, and from a pod's view (module dns_check)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.dns import options as dns_options
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core import scenario

NAME = "dns"
FLEET_DATA = True  # whether a node checked the view of DNS from dns_pod (its data's pod)
MODULE = "dns_check"
PREFIXES = ("dns", "conntrack")
OPTIONS = scenario.options(dns_options.CHECK_SPEC, names=["kubernetes.default.svc.cluster.local"], host_resolvers=True)
RULES = rules.fields(**dns_options.RULES)
ROLE_VARIABLES = (("names", "dns_names"), ("expect", "dns_expect"), ("cluster_domain", "dns_cluster_domain"),
                  ("protocols", "dns_protocols"), ("timeout", "dns_timeout"), ("retries", "dns_retries"),
                  ("host_resolvers", "dns_host_resolvers"), ("resolv_conf", "dns_resolv_conf"),
                  ("external_names", "dns_external_names"))
# the fleet half: the DNS servers (the Node list read), the pod whose view of DNS it adds (dns_pod)
API_READS = ("kube_network_info", "dns_pod")
FLEET_VARIABLES = ("dns_servers", "dns_pod", "dns_repeat", "dns_repeat_interval")
FLEET_LISTS = ("dns_servers",)


def load():
    from ansible_collections.k8snet.triage.plugins.module_utils.dns import check as dns  # pylint: disable=import-outside-toplevel

    return dns.node_check


def skip_reason(sub, params):
    del params
    if not sub.get("servers") and not sub.get("host_resolvers"):
        return "no DNS server to ask (dns.servers is empty and host_resolvers is false)"
    return None


def applies(fleet):
    not_a_node = fleet.not_a_node()
    if not_a_node:
        return not_a_node
    if not fleet.dns_servers and not fleet.pod_ip:
        return ("no DNS servers given (dns_servers) and %s" % fleet.api_reason if fleet.api_reason
                else "the Kubernetes API lists no DNS Service and no DNS pod (see the kube findings)")
    return None


def needs(fleet, sub):
    """The DNS servers (the API's, else dns_servers), and the pod view of dns_pod on its node only (the
    repeated queries with it; without dns_pod they run on every node)."""
    sub["servers"] = fleet.dns_servers
    if fleet.pod_ip:
        sub["pod_ip"] = fleet.pod_ip
    if fleet.repeat:
        sub.update(repeat=fleet.repeat, **fleet.role_options((("repeat_interval", "dns_repeat_interval"),)))


def fleet(context):
    """On the controller, once after the pass: why no host checked the view of DNS from dns_pod (None: one did,
    or no dns_pod was given)."""
    # plugin_utils exists on the controller only, and only the controller calls this (see scenarios/__init__)
    from ansible_collections.k8snet.triage.plugins.plugin_utils import fleet_results  # pylint: disable=import-outside-toplevel

    return fleet_results.dns_pod(context)
