"""triage.yml can be trusted: it refuses every repair option wherever it is set (state read back with
bpftool and kubectl), it reports every host and scenario (reached, unreachable, no usable Python, a
host lost mid-run; ran / skipped with the reason), one dead host hides no other host's fault, a fleet
without BIRD gets no critical bgp finding, and the exit code follows the findings.

The Kubernetes API is the real control plane (tests/lab/cluster.py) started on the six-node fleet, with the stand-in's
fixtures (cluster.yaml, router.yaml, cni.yaml) loaded through it once (tests/lab/cluster_objects.py); a request is
the triage's when the API server's audit log says its user sent it. Nothing here stays on the stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.conftest import BIN, ROOT, Ansible, Run
from tests.lab import Lab
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import arp, bpf, routes
from tests.lab.faults import kube as kube_faults
from tests.lab.faults.nodes import sshd_dead as kill_sshd

OWNERS_TASK = "Learn which VIPs each owner node holds, and their MACs (once, delegated to each owner)"
REFUSAL = "Refuse repair options on every host of the inventory (the triage is read-only)"


@pytest.fixture(scope="module")
def fleet():
    """Six nodes: node1-3 control_plane, node4-6 admin_control_plane."""
    lab = Lab(nodes=6).up()
    yield lab
    if os.environ.get("K8SNET_KEEP_LAB") != "1":
        lab.down(quiet=True)


@pytest.fixture(scope="module")
def ansible(fleet):
    return Ansible(fleet)


@pytest.fixture(scope="module")
def lab(fleet):
    """The module's lab is the fleet: kube_cluster (tests/integration/conftest.py) starts the control plane on it."""
    return fleet


@pytest.fixture(scope="module")
def api(kube_cluster):
    return RealApi(kube_cluster, "cluster.yaml", "router.yaml", "cni.yaml")


def router_policy(kube_cluster):
    """externalTrafficPolicy of openshift-ingress/router-default, as kubectl reads it."""
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")
    return svc["spec"]["externalTrafficPolicy"]


def inventory(lab, tmp_path, edit):
    data = json.loads(Path(lab.inventory_path).read_text())
    edit(data)
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    return path


def node_vars(data, name):
    return data["all"]["children"]["k8s_nodes"]["hosts"][name]


def maps_of(lab, node, info):
    return {name: bpf.bpftool_entries(lab, node, info[name]) for name in ("services", "backends", "reverse_nat")}


# ------------------------------------------------------------------ read-only
def test_cleanup_host_var_on_a_second_node_is_refused_and_the_maps_stay(fleet, ansible, tmp_path):
    info = bpf.cilium_lb_maps(fleet, "node2", services=3, orphans=10, orphan_revnat=1)
    before = maps_of(fleet, "node2", info)
    assert len(before["backends"]) == 3 * 3 + 10 and len(before["reverse_nat"]) == 3 + 1
    inv = inventory(fleet, tmp_path, lambda d: node_vars(d, "node2").update(cilium_maps_cleanup=True))
    for limit in (None, "node2"):  # --limit leaves out the controller's first play: the node play refuses too
        run = ansible.playbook(ROOT / "playbooks" / "triage.yml", inventory=inv, limit=limit,
                               extra_vars={"report_output_dir": str(tmp_path), "triage_cni": "cilium"})
        assert run.rc != 0, run
        assert "node2: cilium_maps_cleanup=True" in run.stdout, run
        # nothing ran on any node: the refusal came first
        assert not [r for r in run.records if r["host"].startswith("node") and r["task"] != REFUSAL], run
    assert maps_of(fleet, "node2", info) == before  # bpftool -j map dump inside node2: not one entry gone
    fleet.node_run("node2", ["find", "/sys/fs/bpf/tc/globals", "-name", "cilium_lb4_*", "-delete"], check=False)


