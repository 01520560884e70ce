"""dns_check's pod view (pod_ip, repeat) and role dns's dns_pod, against real pod namespaces in the lab.

Each pod is a network namespace behind a CNI-named veth with an address from node2's pod CIDR, and a
process (``sleep``) whose private mount namespace binds the pod's own resolv.conf over /etc/resolv.conf.
NodeLocal DNS is a dnsmasq on node2 listening on an address of the lab's service range (the lab may
only use 198.18.0.0/15; a real NodeLocal DNS listens on 169.254.20.10), logging every query, so the
queries one lookup costs are counted from dnsmasq's own log, and glibc itself (``getent`` inside the
pod) shows the names it asks and their order.  Every other expectation is checked with dnspython
run inside the pod's or the node's namespace, and with the kernel's iptables counters.

Role dns's dns_pod reads the pod (its IP and node) from the real API server of the lab's control plane
(tests/lab/cluster.py): the fixtures' pods (tests/kube_api/fixtures/dns_pod.yaml) are created there bound to their
nodes, their status written as their kubelet would (tests/lab/cluster_objects.py); kubectl reads them back."""

from __future__ import annotations

import ipaddress
import json

import pytest

from tests.kube_api import FIXTURES, load_yaml
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import dns as lab_dns
from tests.lab.faults import pods as lab_pods

SEARCH = "search default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:1 attempts:1\n"
CLUSTER = "kubernetes.default.svc.cluster.local"
WEB = "web.default.svc.cluster.local"
NODE = "node2"


@pytest.fixture(scope="module")
def world(lab):
    info = lab_dns.dns_cluster(lab)
    local = lab_dns.nodelocal_dns(lab, NODE)
    good = lab_pods.pod(lab, NODE, "dp-good")
    good = lab_pods.pod_process(lab, "dp-good", "nameserver %s\nnameserver %s\n%s" % (
        local["address"], info["kube_dns"], SEARCH))
    dead = lab_pods.pod(lab, NODE, "dp-dead")
    dead = lab_pods.pod_process(lab, "dp-dead", "# the cache first, as a NodeLocal DNS setup writes it\n"
                                "nameserver %s\nnameserver %s\n%s" % (local["dead_cache"], info["kube_dns"], SEARCH))
    yield {"dns": info, "local": local, "good": good, "dead": dead}
    lab_dns.dns_repair(lab)


def independent(lab, ns, server, name):
    """rcode (or 'timeout') as dnspython sees it from inside the namespace ``ns``."""
    code = ("import dns.message, dns.query, dns.rcode, dns.exception, sys\n"
            "q = dns.message.make_query(sys.argv[1], 'A')\n"
            "try:\n"
            "    print(dns.rcode.to_text(dns.query.udp(q, sys.argv[2], timeout=1).rcode()))\n"
            "except (dns.exception.Timeout, OSError):\n"
            "    print('timeout')\n")
    return lab.run(["ip", "netns", "exec", ns, lab.python, "-c", code, name, server]).stdout.strip()


def servers(world):
    out = [{"address": world["dns"]["kube_dns"], "name": "kube-dns", "role": "service"}]
    a = world["dns"]["pods"]["coredns-a"]
    return out + [{"address": a["ip"], "name": "coredns-a", "node": a["node"], "role": "pod"}]


def check(ansible, world, pod, names, **extra):
    args = {"names": names, "servers": servers(world), "pod_ip": world[pod]["ip"], "timeout": 1.0, "retries": 0,
            "protocols": ["udp"]}
    args.update(extra)
    return ansible.module(NODE, "dns_check", args)[NODE]


def by_check(result):
    return dict((f["check"], f) for f in result["findings"])


