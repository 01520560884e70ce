"""The runbook's `cilium monitor --type drop` through the API's exec (cilium_agent_drops), for nodes whose agent
monitor socket SSH cannot read, against the API stand-in (tests/kube_api), which speaks the exec websocket as the
API server does.  The agent's CLI output is drops.jsonl: Go's encoding/json of the drops the monitor socket test
sends, with the json tags of Cilium's DropNotifyVerbose (tests/cilium_agent/monitor/gen_drops.go).  Independent
reader: kubectl exec (a real client speaking the v5 channel protocol) against the same stand-in.

The exec path on a real node (API server -> kubelet -> containerd -> runc, the same drops.jsonl printed by a
cilium-dbg in the container, coreutils' timeout ending it) is tests/integration/test_real_kubelet.py's. The tests here
stay on the stand-in (why="kubelet-exec") for what a real agent cannot be made to do on cue: an exec that never
answers, one endless frame, the old CLI's name, RBAC refusals beside fixture pods on nodes without a kubelet, fifty
nodes at once."""

from __future__ import annotations

import copy
import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.kube_api import FIXTURES, ExecRun, StandIn, load_yaml
from tests.kube_api.helpers import KUBECTL
from tests.lab.faults import kube as kube_faults

MONITOR = Path(__file__).resolve().parents[1] / "cilium_agent" / "monitor"
LINES = (MONITOR / "drops.jsonl").read_bytes()
TRUTH = json.loads((MONITOR / "drops.json").read_text())
AGENT = ("kube-system", "anetd-5kx8w", "cilium-agent")  # anetd.yaml: the agent pod on node1
NO_EXEC = "token-without-pods-exec"


