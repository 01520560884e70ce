"""Ingress and egress paths: a client outside the cluster, a LoadBalancer VIP, masquerade.

* ``k8t<s>-client``: a namespace on the lab bridge at .100 (not a node), with its own sshd so
  ansible reaches it like any host; ``path_inventory`` writes an inventory with it in the
  ``ingress_clients`` group.
* ``loadbalancer``: the VIP ``lab.vip(n)`` bound on the LB node (node1), DNAT-ed
  (PREROUTING, iptables-nft) to a pod behind a worker, and masqueraded toward the pod network,
  as kube-proxy does for ``externalTrafficPolicy: Cluster``; the pod runs an HTTP server.
* ``masquerade``: pod traffic leaving a node toward a non-pod address is SNAT-ed to the node IP.
* breaks, one per hop, each undone by ``path_repair``: ``break_arp`` (the LB node stops answering
  ARP for the VIP), ``break_dnat`` (the DNAT rule removed), ``break_between_nodes`` (the lab switch
  drops traffic to the pod CIDR), ``break_pod_route`` (the worker loses the pod's /32 route),
  ``break_masquerade`` (no SNAT on the worker).
* ``nodeport``: every node DNATs ``nodeIP:30080`` to the web pod (kube-proxy's NodePort) and masquerades what
  it forwards to another node; ``break_nodeport`` takes one node's rule away, ``no_nodeport`` all of them.
* ``two_backends``: a second web pod on node3, the LB node balancing between both in native nft;
  ``break_backend_route`` takes one backend's /32 route away; ``one_backend`` undoes the balancing.
"""

from __future__ import annotations

import json
import time

from ..core import SYSTEM_PYTHON, LabError, Node
from . import fault
from .pods import pod, pod_mesh

CLIENT_INDEX = 100
UPSTREAM_INDEX = 90
HTTP_PORT = 8080
VIP_PORT = 80
NAT_COMMENT = "k8t-path"


def outside_host(lab, name, index, sshd=False):
    """A namespace on the lab bridge at network[index], outside the cluster (no pod CIDR)."""
    hosts = lab.extra.setdefault("outside", {})
    if name in hosts:
        return hosts[name]
    ns, ip = f"{lab.prefix}-{name}", str(lab.network[index])
    port = f"vx{name}"[:15]
    lab.run(["ip", "netns", "add", ns])
    lab.run(["ip", "link", "add", "eth0", "netns", ns, "address", f"02:18:{lab.slot:02x}:01:00:{index:02x}",
             "type", "veth", "peer", "name", port, "netns", lab.switch_ns])
    lab.run(["ip", "-n", lab.switch_ns, "link", "set", port, "master", "br0", "up"])
    lab.run(["ip", "-n", ns, "-batch", "-"], input="link set lo up\nlink set eth0 up\n"
            f"addr add {ip}/{lab.network.prefixlen} dev eth0\n")
    info = {"name": name, "ns": ns, "ip": ip, "sshd_pid": 0}
    if sshd:
        node = Node(name=name, index=index, ns=ns, ip=ip, mac="", pod_cidr="", python=SYSTEM_PYTHON, pyroute2=False)
        (lab.workdir / "nodes" / name / "log").mkdir(parents=True, exist_ok=True)
        (lab.workdir / "nodes" / name / "run").mkdir(parents=True, exist_ok=True)
        lab._start_sshd(node)  # the lab's own sshd recipe, reused for a non-node host
        info["sshd_pid"] = node.sshd_pid
    hosts[name] = info
    lab.remember("outside", hosts)
    return info


@fault
def client(lab):
    """The client namespace outside the cluster (.100 on the node network), reachable over SSH."""
    return outside_host(lab, "client", CLIENT_INDEX, sshd=True)


@fault
def path_inventory(lab):
    """The lab inventory plus the client host (group ingress_clients); returns its path."""
    info = client(lab)
    inventory = json.loads(lab.write_inventory().read_text())
    inventory["all"]["children"]["ingress_clients"] = {"hosts": {"client": {
        "ansible_host": info["ip"], "ansible_python_interpreter": SYSTEM_PYTHON}}}
    path = lab.workdir / "path-inventory.yml"
    path.write_text(json.dumps(inventory, indent=2) + "\n")
    return {"inventory": str(path)}