def test_empty_node_group_and_remediate_extra_var_leave_the_service_alone(
        fleet, ansible, api, kube_cluster, tmp_path):
    kc = api.kubeconfig()
    assert router_policy(kube_cluster) == "Local"
    before = len(api.requests)

    def empty(data):
        data["all"]["children"]["k8s_nodes"]["hosts"] = {}
        for group in ("control_plane", "admin_control_plane"):
            data["all"]["children"][group]["hosts"] = {}

    inv = inventory(fleet, tmp_path, empty)
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", inventory=inv,
                           extra_vars={"lb_health_remediate": "cluster", "triage_kubeconfig": str(kc),
                                       "report_output_dir": str(tmp_path)})
    assert run.rc != 0, run
    assert "localhost: lb_health_remediate=cluster" in run.stdout, run
    assert not run.results(task="Switch externalTrafficPolicy of the failing Services"), run
    # the API's own object, read with kubectl; and the API server's audit log: the triage sent no write at all
    assert router_policy(kube_cluster) == "Local"
    assert not [r for r in api.requests[before:] if r["method"] not in ("GET",)]
    assert not (tmp_path / "triage-report.json").exists()


# ------------------------------------------------------------------ coverage, a dead node, no BIRD
@pytest.fixture(scope="module")
def fleet_run(fleet, ansible, tmp_path_factory):
    """One triage with: node1 owns the VIP and has a blackhole route; node2 has no usable Python;
    node4 caches a stale MAC for the VIP; node5 answers until the VIP owners have been read (the step
    right before the nodes' one pass) and then stops; node6's sshd is down from the start. No BIRD
    anywhere, default triage_cni (auto), report_fail_on_critical false."""
    tmp = tmp_path_factory.mktemp("fleet")
    vip = fleet.vip(7)
    arp.bind_vip(fleet, "node1", vip)
    arp.stale_neighbor(fleet, "node4", vip, "02:de:ad:00:be:ef")
    hole = routes.route_blackhole(fleet, "node1", "node3")
    kill_sshd(fleet, "node6")
    inv = inventory(fleet, tmp, lambda d: node_vars(d, "node2").update(ansible_python_interpreter="/nonexistent/python3"))
    record = tmp / "record.jsonl"
    record.write_text("")
    argv = [str(BIN / "ansible-playbook"), "-i", str(inv), str(ROOT / "playbooks" / "triage.yml"), "-e",
            json.dumps({"stale_arp_vips": [vip], "report_output_dir": str(tmp), "report_fail_on_critical": False,
                        # calico and cilium_maps fit no lab node: asked as a menu, not each required to run
                        "report_scenarios": [],
                        "triage_scenarios": ["cni", "calico", "cilium_maps", "pod_network", "connectivity", "stale_arp"]})]
    env = ansible._env(str(record))
    env["ANSIBLE_SSH_ARGS"] = "-o ControlMaster=auto -o ControlPersist=120s -o ConnectTimeout=3"
    with subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        killed = False
        deadline = time.time() + 600
        while proc.poll() is None and time.time() < deadline:
            if not killed and any(OWNERS_TASK in line for line in record.read_text().splitlines()):
                kill_sshd(fleet, "node5")  # from now on node5 is gone
                killed = True
            time.sleep(0.02)
        stdout, stderr = proc.communicate(timeout=60)
    records = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    run = Run(subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr), records)
    yield {"run": run, "killed": killed, "report": json.loads((tmp / "triage-report.json").read_text()), "vip": vip,
           "hole": hole, "out": tmp}
    routes.restore(fleet, hole)
    fleet.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)


def test_the_exit_code_follows_the_findings_not_the_dead_hosts(fleet_run):
    run = fleet_run["run"]
    assert fleet_run["killed"], "the VIP owners were never read"
    assert run.rc == 0, run  # report_fail_on_critical false: critical findings exist, dead hosts are no error
    assert fleet_run["report"]["counts"]["severity"]["critical"] > 0
    assert "failed=0" in run.stdout.split("PLAY RECAP")[1]


