"""Logs and events as evidence: node_logs over real SSH on log files written into lab nodes (the lab
nodes run no journald, so the file path is the one exercised here; the journal reader is unit-tested on
journalctl's JSON), kube_logs against the real control plane (tests/lab/cluster.py, the fixtures loaded by
tests/lab/cluster_objects.py) for events, RBAC and what it asks of the API, and the logs role.  Independent
readers: the file as an SSH session sees it, kubectl from the same release, and the API server's audit log.

Container logs through a real kubelet: tests/integration/test_real_kubelet.py (a crashed calico-node's previous log
and CoreDNS's errors, printed by real containers, read by kube_logs through the API server from the kubelet). Here
the fixtures' pods have no kubelet at first: their log reads are the real API server's 500, said as such. Then
test_logs_role_gives_each_node_its_findings runs real kubelets on node1 and node2 (tests/lab/node_agent.py), the
fixtures' pods of those nodes replaced by real containers printing the lines tests/kube_api/logs/ibm_cycle.yaml holds
(calico-node-m4q8z crashes once, so its lines are its previous container's), and the logs role joins what kube_logs
read through the API server -> kubelet path to the node-side findings; node3 keeps no kubelet."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.kube_api import FIXTURES, load_yaml
from tests.kube_api.helpers import checks
from tests.kube_api.store import shift_to_now
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import logs as log_faults
from tests.lab.node_agent import BUSYBOX_IMAGE, NodeAgent

LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"
HOST_VAR_LOG = sorted(os.listdir("/var/log"))
FILES = ("cluster.yaml", "cni.yaml", "events.yaml")


def stamp(seconds_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - seconds_ago))


def klog(seconds_ago):
    return time.strftime("%m%d %H:%M:%S.000000", time.gmtime(time.time() - seconds_ago))


def fresh(objects):
    """Fixture objects with their Events moved to just before now (kube_logs reads the last hour)."""
    return shift_to_now(objects, {})[0]


# A crashed container's previous log: the first run prints the lines and exits 1, the next prints the current
# container's first line and sleeps (the kubelet keeps the previous run's log for ``previous=true``).
CRASH_ONCE = ('if [ -e /state/ran ]; then echo "$1"; exec sleep 3600; fi; '
              'touch /state/ran; shift; printf "%s\\n" "$@"; exit 1')
PRINT = 'printf "%s\\n" "$@"; exec sleep 3600'
KUBELET_NODES = ("node1", "node2")  # the nodes whose pods' logs the fixtures hold (tests/kube_api/logs/ibm_cycle.yaml)


def runnable(fixture_pod, logs):
    """The fixture's pod as a real container: same name, namespace, labels, node and container names, the lab's
    busybox printing the log lines ibm_cycle.yaml holds for it (calico's startup.go and CoreDNS's errors plugin,
    cited there); its status is the kubelet's."""
    meta = fixture_pod["metadata"]
    containers = []
    for c in fixture_pod["spec"]["containers"]:
        key = (meta["namespace"], meta["name"], c["name"])
        item = [i for i in logs if (i["namespace"], i["pod"], i["container"]) == key]
        lines = [text for _stamp, text in item[0]["lines"]] if item else ["started"]
        previous = bool(item and item[0].get("previous"))
        main = {"name": c["name"], "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                "command": ["sh", "-c", CRASH_ONCE if previous else PRINT, "sh"],
                "args": [lines[0], *lines] if previous else lines}
        if previous:
            main["volumeMounts"] = [{"name": "state", "mountPath": "/state"}]
        containers.append(main)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels", {})},
            "spec": {"nodeName": fixture_pod["spec"]["nodeName"], "terminationGracePeriodSeconds": 1,
                     "automountServiceAccountToken": False, "containers": containers,
                     "volumes": [{"name": "state", "emptyDir": {}}]}}