def _ipt(lab, node, args, check=True):
    return lab.ns_run(node, ["iptables", "-w", *args], check=check)


@fault
def masquerade(lab, node=None):
    """Pod traffic leaving eth0 toward a non-pod address is SNAT-ed to the node IP (every node by default)."""
    nodes = [lab.node(node)] if node else lab.nodes
    for n in nodes:
        rule = ["POSTROUTING", "-s", n.pod_cidr, "!", "-d", str(lab.pod_supernet), "-o", "eth0",
                "-m", "comment", "--comment", NAT_COMMENT + "-masq", "-j", "MASQUERADE"]
        if _ipt(lab, n, ["-t", "nat", "-C", *rule], check=False).returncode != 0:
            _ipt(lab, n, ["-t", "nat", "-A", *rule])
    return {"nodes": [n.name for n in nodes]}


def _start(lab, ns, argv, name):
    """Start a long-running process inside namespace ``ns``; its pid is remembered."""
    log = lab.workdir / f"{name}.log"
    import subprocess  # local: only the lab starts daemons this way

    with open(log, "w") as handle:
        proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)
    procs = lab.extra.setdefault("procs", {})
    procs[name] = proc.pid
    lab.remember("procs", procs)
    return proc.pid


def wait_port(lab, ns, ip, port, proto="tcp", timeout=10):
    """Wait until something listens on ip:port inside ns (ss, not our modules)."""
    flag = "-ltn" if proto == "tcp" else "-lun"
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = lab.run(["ip", "netns", "exec", ns, "ss", "-H", flag, "src", f"{ip}:{port}"], check=False).stdout
        if out.strip():
            return True
        time.sleep(0.1)
    raise LabError(f"nothing listens on {ip}:{port}/{proto} in {ns} after {timeout}s")


@fault
def web_pod(lab, node="node2", name="web"):
    """A pod running an HTTP server on :8080 behind ``node``."""
    info = pod(lab, node, name)
    if "pid" not in info:
        info["pid"] = _start(lab, info["ns"], [lab.python, "-m", "http.server", "--bind", info["ip"], str(HTTP_PORT)],
                             f"http-{name}")
        wait_port(lab, info["ns"], info["ip"], HTTP_PORT)
        lab.extra["pods"][name] = info
        lab.remember("pods", lab.extra["pods"])
    return info


@fault
def loadbalancer(lab, lb="node1", worker="node2", vip_index=2):
    """VIP on the LB node, DNAT VIP:80 -> web pod:8080 on the worker, masquerade toward pods, client."""
    pod_mesh(lab)
    masquerade(lab)
    web = web_pod(lab, worker)
    cl = client(lab)
    vip = lab.vip(vip_index)
    lab.ns_run(lb, ["ip", "addr", "replace", f"{vip}/32", "dev", "eth0"])
    dnat = _dnat_rule(vip, web["ip"])
    if _ipt(lab, lb, ["-t", "nat", "-C", *dnat], check=False).returncode != 0:
        _ipt(lab, lb, ["-t", "nat", "-A", *dnat])
    snat = ["POSTROUTING", "-d", web["ip"], "-p", "tcp", "--dport", str(HTTP_PORT), "!", "-s", str(lab.pod_supernet),
            "-m", "comment", "--comment", NAT_COMMENT + "-svc-masq", "-j", "MASQUERADE"]
    if _ipt(lab, lb, ["-t", "nat", "-C", *snat], check=False).returncode != 0:
        _ipt(lab, lb, ["-t", "nat", "-A", *snat])
    info = {"lb": lab.node(lb).name, "worker": lab.node(worker).name, "vip": vip, "vip_port": VIP_PORT,
            "pod_ip": web["ip"], "pod_port": HTTP_PORT, "pod_device": web["device"], "client": cl["ip"],
            "client_ns": cl["ns"], "pod_ns": web["ns"], "pod_pid": web["pid"]}
    lab.remember("loadbalancer", info)
    return info