def test_the_pods_namespace_and_resolv_conf_are_found_by_ip(lab, ansible, world):
    res = check(ansible, world, "good", [CLUSTER])
    pod = res["pod"]
    # the namespace found is the pod's: the kernel names it by the pid the module used
    assert lab.run(["ip", "netns", "identify", str(pod["pid"])]).stdout.strip() == world["good"]["ns"]
    assert pod["found_by"] == "scan" and pod["ip"] == world["good"]["ip"]
    # its own resolv.conf, not the node's
    assert pod["resolv_conf"]["nameservers"] == [world["local"]["address"], world["dns"]["kube_dns"]]
    assert pod["resolv_conf"]["ndots"] == 5 and pod["resolv_conf"]["timeout"] == 1
    assert open("/etc/resolv.conf").read() != open(world["good"]["resolv_conf"]).read()
    # NodeLocal DNS answers the pod (a local address of node2 reached through the pod's veth)
    assert independent(lab, world["good"]["ns"], world["local"]["address"], CLUSTER) == "NOERROR"
    rows = dict(((r["server"], r["name"]), r) for r in pod["pod_matrix"])
    assert rows[(world["local"]["address"], CLUSTER)]["role"] == "resolv.conf"
    assert rows[(world["local"]["address"], CLUSTER)]["result"] == "ok"


def test_pod_view_with_dnspython_on_node1(lab, ansible, world):
    """node1's Python has dnspython (node2's and node3's use the standard-library client): the same
    view from a pod of node1, whose only nameserver is kube-dns."""
    one = lab_pods.pod(lab, "node1", "dp-one")
    one = lab_pods.pod_process(lab, "dp-one", "nameserver %s\n%s" % (world["dns"]["kube_dns"], SEARCH))
    res = ansible.module("node1", "dns_check", {"names": [CLUSTER], "servers": servers(world), "pod_ip": one["ip"],
                                                "timeout": 1.0, "retries": 0, "protocols": ["udp"]})["node1"]
    assert res["backend"] == "dnspython" and res["pod"]["resolv_conf"]["nameservers"] == [world["dns"]["kube_dns"]]
    lookup = res["pod"]["lookups"][0]
    assert lookup["result"] == "ok" and lookup["answered_as"] == CLUSTER and lookup["queries"] == 4
    assert independent(lab, one["ns"], world["dns"]["kube_dns"], CLUSTER) == "NOERROR"


def test_short_name_costs_four_queries_counted_in_dnsmasq_log(lab, ansible, world):
    log, ip, short = world["local"]["log"], world["good"]["ip"], world["local"]["short_name"]
    before = len(lab_dns.logged_queries(log, ip))
    res = check(ansible, world, "good", [short])
    cost = next(c for c in res["pod"]["costs"] if c["name"] == short)
    assert cost["queries"] == 4 and cost["queries_a_aaaa"] == 8
    # dnsmasq's own log: the queries from the pod's address for this lookup, in order
    asked = [name for rtype, name in lab_dns.logged_queries(log, ip)[before:] if rtype == "A"]
    assert asked == cost["candidates"] == ["registry.default.svc.cluster.local", "registry.svc.cluster.local",
                                           "registry.cluster.local", "registry"]
    amp = by_check(res)["dns.search_amplification"]
    assert amp["severity"] == "warning" and amp["evidence"]["lookup"]["queries"] == 4
    assert amp["evidence"]["lookup"]["failed_queries"] == 3 and amp["evidence"]["lookup"]["answered_as"] == "registry"
    # glibc itself (getaddrinfo in the pod, its resolv.conf) asks the same names in the same order
    before = len(lab_dns.logged_queries(log, ip))
    out = lab.run(["nsenter", "-t", str(world["good"]["pid"]), "-n", "-m", "getent", "ahostsv4", short]).stdout
    assert out.split()[0] == world["local"]["short_answer"]
    assert [n for t, n in lab_dns.logged_queries(log, ip)[before:] if t == "A"] == cost["candidates"]


