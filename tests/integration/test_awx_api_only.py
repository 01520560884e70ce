"""Issue 47: a cluster-level AWX job - a Kubernetes credential, an inventory whose k8s_nodes group is empty or
absent - runs the triage's API half and says plainly that no node was checked; without a credential it is
refused, saying what to add; a Kubernetes credential that was given but cannot be used is an error, not a skip.

Driven as AWX drives it: ansible-runner, only the credential's K8S_AUTH_* in the environment, an inventory with
empty groups, and the job's artifacts (the playbook_on_stats event) and report files read back. The API is the real
control plane (tests/lab/cluster.py) with the stand-in's cluster.yaml and cni.yaml loaded into it
(tests/lab/cluster_objects.py); the credential is a real ServiceAccount token. What the API half found is checked
against the API server's audit log (the credential's requests) and kubectl's view of the same objects.
"""

from __future__ import annotations

import json

import ansible_runner
import pytest

from tests.integration.conftest import ROOT
from tests.lab.cluster_objects import RealApi


@pytest.fixture(scope="module")
def api(kube_cluster):
    """The cluster's objects, and the ServiceAccount k8snet-lab/awx whose token is the job's credential."""
    return RealApi(kube_cluster, "cluster.yaml", "cni.yaml", user="awx")


def credential(api):
    """What AWX's "Kubernetes or OpenShift API Bearer Token" credential injects, and nothing else."""
    return {"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": api.token, "K8S_AUTH_SSL_CA_CERT": str(api.cluster.ca_file),
            "K8S_AUTH_VERIFY_SSL": "true"}


def job(tmp_path, inventory, extra=None, env=None):
    """One AWX job of triage.yml through ansible-runner: (result, stdout, artifacts, report dir)."""
    out = tmp_path / "report"
    out.mkdir()
    private = tmp_path / "runner"
    (private / "inventory").mkdir(parents=True)
    (private / "inventory" / "hosts.json").write_text(json.dumps(inventory))
    envvars = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "KUBECONFIG": "/nonexistent/kubeconfig"}
    envvars.update(env or {})
    result = ansible_runner.run(private_data_dir=str(private), playbook=str(ROOT / "playbooks" / "triage.yml"),
                                quiet=True, extravars=dict({"report_output_dir": str(out)}, **(extra or {})),
                                envvars=envvars)
    stdout = result.stdout.read()
    stats = [e["event_data"] for e in result.events if e.get("event") == "playbook_on_stats"]
    published = (stats[-1].get("artifact_data") or {}).get("k8snet_triage") if stats else None
    return result, stdout, published, out


def empty_groups(*names):
    """An inventory whose groups are all empty (AWX's inventory of a cluster whose nodes are not in it yet)."""
    return {"all": {"children": dict((name, {"hosts": {}}) for name in names)}}


def network_unavailable(api):
    """The nodes whose NetworkUnavailable condition is True, as kubectl sees them (not through our code)."""
    return sorted(n["metadata"]["name"] for n in api.cluster.kubectl_json("get", "nodes")["items"]
                  if any(c["type"] == "NetworkUnavailable" and c["status"] == "True"
                         for c in n["status"]["conditions"]))


