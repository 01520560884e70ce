"""The stale_arp job template as AWX runs it: survey answers as AWX passes them (a textarea is one
string, a multiple choice "true"/"false"), dry_run selecting check mode, and the set_stats artifacts.

Every change is verified with ``ip -j neigh`` in the node's namespace (lab.neighbors), never with
arp_check.

The surveys that read the Kubernetes API read the real control plane (tests/lab/cluster.py, network.yaml and
router.yaml loaded by tests/lab/cluster_objects.py) with AWX's Kubernetes credential: a ServiceAccount's token and
the cluster's CA in K8S_AUTH_*.
"""

from __future__ import annotations

import json

import ansible_runner
import pytest

from tests.integration.conftest import ROOT
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import arp

WRONG = "02:de:ad:00:be:ef"
PLAYBOOK = "playbooks/stale_arp.yml"


@pytest.fixture(scope="module")
def vips(lab):
    """Two VIPs held by node1 (control_plane); node2 and node3 are the clients (admin_control_plane)."""
    held = [lab.vip(0), lab.vip(1)]
    for vip in held:
        arp.bind_vip(lab, "node1", vip)
    yield held
    for vip in held:
        lab.ns_run("node1", ["ip", "addr", "del", vip + "/32", "dev", "eth0"], check=False)
        for node in ("node2", "node3"):
            lab.ns_run(node, ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)


def lladdr(lab, node, address):
    entries = lab.neighbors(node, address)
    return entries[0].get("lladdr") if entries else None


def artifacts(run):
    # whichever task published them (the report's report_write action): what AWX stores as artifacts
    stats = [r["result"]["ansible_stats"] for r in run.results() if "ansible_stats" in r["result"]]
    assert len(stats) == 1, run
    assert stats[0]["per_host"] is False
    return stats[0]["data"]["k8snet_triage"]


def test_survey_answers_dry_run_then_real_run(lab, ansible, vips):
    arp.stale_neighbor(lab, "node3", vips[0], WRONG)
    arp.stale_neighbor(lab, "node2", vips[1], WRONG)
    survey = {"stale_arp_vips": "%s\n%s\n" % (vips[0], vips[1]),  # an AWX textarea answer
              "stale_arp_flush": "true", "dry_run": "true"}        # AWX multiple choice answers

    dry = ansible.playbook(PLAYBOOK, survey, diff=True)
    assert dry.rc == 0, dry
    assert lladdr(lab, "node3", vips[0]) == WRONG and lladdr(lab, "node2", vips[1]) == WRONG
    checks = {r["host"]: r["result"] for r in dry.results(task="Flush the stale entries of this client")}
    assert set(checks) == {"node2", "node3"}
    assert checks["node3"]["changed"] and checks["node2"]["changed"]  # what would change, in check mode
    assert "-%s dev eth0 lladdr %s STALE" % (vips[0], WRONG) in dry.stdout
    assert not [h for h, r in checks.items() if "after" in r]  # no re-check of a dry run
    published = artifacts(dry)
    assert published["worst"] == "critical" and published["report"] is None
    stale = {(f["host"], f["subject"]) for f in published["findings"] if f["check"] == "arp.stale_entry"}
    assert stale == {("node3", "%s dev eth0" % vips[0]), ("node2", "%s dev eth0" % vips[1])}
    assert set(published["counts"]["severity"]) == {"ok", "info", "warning", "critical"}

    # --check (AWX's Check job type) wins over dry_run=false: still nothing changes.
    checked = ansible.playbook(PLAYBOOK, dict(survey, dry_run="false"), check=True)
    assert checked.rc == 0, checked
    assert lladdr(lab, "node3", vips[0]) == WRONG and lladdr(lab, "node2", vips[1]) == WRONG

    real = ansible.playbook(PLAYBOOK, dict(survey, dry_run="false"))
    assert real.rc == 0, real
    for node, vip in (("node3", vips[0]), ("node2", vips[1])):
        assert lladdr(lab, node, vip) in (None, lab.node("node1").mac), (node, lab.neighbors(node, vip))
    # each flushed client was re-checked (the flush's re-read once its deletes were done)
    assert {r["host"] for r in real.results(task="Flush the stale entries of this client")
            if r["result"].get("after") is not None} == {"node2", "node3"}
    assert not [f for f in artifacts(real)["findings"] if f["check"] == "arp.stale_entry"]


