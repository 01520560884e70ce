"""Firewall drops in each backend, and real traffic between lab nodes so counters grow.

Backends: ``legacy`` (iptables-legacy), ``nft`` (iptables-nft) and ``nftables`` (native nft,
table ``inet k8tlab``).  Every injector returns ``undo``: the argv lists that remove exactly
what it added (``restore(lab, info)`` runs them in the node's namespace).
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys

from ..core import LAB_SUPERNET
from . import fault

TOOLS = {"legacy": "iptables-legacy", "nft": "iptables-nft"}
# chain names like the owners the module guesses (kube-proxy, Calico, native nft)
CHAINS = {"legacy": "KUBE-FIREWALL", "nft": "cali-fw-lab"}
NATIVE_TABLE = "k8tlab"


def restore(lab, info):
    """Undo one injector (ignore what is already gone)."""
    for argv in reversed(info.get("undo", [])):
        lab.ns_run(info["node"], argv, check=False)


def _match(proto, source, port):
    args = ["-s", f"{source}/32", "-p", proto]
    if port:
        args += ["--dport", str(port)]
    return args


@fault
def drop_rule(lab, node, backend, source, proto="icmp", port=None, verdict="DROP"):
    """Drop (or reject) ``proto`` traffic from ``source`` arriving at ``node``, in ``backend``."""
    node = lab.node(node)
    undo = []
    if backend in TOOLS:
        tool, chain = TOOLS[backend], CHAINS[backend]
        if lab.ns_run(node, [tool, "-n", "-L", chain], check=False).returncode != 0:
            lab.ns_run(node, [tool, "-N", chain])
            lab.ns_run(node, [tool, "-I", "INPUT", "-j", chain])
            undo += [[tool, "-X", chain], [tool, "-D", "INPUT", "-j", chain]]
        rule = [chain] + _match(proto, source, port) + ["-m", "comment", "--comment", "k8t lab", "-j", verdict]
        lab.ns_run(node, [tool, "-A"] + rule)
        undo.append([tool, "-D"] + rule)
        return {"node": node.name, "backend": backend, "chain": chain, "table": "filter", "source": source,
                "proto": proto, "port": port, "undo": undo}
    if backend == "nftables":
        match = f"ip saddr {source} " + (f"{proto} dport {port}" if port else f"meta l4proto {proto}")
        script = "\n".join([
            f"table inet {NATIVE_TABLE} {{",
            "  chain input { type filter hook input priority 10; policy accept; }",
            "}",
            f"add rule inet {NATIVE_TABLE} input {match} counter {verdict.lower()}",
            "",
        ])
        lab.ns_run(node, ["nft", "-f", "-"], input=script)
        return {"node": node.name, "backend": backend, "chain": "input", "table": NATIVE_TABLE, "source": source,
                "proto": proto, "port": port, "undo": [["nft", "delete", "table", "inet", NATIVE_TABLE]]}
    raise ValueError(f"backend {backend!r}: use legacy, nft or nftables")


@fault
def drop_policy(lab, node, backend="legacy", chain="FORWARD"):
    """Set the policy of ``chain`` (filter table) to DROP in ``backend`` (legacy or nft)."""
    node = lab.node(node)
    tool = TOOLS[backend]
    lab.ns_run(node, [tool, "-P", chain, "DROP"])
    return {"node": node.name, "backend": backend, "chain": chain, "undo": [[tool, "-P", chain, "ACCEPT"]]}


def _traffic_argv(lab, src, dst, proto, seconds, rate, port):
    src = lab.node(src)
    count = max(1, int(seconds * rate))
    if proto == "icmp":
        return ["ip", "netns", "exec", src.ns, "ping", "-n", "-q", "-c", str(count), "-i", "%.3f" % (1.0 / rate),
                "-W", "1", dst]
    # bounded UDP burst: ``count`` datagrams of 64 bytes, ``rate`` per second, only to ``dst``
    code = ("import socket,sys,time\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            "n,gap,dst,port=int(sys.argv[1]),float(sys.argv[2]),sys.argv[3],int(sys.argv[4])\n"
            "for _ in range(n):\n"
            "    s.sendto(b'k8t'*21,(dst,port)); time.sleep(gap)\n")
    return ["ip", "netns", "exec", src.ns, sys.executable, "-c", code, str(count), str(1.0 / rate), dst, str(port or 5000)]


def _check_dst(lab, dst):
    if ipaddress.ip_address(dst) not in LAB_SUPERNET:
        raise ValueError(f"{dst} is outside {LAB_SUPERNET}: the lab sends traffic nowhere else")


@fault
def traffic(lab, src, dst, proto="icmp", seconds=3, rate=20, port=None):
    """Send ``rate`` packets/s of ``proto`` (icmp or udp) from node ``src`` to ``dst`` for ``seconds`` (blocking)."""
    _check_dst(lab, dst)
    argv = _traffic_argv(lab, src, dst, proto, float(seconds), float(rate), port)
    proc = lab.run(argv, check=False, timeout=float(seconds) + 10)
    return {"src": lab.node(src).name, "dst": dst, "proto": proto, "packets": int(float(seconds) * float(rate)),
            "rc": proc.returncode}


def traffic_start(lab, src, dst, proto="icmp", seconds=6, rate=20, port=None):
    """Start bounded traffic in the background; it ends by itself after ``seconds``. Returns the Popen."""
    _check_dst(lab, dst)
    argv = _traffic_argv(lab, src, dst, proto, float(seconds), float(rate), port)
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def traffic_stop(proc, timeout=15, now=False):
    """End traffic started by traffic_start: wait for it (it is bounded), or with ``now`` stop it
    at once (SIGTERM to that process only)."""
    if now and proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