def test_every_host_is_reported_with_its_status(fleet_run):
    hosts = fleet_run["report"]["hosts"]
    assert hosts["node1"]["status"] == "reached" and hosts["node3"]["status"] == "reached"
    assert hosts["node4"]["status"] == "reached"
    assert hosts["node2"]["status"] == "no usable Python"
    assert hosts["node6"]["status"] == "unreachable"
    # node5 was lost as its pass started: unreachable, with ssh's own words
    assert hosts["node5"]["status"] == "unreachable", hosts["node5"]
    assert hosts["node5"]["reason"], hosts["node5"]
    assert hosts["localhost"]["status"] == "controller"
    checks = {(f["host"], f["check"]) for f in fleet_run["report"]["findings"]}
    assert {("node2", "triage.no_python"), ("node6", "triage.host_unreachable")} <= checks
    assert any(h == "node5" and c in ("triage.host_unreachable", "triage.host_failed") for h, c in checks)
    for name, info in hosts.items():
        if info["status"] not in ("reached", "controller"):
            assert info["verdict"] == "critical", name  # never ok for what was not checked


def test_every_scenario_is_reported_per_host(fleet_run):
    hosts = fleet_run["report"]["hosts"]
    for name in ("node1", "node3", "node4"):
        scenarios = hosts[name]["scenarios"]
        assert set(scenarios) == {"cni", "calico", "cilium_maps", "pod_network", "connectivity", "stale_arp"}, name
        assert scenarios["calico"]["status"] == "skipped" and scenarios["calico"]["reason"].startswith("not a Calico node")
        assert scenarios["cilium_maps"]["status"] == "skipped" and "not a Cilium node" in scenarios["cilium_maps"]["reason"]
        for scenario in ("cni", "pod_network", "connectivity"):
            assert scenarios[scenario]["status"] == "ran", (name, scenario, scenarios[scenario])
    assert hosts["node4"]["scenarios"]["stale_arp"]["status"] == "ran"
    assert hosts["node1"]["scenarios"]["stale_arp"]["reason"].startswith("not a client of the VIPs")
    # the lost host: none of its scenarios is ok, each says it was not run
    lost = hosts["node5"]["scenarios"]
    assert {name: s["status"] for name, s in lost.items()} == dict.fromkeys(
        ["cni", "calico", "cilium_maps", "pod_network", "connectivity", "stale_arp"], "not run"), lost
    assert all(s["status"] in ("not run", "skipped") for s in hosts["node6"]["scenarios"].values())
    assert fleet_run["report"]["hosts"]["localhost"]["scenarios"]["lb_health"]["reason"].startswith(
        "no Kubernetes credentials (triage_kubeconfig, module_defaults for group/k8snet.triage.kube, K8S_AUTH_*")


def test_the_faults_of_live_nodes_are_found_and_no_bgp_finding_is_critical(fleet_run):
    findings = fleet_run["report"]["findings"]
    checks = {(f["host"], f["check"]) for f in findings}
    assert ("node4", "arp.stale_entry") in checks
    assert any(f["host"] == "node1" and f["check"] == "route.unreachable" for f in findings), \
        sorted(c for c in checks if c[0] == "node1")
    assert not [f for f in findings if f["check"].startswith("bgp.") and f["severity"] == "critical"]
    assert not [f for f in findings if f["check"] == "triage.check_failed" and f["host"] in ("node1", "node3", "node4")]


def test_the_summary_the_json_the_artifacts_and_the_html_say_the_same(fleet_run):
    run = fleet_run["run"]
    assert "NOT CHECKED node2: no usable Python" in run.stdout
    assert "NOT CHECKED node6: unreachable" in run.stdout
    stats = [r for r in run.records if "ansible_stats" in r["result"]]
    assert stats, run
    artifact = stats[-1]["result"]["ansible_stats"]["data"]["k8snet_triage"]
    assert artifact["coverage"] == fleet_run["report"]["coverage"]
    assert artifact["hosts"]["node6"]["status"] == "unreachable"
    html = (fleet_run["out"] / "triage-report.html").read_text()
    assert "coveragetable" in html


