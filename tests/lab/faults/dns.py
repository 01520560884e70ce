"""Cluster DNS: dnsmasq in pod namespaces standing in for coredns, a kube-dns ClusterIP, an upstream.

``dns_cluster`` builds, on top of the direct-routing pod mesh:

* ``upstream``: a namespace outside the cluster (.90) running dnsmasq as the upstream resolver
  (``www.upstream.test``);
* ``coredns-a`` on node1: healthy (cluster.local records, NXDOMAIN for unknown cluster names,
  everything else forwarded to the upstream);
* ``coredns-b`` on node2: broken (no records, no upstream: dnsmasq answers REFUSED);
* ``coredns-c`` on node3: healthy, but node3 drops forwarded traffic to it from eth0, so it
  answers node3 itself and nobody else (an in-cluster connectivity problem);
* the kube-dns ClusterIP ``lab.service_ip(10)`` DNAT-ed on every node (OUTPUT and PREROUTING) to
  coredns-a, and each node's ``/run/systemd/resolve/resolv.conf`` naming the upstream (the
  node's private /run; ``/etc/resolv.conf`` is the machine's and is never used by the tests).

Faults: ``dns_stop`` (a coredns pod's dnsmasq killed), ``dns_upstream_down``, ``dns_repair``.
"""

from __future__ import annotations

import os
import signal

from . import fault
from .path import NAT_COMMENT, UPSTREAM_INDEX, _start, masquerade, outside_host, wait_port
from .pods import pod, pod_mesh

DOMAIN = "cluster.local"
UPSTREAM_NAME = "www.upstream.test"
UPSTREAM_ADDRESS_INDEX = 150  # the address www.upstream.test resolves to (a lab address, never contacted)
RECORDS = {"kubernetes.default.svc.cluster.local": 1, "web.default.svc.cluster.local": 20}
PODS = (("coredns-a", "node1", "healthy"), ("coredns-b", "node2", "refused"), ("coredns-c", "node3", "isolated"))


def _dnsmasq_argv(lab, ip, mode, upstream):
    argv = ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--user=root", "--group=root",
            f"--listen-address={ip}", "--bind-interfaces", "--log-facility=-", "--cache-size=0"]
    if mode == "refused":
        return argv
    if mode == "upstream":
        return argv + [f"--host-record={UPSTREAM_NAME},{lab.network[UPSTREAM_ADDRESS_INDEX]}", "--local=/upstream.test/"]
    argv += [f"--local=/{DOMAIN}/", f"--server={upstream}"]
    argv += [f"--host-record={name},{lab.service_ip(n)}" for name, n in RECORDS.items()]
    return argv


def _kill(lab, name):
    pid = lab.extra.get("procs", {}).pop(name, None)
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        lab.remember("procs", lab.extra["procs"])
    return pid


def _start_dns(lab, name, ns, ip, mode, upstream):
    _kill(lab, f"dns-{name}")
    pid = _start(lab, ns, _dnsmasq_argv(lab, ip, mode, upstream), f"dns-{name}")
    wait_port(lab, ns, ip, 53, proto="udp")
    return pid


def _iptables(lab, node, args, check=True):
    return lab.ns_run(node, ["iptables", "-w", *args], check=check)


def _ensure(lab, node, table, rule):
    if _iptables(lab, node, ["-t", table, "-C", *rule], check=False).returncode != 0:
        _iptables(lab, node, ["-t", table, "-A", *rule])


@fault
def dns_cluster(lab):
    """Upstream resolver, three coredns stand-ins (healthy, REFUSED, isolated), the kube-dns ClusterIP."""
    if "dns" in lab.extra:
        return lab.extra["dns"]
    pod_mesh(lab)
    masquerade(lab)
    up = outside_host(lab, "upstream", UPSTREAM_INDEX)
    _start_dns(lab, "upstream", up["ns"], up["ip"], "upstream", None)
    pods = {}
    for name, node, mode in PODS:
        info = pod(lab, node, name)
        _start_dns(lab, name, info["ns"], info["ip"], "refused" if mode == "refused" else "healthy", up["ip"])
        pods[name] = {"name": name, "node": node, "ip": info["ip"], "mode": mode, "ns": info["ns"]}
    isolated = pods["coredns-c"]
    isolate = ["FORWARD", "-i", "eth0", "-d", isolated["ip"], "-m", "conntrack", "--ctstate", "NEW",
               "-m", "comment", "--comment", NAT_COMMENT + "-dns-isolate", "-j", "DROP"]
    _ensure(lab, isolated["node"], "filter", isolate)
    kube_dns = lab.service_ip(10)
    healthy = pods["coredns-a"]["ip"]
    for node in lab.nodes:
        # a route for the Service range, as the default route gives a real node (locally sent
        # packets are routed before nat OUTPUT rewrites them)
        lab.ns_run(node, ["ip", "route", "replace", str(lab.service_network), "dev", "eth0", "src", node.ip])
        for chain in ("OUTPUT", "PREROUTING"):
            for proto in ("udp", "tcp"):
                _ensure(lab, node, "nat", [chain, "-d", f"{kube_dns}/32", "-p", proto, "--dport", "53", "-m", "comment",
                                           "--comment", NAT_COMMENT + "-kube-dns", "-j", "DNAT",
                                           "--to-destination", f"{healthy}:53"])
        resolve = lab.workdir / "nodes" / node.name / "run" / "systemd" / "resolve"
        resolve.mkdir(parents=True, exist_ok=True)
        (resolve / "resolv.conf").write_text(f"# lab: the node's upstream resolver\nnameserver {up['ip']}\n")
    info = {"kube_dns": kube_dns, "upstream": up["ip"], "upstream_ns": up["ns"], "pods": pods,
            "cluster_names": sorted(RECORDS), "external_name": UPSTREAM_NAME,
            "expect": {name: str(lab.service_ip(n)) for name, n in RECORDS.items()}}
    lab.remember("dns", info)
    return info


