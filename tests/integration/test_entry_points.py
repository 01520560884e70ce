"""Extra vars as users type them (``-e key=value`` on the command line: strings, exactly as argv) over
triage.yml and every scenario playbook: a wrong value is a clear error that names the variable and the
fix before any node is touched, and a string where a list is expected, or a capitalised enum, gives the
right result. The report JSON and the records of the run are the evidence; the API the dns scenario reads is the
real control plane (tests/lab/cluster.py) with CoreDNS as its cluster DNS, and its audit log shows what was read."""

from __future__ import annotations

import json

import pytest

from tests.integration.conftest import BIN, ROOT
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import arp

TRIAGE = str(ROOT / "playbooks" / "triage.yml")
GROUPS = "admin_control_plane, cluster_lab"  # the start of the list of groups the error gives


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    """The lab's inventory with one more group, spare, that has no host."""
    data = json.loads(open(lab.inventory_path).read())
    data["all"]["children"]["spare"] = {"hosts": {}}
    path = tmp_path_factory.mktemp("entry") / "inventory.json"
    path.write_text(json.dumps(data))
    return path


def run(ansible, playbook, *pairs, inventory=None, verbose=False):
    """ansible-playbook with each ``-e`` argument as a user types it (``verbose``: -vvv)."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory or ansible.lab.inventory_path),
            str(ROOT / "playbooks" / playbook)]
    argv += ["-vvv"] if verbose else []
    for pair in pairs:
        argv += ["-e", pair]
    return ansible._run(argv)  # pylint: disable=protected-access


def node_tasks(result):
    return [r for r in result.records if r["host"].startswith("node")]


# (playbook, -e arguments, what the error must say)
REFUSED = [
    ("triage.yml", ["triage_cni=flannel"], "triage_cni=flannel is not a CNI the triage knows: give auto"),
    ("triage.yml", ["triage_ssh_retries=-1"], "triage_ssh_retries=-1 is not a number of SSH retries: give 0 to 5"),
    ("triage.yml", ["triage_ssh_retries=9999999999"], "triage_ssh_retries=9999999999 is not a number of SSH retries"),
    ("triage.yml", ["triage_node_deadline=2"], "triage_node_deadline=2 and triage_command_timeout=: give the pass's"),
    ("triage.yml", ["triage_command_timeout=nan"], "triage_node_deadline= and triage_command_timeout=nan: give"),
    ("triage.yml", ["triage_nodes_group=k8s_node"], "triage_nodes_group=k8s_node: no such group in the inventory"),
    ("triage.yml", ["triage_scenarios=dnss"], "triage_scenarios names dnss, which the triage does not have"),
    ("triage.yml", ["triage_scenarios=DNS"], "scenario names are lower case: give triage_scenarios=dns"),
    ("triage.yml", ["triage_api_scenarios=f6"], "triage_api_scenarios names f6: give some of f5, lb_health"),
    ("triage.yml", ["stale_arp_vips=[198.18.96.200"], "stale_arp_vips looks like a JSON list but is not valid JSON"),
    # an address no VIP can be (issue 47): refused naming the item and what it is
    ("triage.yml", ["stale_arp_vips=127.0.0.1"],
     "stale_arp_vips[0]='127.0.0.1' is invalid: 127.0.0.1 is a loopback address"),
    ("triage.yml", ["stale_arp_vips=198.18.96.200,::1"],
     "stale_arp_vips[1]='::1' is invalid: ::1 is a loopback address"),
    ("triage.yml", ["stale_arp_vips=0.0.0.0"],
     "stale_arp_vips[0]='0.0.0.0' is invalid: 0.0.0.0 is the unspecified address"),
    ("stale_arp.yml", ["stale_arp_vips=::1"], "stale_arp_vips[0]='::1' is invalid: ::1 is a loopback address"),
    ("stale_arp.yml", ["stale_arp_vips=224.0.0.18"],
     "224.0.0.18 is a multicast address, not one host's, which no VIP can be"),
    ("stale_arp.yml", ["stale_arp_vips=169.254.1.1"], "169.254.1.1 is a link-local address"),
    ("triage.yml", ["stale_arp_vips=198.18.96.200", "stale_arp_clients_group=admins"],
     "stale_arp_clients_group=admins: no such group in the inventory"),
    ("triage.yml", ["stale_arp_vips=198.18.96.200", "stale_arp_owners_group=cp"],
     "stale_arp_owners_group=cp: no such group in the inventory"),
    ("triage.yml", ["connectivity_group=peers"], "connectivity_group=peers: no such group in the inventory"),
    ("stale_arp.yml", ["stale_arp_owners_group=masters"], "stale_arp_owners_group=masters: no such group"),
    ("stale_arp.yml", ["stale_arp_clients_group=spare"], "stale_arp_clients_group=spare: the group has no host"),
    ("triage.yml", ["triage_nodes_group=spare"], "triage_nodes_group=spare: the group has no host"),
    # issue 47: one group, never empty or a host pattern (the pass decides by membership of that group)
    ("triage.yml", ["triage_nodes_group="], "triage_nodes_group is empty: give the one inventory group that holds"),
    ("triage.yml", ["triage_nodes_group=k8s_nodes:!node1"],
     "triage_nodes_group=k8s_nodes:!node1 is a host pattern, not a group: give the one inventory group"),
    ("triage.yml", ["triage_nodes_group=k8s_nodes,control_plane"], "is a host pattern, not a group"),
    ("ingress_path.yml", ["ingress_path_hosts=node1:nodeX"], "ingress_path_hosts=nodeX: no such group"),
    # the report's options: refused in the first play, not after the scan
    ("triage.yml", ["report_history=ten"], "argument 'report_history' is of type str and we were unable to convert"),
    ("triage.yml", ["report_silence_max_days=100000"], "report_silence_max_days"),
    ("triage.yml", ["report_metrics_dir=/nonexistent/textfile"],
     "report_metrics_dir /nonexistent/textfile is not an existing directory"),
    ("triage.yml", ["report_fail_on=[?severity=='critical'"], "report_fail_on is not a valid JMESPath expression"),
] + [(name + ".yml", [var + "=k8s_node"], var + "=k8s_node: no such group in the inventory")
     for name, var in (("calico", "calico_nodes_group"), ("cilium_agent", "cilium_agent_hosts"),
                       ("cilium_maps", "cilium_maps_hosts"), ("connectivity", "connectivity_hosts"),
                       ("conntrack", "conntrack_hosts"), ("dns", "dns_hosts"), ("egress", "egress_hosts"),
                       ("firewall_drops", "firewall_drops_hosts"), ("pmtu", "pmtu_hosts"),
                       ("pod_network", "pod_network_hosts"), ("stale_arp", "stale_arp_clients_group"),
                       ("sysctl", "sysctl_hosts"))]


@pytest.mark.parametrize("playbook, pairs, says", REFUSED, ids=["%s %s" % (p, " ".join(e)) for p, e, _s in REFUSED])
def test_a_wrong_extra_var_is_refused_before_any_node(ansible, inventory, playbook, pairs, says):
    result = run(ansible, playbook, *pairs, inventory=inventory)
    assert result.rc != 0, result
    said = " ".join((result.stderr + result.stdout).split())  # the [ERROR] line, unwrapped
    assert says in said, said[-1500:]
    if "no such group" in says or "has no host" in says:
        assert "set it to one of the inventory's groups that has hosts: " + GROUPS in said, result
    assert not node_tasks(result), result  # refused on the controller: no node was touched


@pytest.fixture(scope="module")
def api(kube_cluster):
    """The real API server with CoreDNS as the cluster DNS (the kube-dns Service and its pod), read with a
    ServiceAccount's token."""
    kube_cluster.start_coredns()
    return RealApi(kube_cluster)


