# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of the Cilium agent check (cilium_agent_status, node_triage's cilium_agent): the argument spec and its rules,
apart from the check's code, which node_triage imports only once its sampled checks run (node_triage.load)."""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


AGENT_SOCKET = "/var/run/cilium/cilium.sock"
HEALTH_SOCKET = "/var/run/cilium/health.sock"
MONITOR_SOCKET = "/var/run/cilium/monitor1_2.sock"
METRICS_URL = "http://127.0.0.1:9962/metrics"
MAX_TOP = 50
MAX_INTERVAL = 60
MAX_PPS = 1e9
WHEN_NOT_CILIUM = ("skip", "critical")

_URL = re.compile(r"^http://(\[[0-9A-Fa-f:.]+\]|[0-9.]+|localhost):([0-9]{1,5})(/[\x21-\x7e]*)?$")


def split_url(url):
    """``http://HOST:PORT/PATH`` (HOST an IP address or localhost) -> (host, port, path); InputError otherwise."""
    match = _URL.match(url or "")
    if not match:
        raise InputError("metrics_url %r is not http://ADDRESS:PORT/PATH with ADDRESS an IP address of the node "
                         "(e.g. %s); give '' to read no metrics" % (url, METRICS_URL))
    host, port, path = match.group(1), int(match.group(2)), match.group(3) or "/metrics"
    host = host.strip("[]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise InputError("metrics_url %r: %s is not an IP address" % (url, host))
    if not 0 < port < 65536:
        raise InputError("metrics_url %r: port %d is not 1 to 65535" % (url, port))
    return host, port, path


NOT_CILIUM = "not a Cilium node: no agent socket (%s), no pinned cilium_* map and no cilium-cni configuration"


def skip_reason(params_, cilium_seen):
    """Why the Cilium agent check does not apply to this node (None: it applies): with
    ``when_not_cilium=skip``, nothing at the agent socket path and ``cilium_seen()`` false (no pinned
    ``cilium_*`` map, no cilium-cni configuration).

    The one decision of the check (cilium_agent.node_check) and of node_triage's plan, which then does
    not load the check's code (its HTTP client alone costs about 45 ms of CPU on every node)."""
    if (params_.get("when_not_cilium") or "skip") != "skip":
        return None
    path = params_.get("agent_socket") or AGENT_SOCKET
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None  # e.g. permission denied: the check reads it and says why
    else:
        return None
    return None if cilium_seen() else NOT_CILIUM % path


# The options of the Cilium agent check: cilium_agent_status' (with node_name), and node_triage's
# cilium_agent. Paired one-to-one with the doc fragment k8snet.triage.cilium_agent.
CHECK_SPEC = dict(
    agent_socket=dict(type="path", default=AGENT_SOCKET),
    health_socket=dict(type="path", default=HEALTH_SOCKET),
    monitor_socket=dict(type="str", default=MONITOR_SOCKET),
    metrics_url=dict(type="str", default=METRICS_URL),
    interval=dict(type="float", default=5.0),
    timeout=dict(type="float", default=5.0),
    top=dict(type="int", default=10),
    warning_pps=dict(type="float", default=1.0),
    critical_pps=dict(type="float", default=100.0),
    when_not_cilium=dict(type="str", choices=list(WHEN_NOT_CILIUM), default="skip"),
    cni_conf_dir=dict(type="path", default="/etc/cni/net.d"),
)


def _monitor_socket(option, value):
    return value if value == "" else params.absolute_path(option, value)


def _metrics_url(option, value):
    if value == "":
        return value
    params.text(option, value, max_len=512)
    split_url(value)
    return value


# The option rules (bounds, shapes), used by module cilium_agent_status and by node_triage.
RULES = dict(
    node_name=params.node_name,
    agent_socket=params.absolute_path,
    health_socket=params.absolute_path,
    monitor_socket=_monitor_socket,
    metrics_url=_metrics_url,
    interval=lambda option, value: params.number(option, value, 0, MAX_INTERVAL, unit="seconds"),
    timeout=params.seconds(0, 60),
    top=params.count(1, MAX_TOP, "findings"),
    warning_pps=lambda option, value: params.number(option, value, 0, MAX_PPS, unit="packets per second"),
    critical_pps=lambda option, value: params.number(option, value, 0, MAX_PPS, unit="packets per second"),
    when_not_cilium=params.choice(*WHEN_NOT_CILIUM),
    cni_conf_dir=params.absolute_path,
)