def test_dead_cache_first(lab, ansible, world):
    dead_ip = world["local"]["dead_cache"]
    assert independent(lab, world["dead"]["ns"], dead_ip, CLUSTER) == "timeout"
    assert independent(lab, world["dead"]["ns"], world["dns"]["kube_dns"], CLUSTER) == "NOERROR"
    res = check(ansible, world, "dead", [CLUSTER])
    found = by_check(res)
    dead = found["dns.dead_nameserver"]
    assert dead["severity"] == "critical" and dead["evidence"]["dead"] == [dead_ip]
    assert "nameserver 1 of 2" in dead["summary"] and "waits 1s" in dead["summary"]
    # the pod's glibc falls back to kube-dns: the lookup still answers, after the dead cache
    lookup = res["pod"]["lookups"][0]
    first, second = lookup["steps"][0], lookup["steps"][1]
    assert lookup["result"] == "ok" and first["name"] == CLUSTER + ".default.svc.cluster.local"
    assert first["server"] == dead_ip and first["status"] in ("timeout", "unreachable")
    assert second == {"name": first["name"], "server": world["dns"]["kube_dns"], "status": "nxdomain"}
    assert "dns.pod_ok" not in found


def _ipt(lab, args, check=True):
    return lab.ns_run(NODE, ["iptables", "-w", *args], check=check)


def test_name_failing_only_from_the_pod(lab, ansible, world):
    """node2 drops the pod's queries holding the label "web" to NodeLocal DNS (as a NetworkPolicy or a
    broken filter would): web.default resolves from the node, not from the pod."""
    rule = ["INPUT", "-s", world["good"]["ip"], "-d", world["local"]["address"], "-p", "udp", "--dport", "53",
            "-m", "string", "--algo", "bm", "--hex-string", "|03|web|", "-j", "DROP"]
    _ipt(lab, ["-I", *rule])
    try:
        assert independent(lab, world["good"]["ns"], world["local"]["address"], WEB) == "timeout"
        assert independent(lab, lab.node(NODE).ns, world["local"]["address"], WEB) == "NOERROR"
        res = check(ansible, world, "good", [WEB, CLUSTER])
        only = by_check(res)["dns.pod_only_failure"]
        assert only["severity"] == "critical"
        assert only["evidence"]["pairs"] == [{"server": world["local"]["address"], "name": WEB, "pod": "timeout",
                                              "node": "ok"}]
        # the kernel's counter of the rule: the pod's queries did hit it
        listing = _ipt(lab, ["-L", "INPUT", "-v", "-x", "-n"]).stdout
        packets = [int(line.split()[0]) for line in listing.splitlines() if "STRING match" in line]
        assert packets and packets[0] >= 1
        # CLUSTER still works from the pod through NodeLocal DNS: not a dead nameserver
        assert "dns.dead_nameserver" not in by_check(res)
    finally:
        _ipt(lab, ["-D", *rule], check=False)


def test_repeated_queries_intermittent_timeouts(lab, ansible, world):
    """Every 5th query of the pod to NodeLocal DNS is dropped by node2 (iptables statistic nth): 20 %."""
    rule = ["INPUT", "-s", world["good"]["ip"], "-d", world["local"]["address"], "-p", "udp", "--dport", "53",
            "-m", "statistic", "--mode", "nth", "--every", "5", "--packet", "0", "-j", "DROP"]
    _ipt(lab, ["-I", *rule])
    try:
        before = _counter(lab)
        res = check(ansible, world, "good", [CLUSTER + "."], repeat=20, repeat_interval=0.0, timeout=0.3)
        repeat = res["pod"]["repeat"]
        assert repeat["count"] == 20 and repeat["server"] == world["local"]["address"]
        # the rule saw every query of the pod (the walks and the 20) and dropped one in five of them
        dropped = _counter(lab) - before
        assert dropped >= 4 and repeat["timeouts"] >= 3
        found = by_check(res)["dns.intermittent_timeout"]
        assert found["severity"] == "warning" and found["evidence"]["timeout_rate"] == repeat["timeout_rate"]
        assert found["evidence"]["p50_ms"] is not None and found["evidence"]["p99_ms"] is not None
        # the node's conntrack counters around the repeats, as the kernel keeps them
        counters = res["pod"]["conntrack"]
        assert set(counters["delta"]) >= {"insert_failed", "drop", "early_drop"}
        now = _conntrack_stat(lab)
        assert all(counters["after"][k] <= now[k] for k in counters["after"])
        assert by_check(res)["conntrack.insert_failed"]["severity"] == (
            "warning" if counters["delta"]["insert_failed"] else "ok")
    finally:
        _ipt(lab, ["-D", *rule], check=False)