@pytest.fixture(scope="module")
def kubelets(real, kube_cluster):
    """Real kubelets on node1 and node2 (tests/lab/node_agent.py), the fixtures' pods of those nodes replaced by
    real containers printing the lines the fixtures' logs hold; node3 keeps no kubelet (its calico-node stays
    Pending, its CoreDNS pod with only its FailedCreatePodSandBox event)."""
    logs = yaml.safe_load(LOGS.read_text())
    pods = [o for o in load_yaml([FIXTURES / n for n in FILES])
            if o["kind"] == "Pod" and o["spec"].get("nodeName") in KUBELET_NODES]
    for p in pods:  # no kubelet ran them yet: gone at once
        kube_cluster.kubectl("-n", p["metadata"]["namespace"], "delete", "pod", p["metadata"]["name"],
                             "--grace-period=0", "--force", "--ignore-not-found")
    agents = []
    try:
        for node in KUBELET_NODES:
            agents.append(NodeAgent(kube_cluster, node).start(timeout=300))
        kube_cluster.kubectl("apply", "-f", "-", input="\n".join(json.dumps(runnable(p, logs)) for p in pods))
        yield agents, pods
    finally:
        for agent in agents:
            agent.stop()


@pytest.fixture(scope="module")
def real(lab, kube_cluster):
    """The fixtures on the real API server, read with a cluster-admin ServiceAccount's token."""
    api = RealApi(kube_cluster)
    api.loader.load(fresh(load_yaml([FIXTURES / n for n in FILES])))
    return api


@pytest.fixture()
def node_files(lab):
    yield
    for node in lab.nodes:
        log_faults.clear_node_logs(lab, node.name)
    assert sorted(os.listdir("/var/log")) == HOST_VAR_LOG  # the host's /var/log was never written


def test_node_logs_reads_the_tail_of_the_files_over_ssh(lab, ansible, node_files):
    old, new = 7200, 20
    new_stamp = klog(new)
    lines = ["I%s   2150 kubelet.go:1960] filler line %d" % (klog(old), i) for i in range(3000)]
    lines += [
        'E%s   2150 kubelet.go:2373] "Container runtime network not ready" networkReady="NetworkReady=false '
        'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"' % klog(old),
        'E%s   2150 kubelet.go:2373] "Container runtime network not ready" networkReady="NetworkReady=false '
        'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"' % new_stamp,
        'E%s   2150 kubelet_node_status.go:549] "Error updating node status, will retry" err="error getting node '
        '\\"node2\\": Get \\"https://%s:6443/api/v1/nodes/node2?timeout=10s\\": net/http: TLS handshake timeout" '
        'Authorization="Bearer s3cr3t-token-value"' % (klog(new - 5), lab.vip(0)),
    ]
    log_faults.node_log_file(lab, "node2", "/var/log/kubelet.log", lines)
    log_faults.empty_node_logs(lab, "node1")
    # independent readers: what an SSH session on the node sees, and that no journald runs there
    assert lab.ssh("node2", "grep -c NetworkPluginNotReady /var/log/kubelet.log").stdout.strip() == "2"
    assert lab.ssh("node2", "wc -l < /var/log/kubelet.log").stdout.strip() == "3003"
    assert lab.ssh("node2", "test -S /run/systemd/journal/socket", check=False).returncode != 0
    assert lab.ssh("node1", "ls -A /var/log").stdout.strip() == ""

    results = ansible.module("node1:node2", "node_logs", {"since": 600, "max_bytes": 65536,
                                                          "node_name": "{{ inventory_hostname }}"})
    two, one = results["node2"], results["node1"]
    assert not two["failed"] and two["source"] == "files"
    row = [r for r in two["read"] if r["origin"] == "/var/log/kubelet.log"][0]
    assert row["truncated"] and row["bytes"] == 65536  # only the tail, within the size bound
    assert row["lines"] == 2  # the lines of the last 600 s (the old filler and the old match are outside)
    assert checks(two["findings"]) == [("log.apiserver_tls_handshake_timeout", "node2"),
                                       ("log.cni_not_initialized", "node2")]
    cni = [f for f in two["findings"] if f["check"] == "log.cni_not_initialized"][0]
    assert cni["evidence"]["count"] == 1 and cni["evidence"]["lines"][0]["time"] == new_stamp
    assert cni["evidence"]["lines"][0]["origin"] == "/var/log/kubelet.log"
    tls = [f for f in two["findings"] if f["check"] == "log.apiserver_tls_handshake_timeout"][0]
    assert tls["evidence"]["targets"] == ["%s:6443" % lab.vip(0)] and tls["layer"] == "control-plane"
    assert "s3cr3t-token-value" not in str(two) and "Bearer ***" in tls["evidence"]["lines"][0]["text"]
    assert [r["status"] for r in two["read"]] == ["read", "missing", "missing"]
    assert checks(one["findings"]) == [("log.nothing_read", "node1")]


