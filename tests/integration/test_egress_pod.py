"""egress from a pod name: role egress with egress_pod reads the pod's IP and node from the real API server of the
lab's control plane (tests/lab/cluster.py), finds its network namespace on the node by its IP (no PID), probes from
it and names the pod, the node and the source address seen outside.  packet_capture and reachability run inside a
pod's namespace by pod_ip.

The pod web-5d8f7-abcde is the lab's web pod on the worker, its Pod bound to the worker and its status written as
its kubelet would (Cluster.run_pod); dns_pod.yaml's pods (one on node9, a node no host of the play is) are loaded
with tests/lab/cluster_objects.py. Checked independently: kubectl reads the Pods, tcpdump on the client shows the
source address a connect from the pod's namespace arrives with, ss/tcpdump see the probes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT
from tests.integration.test_ingress_path import observed_source
from tests.lab.cluster_objects import RealApi
from tests.lab.faults import path as lab_path

POD = "web-5d8f7-abcde"
RECORD = "k8snet.triage.egress : Record the findings of this host"
PROBE = "k8snet.triage.egress : Send TCP probes from the pod's network namespace (found by the pod's IP, or egress_pod_pid)"


@pytest.fixture(scope="module")
def lb(lab):
    info = lab_path.loadbalancer(lab)
    yield info
    lab_path.path_repair(lab)


@pytest.fixture(scope="module")
def api(lab, lb, kube_cluster):
    real = RealApi(kube_cluster, "cluster.yaml", "dns_pod.yaml")
    kube_cluster.run_pod("default", POD, lb["worker"], lb["pod_ip"], labels={"app": "web"},
                         containers=[{"name": "web", "image": "lab.invalid/web:1",
                                      "ports": [{"containerPort": lb["pod_port"], "name": "http"}]}])
    return real


def egress_vars(lab, lb, api, pod=POD, **extra):
    out = {"egress_pod": "default/" + pod, "egress_kubeconfig": str(api.kubeconfig()), "egress_target": lb["client"],
           "egress_target_port": 9, "egress_pcap_dir": str(lab.workdir / "pcaps"), "egress_duration": 20}
    out.update(extra)
    return out


@pytest.mark.parametrize("broken", [False, True], ids=["masquerade", "no_masquerade"])
def test_egress_from_a_pod_name(lab, ansible, lb, api, kube_cluster, broken):
    (lab.workdir / "pcaps").mkdir(exist_ok=True)
    seen = kube_cluster.kubectl_json("get", "pod", "-n", "default", POD)
    assert (seen["status"]["podIP"], seen["spec"]["nodeName"]) == (lb["pod_ip"], lb["worker"])
    if broken:
        lab_path.break_masquerade(lab, lb["worker"])
    try:
        expected_source = lb["pod_ip"] if broken else lab.node(lb["worker"]).ip
        assert observed_source(lab, lb) == expected_source  # tcpdump on the client, not our module
        run = ansible.playbook("k8snet.triage.egress", extra_vars=egress_vars(lab, lb, api))
        assert run.rc == 0, run
    finally:
        lab_path.masquerade(lab)
    # only the pod's node checked, and it was found from the API's nodeName; the probe went by pod IP, no PID
    checked = [r["host"] for r in run.results(task=RECORD)]
    assert checked == [lb["worker"]]
    probe = run.result(PROBE, lb["worker"])
    assert probe["invocation"]["module_args"]["pod_ip"] == lb["pod_ip"]
    assert probe["invocation"]["module_args"]["netns_pid"] is None
    # without SNAT no reply finds its way back: the connect times out instead of being refused
    assert probe["targets"][0]["tcp"]["status"] == ("timeout" if broken else "refused")
    [finding] = run.result(RECORD, lb["worker"])["ansible_facts"]["egress_findings"]
    assert finding["check"] == ("egress.no_snat" if broken else "egress.ok"), finding
    assert finding["subject"] == "default/%s -> %s" % (POD, lb["client"])
    assert (finding["evidence"]["pod"], finding["evidence"]["node"]) == ("default/" + POD, lb["worker"])
    assert finding["evidence"]["source_seen"] == expected_source
    assert "pod default/%s (%s)" % (POD, lb["pod_ip"]) in finding["summary"] and lb["worker"] in finding["summary"]
    # the capture's private directory and its async job status file (~/.ansible_async) are removed
    started = run.result("k8snet.triage.egress : Start the capture toward the target", lb["worker"])
    assert started["results_file"] and not Path(started["results_file"]).exists(), started["results_file"]
    assert list((lab.workdir / "pcaps").iterdir()) == []


def test_egress_pod_on_a_node_outside_the_play(lab, ansible, lb, api, kube_cluster):
    """The pod runs on node9, no host of the play (as in a slice of an AWX sliced job): a clear failure
    naming the missing host, or with egress_missing_hosts=skip a skip reason, never a finding."""
    far = "dns-client-5f7d9c8b6-far9z"
    assert kube_cluster.kubectl_json("get", "pod", "-n", "default", far)["spec"]["nodeName"] == "node9"
    run = ansible.playbook("k8snet.triage.egress", extra_vars=egress_vars(lab, lb, api, far))
    assert run.rc != 0
    messages = " ".join(str(r["result"].get("msg")) for r in run.records if r["status"] == "failed")
    assert "runs on node node9, which is no host of this play" in messages and "missing host node9" in messages
    assert not run.results(task=RECORD)
    run = ansible.playbook("k8snet.triage.egress", extra_vars=egress_vars(lab, lb, api, far, egress_missing_hosts="skip"))
    assert run.rc == 0, run
    facts = run.result("k8snet.triage.egress : Say what is missing when the pod's node is not one of this play's hosts",
                       "node1")["ansible_facts"]
    assert "missing host node9" in facts["egress_skip_reason"] and facts["egress_findings"] == []
    assert not run.results(task=RECORD) and not run.results(task=PROBE)


def test_reachability_and_capture_inside_a_pod_by_its_ip(lab, ansible, lb):
    worker = lb["worker"]
    res = ansible.module(worker, "reachability", {"targets": [{"address": lb["client"], "port": 9}], "probes": ["tcp", "icmp"],
                                                  "pod_ip": lb["pod_ip"], "count": 1})[worker]
    [row] = res["targets"]
    assert row["tcp"]["status"] == "refused" and row["icmp"]["received"] == 1, res
    assert res["findings"][0]["check"] == "reach.port_closed"
    res = ansible.module(worker, "reachability", {"targets": [{"address": lb["client"]}], "pod_ip": lb["pod_ip"],
                                                  "netns_pid": lb["pod_pid"]})[worker]
    assert res["failed"] and "mutually exclusive" in res["msg"], res
    # the capture runs in the pod's namespace: its eth0, the pod IP as source (the pod sends, not the node)
    stop = threading.Event()

    def send():
        while not stop.is_set():
            lab.run(["ip", "netns", "exec", lb["pod_ns"], lab.python, "-c", "import socket\ntry: socket.create_connection"
                     "(('%s', 9), timeout=0.3)\nexcept OSError: pass" % lb["client"]], check=False)
            time.sleep(0.2)
    sender = threading.Thread(target=send)
    sender.start()
    try:
        res = ansible.module(worker, "packet_capture", {"pod_ip": lb["pod_ip"], "interfaces": ["eth0"],
                                                        "hosts": [lb["client"]], "protocol": "tcp", "duration": 3})[worker]
    finally:
        stop.set()
        sender.join()
    assert not res.get("failed"), res
    assert res["netns"].startswith("pod %s (netns of pid" % lb["pod_ip"])
    out = [f for f in res["flows"] if f["direction"] == "out" and f["dst"] == lb["client"]]
    assert out and all(f["interface"] == "eth0" and f["src"] == lb["pod_ip"] for f in out), res["flows"]
    # the node's own view has no eth0 packet from the pod IP when it masquerades: the pod's namespace was used
    assert lb["pod_device"] not in res["interfaces"]


def test_capture_by_pod_ip_as_a_background_job(lab, ansible, lb):
    """packet_capture with pod_ip under async (poll 0): it listens in the pod's namespace, sees the
    probes the pod sends meanwhile, and the stop file ends it long before its duration. Checked
    independently: tcpdump reads the pcap it left."""
    run = ansible.playbook(ROOT / "tests" / "integration" / "playbooks" / "capture_pod_async.yml", {
        "capture_node": lb["worker"], "capture_pod_ip": lb["pod_ip"], "capture_target": lb["client"],
        "capture_duration": 60})
    assert run.rc == 0, run
    res = run.result("Collect the capture", lb["worker"])
    assert res["finished"] and not res.get("failed"), res
    assert res["netns"].startswith("pod %s (netns of pid" % lb["pod_ip"]), res["netns"]
    assert res["stopped_by_file"] is True and res["seconds"] < 30, (res["stopped_by_file"], res["seconds"])
    out = [f for f in res["flows"] if f["direction"] == "out" and f["dst"] == lb["client"]]
    assert out and all(f["interface"] == "eth0" and f["src"] == lb["pod_ip"] for f in out), res["flows"]
    started = run.result("Start the capture in the pod's namespace", lb["worker"])
    assert started["results_file"] and not Path(started["results_file"]).exists(), started["results_file"]
    pcap = run.result("Say where the pcap is", lb["worker"])["msg"]
    try:
        seen = lab.run(["tcpdump", "-nn", "-r", pcap, "tcp[tcpflags] & tcp-syn != 0 and dst port 9"]).stdout
    finally:
        lab.run(["rm", "-rf", str(Path(pcap).parent)], check=False)
    syns = [line for line in seen.splitlines() if "%s." % lb["pod_ip"] in line and "> %s.9:" % lb["client"] in line]
    assert len(syns) >= 2, seen  # reachability's count: 2 connection attempts from the pod


def _drop_rule_packets(lab, ns, chain, rule):
    """Packets the DROP rule counted (iptables -L -v -x in that namespace, not our module)."""
    out = lab.run(["ip", "netns", "exec", ns, "iptables", "-w", "-L", chain, "-v", "-x", "-n"]).stdout
    for line in out.splitlines():
        if "DROP" in line and rule in line:
            return int(line.split()[0])
    raise AssertionError("no DROP rule %r in %s of %s:\n%s" % (rule, chain, ns, out))


@pytest.mark.parametrize("where", ["remote_silent", "node_drops_reply"])
def test_egress_masqueraded_without_a_reply_says_where_the_reply_was_last_seen(lab, ansible, lb, api, where):
    """SNAT is right but the pod gets no answer: the target drops the packets (nothing comes back), or the node
    drops the target's reply before it reaches the pod. egress.ok was given either way."""
    (lab.workdir / "pcaps").mkdir(exist_ok=True)
    node_ip = lab.node(lb["worker"]).ip
    if where == "remote_silent":
        ns, chain = lb["client_ns"], "INPUT"
        rule = ["-s", node_ip, "-p", "tcp", "--dport", "9", "-j", "DROP"]
    else:
        ns, chain = lab.node(lb["worker"]).ns, "FORWARD"
        rule = ["-s", lb["client"], "-d", lb["pod_ip"], "-p", "tcp", "-j", "DROP"]
    lab.run(["ip", "netns", "exec", ns, "iptables", "-w", "-I", chain, *rule])
    try:
        run = ansible.playbook("k8snet.triage.egress", extra_vars=egress_vars(lab, lb, api, egress_duration=15))
        assert run.rc == 0, run
        dropped = _drop_rule_packets(lab, ns, chain, lb["client"] if where == "node_drops_reply" else node_ip)
    finally:
        lab.run(["ip", "netns", "exec", ns, "iptables", "-w", "-D", chain, *rule], check=False)
    assert dropped > 0  # the rule did drop the probes (or their replies): counted by iptables itself
    probe = run.result(PROBE, lb["worker"])
    assert probe["targets"][0]["tcp"]["status"] == "timeout"
    [finding] = run.result(RECORD, lb["worker"])["ansible_facts"]["egress_findings"]
    replies = finding["evidence"]["replies"]
    assert finding["evidence"]["source_seen"] == node_ip
    if where == "remote_silent":
        assert finding["check"] == "egress.no_reply" and replies["to_node"] == 0, finding
    else:
        assert finding["check"] == "egress.reply_not_delivered" and replies["to_node"] > 0, finding
        assert replies["to_pod"] == 0
    assert finding["severity"] == "critical"
