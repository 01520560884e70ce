"""A healthy fleet: what a working node has, on every lab node at once, so that a triage of the lab
with no fault injected must say nothing is wrong (issue: a green run is a true run at fleet size).

- the direct-routing pod mesh (``pods.pod_mesh``): every node routes every peer's pod CIDR;
- the CNI's files: Calico's conflist and binaries (``kube.cni_files``);
- a kubelet log with ordinary lines (``logs.node_log_file``);
- Calico's BGP mesh with real BIRD on every node, every session Established (``bgp.bird_start``);
- a listener on the kubelet port 10250 of every node (one process, ``tests/lab/listeners.py``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..core import LabError
from . import arp, bpf, cilium_agent, fault, firewall, nodes, routes
from .bgp import FLEET_TIMERS, bird_start, protocols
from .kube import cni_files
from .logs import node_log_file
from .path import _start
from .pods import pod_mesh

KUBELET_PORT = 10250
CONFLIST = {"name": "k8s-pod-network", "cniVersion": "0.3.1", "plugins": [
    {"type": "calico", "ipam": {"type": "calico-ipam"}}, {"type": "bandwidth"}, {"type": "portmap"}]}
# what a working kubelet writes (klog format, stamped at the time the lab is made): no error a signature matches
KUBELET_LINES = (
    '1234 kubelet.go:2087] "SyncLoop ADD" source="api" pods=["kube-system/calico-node-x"]',
    '1234 kubelet_node_status.go:76] "Successfully registered node"',
    '1234 kubelet.go:2406] "SyncLoop (PLEG): event for pod"',
)


def _kubelet_log():
    """KUBELET_LINES as klog writes them now (``I1204 15:40:01.000000    1234 ...``)."""
    stamp = time.strftime("I%m%d %H:%M:%S.000000")
    return ["%s    %s" % (stamp, line) for line in KUBELET_LINES]


def _listen(lab, nodes, port):
    """One process listening on ``port`` of every node in ``nodes``; waits until each socket is up."""
    script = Path(__file__).resolve().parents[1] / "listeners.py"
    specs = ["%s:%s:%d" % (n.ns, n.ip, port) for n in nodes]
    _start(lab, lab.switch_ns, [sys.executable, str(script), lab.switch_ns] + specs, "kubelet-listeners")
    log = lab.workdir / "kubelet-listeners.log"
    deadline = time.time() + 30
    while time.time() < deadline:
        if log.exists() and "listening on" in log.read_text():
            return len(specs)
        time.sleep(0.1)
    raise LabError("the kubelet listeners did not start: %s" % (log.read_text() if log.exists() else "no log"))


def _established(lab, timeout):
    """Wait until every node's BGP sessions are all Established (read with birdc); the count of sessions."""
    deadline = time.monotonic() + timeout
    pending = list(lab.nodes)
    while pending:
        pending = [n for n in pending if any(info.strip() != "Established" for dummy, info in protocols(lab, n).values())]
        if pending and time.monotonic() > deadline:
            raise LabError("BGP sessions not Established after %ss on %s" % (timeout, ", ".join(
                n.name for n in pending[:5])))
        if pending:
            time.sleep(1)
    return len(lab.nodes) * (len(lab.nodes) - 1)


@fault
def healthy_fleet(lab, bgp=True):
    """Give every node the pod mesh, CNI files, a kubelet log, a listening kubelet port and (``bgp``) BIRD."""
    routes = pod_mesh(lab)["routes"]
    for node in lab.nodes:
        cni_files(lab, node, config=CONFLIST)
        node_log_file(lab, node, lines=_kubelet_log())
    listeners = _listen(lab, lab.nodes, KUBELET_PORT)
    sessions = 0
    if bgp:
        for node in lab.nodes:
            bird_start(lab, node, peers=[p.ip for p in lab.nodes if p is not node], wrong_as=[], timers=FLEET_TIMERS)
        sessions = _established(lab, 60 + len(lab.nodes))
    lab.remember("healthy_fleet", True)
    return {"nodes": len(lab.nodes), "routes": routes, "listeners": listeners, "bgp_sessions": sessions}


def six_faults(lab):
    """One fault of each kind on a healthy fleet of 12 nodes or more (``healthy_fleet`` first, the VIP bound on
    node1): a stale ARP entry for the VIP on node4, a blackhole route over part of node6's pod CIDR on node5, an
    nft DROP of node8's ICMP on node7 under real traffic (``traffic``: stop it with ``firewall.traffic_stop``), a
    full Cilium map on node9 (a Cilium node: its agent runs), node10's sshd dead, node11 unplugged.
    Returns ``{kind: what the injector did}``."""
    if len(lab.nodes) < 12:
        raise LabError("six_faults needs 12 nodes or more, the lab has %d" % len(lab.nodes))
    # every namespace shares the kernel's one ARP table: above gc_thresh1 entries (a fleet's mesh) the kernel drops
    # an unreferenced STALE entry gc_stale_time (60 s) after its last use, sooner than a slow machine triages 32
    # nodes and confirms; node4's eth0 keeps it for the test (a real node's cache keeps it while traffic uses it)
    lab.ns_run("node4", ["sysctl", "-qw", "net.ipv4.neigh.eth0.gc_stale_time=3600"])
    done = {
        "stale": arp.stale_neighbor(lab, "node4", lab.vip(0)),
        "blackhole": routes.route_blackhole(lab, "node5", "node6"),
        "drop": firewall.drop_rule(lab, "node7", "nft", lab.node("node8").ip),
        "agent": cilium_agent.cilium_agent_start(lab, "node9"),
        "full": bpf.full_map(lab, "node9"),
        "sshd": nodes.sshd_dead(lab, "node10"),
        "down": nodes.node_unplugged(lab, "node11"),
    }
    done["traffic"] = firewall.traffic_start(lab, "node8", lab.node("node7").ip, seconds=600, rate=20)
    return done