def _counter(lab):
    listing = _ipt(lab, ["-L", "INPUT", "-v", "-x", "-n"]).stdout
    return sum(int(line.split()[0]) for line in listing.splitlines() if "statistic mode nth" in line)


def _conntrack_stat(lab):
    text = lab.ns_run(NODE, ["cat", "/proc/net/stat/nf_conntrack"]).stdout.split("\n")
    header, out = text[0].split(), {}
    for row in (r.split() for r in text[1:] if r.strip()):
        for name, value in zip(header, row):
            out[name] = out.get(name, 0) + int(value, 16)
    return out


def test_pod_ip_no_namespace_holds_fails_clearly(lab, ansible, world):
    # an unused address of node2's pod CIDR: no namespace holds it (lab nodes share one PID namespace,
    # so a pod of another node would be found from every node; on a real node only its own pods are)
    unused = str(ipaddress.ip_network(lab.node(NODE).pod_cidr)[200])
    res = ansible.module(NODE, "dns_check", {"names": [CLUSTER], "pod_ip": unused, "timeout": 1.0})[NODE]
    assert res["failed"] and "no network namespace on this host holds %s" % unused in res["msg"], res.get("msg")
    assert "the pod runs on another node, is gone, or its IP changed" in res["msg"]


def test_a_host_network_pods_ip_is_the_nodes_view_not_a_dead_nameserver(lab, ansible, world):
    """A pod with hostNetwork: true has the node's IP: its namespace is the node's, so the check says so
    and gives no pod-only verdict (the node's resolv.conf names a nameserver the lab cannot reach: before,
    that was reported as a critical dns.dead_nameserver "in the pod's resolv.conf")."""
    node = lab.node(NODE)
    # independent readers: the address is one of node2's own, in node2's namespace; node2's resolv.conf
    assert node.ip in [a["local"] for link in lab.node_json(NODE, ["ip", "-j", "addr", "show"])
                       for a in link.get("addr_info", [])]
    node_conf = lab.node_run(NODE, ["cat", "/etc/resolv.conf"]).stdout
    nameservers = [line.split()[1] for line in node_conf.splitlines() if line.startswith("nameserver ")][:3]
    inode = int(lab.run(["stat", "-L", "-c", "%i", "/run/netns/%s" % node.ns]).stdout)
    res = ansible.module(NODE, "dns_check", {"names": [CLUSTER], "servers": servers(world), "pod_ip": node.ip,
                                             "timeout": 1.0, "retries": 0, "protocols": ["udp"]})[NODE]
    assert not res["failed"], res.get("msg")
    found = [(f["check"], f["severity"], f["subject"]) for f in res["findings"]]
    assert ("dns.pod_host_network", "info", "pod %s" % node.ip) in found
    assert not [f for f in found if f[0] in ("dns.dead_nameserver", "dns.pod_only_failure", "dns.pod_ok")], found
    assert res["pod"]["host_network"] is True and res["pod"]["netns_inode"] == inode
    assert res["pod"]["resolv_conf"]["nameservers"] == nameservers
    summary = [f for f in res["findings"] if f["check"] == "dns.pod_host_network"][0]["summary"]
    assert "the node's: nameservers %s" % ", ".join(nameservers) in summary
    assert "ClusterFirstWithHostNet names the cluster DNS (%s" % world["dns"]["kube_dns"] in summary
    # the cluster DNS itself was asked from the node (the host-network pod's path) and answers
    assert [f["check"] for f in res["findings"] if f["subject"] == "cluster DNS"] == ["dns.ok"]
    assert independent(lab, node.ns, world["dns"]["kube_dns"], CLUSTER) == "NOERROR"


# ----------------------------------------------------------------------------- the role, dns_pod
POD = "dns-client-5f7d9c8b6-k2x9p"


def dns_pod_objects(lab, pod_ip):
    """dns_pod.yaml's pods, dns-client-5f7d9c8b6-k2x9p running on node2 at ``pod_ip``."""
    objects = [o for o in load_yaml([FIXTURES / "dns_pod.yaml"]) if o["kind"] == "Pod"]
    for obj in objects:
        if obj["metadata"]["name"] == POD:
            obj["status"].update(podIP=pod_ip, podIPs=[{"ip": pod_ip}], hostIP=lab.node(NODE).ip,
                                 hostIPs=[{"ip": lab.node(NODE).ip}])
    return objects


