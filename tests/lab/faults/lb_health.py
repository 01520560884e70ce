"""OpenShift's router-default on a VPC (issue 29): externalTrafficPolicy Local, two router pods, three nodes.

* ``vpc_router``: a router pod (an HTTP server on :8080) behind node1 and node2; each of them DNATs its own
  ``nodeIP:30180`` to its own pod without SNAT (what kube-proxy does for policy Local); node3, without a
  router, accepts connections to its nodePort and never answers (the runbook's ESTABLISHED-with-keepalive
  connection), or, with ``mode=drop``, drops them as kube-proxy's iptables mode does ("has no local
  endpoints": kubernetes/kubernetes pkg/proxy/iptables/proxier.go, commit 092dddd12ca4cc5e66597de66a81fc77fdd3f29b).
* ``vpc_cluster_policy``: what kube-proxy does once the Service is switched to Cluster - node3 DNATs its
  nodePort to the router on node1 and masquerades it.
* ``vpc_router_repair``: back to the Local set-up (node3 silent again).
"""

from __future__ import annotations

import signal
import os

from . import fault
from .path import HTTP_PORT, _ipt, _start, masquerade, wait_port, web_pod
from .pods import pod_mesh

NODE_PORT = 30180
HEALTH_PORT = 31920
COMMENT = "k8t-vpc"
# accepts every connection and keeps it open without a byte back (keepalive on), until killed
SILENT_SERVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
held = []
while True:
    c, _ = s.accept(); c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1); held.append(c)
"""


def _dnat(lab, node, pod_ip):
    return ["PREROUTING", "-d", f"{lab.node(node).ip}/32", "-p", "tcp", "--dport", str(NODE_PORT), "-m", "comment",
            "--comment", COMMENT, "-j", "DNAT", "--to-destination", f"{pod_ip}:{HTTP_PORT}"]


def _masq(pod_ip):
    return ["POSTROUTING", "-d", pod_ip, "-p", "tcp", "--dport", str(HTTP_PORT), "-o", "eth0", "-m", "comment",
            "--comment", COMMENT + "-masq", "-j", "MASQUERADE"]


def _drop(lab, node):
    return ["INPUT", "-d", f"{lab.node(node).ip}/32", "-p", "tcp", "--dport", str(NODE_PORT), "-m", "comment",
            "--comment", "openshift-ingress/router-default:http has no local endpoints", "-j", "DROP"]


def _add(lab, node, table, rule):
    if _ipt(lab, node, ["-t", table, "-C", *rule], check=False).returncode != 0:
        _ipt(lab, node, ["-t", table, "-A", *rule])


def _silent(lab, node, start):
    procs = lab.extra.setdefault("procs", {})
    pid = procs.pop("vpc-silent", None)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        lab.remember("procs", procs)
    if start:
        n = lab.node(node)
        _start(lab, n.ns, [lab.python, "-c", SILENT_SERVER, n.ip, str(NODE_PORT)], "vpc-silent")
        wait_port(lab, n.ns, n.ip, NODE_PORT)


@fault
def vpc_router(lab, mode="silent"):
    """Router pods on node1 and node2, their nodePort DNAT (no SNAT); node3 silent (or ``mode=drop``)."""
    pod_mesh(lab)
    masquerade(lab)
    pods = {"node1": web_pod(lab, "node1", "router-a"), "node2": web_pod(lab, "node2", "router-b")}
    for node, info in pods.items():
        _add(lab, node, "nat", _dnat(lab, node, info["ip"]))
    vpc_router_repair(lab, mode)
    return {"pods": {n: {"name": p["name"], "ip": p["ip"], "node": n} for n, p in pods.items()}, "node_port": NODE_PORT,
            "health_port": HEALTH_PORT, "mode": mode}


@fault
def vpc_cluster_policy(lab):
    """kube-proxy after the switch to Cluster: node3 forwards its nodePort to the router on node1 (SNAT)."""
    router = lab.extra["pods"]["router-a"]
    _silent(lab, "node3", False)
    _ipt(lab, "node3", ["-D", *_drop(lab, "node3")], check=False)
    _add(lab, "node3", "nat", _dnat(lab, "node3", router["ip"]))
    _add(lab, "node3", "nat", _masq(router["ip"]))
    return {"node3": "forwards to %s" % router["ip"]}


@fault
def vpc_router_repair(lab, mode="silent"):
    """node3 back to policy Local without a router: no forwarding; silent listener, or kube-proxy's DROP."""
    router = lab.extra["pods"]["router-a"]
    _ipt(lab, "node3", ["-t", "nat", "-D", *_dnat(lab, "node3", router["ip"])], check=False)
    _ipt(lab, "node3", ["-t", "nat", "-D", *_masq(router["ip"])], check=False)
    _ipt(lab, "node3", ["-D", *_drop(lab, "node3")], check=False)
    _silent(lab, "node3", mode == "silent")
    if mode == "drop":
        _add(lab, "node3", "filter", _drop(lab, "node3"))
    return {"node3": mode}