@pytest.mark.parametrize("inventory, why", [
    (empty_groups("k8s_nodes", "control_plane", "admin_control_plane"), "group k8s_nodes has no host"),
    (empty_groups("control_plane", "cluster_lab"), "the inventory has no group k8s_nodes"),
], ids=["k8s_nodes empty", "k8s_nodes absent"])
def test_credential_and_no_node_runs_the_api_half_and_is_not_green(api, tmp_path, inventory, why):
    before = len(api.requests)
    result, stdout, published, out = job(tmp_path, inventory, {"report_fail_on_critical": "false"}, credential(api))
    requests = api.requests[before:]  # the credential's ServiceAccount's, from the API server's audit log

    # the API half ran with the credential's token alone: nodes, the CNI pods, webhooks, f5's and lb_health's reads
    assert requests and {r["user"] for r in requests} == {api.username}, requests
    assert not [r for r in requests if r["code"] in (401, 403)], requests  # nothing refused
    paths = set(r["path"] for r in requests)
    assert "/api/v1/nodes" in paths, sorted(paths)
    assert any(p.endswith("/pods") for p in paths), sorted(paths)
    assert any(p.endswith(("/validatingwebhookconfigurations", "/mutatingwebhookconfigurations")) for p in paths), \
        sorted(paths)
    assert any(p.endswith("/configmaps") for p in paths), sorted(paths)  # f5
    assert any(p.endswith("/services") for p in paths), sorted(paths)  # lb_health and the Service reads

    # ... and its findings are the cluster's: NetworkUnavailable on exactly the nodes kubectl shows with it
    report = json.loads((out / "triage-report.json").read_text())
    theirs = network_unavailable(api)
    found = sorted(set(f["subject"].split("/")[0] for f in report["findings"]
                       if f["check"] == "node.network_unavailable"))
    assert theirs and found == theirs, (found, theirs)
    controller = report["hosts"]["localhost"]["scenarios"]
    assert controller["f5"]["status"] == "ran" and controller["lb_health"]["status"] == "ran", controller
    assert controller["cni"]["status"] == "ran" and controller["kube"]["status"] == "ran", controller

    # the coverage says plainly that no node was checked, and why
    assert report["coverage"]["nodes"] == {"group": "k8s_nodes", "hosts": 0, "checked": 0, "reason": why}, \
        report["coverage"]
    [gap] = [f for f in report["findings"] if f["check"] == "triage.no_node_checked"]
    assert gap["severity"] == "critical" and gap["summary"].startswith("no node was checked: " + why), gap
    assert "NO NODE CHECKED: " + why in stdout

    # never green, even with report_fail_on_critical false: the job fails after publishing its artifacts
    assert result.rc != 0 and result.status == "failed", stdout[-3000:]
    assert "no node was checked: " + why in stdout
    assert published is not None, stdout[-3000:]
    assert published["coverage"]["nodes"]["checked"] == 0
    assert published["counts"]["check"].get("triage.no_node_checked") == 1, published["counts"]
    assert published["counts"]["check"].get("node.network_unavailable") == len(theirs), published["counts"]
    assert published["report"] == str(out / "triage-report.html")


def test_no_credential_and_no_node_is_refused_saying_what_to_add(api, tmp_path):
    before = len(api.requests)
    result, stdout, published, out = job(tmp_path, empty_groups("k8s_nodes", "control_plane"))
    said = " ".join(stdout.split())
    assert result.rc != 0, stdout[-3000:]
    assert "triage_nodes_group=k8s_nodes: the group has no host" in said, said[-2000:]
    # what to add: hosts in a group (here there is none with hosts: said, never an empty list), or a credential
    assert "the inventory has no group with hosts: add the hosts to the group named" in said, said[-2000:]
    assert "has hosts: ;" not in said and not said.rstrip().endswith("has hosts:")
    assert "give a Kubernetes credential that works: no Kubernetes credentials (triage_kubeconfig" in said, said[-2000:]
    # refused before anything ran: no report, no artifact, no request
    assert published is None and not list(out.iterdir())
    assert len(api.requests) == before


def test_unusable_credential_and_no_node_is_refused(api, tmp_path):
    result, stdout, published, out = job(tmp_path, empty_groups("k8s_nodes"),
                                         {"triage_kubeconfig": str(tmp_path / "missing-kubeconfig")})
    said = " ".join(stdout.split())
    assert result.rc != 0 and published is None and not list(out.iterdir()), stdout[-3000:]
    assert "triage_nodes_group=k8s_nodes: the group has no host" in said
    assert "give a Kubernetes credential that works: the Kubernetes credentials cannot be used: " in said, said[-2000:]
    assert "missing-kubeconfig does not exist" in said, said[-2000:]
