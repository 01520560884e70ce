# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The kernel parameters the pod network depends on, read from /proc/sys of the node's network namespace.

- ``net.ipv4.ip_forward``: a node that does not forward drops every packet between its pods and the
  rest of the cluster (the container runtimes' prerequisite in the Kubernetes docs; a sysctl.d file or
  a firewall service that resets it after a reboot is the usual cause).
- ``net.bridge.bridge-nf-call-iptables`` where the node has a Linux bridge: without br_netfilter (or
  with it set to 0) bridged pod traffic bypasses iptables, so kube-proxy's Service rules never see a pod
  talking to a Service whose backend is on the same bridge.
- ``rp_filter`` on Cilium's interfaces (``lxc*``, ``cilium_*``): the kernel applies the larger of
  ``conf.all`` and the interface's value; anything but 0 drops the asymmetric packets Cilium routes
  (systemd 245 and later set it through its sysctl.d defaults: cilium/cilium#10645).
- the IPv4 neighbour table against ``gc_thresh3``: past it the kernel refuses new neighbours
  ("neighbour: arp_cache: neighbor table overflow!", kubernetes/kops#4533). ``neigh/default`` exists in
  the host's initial namespace only; elsewhere the limit is not readable and the data says so.

Reading only; the readers take the /proc root so the checks are tested on a copy of a real tree.
"""

from __future__ import annotations

import fnmatch
import os
import socket

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.sysctl.options import CILIUM_INTERFACES

PROC = "/proc"
SYS_CLASS_NET = "/sys/class/net"
NEIGH_LIMIT = ("net", "ipv4", "neigh", "default", "gc_thresh3")
NOT_IN_THIS_NAMESPACE = ("not readable here: net.ipv4.neigh.default exists in the host's initial network namespace "
                         "only")


def read_value(proc, *path):
    """The integer at /proc/sys/<path> (None when absent: a module not loaded, another namespace)."""
    try:
        with open(os.path.join(proc, "sys", *path)) as handle:
            return int(handle.read().split()[0])
    except (FileNotFoundError, NotADirectoryError, IndexError, ValueError):
        return None


def _neighbours(proc):
    """IPv4 neighbour entries of this namespace (the lines of /proc/net/arp after its header)."""
    try:
        with open(os.path.join(proc, "net", "arp")) as handle:
            return max(0, sum(1 for _line in handle) - 1)
    except FileNotFoundError:
        return None


def read_state(proc=PROC, sys_class_net=SYS_CLASS_NET, patterns=CILIUM_INTERFACES):
    """What the checks judge, read once: forwarding, br_netfilter and the bridges, rp_filter of the
    interfaces matching ``patterns``, the neighbour table and its limit."""
    try:
        names = sorted(os.listdir(os.path.join(proc, "sys", "net", "ipv4", "conf")))
    except OSError as exc:
        raise InputError("cannot list %s/sys/net/ipv4/conf (%s): is /proc mounted?" % (proc, exc.strerror))
    try:
        bridges = sorted(n for n in os.listdir(sys_class_net) if os.path.isdir(os.path.join(sys_class_net, n, "bridge")))
    except OSError:
        bridges = []
    matched = [n for n in names if n not in ("all", "default") and any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    return {
        "ip_forward": read_value(proc, "net", "ipv4", "ip_forward"),
        "bridges": bridges,
        "bridge_nf_call_iptables": read_value(proc, "net", "bridge", "bridge-nf-call-iptables"),
        "rp_filter_all": read_value(proc, "net", "ipv4", "conf", "all", "rp_filter"),
        "rp_filter": dict((n, read_value(proc, "net", "ipv4", "conf", n, "rp_filter")) for n in matched),
        "neigh": {"entries": _neighbours(proc), "gc_thresh3": read_value(proc, *NEIGH_LIMIT)},
    }


def _forwarding(state, subject):
    if state["ip_forward"] == 0:
        return [finding(
            "sysctl.ip_forward_off", "critical", "L3", subject,
            "%s does not forward IPv4 (net.ipv4.ip_forward = 0): its pods' packets to other nodes, Services and "
            "the outside are dropped" % subject, {"net.ipv4.ip_forward": 0},
            "sysctl -w net.ipv4.ip_forward=1 on %s, and keep it in /etc/sysctl.d/ (a prerequisite of every "
            "container runtime); find what turned it off (a sysctl.d file, a firewall service, a reboot)" % subject)]
    return []


def _bridge_nf(state, subject):
    if not state["bridges"] or state["bridge_nf_call_iptables"] == 1:
        return []
    why = ("net.bridge.bridge-nf-call-iptables = 0" if state["bridge_nf_call_iptables"] is not None
           else "br_netfilter is not loaded")
    return [finding(
        "sysctl.bridge_nf_off", "warning", "L4", subject,
        "%s bridges pod traffic (%s) past iptables: %s, so kube-proxy's Service rules do not see pods talking to "
        "a Service backed on the same bridge" % (subject, ", ".join(sample(state["bridges"], 5)), why),
        {"bridges": sample(state["bridges"]), "net.bridge.bridge-nf-call-iptables": state["bridge_nf_call_iptables"]},
        "modprobe br_netfilter and sysctl -w net.bridge.bridge-nf-call-iptables=1 on %s; keep both in "
        "/etc/modules-load.d/ and /etc/sysctl.d/" % subject)]


def _rp_filter(state, subject):
    base = state["rp_filter_all"] or 0
    strict = dict((name, max(base, value or 0)) for name, value in state["rp_filter"].items()
                  if max(base, value or 0) != 0)
    if not strict:
        return []
    return [finding(
        "sysctl.rp_filter_on_cilium", "warning", "L3", subject,
        "reverse-path filtering is on for %d of Cilium's interfaces on %s (%s): the kernel drops the asymmetric "
        "packets Cilium routes" % (len(strict), subject, ", ".join(sample(sorted(strict), 5))),
        {"rp_filter": dict(sample(sorted(strict.items()))), "net.ipv4.conf.all.rp_filter": state["rp_filter_all"]},
        "set net.ipv4.conf.all.rp_filter and net.ipv4.conf.lxc*.rp_filter to 0 in /etc/sysctl.d/ and restart "
        "systemd-sysctl (systemd 245 and later sets them otherwise; Cilium's system requirements)")]


def _neigh(state, subject, warn_ratio):
    entries, limit = state["neigh"]["entries"], state["neigh"]["gc_thresh3"]
    if entries is None or not limit:
        return []
    ratio = entries / float(limit)
    if ratio < warn_ratio:
        return []
    return [finding(
        "sysctl.neigh_table_full", "critical" if entries >= limit else "warning", "L2", subject,
        "%s holds %d IPv4 neighbour entries of the %d gc_thresh3 allows (%.0f%%): past it the kernel refuses new "
        "neighbours (\"neighbor table overflow\")" % (subject, entries, limit, 100 * ratio),
        {"entries": entries, "gc_thresh3": limit, "ratio": round(ratio, 4)},
        "raise net.ipv4.neigh.default.gc_thresh1/2/3 on %s (e.g. 80000/90000/100000 on large clusters) in "
        "/etc/sysctl.d/" % subject)]


def check(state, subject, warn_ratio=0.8):
    """The findings of one node's kernel parameters (pure)."""
    found = (_forwarding(state, subject) + _bridge_nf(state, subject) + _rp_filter(state, subject)
             + _neigh(state, subject, warn_ratio))
    if found:
        return found
    checked = ["ip_forward" if state["ip_forward"] is not None else None,
               "bridge-nf-call-iptables (%d bridges)" % len(state["bridges"]) if state["bridges"] else None,
               "rp_filter of %d Cilium interfaces" % len(state["rp_filter"]) if state["rp_filter"] else None,
               "the neighbour table" if state["neigh"]["gc_thresh3"] else None]
    unchecked = {}
    if state["ip_forward"] is None:
        unchecked["ip_forward"] = "net.ipv4.ip_forward is not readable"
    if not state["neigh"]["gc_thresh3"]:
        unchecked["neighbour table"] = NOT_IN_THIS_NAMESPACE
    return [finding("sysctl.ok", "ok", "L3", subject,
                    "%s: %s set as the pod network needs%s" % (
                        subject, ", ".join(c for c in checked if c) or "nothing readable",
                        "; not checked: %s" % ", ".join(sorted(unchecked)) if unchecked else ""),
                    {"unchecked": unchecked})]


def node_check(params, runner=None):
    """The kernel parameter check of this node: ``params`` (sysctl_check's options) in,
    ``{"data": {...the state...}, "findings": [...]}`` out.  Reads files only: no runner needed."""
    del runner
    subject = params.get("node_name") or socket.gethostname()
    patterns = params.get("rp_filter_interfaces")
    state = read_state(patterns=CILIUM_INTERFACES if patterns is None else patterns)
    return {"data": state, "findings": check(state, subject, params.get("neigh_warn_ratio", 0.8))}