def test_symlinks_out_of_var_log_are_skipped_and_bad_paths_are_refused(lab, ansible, node_files):
    log_faults.node_log_file(lab, "node3", "/var/log/syslog", symlink_to="/etc/passwd")
    assert lab.ssh("node3", "readlink /var/log/syslog").stdout.strip() == "/etc/passwd"
    result = ansible.module("node3", "node_logs", {"source": "files", "node_name": "node3"})["node3"]
    assert not result["failed"]
    row = [r for r in result["read"] if r["origin"] == "/var/log/syslog"][0]
    assert row["status"] == "skipped" and row["note"].startswith("resolves to /etc/passwd, outside /var/log")
    assert checks(result["findings"]) == [("log.file_skipped", "node3"), ("log.nothing_read", "node3")]
    assert "root:" not in str(result)
    result = ansible.module("node3", "node_logs", {"node_log_files": ["/var/log/../../etc/shadow"]})["node3"]
    assert result["failed"] and "'..' segments are not allowed" in result["msg"]


def test_a_fifo_a_relocated_log_a_nul_hole_and_duplicates_keep_kubelets_findings(lab, ansible, node_files):
    """The default files as a node can leave them: kubelet.log truncated by copytruncate while kubelet kept
    its 2 MiB offset (a sparse NUL hole, then the new line), syslog a FIFO nobody writes, messages moved
    elsewhere behind a symlink; and kubelet.log given again under a second name."""
    line = ('E%s   2150 kubelet.go:2373] "Container runtime network not ready" networkReady="NetworkReady=false '
            'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"' % klog(20))
    log_faults.node_log_file(lab, "node3", "/var/log/messages", symlink_to="/etc/passwd")
    lab.node_run("node3", ["sh", "-c", 'truncate -s 2M /var/log/kubelet.log && printf "%s\\n" "$1" >> /var/log/kubelet.log '
                           "&& mkfifo /var/log/syslog && ln -s kubelet.log /var/log/kubelet-current.log", "sh", line])
    # independent readers: what an SSH session on the node sees
    assert lab.ssh("node3", "stat -c %F /var/log/syslog").stdout.strip() == "fifo"
    size, blocks = lab.ssh("node3", "stat -c '%s %b' /var/log/kubelet.log").stdout.split()
    assert int(size) == 2 * 1024 * 1024 + len(line) + 1 and int(blocks) * 512 < 64 * 1024  # sparse: a hole
    assert lab.ssh("node3", "head -c 2097152 /var/log/kubelet.log | tr -d '\\000' | wc -c").stdout.strip() == "0"
    assert lab.ssh("node3", "tr -d '\\000' < /var/log/kubelet.log").stdout == line + "\n"
    assert lab.ssh("node3", "stat -L -c %i /var/log/kubelet-current.log").stdout == \
        lab.ssh("node3", "stat -c %i /var/log/kubelet.log").stdout
    # a writer waiting on the FIFO: opening it for reading (even non-blocking) would let it through
    node = lab.node("node3")
    writer = subprocess.Popen(["nsenter", "-t", str(node.sshd_pid), "-m", "--", "sh", "-c",
                               "echo forged > /var/log/syslog && touch /var/log/fifo-was-opened"])
    try:
        started = time.monotonic()
        result = ansible.module("node3", "node_logs", {"since": 600, "node_name": "{{ inventory_hostname }}"})["node3"]
        assert time.monotonic() - started < 60
        assert not result["failed"] and result["source"] == "files"
        assert [(r["origin"], r["status"]) for r in result["read"]] == [
            ("/var/log/kubelet.log", "read"), ("/var/log/syslog", "skipped"), ("/var/log/messages", "skipped")]
        kubelet, syslog, messages = result["read"]
        assert kubelet["lines"] == 1 and kubelet["note"].startswith("%d NUL bytes skipped" % (1024 * 1024 - len(line) - 1))
        assert syslog["note"].startswith("is a FIFO (named pipe), not a regular file")
        assert messages["note"].startswith("resolves to /etc/passwd, outside /var/log")
        assert checks(result["findings"]) == [("log.cni_not_initialized", "node3"), ("log.file_skipped", "node3")]
        cni = result["findings"][0]["evidence"]
        assert cni["count"] == 1 and cni["lines"][0]["origin"] == "/var/log/kubelet.log"
        assert "root:" not in str(result) and "forged" not in str(result)
        assert writer.poll() is None  # still waiting: the FIFO was never opened
        assert lab.ssh("node3", "test -e /var/log/fifo-was-opened", check=False).returncode != 0

        files = ["/var/log/kubelet.log", "/var/log/kubelet-current.log", "/var/log/kubelet.log"]
        result = ansible.module("node3", "node_logs", {"since": 600, "node_log_files": files})["node3"]
        assert [r["status"] for r in result["read"]] == ["read", "duplicate", "duplicate"]
        assert all(r["same_as"] == "/var/log/kubelet.log" for r in result["read"][1:])
        assert result["findings"][0]["evidence"]["count"] == 1  # counted once, not three times
    finally:
        # release the writer (it proves a reader would have let it through) and make sure it has ended
        lab.node_run("node3", ["timeout", "10", "cat", "/var/log/syslog"], check=False)
        try:
            writer.wait(timeout=15)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait(timeout=5)
    assert lab.ssh("node3", "test -e /var/log/fifo-was-opened", check=False).returncode == 0