def test_with_fail_on_critical_the_run_fails_in_the_report_task(fleet, ansible, tmp_path):
    """The default: critical findings fail the run in the report's own task (rc 2, failed=1 on the
    controller in the recap), with a dead node in the inventory."""
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml",
                           extra_vars={"report_output_dir": str(tmp_path), "triage_scenarios": ["cni"]})
    assert run.rc == 2, run
    recap = run.stdout.split("PLAY RECAP")[1]
    assert [line for line in recap.splitlines() if line.startswith("localhost") and "failed=1" in line], recap
    failed = [r for r in run.records if r["status"] == "failed"]
    assert [r["task"] for r in failed] == ["k8snet.triage.report : Fail when critical findings exist"], failed


# ------------------------------------------------------------------ triage_cni: auto decides per node
CALICO_CONFLIST = {"cniVersion": "0.3.1", "name": "k8s-pod-network",
                   "plugins": [{"type": "calico", "ipam": {"type": "calico-ipam"}}, {"type": "portmap"}]}


def test_cni_auto_decides_per_node_and_an_explicit_calico_keeps_bird_down_critical(fleet, ansible, tmp_path):
    """node1: Calico's CNI config but no BIRD (a Calico node whose BIRD is down); node3: Cilium's pinned
    maps; node4: neither. node5 and node6 are down since the fleet run."""
    kube_faults.cni_files(fleet, "node1", config=CALICO_CONFLIST)
    maps = bpf.cilium_lb_maps(fleet, "node3", services=2, orphans=3)
    try:
        scenarios = ["cni", "calico", "cilium_maps"]
        run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars={
            "report_output_dir": str(tmp_path), "report_fail_on_critical": False, "triage_scenarios": scenarios})
        assert run.rc == 0, run
        hosts = json.loads((tmp_path / "triage-report.json").read_text())["hosts"]
        status = {h: {s: hosts[h]["scenarios"][s]["status"] for s in ("calico", "cilium_maps")} for h in ("node1", "node3", "node4")}
        assert status == {"node1": {"calico": "ran", "cilium_maps": "skipped"},
                          "node3": {"calico": "skipped", "cilium_maps": "ran"},
                          "node4": {"calico": "skipped", "cilium_maps": "skipped"}}, status
        assert hosts["node4"]["scenarios"]["calico"]["reason"].startswith("not a Calico node")
        assert hosts["node4"]["scenarios"]["cilium_maps"]["reason"].startswith("not a Cilium node")
        report = json.loads((tmp_path / "triage-report.json").read_text())
        bgp = {(f["host"], f["check"], f["severity"]) for f in report["findings"] if f["check"].startswith("bgp.")}
        assert bgp == {("node1", "bgp.bird_down", "critical")}, bgp
        assert ("node3", "bpf.orphan_backends") in {(f["host"], f["check"]) for f in report["findings"]}

        # triage_cni: calico: every reached node is a Calico node, a missing BIRD is critical everywhere
        run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars={
            "report_output_dir": str(tmp_path), "report_fail_on_critical": False, "triage_scenarios": ["calico"],
            "triage_cni": "calico"})
        assert run.rc == 0, run
        report = json.loads((tmp_path / "triage-report.json").read_text())
        down = {f["host"] for f in report["findings"] if f["check"] == "bgp.bird_down" and f["severity"] == "critical"}
        assert down == {"node1", "node2", "node3", "node4"}, down
    finally:
        kube_faults.clear_cni_files(fleet, "node1")
        for name in ("services", "backends", "reverse_nat"):
            fleet.node_run("node3", ["rm", "-f", maps[name]], check=False)