def _dnat_rule(vip, pod_ip):
    return ["PREROUTING", "-d", f"{vip}/32", "-p", "tcp", "--dport", str(VIP_PORT), "-m", "comment",
            "--comment", NAT_COMMENT + "-dnat", "-j", "DNAT", "--to-destination", f"{pod_ip}:{HTTP_PORT}"]


def _lb(lab):
    if "loadbalancer" not in lab.extra:
        raise LabError("inject loadbalancer first")
    return lab.extra["loadbalancer"]


@fault
def break_arp(lab):
    """The LB node stops answering ARP for the VIP: the VIP moves to lo with arp_ignore=1 (the node
    still accepts packets to it and still answers ARP for its own address)."""
    info = _lb(lab)
    lab.ns_run(info["lb"], ["ip", "addr", "del", f"{info['vip']}/32", "dev", "eth0"], check=False)
    lab.ns_run(info["lb"], ["ip", "addr", "replace", f"{info['vip']}/32", "dev", "lo"])
    lab.ns_run(info["lb"], ["sysctl", "-qw", "net.ipv4.conf.eth0.arp_ignore=1"])
    lab.run(["ip", "-n", info["client_ns"], "neigh", "flush", "to", info["vip"]], check=False)
    return {"break": "arp", "node": info["lb"], "vip": info["vip"]}


@fault
def break_dnat(lab):
    """The LB node loses its DNAT rule for the VIP (kube-proxy / dataplane NAT not programmed)."""
    info = _lb(lab)
    _ipt(lab, info["lb"], ["-t", "nat", "-D", *_dnat_rule(info["vip"], info["pod_ip"])], check=False)
    return {"break": "dnat", "node": info["lb"], "vip": info["vip"]}


@fault
def break_between_nodes(lab):
    """The lab switch drops IPv4 packets to the pod CIDRs (a firewall between the nodes)."""
    nft = ["nft", "-f", "-"]
    lab.run(["ip", "netns", "exec", lab.switch_ns, *nft], input=(
        f"table bridge {NAT_COMMENT} {{\n chain forward_drop {{ type filter hook forward priority 0; policy accept;\n"
        f"  ip daddr {lab.pod_supernet} counter drop\n }}\n}}\n"))
    return {"break": "between_nodes", "dropped": str(lab.pod_supernet)}


@fault
def drop_arp_replies_to_client(lab):
    """The lab switch drops the ARP replies it would deliver to the client's port (port security, an ARP filter):
    the LB node still answers, its reply leaves it and never reaches the client."""
    port = "vxclient"
    lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "-f", "-"], input=(
        f"table bridge {NAT_COMMENT} {{\n chain arp_drop {{ type filter hook forward priority 0; policy accept;\n"
        f"  oifname \"{port}\" arp operation reply counter drop\n }}\n}}\n"))
    info = _lb(lab)
    lab.run(["ip", "-n", info["client_ns"], "neigh", "flush", "to", info["vip"]], check=False)
    return {"break": "arp_replies_to_client", "port": port}


@fault
def drop_vip_traffic_from_client(lab):
    """The lab switch drops the IPv4 packets from the client's port to the VIP and lets ARP through (an SDN whose
    data plane ignores the ARP replies, a switch ACL): the LB node answers ARP, the client sends, nothing arrives."""
    port = "vxclient"
    info = _lb(lab)
    lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "-f", "-"], input=(
        f"table bridge {NAT_COMMENT} {{\n chain vip_drop {{ type filter hook forward priority 0; policy accept;\n"
        f"  iifname \"{port}\" ip daddr {info['vip']} counter drop\n }}\n}}\n"))
    lab.run(["ip", "-n", info["client_ns"], "neigh", "flush", "to", info["vip"]], check=False)
    return {"break": "vip_traffic_from_client", "port": port, "vip": info["vip"]}


@fault
def break_pod_route(lab):
    """The worker loses the /32 route to the pod (the CNI did not program it)."""
    info = _lb(lab)
    lab.ns_run(info["worker"], ["ip", "route", "del", f"{info['pod_ip']}/32"], check=False)
    return {"break": "pod_route", "node": info["worker"], "pod": info["pod_ip"]}