def pod(name, node, ip, namespace="default"):
    """A running pod on ``node`` with ``ip`` (the flows' addresses name it)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-" + name},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "registry.example/app:1"}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}}


@pytest.fixture()
def api(lab):
    objs = kube_faults.lab_objects(lab, load_yaml([FIXTURES / n for n in ("cluster.yaml", "anetd.yaml")]))
    objs += [pod("client-a", "node1", "198.19.1.10"), pod("client-b", "node1", "198.19.1.11")]
    server = StandIn(objs, lab.workdir / "kube-api-drops", lab.controller_ip,
                     tokens={"k8snet-lab-token": {"user": "lab-admin"},
                             NO_EXEC: {"user": "system:serviceaccount:ops:triage", "deny": ["create pods/exec"]}},
                     why="kubelet-exec").start()
    yield server
    server.stop()


def address(flow, end):
    """The address of one end of a flow as the report writes it (``198.19.1.10:41000 -> [2001:db8::1]:443 tcp``)."""
    return flow.split(" ")[2 * end].rsplit(":", 1)[0].strip("[]")


def drops(ansible, api, token=None, **args):
    args = dict({"kubeconfig": str(api.kubeconfig(token=token)), "nodes": ["node1"], "seconds": 2}, **args)
    return ansible.module("localhost", "cilium_agent_drops", args)["localhost"]


def monitor(cli_lines, cli="cilium-dbg", seconds=1.0):
    """The agent's CLI: ``cli`` prints the lines over ``seconds`` and timeout ends it (124); another CLI name is
    not in the container (timeout's 127)."""
    def run(command):
        if command[:1] == ["timeout"] and command[2:3] == [cli]:
            return ExecRun(stdout=cli_lines, exit_code=124, seconds=seconds, chunks=3)
        return ExecRun(stderr=b"timeout: failed to run command '%s': No such file or directory\n" % command[2].encode(),
                       exit_code=127)
    return run


def test_the_dropped_flows_read_through_exec_are_what_kubectl_exec_shows(lab, ansible, api):
    api.execs[AGENT] = monitor(LINES)
    # the independent reader: kubectl exec, the runbook's own command, against the same stand-in
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(api.kubeconfig()), "exec", "-n", "kube-system", "anetd-5kx8w",
                           "-c", "cilium-agent", "--", "timeout", "2", "cilium-dbg", "monitor", "--type", "drop", "-j"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 124, proc.stderr  # timeout ended the window, as kubectl reports it
    seen = {}
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        key = (event["summary"]["l3"]["src"], event["summary"]["l3"]["dst"], event["reason"], event["source"])
        seen[key] = seen.get(key, 0) + 1
    assert sum(seen.values()) == sum(f["count"] for f in TRUTH["flows"]) == 9
    assert api.execs_served[-1].protocol == "v5.channel.k8s.io"

    started = time.monotonic()
    result = drops(ansible, api, nodes=["node1", "node2"])
    assert not result["failed"], result
    assert time.monotonic() - started < 30
    # one exec, in the agent pod of node1 only, the agent's CLI bounded by coreutils timeout, no shell
    served = api.execs_served[-1]
    assert (served.namespace, served.pod, served.container, served.command, served.protocol) == (
        "kube-system", "anetd-5kx8w", "cilium-agent", ["timeout", "2", "cilium-dbg", "monitor", "--type", "drop", "-j"],
        "v4.channel.k8s.io")
    node1 = result["nodes"]["node1"]
    assert (node1["status"], node1["exit_code"], node1["ended"], node1["drops"]) == ("ok", 124, "closed", 9)
    got = dict(((address(f["flow"], 0), address(f["flow"], 1), f["reason"], f["endpoint"]), f["packets"])
               for f in node1["flows"])
    assert got == seen
    # the pods behind the flows' source addresses, from node1's pod list
    named = {(f["endpoint"], f["pod"]) for f in node1["flows"]}
    assert named == {(1201, "default/client-a"), (1202, "default/client-b")}
    by_check = dict((f["check"], f) for f in result["findings"])
    flows = by_check["cilium.dropped_flows"]
    assert (flows["severity"], flows["subject"]) == ("warning", "node1 cilium datapath flows")
    assert "9 packets of 3 flows" in flows["summary"] and "Policy denied, endpoint 1201 default/client-a) x5" in flows["summary"]
    assert flows["evidence"]["source"].startswith("kubectl exec kube-system/anetd-5kx8w -- timeout 2 cilium-dbg")
    # the fleet's table: every node's flows with their node, the most packets first; one read row per node
    assert [(r["node"], r["packets"]) for r in result["flows"]] == [("node1", 5), ("node1", 3), ("node1", 1)]
    assert [(r["node"], r["status"], r["drops"]) for r in result["reads"]] == [("node1", "ok", 9), ("node2", "no agent", None)]
    # node2 has no agent pod: said, never read as quiet
    missing = by_check["cilium.agent_pod_missing"]
    assert (missing["severity"], missing["subject"]) == ("warning", "node2 cilium-agent")
    assert result["nodes"]["node2"]["status"] == "no agent"


def test_an_agent_before_cilium_1_15_is_read_with_its_cli_named_cilium(lab, ansible, api):
    api.execs[AGENT] = monitor(LINES, cli="cilium")
    result = drops(ansible, api)
    assert not result["failed"], result
    assert [u.command[2] for u in api.execs_served] == ["cilium-dbg", "cilium"]
    node1 = result["nodes"]["node1"]
    assert (node1["status"], node1["drops"]) == ("ok", 9) and " cilium monitor " in node1["command"]


def test_a_quiet_datapath_is_ok_and_says_its_window(lab, ansible, api):
    api.execs[AGENT] = monitor(b"", seconds=0.5)
    result = drops(ansible, api)
    [found] = result["findings"]
    assert (found["check"], found["severity"]) == ("cilium.dropped_flows", "ok")
    assert "reported no dropped packet in" in found["summary"]


def test_without_rbac_for_exec_the_finding_names_the_verb_and_subresource(lab, ansible, api):
    api.execs[AGENT] = monitor(LINES)
    result = drops(ansible, api, token=NO_EXEC)
    assert not result["failed"], result
    [found] = result["findings"]
    assert (found["check"], found["severity"]) == ("cilium.monitor_exec_failed", "warning")
    assert "403 Forbidden" in found["summary"] and "create on the subresource pods/exec" in found["summary"]
    assert not api.execs_served  # refused before any upgrade
    assert result["nodes"]["node1"]["status"] == "failed"


def test_the_agent_cli_failing_is_said_with_its_own_message(lab, ansible, api):
    message = b"Unable to connect to monitor dial unix /var/run/cilium/monitor1_2.sock: connect: no such file or directory\n"
    api.execs[AGENT] = lambda command: ExecRun(stderr=message, exit_code=1)
    result = drops(ansible, api)
    [found] = result["findings"]
    assert found["check"] == "cilium.monitor_exec_failed"
    assert ("`timeout 2 cilium-dbg monitor --type drop -j` exited with code 1: Unable to connect to monitor dial unix "
            "/var/run/cilium/monitor1_2.sock: connect: no such file or directory") in found["summary"]
    assert result["nodes"]["node1"]["exit_code"] == 1


def test_an_exec_that_never_answers_ends_at_its_deadline_and_is_never_quiet(lab, ansible, api):
    api.execs[AGENT] = lambda command: ExecRun(hang=True, seconds=120)
    started = time.monotonic()
    result = drops(ansible, api, seconds=0.5)
    spent = time.monotonic() - started
    assert not result["failed"], result
    assert spent < 0.5 + 10 + 8, spent  # the window, the grace, the module's start
    [found] = result["findings"]
    assert found["check"] == "cilium.monitor_exec_failed"
    assert "did not end within 10.5 s" in found["summary"] and "nothing arrived" in found["summary"]
    assert (result["nodes"]["node1"]["status"], result["nodes"]["node1"]["ended"]) == ("failed", "deadline")


def test_an_exec_that_sends_one_endless_frame_is_cut_at_the_byte_cap_not_the_deadline(lab, ansible, api):
    """One stdout frame declaring a terabyte: the read stops once 8 MiB (and the framing's allowance) arrived."""
    api.execs[AGENT] = lambda command: ExecRun(flood=1 << 40)
    started = time.monotonic()
    result = drops(ansible, api, seconds=5)
    spent = time.monotonic() - started
    assert not result["failed"], result
    assert spent < 10, spent  # the deadline would have been 15 s
    [found] = result["findings"]
    assert found["check"] == "cilium.monitor_exec_failed" and "printed more than 8 MiB: cut there" in found["summary"]
    assert result["nodes"]["node1"]["ended"] == "truncated"
    time.sleep(0.5)  # the server's writer notices the client went
    [sent] = api.execs_flooded
    assert sent < 64 * 1024 * 1024, sent  # what the server could push before the client closed, not a terabyte


def test_a_pod_whose_containers_have_other_names_is_said(lab, ansible, api):
    agent = api.store.get("pods", "kube-system", "anetd-5kx8w")
    two = copy.deepcopy(agent)
    two["spec"]["containers"] = [{"name": "agent", "image": "x"}, {"name": "sidecar", "image": "y"}]
    api.store.put(two)
    result = drops(ansible, api)
    [found] = result["findings"]
    assert found["check"] == "cilium.monitor_exec_failed"
    assert "has no container cilium-agent (it has agent, sidecar): give container" in found["summary"]
    assert not api.execs_served


@pytest.fixture()
def node1_agent(lab):
    from tests.lab.faults import cilium_agent as agent

    agent.cilium_agent_start(lab, "node1")
    yield lab.node("node1")
    agent.cilium_agent_stop(lab, "node1")


def test_the_triage_reads_through_exec_the_nodes_whose_monitor_ssh_could_not_read(lab, ansible, api, node1_agent,
                                                                                  tmp_path):
    """node1's agent runs, but its monitor socket is not where SSH looks (anetd keeping it in its container): the one
    pass says cilium.monitor_unavailable there, and cilium_drops, when the triage names it, reads node1 through the
    API; not named (the default: it needs create on pods/exec), it never execs."""
    api.execs[AGENT] = monitor(LINES)
    base = {"triage_scenarios": ["cilium_agent"], "cilium_agent_interval": 1, "cilium_agent_metrics_url": "",
            "cilium_agent_monitor_socket": "/var/run/cilium/in-the-container-only.sock",
            "triage_kubeconfig": str(api.kubeconfig()), "report_output_dir": str(tmp_path),
            "report_fail_on_critical": False}
    run_ = ansible.playbook("k8snet.triage.triage", extra_vars=dict(base, triage_api_scenarios=[]))
    assert run_.rc == 0, run_
    assert not api.execs_served
    run_ = ansible.playbook("k8snet.triage.triage", extra_vars=dict(
        base, triage_api_scenarios=["cilium_drops"], cilium_drops_seconds=1))
    assert run_.rc == 0, run_
    report = json.loads((tmp_path / "triage-report.json").read_text())
    unread = [f for f in report["findings"] if f["check"] == "cilium.monitor_unavailable"]
    assert [(f["host"], f["severity"]) for f in unread] == [("node1", "info")]
    [served] = api.execs_served
    assert (served.pod, served.command[:3]) == ("anetd-5kx8w", ["timeout", "1", "cilium-dbg"])
    [flows] = [f for f in report["findings"] if f["check"] == "cilium.dropped_flows"]
    assert (flows["severity"], flows["subject"]) == ("warning", "node1 cilium datapath flows")
    assert flows["evidence"]["drops"] == 9
    controller = [name for name, host in report["hosts"].items() if "cilium_drops" in host.get("scenarios", {})]
    assert controller and report["hosts"][controller[0]]["scenarios"]["cilium_drops"]["status"] == "ran"
    # the report's details: the flows as a table the HTML draws (a list of records)
    drawn = report["details"][controller[0]]["cilium_drops"]["dropped_flows"]
    assert [(r["node"], r["flow"], r["packets"]) for r in drawn][0] == ("node1", "198.19.1.10:41000 -> 198.19.2.20:8080 tcp", 5)


def test_fifty_nodes_are_read_at_once_each_with_its_own_flows(lab, ansible, api):
    """A fleet of agents (50 nodes, one anetd pod each): the execs run at once (the run takes a few windows, not
    fifty), and each node gets its own flows, not another's."""
    template = api.store.get("pods", "kube-system", "anetd-5kx8w")
    nodes = ["worker%02d" % i for i in range(50)]
    for index, node in enumerate(nodes):
        agent = copy.deepcopy(template)
        agent["metadata"].update(name="anetd-w%02d" % index, uid="uid-anetd-%d" % index)
        agent["spec"]["nodeName"] = node
        api.store.put(agent)
        # node i's agent drops i + 1 packets of one flow from 198.19.9.i
        line = json.loads(LINES.splitlines()[0])
        line["summary"]["l3"]["src"] = "198.19.9.%d" % index
        api.execs[("kube-system", "anetd-w%02d" % index, "cilium-agent")] = (
            lambda command, body=(json.dumps(line) + "\n").encode() * (index + 1): ExecRun(
                stdout=body, exit_code=124, seconds=1.0))
    started = time.monotonic()
    result = drops(ansible, api, nodes=nodes, seconds=1)
    spent = time.monotonic() - started
    assert not result["failed"], result
    assert len(api.execs_served) == 50
    assert spent < 25, spent  # two rounds of 25 execs of about 1 s, the module's start, the API reads
    for index, node in enumerate(nodes):
        read = result["nodes"][node]
        assert (read["status"], read["drops"]) == ("ok", index + 1), (node, read)
        [flow] = read["flows"]
        assert flow["flow"].startswith("198.19.9.%d:41000 " % index), (node, flow)
    assert [r["node"] for r in result["flows"][:3]] == ["worker49", "worker48", "worker47"]