def move_pod(kube_cluster, api, lab, pod_ip):
    """The pod again, now at ``pod_ip``: a pod's address is its kubelet's to give once, so the pod is deleted (no
    kubelet confirms: at once, forced) and made again, as a pod of the same name replaced by its controller."""
    kube_cluster.kubectl("delete", "pod", "-n", "default", POD, "--grace-period=0", "--force", "--wait=false")
    kube_cluster.wait_for("pod %s gone" % POD, lambda: kube_cluster.kubectl(
        "get", "pod", "-n", "default", POD, check=False).returncode != 0, timeout=60)
    api.load_objects([o for o in dns_pod_objects(lab, pod_ip) if o["metadata"]["name"] == POD])


@pytest.fixture(scope="module")
def api(lab, world, kube_cluster):
    """The real API server holding cluster.yaml's nodes and dns_pod.yaml's pods (the one on node2 at the good pod's
    address)."""
    real = RealApi(kube_cluster, "cluster.yaml")
    real.load_objects(dns_pod_objects(lab, world["good"]["ip"]))
    return real


def role_vars(world, api, pod, **extra):
    out = {"dns_kubeconfig": str(api.kubeconfig()), "dns_api": False, "dns_servers": servers(world),
           "dns_pod": "default/" + pod, "dns_names": [world["local"]["short_name"], CLUSTER], "dns_timeout": 1.0,
           "dns_retries": 0, "dns_protocols": ["udp"], "dns_host_resolvers": False}
    out.update(extra)
    return out


def dns_data(run, node):
    """What the dns check of ``node`` returned (its one pass's record of dns: the module's whole result)."""
    return run.result("Keep the findings of this host", node)["ansible_facts"]["dns_result"]


def test_role_dns_pod_checks_on_the_pods_node_only(ansible, world, api, kube_cluster):
    seen = kube_cluster.kubectl_json("get", "pod", "-n", "default", POD)
    assert seen["status"]["podIP"] == world["good"]["ip"] and seen["spec"]["nodeName"] == NODE
    run = ansible.playbook("k8snet.triage.dns", extra_vars=role_vars(world, api, "dns-client-5f7d9c8b6-k2x9p"))
    assert run.rc == 0, run
    for node in ("node1", "node2", "node3"):
        facts = run.result("Keep the findings of this host", node)["ansible_facts"]
        checks = [f["check"] for f in facts["dns_findings"]]
        assert ("dns.search_amplification" in checks) == (node == NODE), (node, checks)
        # the one-label name is looked up through the pod's search list only, never asked as it is
        asked = {r["name"] for r in dns_data(run, node)["matrix"]}
        assert asked == {CLUSTER}
    done = dns_data(run, NODE)
    assert done["pod"]["ip"] == world["good"]["ip"]
    assert [c["queries"] for c in done["pod"]["costs"]] == [4, 4]
    assert dns_data(run, "node1")["pod"] is None


@pytest.mark.parametrize("pod, words", [
    ("nope-0", "pod default/nope-0 does not exist"),
    ("dns-client-5f7d9c8b6-pend1", "pod default/dns-client-5f7d9c8b6-pend1 is not running (phase Pending"),
    ("dns-client-5f7d9c8b6-far9z", "runs on node node9, which is none of this play's hosts"),
])
def test_role_dns_pod_errors(ansible, world, api, kube_cluster, pod, words):
    seen = kube_cluster.kubectl("get", "pod", "-n", "default", pod, "-o", "json", check=False)
    if pod == "nope-0":
        assert seen.returncode != 0 and "NotFound" in seen.stderr, seen.stderr
    else:  # the API server holds it, Pending (never scheduled) or bound to a node no host of the play is
        got = json.loads(seen.stdout)
        assert (got["status"]["phase"], got["spec"].get("nodeName")) in (("Pending", None), ("Running", "node9"))
    run = ansible.playbook("k8snet.triage.dns", extra_vars=role_vars(world, api, pod))
    assert run.rc != 0
    messages = " ".join(str(r["result"].get("msg")) for r in run.records if r["status"] == "failed")
    assert words in messages, messages
    assert not run.results(action="node_pass")  # nothing was asked


