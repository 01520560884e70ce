# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The runbook's ``cilium monitor --type drop`` through the Kubernetes API, for the nodes whose agent monitor
socket cannot be read over SSH (no root there, the socket not on the host, no SSH at all).

For each named node: its agent pod (a pod of one of the agent DaemonSets on that node), then one exec of the
agent's own CLI in it, ``timeout SECONDS cilium-dbg monitor --type drop -j`` (``cilium`` before Cilium 1.15
renamed it), whose JSON lines are read as cilium_monitor reads the socket: each dropped flow once, with its
count, reason and endpoints; the pods behind the flows' addresses named from the node's pod list.  The execs of
several nodes run at once, each bounded (kube_exec); the API reads stay in the main thread.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import monitor as cilium_monitor
from ansible_collections.k8snet.triage.plugins.module_utils.kube import pod_exec as kube_exec
from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta

CLIS = ("cilium-dbg", "cilium")  # the agent's CLI since Cilium 1.15, and before
TIMED_OUT = 124  # coreutils timeout's status when it ended the command: the window is over, as asked
NOT_FOUND = 127  # the command is not in the container
GRACE = 10.0  # seconds beyond the window for the exec's connect and the server's close
MAX_PARALLEL = 25  # execs at once: each mostly waits out its window
MAX_ROWS = 50  # the fleet's flow table


def command(cli, seconds):
    """The agent's drop monitor for ``seconds``, ended by coreutils timeout (the CLI has no duration flag)."""
    return ["timeout", "%g" % seconds, cli, "monitor", "--type", "drop", "-j"]


def agent_pods(pods, daemonsets):
    """``{node: pod}``: each node's agent pod (a pod of one of ``daemonsets``; a running one before another)."""
    found = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node_network.owner_daemonset(pod) not in daemonsets:
            continue
        running = (pod.get("status") or {}).get("phase") == "Running"
        if node not in found or (running and (found[node].get("status") or {}).get("phase") != "Running"):
            found[node] = pod
    return found


def pod_addresses(pods):
    """``{address: namespace/name}`` of the pods given (the host network's pods left out: their address is the node's)."""
    out = {}
    for pod in pods:
        if (pod.get("spec") or {}).get("hostNetwork"):
            continue
        status = pod.get("status") or {}
        for entry in (status.get("podIPs") or []) + [{"ip": status.get("podIP")}]:
            if isinstance(entry, dict) and entry.get("ip"):
                out[entry["ip"]] = "%s/%s" % (meta(pod, "namespace"), meta(pod, "name"))
    return out


def endpoint_pods(flows, addresses):
    """``{endpoint id: namespace/pod}`` from the flows whose source (destination) address is a pod's on the node."""
    names = {}
    for flow in flows:
        packet = flow.get("packet") or {}
        for endpoint, address in ((flow["source_endpoint"], packet.get("src")), (flow["dst_endpoint"], packet.get("dst"))):
            if endpoint and address in addresses:
                names.setdefault(endpoint, addresses[address])
    return names


def _container(pod, wanted):
    """The container to exec in: ``wanted``, or the pod's only container; else InputError-like ReadError."""
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    if wanted in names:
        return wanted
    if len(names) == 1:
        return names[0]
    raise ReadError("pod %s/%s has no container %s (it has %s): give container" % (
        meta(pod, "namespace"), meta(pod, "name"), wanted, ", ".join(str(n) for n in names) or "none"))


def _exec_monitor(kube, pod, container, seconds, options):
    """(the exec's result, the CLI that ran): cilium-dbg, then cilium when the first is not in the container."""
    namespace, name = meta(pod, "namespace"), meta(pod, "name")
    for cli in CLIS:
        result = kube_exec.run(kube, namespace, name, container, command(cli, seconds), seconds + GRACE,
                               options=options)
        if result["exit_code"] != NOT_FOUND:
            return result, cli
    return result, cli


def _failure(node, agent, what, error, fix):
    return finding("cilium.monitor_exec_failed", "warning", "L3", "%s cilium-agent monitor" % node,
                   "the dropped packets of %s's agent were not read through the API (%s): %s" % (node, agent, what),
                   {"agent": agent, "error": str(error)[:500]}, fix)


