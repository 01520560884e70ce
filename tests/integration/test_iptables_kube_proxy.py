"""iptables_drops on kube-proxy's own rule sets, restored on lab nodes: the iptables-mode filter table of
kube-proxy's tests on node2 (iptables-legacy-restore), the nftables-mode ruleset on node3 (nft -f), and the
TCP flows those rule sets refuse.  Counters are read first with ``iptables -L -v -x`` / ``nft -j list
ruleset``; the module must then name the Service, the reason and the next step.

The rule sets are the fixtures of tests/unit/plugins/module_utils/fixtures/kube_proxy (sources in their
headers).  Before they are loaded here every address is rewritten into the lab (198.18.0.0/15): the Services
that get traffic take lab VIPs (svc6's ClusterIP, svc5's load balancer IP, svc2's external/LB IPs), the other
ClusterIPs and the service CIDR take the lab's service range, endpoints and the cluster CIDR its pod range,
the NodePort address the node's own.  The nftables rules of reject-chain and the firewall chain get a
``counter`` statement (kube-proxy writes none), so their packets can be counted.  Flows go only to lab
addresses; the refused ones end on the node (REJECT/DROP in OUTPUT or INPUT)."""

from __future__ import annotations

import ipaddress
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab.core import LAB_SUPERNET

FIX = Path(__file__).resolve().parents[1] / "unit" / "plugins" / "module_utils" / "fixtures" / "kube_proxy"
INTERVAL = 2


def lab_addresses(lab, node):
    """The test's addresses -> lab addresses (longest first, so 172.30.0.46 is not read as 172.30.0.4)."""
    pods = lab.pod_supernet
    table = {
        "172.30.0.0/16": str(lab.service_network),
        "172.30.0.46": lab.vip(46),          # ns6/svc6 ClusterIP (no endpoints): gets traffic
        "5.6.7.8": lab.vip(45),              # ns5/svc5 load balancer IP (source ranges): gets traffic
        "1.2.3.4": lab.vip(44),              # ns2/svc2 load balancer IP
        "192.168.99.22": lab.vip(42), "192.168.99.33": lab.vip(43),
        "203.0.113.0/25": str(list(lab.network.subnets(new_prefix=25))[1]),  # no lab node is in .128/25
        "192.168.0.2": lab.node(node).ip,    # the NodePort address (nftables nodeport-ips)
        "10.0.0.0/8": str(pods),
    }
    for n in range(41, 46):
        table["172.30.0.%d" % n] = lab.service_ip(n)
    for n in range(1, 6):
        table["10.180.0.%d" % n] = str(pods[4096 + n])
    return table


def rewrite(text, table):
    pattern = re.compile("|".join(re.escape(k) + r"(?![\d])" for k in sorted(table, key=len, reverse=True)))
    out = pattern.sub(lambda m: table[m.group(0)], text)
    left = [a for a in re.findall(r"\b\d+\.\d+\.\d+\.\d+\b", out) if ipaddress.ip_address(a) not in LAB_SUPERNET
            and not a.startswith(("127.", "0."))]
    assert not left, "addresses left outside the lab: %s" % sorted(set(left))
    return out


TCP = ("import socket,sys,time\n"
       "n,gap,dst,port=int(sys.argv[1]),float(sys.argv[2]),sys.argv[3],int(sys.argv[4])\n"
       "for _ in range(n):\n"
       "    s=socket.socket(); s.settimeout(0.2)\n"
       "    try: s.connect((dst,port))\n"
       "    except OSError: pass\n"
       "    s.close(); time.sleep(gap)\n")


def tcp_start(lab, src, dst, port, count=120, rate=20):
    """Bounded TCP connection attempts from node ``src`` to a lab address (background)."""
    assert ipaddress.ip_address(dst) in LAB_SUPERNET
    argv = ["ip", "netns", "exec", lab.node(src).ns, sys.executable, "-c", TCP, str(count), str(1.0 / rate), dst, str(port)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=10)


def ipt_packets(lab, node, chain, comment):
    """Packets of the rule of ``chain`` carrying ``comment``, read with iptables-legacy -L -v -x."""
    out = lab.ns_run(node, ["iptables-legacy", "-t", "filter", "-L", chain, "-v", "-x", "-n"]).stdout
    rows = [line.split() for line in out.splitlines() if comment in line]
    assert len(rows) == 1, out
    return int(rows[0][0])


def nft_packets(lab, node, chain):
    data = lab.node_json(node, ["nft", "-j", "list", "ruleset"])
    for item in data["nftables"]:
        rule = item.get("rule")
        if rule and rule["table"] == "kube-proxy" and rule["chain"] == chain:
            counters = [s["counter"]["packets"] for s in rule["expr"] if "counter" in s]
            if counters:
                return counters[0]
    raise AssertionError("no counted rule in chain %s" % chain)


def drops(ansible, host, **args):
    args.setdefault("interval", INTERVAL)
    args.setdefault("node_name", host)
    return ansible.module(host, "iptables_drops", args)[host]


def by_reason(result, backend):
    out = {}
    for found in result["findings"]:
        if found["check"] == "iptables.drops_growing" and found["subject"].split()[1] == backend:
            out.setdefault(found["evidence"].get("reason"), []).append(found)
    return out