@fault
def break_masquerade(lab, node="node2"):
    """The node stops SNAT-ing pod egress traffic."""
    n = lab.node(node)
    rule = ["POSTROUTING", "-s", n.pod_cidr, "!", "-d", str(lab.pod_supernet), "-o", "eth0",
            "-m", "comment", "--comment", NAT_COMMENT + "-masq", "-j", "MASQUERADE"]
    _ipt(lab, n, ["-t", "nat", "-D", *rule], check=False)
    return {"break": "masquerade", "node": n.name}


LB_TABLE = "k8t-path-lb"


@fault
def two_backends(lab, node="node3", name="web2"):
    """A second web pod behind ``node``; the LB node balances VIP:80 between both backends round-robin in native
    nft (``numgen inc``, as kube-proxy's nftables mode does), before the iptables-nft DNAT, and masquerades
    toward both.  ``one_backend`` removes the balancing again."""
    info = _lb(lab)
    second = web_pod(lab, node, name)
    backends = [info["pod_ip"], second["ip"]]
    supernet = str(lab.pod_supernet)
    rules = (f"table ip {LB_TABLE} {{\n"
             f" chain pre {{ type nat hook prerouting priority dstnat - 10; policy accept;\n"
             f"  ip daddr {info['vip']} tcp dport {VIP_PORT} counter dnat ip to numgen inc mod 2 map "
             f"{{ 0 : {backends[0]} . {HTTP_PORT}, 1 : {backends[1]} . {HTTP_PORT} }}\n }}\n"
             f" chain post {{ type nat hook postrouting priority srcnat - 10; policy accept;\n"
             f"  ip daddr {{ {backends[0]}, {backends[1]} }} tcp dport {HTTP_PORT} ip saddr != {supernet} masquerade\n"
             f" }}\n}}\n")
    one_backend(lab)
    lab.ns_run(info["lb"], ["nft", "-f", "-"], input=rules)
    return {"backends": [{"pod": "web", "ip": backends[0], "node": info["worker"]},
                         {"pod": name, "ip": second["ip"], "node": second["node"], "ns": second["ns"],
                          "device": second["device"]}]}


@fault
def one_backend(lab):
    """Undo ``two_backends``'s balancing (the second pod stays, unused)."""
    info = _lb(lab)
    lab.ns_run(info["lb"], ["nft", "delete", "table", "ip", LB_TABLE], check=False)
    return {"balanced": False}


@fault
def break_backend_route(lab, name="web2"):
    """The node of pod ``name`` loses its /32 route to it (the CNI did not program it)."""
    pod_info = lab.extra["pods"][name]
    lab.ns_run(pod_info["node"], ["ip", "route", "del", f"{pod_info['ip']}/32"], check=False)
    return {"break": "pod_route", "node": pod_info["node"], "pod": pod_info["ip"]}


NODE_PORT = 30080


def _nodeport_rules(lab, node, pod_ip):
    dnat = ["PREROUTING", "-d", f"{lab.node(node).ip}/32", "-p", "tcp", "--dport", str(NODE_PORT), "-m", "comment",
            "--comment", NAT_COMMENT + "-np", "-j", "DNAT", "--to-destination", f"{pod_ip}:{HTTP_PORT}"]
    masq = ["POSTROUTING", "-d", pod_ip, "-p", "tcp", "--dport", str(HTTP_PORT), "!", "-s", str(lab.pod_supernet),
            "-o", "eth0", "-m", "comment", "--comment", NAT_COMMENT + "-np-masq", "-j", "MASQUERADE"]
    return dnat, masq


@fault
def nodeport(lab, nodes=""):
    """Each node (all, or the comma-separated ``nodes``) DNATs its own IP's port 30080 to the web pod, as
    kube-proxy does for a NodePort, and masquerades what it forwards to the pod through eth0 (another node)."""
    info = _lb(lab)
    names = [n for n in nodes.split(",") if n] or [n.name for n in lab.nodes]
    for name in names:
        for rule in _nodeport_rules(lab, name, info["pod_ip"]):
            if _ipt(lab, name, ["-t", "nat", "-C", *rule], check=False).returncode != 0:
                _ipt(lab, name, ["-t", "nat", "-A", *rule])
    return {"nodes": names, "node_port": NODE_PORT, "pod": info["pod_ip"],
            "entries": {name: lab.node(name).ip for name in names}}