def test_survey_flush_false_string_does_not_flush(lab, ansible, vips):
    """A multiple choice answers "false" as a string: Jinja would call it true; the role must not flush."""
    arp.stale_neighbor(lab, "node3", vips[0], WRONG)
    run = ansible.playbook(PLAYBOOK, {"stale_arp_vips": vips[0], "stale_arp_flush": "false", "dry_run": "false"})
    assert run.rc == 0, run
    assert lladdr(lab, "node3", vips[0]) == WRONG
    assert not any(r["result"].get("changed") for r in run.results(action="arp_check"))
    lab.ns_run("node3", ["ip", "neigh", "del", vips[0], "dev", "eth0"], check=False)


def test_survey_force_deletes_a_pinned_stale_entry_only_when_answered_true(lab, ansible, vips):
    """The survey's force question (issue 47: it had none, so a pinned stale entry could not be flushed from
    AWX): its default, "false", keeps a PERMANENT entry with the wrong MAC (the host then fails its re-check);
    "true" deletes it. ``ip -j neigh`` in node3's namespace is the witness."""
    spec = dict((item["variable"], item) for item in json.loads((ROOT / "extensions/awx/surveys/stale_arp.json").read_text())["spec"])
    assert spec["stale_arp_force"]["default"] == "false"
    arp.stale_neighbor(lab, "node3", vips[0], WRONG, state="permanent")
    survey = {"stale_arp_vips": vips[0] + "\n", "stale_arp_flush": "true", "dry_run": "false"}
    try:
        kept = ansible.playbook(PLAYBOOK, dict(survey, stale_arp_force=spec["stale_arp_force"]["default"]))
        assert kept.rc != 0, kept  # the re-check still sees the wrong MAC
        [entry] = lab.neighbors("node3", vips[0])
        assert entry["lladdr"] == WRONG and entry["state"] == ["PERMANENT"], entry
        forced = ansible.playbook(PLAYBOOK, dict(survey, stale_arp_force="true"))
        assert forced.rc == 0, forced
        assert lladdr(lab, "node3", vips[0]) in (None, lab.node("node1").mac), lab.neighbors("node3", vips[0])
        assert not any(e.get("state") == ["PERMANENT"] for e in lab.neighbors("node3", vips[0]))
    finally:
        lab.ns_run("node3", ["ip", "neigh", "del", vips[0], "dev", "eth0"], check=False)


# ------------------------------------------------------------------ every shipped survey, as AWX runs it
SURVEYS = sorted((ROOT / "extensions" / "awx" / "surveys").glob("*.json"))


def awx_extra_vars(survey, answers, required):
    """What AWX passes: a textarea / text / multiple choice answer as a string, a multiselect as a list,
    an empty optional answer not at all; ``answers`` overrides the defaults (strings, as typed)."""
    out = {}
    for item in survey["spec"]:
        value = answers.get(item["variable"], item.get("default", ""))
        if value in ("", []) and item["required"]:
            value = required[item["variable"]]  # AWX does not launch without an answer
        if item["type"] == "multiselect" and isinstance(value, str):
            value = [v for v in value.splitlines() if v.strip()]
        if value in ("", []) and not item["required"]:
            continue
        out[item["variable"]] = value
    return out