@pytest.fixture
def iptables_mode(lab):
    node = "node2"
    saved = lab.ns_run(node, ["iptables-legacy-save", "-t", "filter"]).stdout
    assert "KUBE-" not in saved
    rules = rewrite((FIX / "iptables_cleanup_test_initial.rules").read_text(), lab_addresses(lab, node))
    lab.ns_run(node, ["iptables-legacy-restore", "-T", "filter"], input=rules)
    yield node, rules
    lab.ns_run(node, ["iptables-legacy-restore", "-T", "filter"], input=saved or "*filter\nCOMMIT\n")
    assert "KUBE-" not in lab.ns_run(node, ["iptables-legacy-save", "-t", "filter"]).stdout


@pytest.fixture
def nftables_mode(lab):
    node = "node3"
    assert "kube-proxy" not in lab.ns_run(node, ["nft", "list", "tables"]).stdout
    script = rewrite((FIX / "nftables_overall.nft").read_text(), lab_addresses(lab, node))
    script = script.replace("add rule ip kube-proxy reject-chain reject",
                            "add rule ip kube-proxy reject-chain counter reject")
    script = re.sub(r"(add rule ip kube-proxy firewall-\S+ ip saddr != \{ \S+ \}) drop", r"\1 counter drop", script)
    assert script.count(" counter ") == 2
    lab.ns_run(node, ["nft", "-f", "-"], input=script)
    yield node
    lab.ns_run(node, ["nft", "delete", "table", "ip", "kube-proxy"], check=False)
    assert "kube-proxy" not in lab.ns_run(node, ["nft", "list", "tables"]).stdout


def test_iptables_mode_refused_flows_name_their_service(lab, ansible, iptables_mode):
    node, rules = iptables_mode
    assert "-d %s" % lab.vip(46) in rules and "-d %s" % lab.vip(45) in rules
    read = {
        "no_endpoints": lambda: ipt_packets(lab, node, "KUBE-SERVICES", "ns6/svc6:p80 has no endpoints"),
        "no_local_endpoints": lambda: ipt_packets(lab, node, "KUBE-EXTERNAL-SERVICES", "dpt:3001"),
        "load_balancer_source_ranges": lambda: ipt_packets(lab, node, "KUBE-PROXY-FIREWALL", "ns5/svc5:p80"),
    }
    before = dict((k, f()) for k, f in read.items())
    procs = [tcp_start(lab, node, lab.vip(46), 80),                 # a pod/host to the ClusterIP: REJECT
             tcp_start(lab, "node1", lab.node(node).ip, 3001),      # outside to the NodePort: DROP (policy Local)
             tcp_start(lab, node, lab.vip(45), 80)]                 # not in the source ranges: DROP
    try:
        result = drops(ansible, node, backends=["legacy"])
    finally:
        stop(procs)
    delta = dict((k, f() - before[k]) for k, f in read.items())
    assert all(v > 0 for v in delta.values()), delta  # the flows really hit kube-proxy's rules
    found = by_reason(result, "legacy")
    assert set(found) == {"no_endpoints", "no_local_endpoints", "load_balancer_source_ranges"}, result["findings"]
    svc6 = found["no_endpoints"][0]
    assert "Service ns6/svc6:p80" in svc6["summary"] and "no ready endpoints" in svc6["summary"]
    assert svc6["remediation"].startswith("kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6")
    assert "ns2/svc2:p80" in found["no_local_endpoints"][0]["summary"]
    assert "no ready endpoint on this node" in found["no_local_endpoints"][0]["summary"]
    svc5 = found["load_balancer_source_ranges"][0]
    assert "ns5/svc5:p80" in svc5["summary"] and "loadBalancerSourceRanges" in svc5["summary"]
    for reason, items in found.items():
        assert 0 < items[0]["evidence"]["packets"] <= delta[reason]


def test_nftables_mode_refused_flows_name_their_service(lab, ansible, nftables_mode):
    node = nftables_mode
    read = {"no_endpoints": lambda: nft_packets(lab, node, "reject-chain"),
            "load_balancer_source_ranges": lambda: nft_packets(lab, node, "firewall-HVFWP5L3-ns5/svc5/tcp/p80")}
    before = dict((k, f()) for k, f in read.items())
    procs = [tcp_start(lab, node, lab.vip(46), 80), tcp_start(lab, node, lab.vip(45), 80)]
    try:
        result = drops(ansible, node, backends=["nftables"])
    finally:
        stop(procs)
    delta = dict((k, f() - before[k]) for k, f in read.items())
    assert all(v > 0 for v in delta.values()), delta
    found = by_reason(result, "nftables")
    assert set(found) == {"no_endpoints", "load_balancer_source_ranges"}, result["findings"]
    assert "Service ns6/svc6:p80" in found["no_endpoints"][0]["summary"]
    assert found["no_endpoints"][0]["remediation"].startswith(
        "kubectl get endpointslices -n ns6 -l kubernetes.io/service-name=svc6")
    assert "ns5/svc5:p80" in found["load_balancer_source_ranges"][0]["summary"]
    # the policy-Local NodePort and addresses are map elements without counters: named, not counted
    refused = dict((f["evidence"]["service"], f) for f in result["findings"] if f["check"] == "iptables.service_refused")
    assert refused["ns2/svc2:p80"]["evidence"]["reason"] == "no_local_endpoints"
    assert "NodePort tcp . 3001" in refused["ns2/svc2:p80"]["summary"]
    assert refused["ns6/svc6:p80"]["evidence"]["reason"] == "no_endpoints"