@fault
def break_nodeport(lab, node="node3"):
    """``node`` loses its NodePort DNAT rule (kube-proxy did not program it there)."""
    info = _lb(lab)
    _ipt(lab, node, ["-t", "nat", "-D", _nodeport_rules(lab, node, info["pod_ip"])[0][0],
                     *_nodeport_rules(lab, node, info["pod_ip"])[0][1:]], check=False)
    return {"break": "nodeport", "node": node}


@fault
def no_nodeport(lab):
    """Remove every node's NodePort rules."""
    info = _lb(lab)
    for n in lab.nodes:
        for rule in _nodeport_rules(lab, n.name, info["pod_ip"]):
            _ipt(lab, n.name, ["-t", "nat", "-D", *rule], check=False)
    return {"nodeport": False}


@fault
def path_repair(lab):
    """Undo every path break: ARP answered, DNAT back, switch open, pod route back, masquerade back."""
    info = _lb(lab)
    lab.ns_run(info["lb"], ["sysctl", "-qw", "net.ipv4.conf.eth0.arp_ignore=0"])
    lab.ns_run(info["lb"], ["ip", "addr", "del", f"{info['vip']}/32", "dev", "lo"], check=False)
    lab.ns_run(info["lb"], ["ip", "addr", "replace", f"{info['vip']}/32", "dev", "eth0"])
    dnat = _dnat_rule(info["vip"], info["pod_ip"])
    if _ipt(lab, info["lb"], ["-t", "nat", "-C", *dnat], check=False).returncode != 0:
        _ipt(lab, info["lb"], ["-t", "nat", "-A", *dnat])
    lab.run(["ip", "netns", "exec", lab.switch_ns, "nft", "delete", "table", "bridge", NAT_COMMENT], check=False)
    lab.ns_run(info["worker"], ["ip", "route", "replace", f"{info['pod_ip']}/32", "dev", info["pod_device"]])
    for pod_info in lab.extra.get("pods", {}).values():  # every web pod's /32 route (break_backend_route)
        if "pid" in pod_info:
            lab.ns_run(pod_info["node"], ["ip", "route", "replace", f"{pod_info['ip']}/32", "dev", pod_info["device"]])
    masquerade(lab)
    # the client's ARP cache may still name a node that answered for the VIP during a fault (two holders): it would
    # send the next connection there, and that node, forwarding what it sees one direction of, drops the rest as
    # conntrack-INVALID (kube-proxy's KUBE-FORWARD rule on a real node)
    lab.run(["ip", "-n", info["client_ns"], "neigh", "flush", "to", info["vip"]], check=False)
    return {"repaired": True}


HOST_NETWORK_PORT = 8090


@fault
def host_network_backend(lab, lb="node1", worker="node2", vip_index=3):
    """A backend on the host network (a hostNetwork pod: no veth, the node's own address): an HTTP server in
    ``worker``'s own namespace on its node IP :8090, behind a second VIP on ``lb`` (DNAT and masquerade as
    kube-proxy does for it)."""
    _lb(lab)
    node = lab.node(worker)
    name = "http-hostnet-%s" % node.name
    if name not in lab.extra.get("procs", {}):
        _start(lab, node.ns, [lab.python, "-m", "http.server", "--bind", node.ip, str(HOST_NETWORK_PORT)], name)
        wait_port(lab, node.ns, node.ip, HOST_NETWORK_PORT)
    vip = lab.vip(vip_index)
    lab.ns_run(lb, ["ip", "addr", "replace", f"{vip}/32", "dev", "eth0"])
    dnat = ["PREROUTING", "-d", f"{vip}/32", "-p", "tcp", "--dport", str(VIP_PORT), "-m", "comment",
            "--comment", NAT_COMMENT + "-hostnet", "-j", "DNAT", "--to-destination", f"{node.ip}:{HOST_NETWORK_PORT}"]
    if _ipt(lab, lb, ["-t", "nat", "-C", *dnat], check=False).returncode != 0:
        _ipt(lab, lb, ["-t", "nat", "-A", *dnat])
    snat = ["POSTROUTING", "-d", node.ip, "-p", "tcp", "--dport", str(HOST_NETWORK_PORT), "-m", "comment",
            "--comment", NAT_COMMENT + "-hostnet-masq", "-j", "MASQUERADE"]
    if _ipt(lab, lb, ["-t", "nat", "-C", *snat], check=False).returncode != 0:
        _ipt(lab, lb, ["-t", "nat", "-A", *snat])
    return {"lb": lab.node(lb).name, "worker": node.name, "vip": vip, "vip_port": VIP_PORT, "backend_ip": node.ip,
            "backend_port": HOST_NETWORK_PORT}