def survey_answers(lab, name, vip):
    """Non-default answers as a user types them in AWX: textareas with several lines, booleans as text."""
    return {
        "triage": {"stale_arp_vips": "%s\n%s\n" % (vip, lab.vip(9)), "triage_scenarios": "cni\nstale_arp\ndns",
                   "triage_cni": "auto", "report_fail_on_critical": "false"},
        "stale_arp": {"stale_arp_vips": "%s\n" % vip, "dry_run": "true"},
        "dns": {"dns_host_resolvers": "false", "dns_names": "kubernetes.default.svc.cluster.local\n",
                "dns_protocols": "udp"},
        "cni": {"cni_daemonsets": "calico-node\ncilium\n", "cni_namespaces": "kube-system, calico-system"},
        "lb_health": {"lb_health_remediate": "cluster", "lb_health_remediate_services": "openshift-ingress/router-default\n",
                      "dry_run": "true"},
        "f5": {"f5_namespaces": "kube-system\n"},
        "cilium_maps": {"cilium_maps_cleanup": "false", "dry_run": "false"},
        "pod_network": {"pod_network_destinations": "%s\n" % lab.node("node2").ip},
        "firewall_drops": {"firewall_drops_backends": "legacy\nnft"},
        "calico": {"calico_node_to_node_mesh": "false"},
    }.get(name, {})


@pytest.fixture(scope="module")
def awx_api(kube_cluster):
    """network.yaml and router.yaml on the real API server; AWX's credential is the token of ServiceAccount
    k8snet-lab/awx (cluster-admin, as the job's credential usually is) and the cluster's real CA."""
    return RealApi(kube_cluster, "network.yaml", "router.yaml", user="awx")


def runner_artifacts(result):
    stats = [e["event_data"] for e in result.events if e.get("event") == "playbook_on_stats"]
    assert stats, "ansible-runner wrote no playbook_on_stats event"
    return (stats[-1].get("artifact_data") or {}).get("k8snet_triage")


@pytest.mark.parametrize("answers", ["defaults", "typed"])
@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_every_survey_runs_with_the_awx_credential(lab, vips, awx_api, tmp_path, path, answers):
    """Each shipped survey, answered with its defaults and with typed text (textareas of several lines,
    booleans as "true"/"false"), run through ansible-runner with only K8S_AUTH_* (AWX's Kubernetes
    credential) in the environment: the run reaches its job artifacts (the report's summary), and the
    triage its report files."""
    survey = json.loads(path.read_text())
    given = survey_answers(lab, path.stem, vips[0]) if answers == "typed" else {}
    extra = awx_extra_vars(survey, given, {"stale_arp_vips": vips[0]})
    out = tmp_path / "report"
    out.mkdir()
    extra["report_output_dir"] = str(out)
    private = tmp_path / "runner"
    before = len(awx_api.requests)
    (private / "inventory").mkdir(parents=True)
    (private / "inventory" / "hosts.json").write_text(open(lab.inventory_path).read())
    result = ansible_runner.run(
        private_data_dir=str(private), playbook=str(ROOT / "playbooks" / (path.stem + ".yml")), quiet=True,
        extravars=extra,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "KUBECONFIG": "/nonexistent/kubeconfig",
                 "K8S_AUTH_HOST": awx_api.url, "K8S_AUTH_API_KEY": awx_api.token,
                 "K8S_AUTH_SSL_CA_CERT": str(awx_api.cluster.ca_file), "K8S_AUTH_VERIFY_SSL": "true"})
    stdout = result.stdout.read()
    published = runner_artifacts(result)
    assert published is not None, stdout[-3000:]
    checks = published["counts"]["check"]
    # only the triage with its defaults fails: critical findings and report_fail_on_critical true
    assert (result.rc != 0) == (path.stem == "triage" and answers == "defaults"), stdout[-3000:]
    if path.stem == "dns":
        # the servers came from the API through K8S_AUTH_* (network.yaml's kube-dns pod without an IP),
        # and were asked also with dns_host_resolvers "false"
        assert checks.get("kube.dns_pod_without_ip") == 1 and checks.get("dns.all_servers_fail") == 3, checks
    if path.stem == "triage":
        report = json.loads((out / "triage-report.json").read_text())
        assert report["hosts"]["localhost"]["scenarios"]["lb_health"]["status"] == "ran", report["hosts"]["localhost"]
    # the real API server refused none of the run's requests with AWX's credential (its audit log)
    refused = [r for r in awx_api.requests[before:] if r["code"] >= 400 and r["code"] != 404]
    assert not refused, refused