def test_kube_logs_reads_the_events_and_asks_the_logs_of_the_real_api_server(lab, ansible, kube_cluster, real):
    """The events' findings from the real API server's field selectors; the container logs asked where they exist
    (the previous container only where one terminated), bounded by the API server; each read its 500 (no kubelet),
    said as a read that failed naming the kubelet it needs."""
    events = kube_cluster.kubectl_json("get", "events", "-n", "kube-system", "--field-selector",
                                       "involvedObject.name=coredns-5d78c9869d-p8k4n")["items"]
    assert [e["reason"] for e in events] == ["FailedCreatePodSandBox"]
    before = len(real.requests)
    result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(real.kubeconfig()),
                                                       "nodes": ["node2", "node3"]})["localhost"]
    assert not result["failed"], result
    assert checks(result["findings"]) == [
        ("log.cni_not_initialized", "node3"),
        ("log.not_readable", "cluster"),
        ("log.pod_not_started", "node3/calico-node-z9t5r"),  # Pending, no log, no event says why
        ("log.pod_sandbox_failed", "node3/coredns-5d78c9869d-p8k4n"),
    ], result["findings"]
    # what was asked of the API, as its audit log holds it (each read retried by the client: a 500 is retried)
    logs = [r for r in real.requests[before:] if r["path"].endswith("/log")]
    asked = sorted({(r["parts"][5], r["query"]["previous"]) for r in logs})
    assert asked == [("calico-node-m4q8z", "true"), ("coredns-5d78c9869d-h2x7q", "false")], logs
    assert all(r["query"]["tailLines"] == "200" and r["query"]["sinceSeconds"] == "3600"
               and r["query"]["limitBytes"] == "262144" and r["query"]["timestamps"] == "true" for r in logs)
    assert all(r["code"] == 500 for r in logs), logs
    # node1's calico-node is not on a node asked for
    assert not any("calico-node-7xk2p" in r["path"] for r in logs)
    unreadable = [f for f in result["findings"] if f["check"] == "log.not_readable"][0]
    assert unreadable["evidence"]["kubelets_unreachable"] == [{"node": "node1", "port": 10250},
                                                              {"node": "node2", "port": 10250}], unreadable
    assert "port 10250" in unreadable["remediation"], unreadable