def _verdict(node, agent, result, cli, seconds, top, addresses):
    """(the node's data, its findings) from one exec's result.  Only an exec that ended as asked (exit 0, or 124:
    timeout ended the window) is a complete read; one cut at the deadline or the byte cap is said so, with the
    flows it did read; one that failed says the API's or the CLI's message."""
    complete = result["exit_code"] in (0, TIMED_OUT)
    data = {"agent": agent, "command": " ".join(command(cli, seconds)), "exit_code": result["exit_code"],
            "ended": result["ended"], "seconds": result["seconds"]}
    partial = not complete and result["ended"] in ("deadline", "truncated") and result["stdout"].strip()
    findings = []
    if not complete:
        if result["ended"] == "deadline":
            why = "the exec did not end within %g s (the window and %g s more): %s" % (
                seconds + GRACE, GRACE, "the flows below are what arrived before" if partial else "nothing arrived")
        elif result["ended"] == "truncated":
            why = "the exec printed more than %d MiB: cut there" % (kube_exec.MAX_OUTPUT >> 20)
        elif result["exit_code"] is not None:  # the CLI's own words first: the API's Status only repeats the code
            stderr = result["stderr"].strip()[-300:]
            why = "exited with code %d%s" % (result["exit_code"], ": " + stderr if stderr else "")
        else:
            why = result["message"] or result["stderr"].strip()[-300:] or "the exec ended without an exit status"
        data.update(status="partial" if partial else "failed", error=why[:500])
        findings.append(_failure(node, agent, "`%s` %s" % (data["command"], why[:300]), why,
                                 "Run it by hand (kubectl exec -n NAMESPACE POD -c CONTAINER -- cilium-dbg monitor "
                                 "--type drop): the agent must be up (cilium-dbg status), the image must hold timeout "
                                 "and the CLI, and the API server must pass the exec's stream"))
        if not partial:
            return data, findings
    summary = cilium_monitor.summarize_json(result["stdout"])
    summary["seconds"] = min(seconds, result["seconds"])
    pods = endpoint_pods(summary["flows"], addresses)
    data.update(drops=summary["drops"], other=summary["other"], unreadable=summary["unreadable_count"],
                flows=[cilium_monitor.flow_row(f, pods) for f in summary["flows"][:top]])
    data.setdefault("status", "ok")
    found = [f for f in cilium_monitor.flow_findings(summary, node, top, pods)
             if complete or f["severity"] != "ok"]  # a partial read that saw no drop proves nothing
    for item in found:
        item["evidence"]["source"] = "kubectl exec %s -- %s" % (agent, data["command"])
    return data, findings + found


def check(params, kube_class):
    """The whole cilium_agent_drops run: ``{"data": {"nodes": {node: ...}}, "findings": [...]}``."""
    kube = kube_class(params)
    namespace, seconds, top = params["namespace"], float(params["seconds"]), params["top"]
    agents = agent_pods(kube.pods(namespace), params["daemonsets"])
    nodes, findings, jobs = {}, [], {}
    for node in params["nodes"]:
        pod = agents.get(node)
        if pod is None:
            nodes[node] = {"status": "no agent", "agent": None}
            findings.append(finding(
                "cilium.agent_pod_missing", "warning", "L3", "%s cilium-agent" % node,
                "no pod of DaemonSet %s in namespace %s runs on %s: its dropped packets cannot be read" % (
                    " or ".join(params["daemonsets"]), namespace, node),
                {"namespace": namespace, "daemonsets": params["daemonsets"]},
                "kubectl -n %s get pods -o wide | grep %s: the agent DaemonSet must run on every node (check its "
                "nodeSelector and tolerations, and the node's taints)" % (namespace, node)))
            continue
        agent = "%s/%s" % (namespace, meta(pod, "name"))
        try:
            container = _container(pod, params["container"])
        except ReadError as exc:
            nodes[node] = {"status": "failed", "agent": agent, "error": exc.message}
            findings.append(_failure(node, agent, exc.message, exc.message, "give container: the agent's container"))
            continue
        jobs[node] = (pod, container, agent, pod_addresses(kube.pods(node=node)))
    options = kube_exec.connect_options(kube.config, kube.headers())
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(jobs)))) as pool:
        running = dict((node, pool.submit(_exec_monitor, kube, job[0], job[1], seconds, options))
                       for node, job in jobs.items())
    for node, future in running.items():
        agent, addresses = jobs[node][2], jobs[node][3]
        try:
            result, cli = future.result()
        except (ReadError, PrivilegeError) as exc:
            nodes[node] = {"status": "failed", "agent": agent, "error": exc.message}
            findings.append(_failure(node, agent, exc.message, exc.message,
                                     "The error names the cause: RBAC (create pods/exec), the pod, the API server"))
            continue
        nodes[node], found = _verdict(node, agent, result, cli, seconds, top, addresses)
        findings.extend(found)
    nodes = dict((node, nodes[node]) for node in params["nodes"] if node in nodes)  # in the order given
    return {"data": dict(table(nodes), nodes=nodes), "findings": findings}


def table(nodes, most=MAX_ROWS):
    """The fleet's view for the report: ``reads`` (one row per node: its agent, how the read went, its drops) and
    ``flows`` (every node's flows in one table, the most packets first, at most ``most`` rows)."""
    reads = [{"node": node, "agent": read.get("agent"), "status": read.get("status"), "drops": read.get("drops"),
              "ended": read.get("ended"), "error": read.get("error")} for node, read in nodes.items()]
    flows = [dict(row, node=node) for node, read in nodes.items() for row in read.get("flows") or []]
    flows.sort(key=lambda row: (-row["packets"], row["node"]))
    return {"reads": reads, "flows": flows[:most]}