# ------------------------------------------------------------------ one findings channel
def test_kube_and_cross_node_findings_reach_the_report_once(fleet, ansible, api, kube_cluster, tmp_path):
    """The API has no kube-dns Service and node6 drops every probe: kube.dns_service_missing (read once
    on the controller), the connectivity matrix's isolated node and the cni role's API findings each
    reach the report exactly once, whatever number of hosts published them."""
    for name in ("node5", "node6"):
        kill_sshd(fleet, name)  # (already down when the fleet run came first)
    # node6 also drops every probe (ICMP and TCP) from the nodes: isolated for the connectivity matrix
    drops = [["INPUT", "-s", str(fleet.network), "-p", proto, "-m", "comment", "--comment", "k8t-trust", "-j", "DROP"]
             for proto in ("icmp", "tcp")]
    for rule in drops:
        fleet.ns_run("node6", ["iptables", "-w", "-I", *rule])
    assert not kube_cluster.kubectl_json("get", "svc", "-A", "-l", "k8s-app=kube-dns")["items"]
    try:
        run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars={
            "report_output_dir": str(tmp_path), "report_fail_on_critical": False,
            "triage_kubeconfig": str(api.kubeconfig()),
            "triage_scenarios": ["cni", "connectivity", "dns"], "triage_api_scenarios": [],
            "report_scenarios": []})  # dns runs nowhere (no DNS Service): not required here
    finally:
        for rule in drops:
            fleet.ns_run("node6", ["iptables", "-w", "-D", *rule], check=False)
    assert run.rc == 0, run
    report = json.loads((tmp_path / "triage-report.json").read_text())
    findings = report["findings"]
    missing = [f for f in findings if f["check"] == "kube.dns_service_missing"]
    assert len(missing) == 1 and missing[0]["scope"] == "fleet" and "node1" in missing[0]["hosts"], missing
    assert report["counts"]["check"]["kube.dns_service_missing"] == 1
    # published by every prober, counted once: node6 is unreachable over SSH too (its sshd killed, then the
    # controller's packets dropped), so its isolation is part of the one root-cause finding about node6
    isolated = sorted(f["subject"] for f in findings if f["check"] == "connectivity.node_isolated")
    down = [f for f in findings if f["check"] == "triage.host_unreachable" and f["subject"] == "node6"]
    assert len(down) == 1 and isolated == [], (isolated, down)
    corroborated = [c["check"] for c in down[0]["evidence"]["corroborated_by"]]
    assert corroborated.count("connectivity.node_isolated") == 1, corroborated
    assert "connectivity.node_isolated" not in report["counts"]["check"]
    # nothing is counted twice: no two findings of the report say the same thing about the same subject
    keys = [(f["check"], str(f["subject"]), f["summary"], f["host"] if f["scope"] == "host" else "") for f in findings]
    assert len(keys) == len(set(keys))
    fleet_keys = [(f["check"], str(f["subject"]), f["summary"]) for f in findings if f["scope"] == "fleet"]
    assert len(fleet_keys) == len(set(fleet_keys))
    assert sum(report["counts"]["severity"].values()) == len(findings)


def test_awx_kubernetes_credential_alone_runs_the_api_steps(fleet, api, kube_cluster, tmp_path):
    """AWX's bearer-token credential injects only K8S_AUTH_HOST / K8S_AUTH_API_KEY (and friends), no
    kubeconfig variable: triage.yml, run through ansible-runner as AWX runs it, still runs every API step
    (the cni role's API half, f5, lb_health) and reports their findings, instead of a green 'skipped'."""
    import ansible_runner
    awx = RealApi(kube_cluster, user="awx")  # AWX's credential: a ServiceAccount token of its own
    private = tmp_path / "runner"
    (private / "inventory").mkdir(parents=True)
    (private / "inventory" / "hosts.json").write_text(Path(fleet.inventory_path).read_text())
    out = tmp_path / "report"
    out.mkdir()
    result = ansible_runner.run(
        private_data_dir=str(private), playbook=str(ROOT / "playbooks" / "triage.yml"), quiet=True,
        limit="localhost:node1:node2:node3",  # the nodes other tests of this module leave up
        extravars={"report_output_dir": str(out), "report_fail_on_critical": False, "triage_scenarios": ["cni"]},
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "KUBECONFIG": "/nonexistent/kubeconfig",
                 "K8S_AUTH_HOST": awx.url, "K8S_AUTH_API_KEY": awx.token,
                 "K8S_AUTH_SSL_CA_CERT": str(kube_cluster.ca_file), "K8S_AUTH_VERIFY_SSL": "true"})
    requests = awx.requests  # the audit log's entries of AWX's ServiceAccount
    nodes = kube_cluster.kubectl_json("get", "nodes")["items"]
    assert result.status == "successful", result.stdout.read()[-3000:]
    report = json.loads((out / "triage-report.json").read_text())
    scenarios = report["hosts"]["localhost"]["scenarios"]
    assert scenarios["f5"]["status"] == "ran" and scenarios["lb_health"]["status"] == "ran", scenarios
    # the cni role's API half ran with the environment's credentials: NetworkUnavailable as kubectl reads it
    theirs = [n["metadata"]["name"] for n in nodes
              if any(c["type"] == "NetworkUnavailable" and c["status"] == "True" for c in n["status"]["conditions"])]
    found = sorted(set(f["subject"].split("/")[0] for f in report["findings"] if f["check"] == "node.network_unavailable"))
    assert theirs and found == sorted(theirs), (found, theirs)
    assert requests and {r["user"] for r in requests} == {awx.username}, "no request carried the K8S_AUTH_API_KEY token"
    assert {r["code"] for r in requests} <= {200, 404}, sorted({(r["path"], r["code"]) for r in requests})


