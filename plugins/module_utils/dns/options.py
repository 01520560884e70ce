# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the DNS check (dns_check, node_triage's dns): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core import params


BACKENDS = ("auto", "dnspython", "stdlib")
RESOLV_CONFS = ("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf")
MAX_REPEAT = 1000
# The external name the host resolvers are asked by default: every node resolves it to pull the Kubernetes images
# (or through its mirror), and coredns forwards such names to these resolvers.
EXTERNAL_NAMES = ("registry.k8s.io",)


SERVER_KEYS = ("address", "name", "node", "role")
SERVER_ROLES = ("service", "pod", "upstream")


def server_item(option, item):
    """One server as users write it: a plain address (``10.96.0.10``, as after ``dig @``) or a dict
    {address, name, node, role} -> the dict, with the address normalised (pure; InputError otherwise)."""
    if isinstance(item, str):
        return {"address": params.address()(option, item)}
    if not isinstance(item, dict):
        raise InputError("%s=%r is invalid: give an address such as 10.96.0.10, or a dict {address, name, node, role}"
                         % (option, item), option=option)
    unknown = sorted(str(k) for k in item if k not in SERVER_KEYS)
    if unknown:
        raise InputError("%s has unknown keys %s: give address, name, node and role only" % (option, ", ".join(unknown)),
                         option=option)
    if item.get("address") is None:
        raise InputError("%s has no address: give {address: 10.96.0.10} or the plain address" % option, option=option)
    out = params.fields(address=params.address(), name=params.short_text, node=params.node_name,
                        role=params.choice(*SERVER_ROLES))(option, item)
    return out


def external_name(option, value):
    """An external name as the host resolvers are asked it: a DNS name of more than one label (a single label means
    something only through a search list, which a resolver asked directly does not apply)."""
    params.dns_name(option, value)
    if "." not in value.rstrip("."):
        raise InputError("%s=%r is invalid: an external name is fully qualified (more than one label), e.g. "
                         "registry.k8s.io" % (option, value), option=option)
    return value


# The argument spec of one server in its dict form (the servers option takes ``raw`` items: a plain
# address or such a dict, checked by ``server_item``).
SERVER_SPEC = dict(
    address=dict(type="str", required=True),
    name=dict(type="str"),
    node=dict(type="str"),
    role=dict(type="str", choices=["service", "pod", "upstream"], default="pod"),
)

# The options of the DNS check: dns_check's, and node_triage's dns (with the triage's defaults).
# Paired one-to-one with the doc fragment k8snet.triage.dns.
CHECK_SPEC = dict(
    names=dict(type="list", elements="str", required=True),
    servers=dict(type="list", elements="raw", default=[]),
    protocols=dict(type="list", elements="str", choices=["udp", "tcp"], default=["udp", "tcp"]),
    record_type=dict(type="str", choices=["A", "AAAA"], default="A"),
    port=dict(type="int", default=53),
    timeout=dict(type="float", default=2.0),
    retries=dict(type="int", default=1),
    expect=dict(type="dict", default={}),
    cluster_domain=dict(type="str", default="cluster.local"),
    host_resolvers=dict(type="bool", default=False),
    external_names=dict(type="list", elements="str", default=list(EXTERNAL_NAMES)),
    resolv_conf=dict(type="list", elements="path", default=list(RESOLV_CONFS)),
    backend=dict(type="str", choices=list(BACKENDS), default="auto"),
    # the pod's view (the triage and the role set pod_ip on the pod's node only)
    pod_ip=dict(type="str"),
    repeat=dict(type="int", default=0),
    repeat_interval=dict(type="float", default=0.05),
)


# The option rules (bounds, shapes) of the dns options, used by module dns_check and by node_triage.
RULES = dict(
    names=params.each(params.dns_name, max_items=64, non_empty=True,
                      what="give at least one name to resolve, e.g. kubernetes.default.svc.cluster.local"),
    servers=params.each(server_item, max_items=64),
    port=params.port,
    timeout=params.seconds(0, 30),
    retries=params.count(0, 5, "retries"),
    expect=params.mapping(params.dns_name, params.scalar_or_list(params.address(), max_items=64), max_items=64),
    cluster_domain=params.dns_name,
    resolv_conf=params.each(params.absolute_path, max_items=16),
    external_names=params.each(external_name, max_items=16),
    protocols=params.each(params.choice("udp", "tcp"), max_items=2, non_empty=True, what="give udp and/or tcp"),
    pod_ip=params.address(),
    repeat=params.count(0, MAX_REPEAT, "queries"),
    repeat_interval=lambda option, value: params.number(option, value, 0, 10, unit="seconds"),
)