def test_kube_logs_without_rbac_on_pods_log_says_so(lab, ansible, kube_cluster, real):
    """A ServiceAccount whose ClusterRole reads pods and events but not pods/log: the real API server's 403."""
    kube_cluster.apply([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": "k8snet-events-only"},
                         "rules": [{"apiGroups": [""], "resources": ["pods", "events", "nodes", "namespaces"],
                                    "verbs": ["get", "list"]},
                                   {"apiGroups": ["apps"], "resources": ["daemonsets", "replicasets", "deployments"],
                                    "verbs": ["get", "list"]}]}])
    events_only = RealApi(kube_cluster, user="events-only", role="k8snet-events-only")
    # independent reader: kubectl as that ServiceAccount (the admin impersonating it)
    denied = kube_cluster.kubectl("--as", events_only.username, "-n", "kube-system", "logs", "--previous",
                                  "calico-node-m4q8z", "-c", "calico-node", check=False)
    assert denied.returncode != 0 and 'cannot get resource "pods/log"' in denied.stderr, denied.stderr
    result = ansible.module("localhost", "kube_logs", {"kubeconfig": str(events_only.kubeconfig()),
                                                       "nodes": ["node2"], "events": False})["localhost"]
    assert not result["failed"]
    assert checks(result["findings"]) == [("log.no_signature", "cluster"), ("log.not_readable", "cluster")]
    unreadable = [f for f in result["findings"] if f["check"] == "log.not_readable"][0]
    error = unreadable["evidence"]["errors"][0]
    assert 'cannot get resource "pods/log"' in error and "403" in error, error
    assert "kubelets_unreachable" not in unreadable["evidence"]
    # the API server's audit log: every log read refused once (a 403 is not retried)
    refused = [(r["path"], r["query"].get("previous"), r["code"]) for r in events_only.requests
               if r["path"].endswith("/log")]
    assert refused and {code for _p, _q, code in refused} == {403} and len(set(refused)) == len(refused), refused
    assert unreadable["summary"].startswith("%d container logs could not be read" % len(refused)), unreadable


def test_logs_role_gives_each_node_its_findings(lab, ansible, kube_cluster, real, kubelets, node_files):
    _agents, pods = kubelets

    def restarted():
        status = kube_cluster.kubectl_json("-n", "kube-system", "get", "pod", "calico-node-m4q8z")["status"]
        main = (status.get("containerStatuses") or [{}])[0]
        return main.get("restartCount", 0) >= 1 and "running" in main.get("state", {}) and main
    kube_cluster.wait_for("calico-node-m4q8z restarted once and running", restarted, timeout=180)
    for p in pods:
        name = p["metadata"]["name"]
        kube_cluster.wait_for(f"{name} running", lambda n=name: kube_cluster.kubectl_json(
            "-n", "kube-system", "get", "pod", n)["status"].get("phase") == "Running", timeout=180)
    # independent reader: kubectl logs through the same API server -> kubelet path
    previous = kube_cluster.kubectl("-n", "kube-system", "logs", "--previous", "calico-node-m4q8z", "-c",
                                    "calico-node").stdout
    assert previous.count("Failed to set NetworkUnavailable") == 2, previous
    log_faults.node_log_file(lab, "node3", "/var/log/syslog", [
        "%s node3 kernel: nf_conntrack: table full, dropping packet" % time.strftime("%b %e %H:%M:%S", time.gmtime())])
    run = ansible.playbook("k8snet.triage.logs",
                           extra_vars={"logs_kubeconfig": str(real.kubeconfig()), "logs_since": 900})
    assert run.rc == 0, run
    assert len(run.results(action="kube_logs")) == 1  # once, on the controller
    facts = {}
    for r in run.results(action="set_fact"):
        facts.setdefault(r["host"], {}).update(r["result"].get("ansible_facts") or {})
    assert ("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z") in checks(facts["node2"]["logs_findings"])
    assert checks(facts["node3"]["logs_findings"]) == [
        ("log.cni_not_initialized", "node3"), ("log.conntrack_table_full", "node3"),
        ("log.pod_not_started", "node3/calico-node-z9t5r"), ("log.pod_sandbox_failed", "node3/coredns-5d78c9869d-p8k4n")]
    assert [m["check"] for m in facts["node2"]["logs_matches"]] == ["log.calico_network_unavailable_update_failed"]


def test_node_triage_runs_the_logs_check_in_the_one_pass(lab, ansible, node_files):
    line = ('E%s   2150 kubelet.go:2373] "Container runtime network not ready" networkReady="NetworkReady=false '
            'reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"' % klog(30))
    log_faults.node_log_file(lab, "node2", "/var/log/kubelet.log", [line])
    args = {"node_name": "worker-2", "scenarios": ["logs"], "logs": {"since": 600}}
    one_pass = ansible.module("node2", "node_triage", args)["node2"]
    alone = ansible.module("node2", "node_logs", {"node_name": "worker-2", "since": 600})["node2"]
    assert one_pass["scenarios"]["logs"]["status"] == "ran"
    assert one_pass["findings"] == alone["findings"]
    assert checks(one_pass["findings"]) == [("log.cni_not_initialized", "worker-2")]
    assert one_pass["scenarios"]["logs"]["data"]["source"] == "files"