BROKEN_KUBECONFIGS = {
    "missing file": ("missing", None, "does not exist"),
    "wrong context": ("real", "other", "context other"),
    "garbage": ("garbage", None, "cannot"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_KUBECONFIGS))
def test_credentials_that_cannot_be_used_are_an_error_and_never_green(fleet, ansible, api, tmp_path, case):
    """Issue 47 section 6: a triage_kubeconfig that was given and cannot be used (missing file, wrong context,
    garbage) is not "skipped": every API scenario failed, the critical triage.kube_credentials_unusable says why,
    and the run fails even with report_fail_on_critical false; the node-side checks still ran."""
    kind, context, said = BROKEN_KUBECONFIGS[case]
    kubeconfig = tmp_path / "kubeconfig"
    if kind == "garbage":
        kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [}\n")
    elif kind == "real":
        kubeconfig = api.kubeconfig(kubeconfig)  # the real API server's, whose only context is "lab"
    extra = {"report_output_dir": str(tmp_path), "report_fail_on_critical": False, "triage_kubeconfig": str(kubeconfig),
             "triage_scenarios": ["cni"]}
    if context:
        extra["triage_context"] = context
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars=extra)
    assert run.rc != 0, run
    report = json.loads((tmp_path / "triage-report.json").read_text())
    scenarios = report["hosts"]["localhost"]["scenarios"]
    for name in ("f5", "lb_health"):
        assert scenarios[name]["status"] == "failed", scenarios
        assert scenarios[name]["reason"].startswith("the Kubernetes credentials cannot be used: "), scenarios[name]
    [error] = [f for f in report["findings"] if f["check"] == "triage.kube_credentials_unusable"]
    assert error["severity"] == "critical" and error["host"] == "localhost", error
    assert said in error["summary"] and str(kubeconfig) in json.dumps(error), error
    # the run failed on it (not on report_fail_on_critical, which is false), after the report was written
    failed = run.result("Fail when nothing was checked, a scenario asked for ran on no host, or no node was checked",
                        "localhost")
    assert error["summary"] in failed["msg"], failed
    assert report["hosts"]["node1"]["scenarios"]["cni"]["status"] == "ran"


def test_triage_kubeconfig_reaches_the_api_roles(fleet, ansible, api, tmp_path):
    """triage_kubeconfig alone (no K8S_AUTH_*, no ~/.kube/config): the f5 and lb_health roles, whose
    own kubeconfig variables are empty, run against that cluster (the requests reach the real API server: its audit
    log holds them, sent as the kubeconfig's ServiceAccount)."""
    before = len(api.requests)
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", limit="localhost:node1:node2:node3", extra_vars={
        "report_output_dir": str(tmp_path), "report_fail_on_critical": False,
        "triage_kubeconfig": str(api.kubeconfig()), "triage_scenarios": ["cni"]})
    requests = api.requests[before:]
    assert run.rc == 0, run
    scenarios = json.loads((tmp_path / "triage-report.json").read_text())["hosts"]["localhost"]["scenarios"]
    assert scenarios["f5"]["status"] == "ran" and scenarios["lb_health"]["status"] == "ran", scenarios
    assert scenarios["cni"]["status"] == "ran", scenarios
    assert requests and {r["user"] for r in requests} == {api.username}