@pytest.fixture(scope="module")
def vip(lab):
    address = lab.vip(3)
    arp.bind_vip(lab, "node1", address)
    arp.stale_neighbor(lab, "node3", address, "02:de:ad:00:be:ef")
    yield address
    lab.ns_run("node1", ["ip", "addr", "del", address + "/32", "dev", "eth0"], check=False)
    lab.ns_run("node3", ["ip", "neigh", "del", address, "dev", "eth0"], check=False)


def test_strings_where_lists_are_expected_and_a_capitalised_cni(ansible, api, vip, tmp_path):
    """-e triage_scenarios=cni,dns,stale_arp,calico with a kubeconfig: dns reads its servers from the API (never
    "no Kubernetes credentials"), stale_arp_vips as one string checks the VIP, triage_cni=Calico is calico,
    and triage_api_scenarios=[] (the string "[]") runs no API scenario."""
    before = len(api.requests)
    result = run(ansible, "triage.yml", "triage_scenarios=cni,dns,stale_arp,calico", "triage_cni=Calico",
                 "stale_arp_vips=" + vip, "triage_api_scenarios=[]", "triage_kubeconfig=" + str(api.kubeconfig()),
                 "report_output_dir=" + str(tmp_path), "report_fail_on_critical=false")
    assert result.rc == 0, result
    report = json.loads((tmp_path / "triage-report.json").read_text())
    # the kube-dns Service and its pods were read from the API server, with the kubeconfig's token
    sent = {(r["path"], r["query"].get("labelSelector"), r["code"]) for r in api.requests[before:]}
    assert {("/api/v1/namespaces/kube-system/services/kube-dns", None, 200),
            ("/api/v1/namespaces/kube-system/pods", "k8s-app=kube-dns", 200)} <= sent, sorted(sent, key=str)
    for node in ("node1", "node2", "node3"):
        scenarios = report["hosts"][node]["scenarios"]
        assert scenarios["cni"]["status"] == "ran", scenarios
        assert scenarios["dns"]["status"] == "ran", scenarios["dns"]
        assert "credentials" not in json.dumps(scenarios["dns"]), scenarios["dns"]
        # Calico is calico: its check runs on every node (no "triage_cni is Calico" skip)
        assert scenarios["calico"]["status"] == "ran", scenarios["calico"]
    assert report["hosts"]["node3"]["scenarios"]["stale_arp"]["status"] == "ran"
    stale = [f for f in report["findings"] if f["check"] == "arp.stale_entry"]
    assert [(f["host"], f["subject"]) for f in stale] == [("node3", "%s dev eth0" % vip)], stale
    assert not set(report["hosts"]["localhost"]["scenarios"]) & {"f5", "lb_health"}, report["hosts"]["localhost"]