DSR_TABLE = "k8t-path-dsr"


@fault
def dsr_loadbalancer(lab, lb="node1", worker="node2"):
    """A direct-server-return load balancer, as Seesaw runs (IPVS in DR mode): the LB node keeps the VIP (and
    answers ARP for it) but translates nothing; it forwards the VIP's packets to the worker with only the MAC
    rewritten (an nft netdev rule, as IPVS DR does), the worker holds the VIP on lo without answering ARP for it
    and translates VIP:80 to the pod (kube-proxy's rule for the Service's load-balancer IP), and the pod's reply
    goes from the worker straight to the client."""
    info = _lb(lab)
    lb_node, work = lab.node(lb), lab.node(worker)
    _ipt(lab, lb_node, ["-t", "nat", "-D", *_dnat_rule(info["vip"], info["pod_ip"])], check=False)
    lab.ns_run(lb_node, ["nft", "-f", "-"], input=(
        f"table netdev {DSR_TABLE} {{\n chain forward {{ type filter hook ingress device \"eth0\" priority 0; "
        f"policy accept;\n  ip daddr {info['vip']} tcp dport {VIP_PORT} counter ether saddr set {lb_node.mac} "
        f"ether daddr set {work.mac} fwd to \"eth0\"\n }}\n}}\n"))
    lab.ns_run(work, ["sysctl", "-qw", "net.ipv4.conf.eth0.arp_ignore=1", "net.ipv4.conf.eth0.arp_announce=2"])
    lab.ns_run(work, ["ip", "addr", "replace", f"{info['vip']}/32", "dev", "lo"])
    dnat = _dnat_rule(info["vip"], info["pod_ip"])
    if _ipt(lab, work, ["-t", "nat", "-C", *dnat], check=False).returncode != 0:
        _ipt(lab, work, ["-t", "nat", "-A", *dnat])
    return {"lb": lb_node.name, "worker": work.name, "vip": info["vip"], "table": DSR_TABLE}


@fault
def break_dsr_forward(lab, lb="node1"):
    """The DSR load balancer stops forwarding (Seesaw's IPVS service gone, or no healthy real server): the VIP's
    packets reach the LB node and go no further."""
    lab.ns_run(lab.node(lb), ["nft", "delete", "table", "netdev", DSR_TABLE], check=False)
    return {"break": "dsr_forward", "node": lab.node(lb).name}


def dsr_repair(lab, lb="node1", worker="node2"):
    """Undo dsr_loadbalancer: the forward rule gone, the worker without the VIP and its DNAT, the LB's DNAT back."""
    info = _lb(lab)
    work = lab.node(worker)
    lab.ns_run(lab.node(lb), ["nft", "delete", "table", "netdev", DSR_TABLE], check=False)
    _ipt(lab, work, ["-t", "nat", "-D", *_dnat_rule(info["vip"], info["pod_ip"])], check=False)
    lab.ns_run(work, ["ip", "addr", "del", f"{info['vip']}/32", "dev", "lo"], check=False)
    lab.ns_run(work, ["sysctl", "-qw", "net.ipv4.conf.eth0.arp_ignore=0", "net.ipv4.conf.eth0.arp_announce=0"])
    path_repair(lab)
