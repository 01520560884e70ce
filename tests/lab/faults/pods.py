"""Pods and the direct-routing pod network.

A pod is a namespace ``k8t<slot>-pod-<name>`` whose ``eth0`` is a veth to its node; the
node side is named like the CNI names it (``lxc<hash>`` for Cilium, ``cali<hash>`` for
Calico) and has a /32 route to the pod and proxy ARP on, as those CNIs do.  The pod's
default route is a device route, so no gateway address outside the lab range is needed.
"""

from __future__ import annotations

import hashlib
import ipaddress
import time

from ..core import LabError
from . import fault


def _host_device(prefix, node, name):
    digest = hashlib.sha1(f"{node}/{name}".encode()).hexdigest()
    return (prefix + digest)[:15]


@fault
def pod(lab, node, name, ip=None, cni="cilium"):
    """Start a pod namespace on ``node`` with an address from the node's pod CIDR."""
    node = lab.node(node)
    prefix = {"cilium": "lxc", "calico": "cali"}[cni]
    pods = lab.extra.setdefault("pods", {})
    if name in pods:
        return pods[name]
    used = {p["ip"] for p in pods.values()}
    if ip is None:
        hosts = ipaddress.ip_network(node.pod_cidr).hosts()
        ip = next(str(h) for h in hosts if str(h) not in used and not str(h).endswith(".1"))
    ns = f"{lab.prefix}-pod-{name}"
    device = _host_device(prefix, node.name, name)
    lab.run(["ip", "netns", "add", ns])
    lab.run(["ip", "link", "add", device, "netns", node.ns, "type", "veth", "peer", "name", "eth0", "netns", ns])
    lab.run(["ip", "-n", ns, "-batch", "-"], input="\n".join([
        "link set lo up", "link set eth0 up", f"addr add {ip}/32 dev eth0", "route add default dev eth0", ""]))
    lab.run(["ip", "-n", node.ns, "-batch", "-"], input="\n".join([
        f"link set {device} up", f"route add {ip}/32 dev {device}", ""]))
    lab.ns_run(node, ["sysctl", "-qw", f"net.ipv4.conf.{device}.proxy_arp=1",
                      f"net.ipv4.neigh.{device}.proxy_delay=0"])
    info = {"name": name, "node": node.name, "ns": ns, "ip": ip, "device": device, "cni": cni}
    pods[name] = info
    lab.remember("pods", pods)
    return info


@fault
def pod_mesh(lab):
    """Direct routing: on every node, ``<peer podCIDR> via <peer node IP> dev eth0`` for every peer."""
    added = 0
    for node in lab.nodes:
        lines = [f"route replace {peer.pod_cidr} via {peer.ip} dev eth0 proto static"
                 for peer in lab.nodes if peer is not node]
        lab.run(["ip", "-n", node.ns, "-batch", "-"], input="\n".join(lines) + "\n")
        added += len(lines)
    lab.remember("pod_mesh", True)
    return {"routes": added}


@fault
def pod_process(lab, name, resolv_conf):
    """The pod's process: ``sleep`` in the pod's network namespace, in a private mount namespace
    where the pod's own resolv.conf is bound over /etc/resolv.conf (so /proc/<pid>/root/etc/resolv.conf
    is the pod's, not the node's).  ``resolv_conf`` is the file's text; the pod must exist (``pod``)."""
    from .path import _start  # path imports this module

    info = lab.extra["pods"][name]
    conf = lab.workdir / "pods" / name / "resolv.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(resolv_conf)
    if info.get("pid"):
        return info
    pid = _start(lab, info["ns"], ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                                   'mount --bind "$1" /etc/resolv.conf && exec sleep infinity', "pod", str(conf)],
                 f"pod-{name}")
    for dummy in range(100):
        try:
            if open(f"/proc/{pid}/root/etc/resolv.conf").read() == resolv_conf:
                break
        except OSError:
            pass
        time.sleep(0.05)
    else:
        raise LabError(f"pod {name}: its resolv.conf was not mounted; see {lab.workdir}/pod-{name}.log")
    info.update(pid=pid, resolv_conf=str(conf))
    lab.remember("pods", lab.extra["pods"])
    return info