def test_a_scenario_as_one_string_runs_it(ansible, tmp_path):
    """-e triage_scenarios=cni (a string, not a list): cni ran on every node, nothing else was asked."""
    result = run(ansible, "triage.yml", "triage_scenarios=cni", "triage_api_scenarios=[]",
                 "report_output_dir=" + str(tmp_path), "report_fail_on_critical=false")
    assert result.rc == 0, result
    report = json.loads((tmp_path / "triage-report.json").read_text())
    for node in ("node1", "node2", "node3"):
        assert set(report["hosts"][node]["scenarios"]) == {"cni"}, report["hosts"][node]
        assert report["hosts"][node]["scenarios"]["cni"]["status"] == "ran"


def test_logs_units_as_json_text(ansible):
    """-e 'logs_units=["kubelet","containerd"]' (JSON text) reaches node_logs as two units (the module's
    own list type would split the text at the comma into '["kubelet"' and '"containerd"]')."""
    result = run(ansible, "logs.yml", 'logs_units=["kubelet","containerd"]', "logs_api=false", verbose=True)
    assert result.rc == 0, result
    # the one pass's node_triage call on each node, its logs scenario's options (shown at -vvv, as a module's)
    invocations = [r["result"]["invocation"]["module_args"]["logs"] for r in result.results(action="node_pass")]
    assert len(invocations) == 3 and all(a["units"] == ["kubelet", "containerd"] for a in invocations), invocations