@fault
def dns_stop(lab, name="coredns-a"):
    """Kill a coredns stand-in's dnsmasq (the pod is there, nothing answers on :53)."""
    return {"stopped": name, "pid": _kill(lab, f"dns-{name}")}


@fault
def dns_upstream_down(lab):
    """Kill the upstream resolver: cluster names still resolve, external ones do not."""
    return {"stopped": "upstream", "pid": _kill(lab, "dns-upstream")}


@fault
def dns_repair(lab):
    """Restart whatever dns_stop / dns_upstream_down killed."""
    info = lab.extra["dns"]
    procs = lab.extra.get("procs", {})
    restarted = []
    if "dns-upstream" not in procs:
        _start_dns(lab, "upstream", info["upstream_ns"], info["upstream"], "upstream", None)
        restarted.append("upstream")
    for name, pod_info in info["pods"].items():
        if f"dns-{name}" not in procs:
            mode = "refused" if pod_info["mode"] == "refused" else "healthy"
            _start_dns(lab, name, pod_info["ns"], pod_info["ip"], mode, info["upstream"])
            restarted.append(name)
    return {"restarted": restarted}


# NodeLocal DNS listens on 169.254.20.10 on real nodes; the lab may only use 198.18.0.0/15, so its
# stand-in listens on an address of the lab's service range that no Service uses, bound to the node's
# loopback (NodeLocal DNS binds a dummy interface; this kernel has no dummy driver: the same local
# address either way).  A second address there is a dead cache (nothing serves it).
NODELOCAL_INDEX = 4090
DEAD_CACHE_INDEX = 4089
SHORT_NAME = "registry"  # answered by the NodeLocal stand-in only as it is (a host record of one label)
SHORT_NAME_INDEX = 30


@fault
def nodelocal_dns(lab, node="node2"):
    """A NodeLocal DNS stand-in on ``node``: dnsmasq on a local address of the node, logging every
    query (``--log-queries``), cluster.local forwarded to the kube-dns ClusterIP, the rest to the upstream,
    and a host record for the one-label name ``registry``."""
    info = dns_cluster(lab)
    node = lab.node(node)
    key = f"nodelocal-{node.name}"
    if key in lab.extra:
        return lab.extra[key]
    address = lab.service_ip(NODELOCAL_INDEX)
    lab.run(["ip", "-n", node.ns, "addr", "replace", f"{address}/32", "dev", "lo"])
    argv = _dnsmasq_argv(lab, address, "refused", None) + [
        "--log-queries", f"--server=/{DOMAIN}/{info['kube_dns']}", f"--server={info['upstream']}",
        f"--host-record={SHORT_NAME},{lab.service_ip(SHORT_NAME_INDEX)}"]
    _kill(lab, f"dns-{key}")
    _start(lab, node.ns, argv, f"dns-{key}")
    wait_port(lab, node.ns, address, 53, proto="udp")
    out = {"node": node.name, "address": address, "dead_cache": lab.service_ip(DEAD_CACHE_INDEX),
           "log": str(lab.workdir / f"dns-{key}.log"), "short_name": SHORT_NAME,
           "short_answer": lab.service_ip(SHORT_NAME_INDEX)}
    lab.remember(key, out)
    return out


def logged_queries(path, source):
    """The names dnsmasq logged as asked (``query[A] NAME from SOURCE``) by ``source``, in order."""
    out = []
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if "from" in parts and parts[-1] == source:
                index = parts.index("from")
                if index >= 2 and parts[index - 2].startswith("query["):
                    out.append((parts[index - 2][len("query["):-1], parts[index - 1]))
    return out