def test_role_dns_pod_maps_k8s_node_name(lab, ansible, world, api, tmp_path):
    """The pod's nodeName is matched against k8s_node_name, not the inventory name: node3 says it is
    the Kubernetes node "node2", and the inventory host node2 is "worker-b"."""
    inventory = json.loads(lab.inventory_path.read_text())
    hosts = inventory["all"]["children"]["k8s_nodes"]["hosts"]
    hosts["node2"]["k8s_node_name"] = "worker-b"
    hosts["node3"]["k8s_node_name"] = NODE
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inventory))
    run = ansible.playbook("k8snet.triage.dns", extra_vars=role_vars(world, api, "dns-client-5f7d9c8b6-k2x9p"),
                           inventory=path)
    assert run.rc == 0, run
    with_pod = sorted(r["host"] for r in run.results(action="node_pass")
                      if r["result"]["ansible_facts"]["triage_results"]["dns"]["data"].get("pod"))
    assert with_pod == ["node3"]


def test_triage_adds_the_pods_view_on_its_node_in_the_one_pass(lab, ansible, world, api, kube_cluster, tmp_path):
    """triage.yml with dns_pod: the pod is read once from the API, its view runs in node2's one pass
    (the dead cache named first in its own resolv.conf is found), no other node asks for it, and a pod
    whose node is none of the hosts is said in the report instead of being left out."""
    assert independent(lab, world["dead"]["ns"], world["local"]["dead_cache"], CLUSTER) == "timeout"
    # the API's pod is now the one whose resolv.conf names the dead cache first
    move_pod(kube_cluster, api, lab, world["dead"]["ip"])
    seen = kube_cluster.kubectl_json("get", "pod", "-n", "default", POD)
    assert (seen["status"]["podIP"], seen["spec"]["nodeName"]) == (world["dead"]["ip"], NODE)
    try:
        _triage_with_dns_pod(ansible, world, api, tmp_path)
    finally:
        move_pod(kube_cluster, api, lab, world["good"]["ip"])


def _triage_with_dns_pod(ansible, world, api, tmp_path):
    extra = {"triage_kubeconfig": str(api.kubeconfig()), "triage_scenarios": ["dns"], "triage_api_scenarios": [],
             "dns_pod": "default/dns-client-5f7d9c8b6-k2x9p", "dns_names": [CLUSTER], "dns_timeout": 1.0,
             "dns_retries": 0, "dns_protocols": ["udp"], "report_output_dir": str(tmp_path),
             "report_fail_on_critical": False}
    run = ansible.playbook("k8snet.triage.triage", extra_vars=extra)
    assert run.rc == 0, run
    report = json.loads((tmp_path / "triage-report.json").read_text())
    mine = [f for f in report["findings"] if f["scenario"] == "dns"]
    dead = [f for f in mine if f["check"] == "dns.dead_nameserver"]
    assert [f["host"] for f in dead] == [NODE] and world["local"]["dead_cache"] in json.dumps(dead[0]), mine
    assert report["hosts"][NODE]["scenarios"]["dns"]["status"] == "ran"
    for node in ("node1", "node3"):  # no DNS server given and not the pod's node: said, not run
        assert report["hosts"][node]["scenarios"]["dns"]["status"] == "skipped"
    # a pod on a node that is none of the hosts: a warning in the report, not silence
    extra["dns_pod"] = "default/dns-client-5f7d9c8b6-far9z"
    run = ansible.playbook("k8snet.triage.triage", extra_vars=extra)
    assert run.rc == 0, run
    report = json.loads((tmp_path / "triage-report.json").read_text())
    [gap] = [f for f in report["findings"] if f["check"] == "dns.pod_view_not_checked"]
    assert "node9, which is none of the triage's hosts" in gap["summary"] and gap["scope"] == "fleet"
