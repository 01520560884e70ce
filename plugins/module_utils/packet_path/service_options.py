# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of service_path_info (the packet path of one Service): its argument spec and rules, apart from
its code (service_path)."""

from __future__ import annotations

import re

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$")


def port_ref(option, value):
    """A Service port: its number (1..65535) or its name (an IANA service name, 1..15 characters)."""
    if isinstance(value, bool):
        rules.port(option, value)
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return rules.port(option, int(value))
    rules.text(option, value, max_len=16)
    if not _PORT_NAME.match(value):
        raise InputError("%s=%r is invalid: give the Service port's number (1..65535) or its name (1..15 lowercase "
                         "letters, digits or '-', as in spec.ports[].name)" % (option, value))
    return value


def _inventory_entry(option, value):
    return rules.fields(k8s_node_name=rules.node_name)(option, value if value is not None else {})


# The options of service_path_info, beside the API options (kube_args.AUTH_ARG_SPEC).
CHECK_SPEC = dict(
    service=dict(type="str", required=True),
    port=dict(type="str"),
    inventory=dict(type="dict"),
)

RULES = dict(
    rules.KUBE_AUTH_RULES,
    service=rules.namespaced_name,
    port=port_ref,
    inventory=rules.mapping(rules.node_name, _inventory_entry, max_items=10000),
)
