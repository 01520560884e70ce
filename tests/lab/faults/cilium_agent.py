"""The Cilium agent on a lab node: the stand-in (tests/cilium_agent) serving the agent's and cilium-health's
REST APIs on the node's own /var/run/cilium/{cilium,health}.sock and its metrics on 127.0.0.1:9962 in the
node's network namespace.

The node's /run is a directory of the lab's (bound over /run in the node's mount namespace), so the
stand-in, started in the node's network namespace, creates its sockets in that directory and SSH
sessions on the node find them at Cilium's paths.  What it serves is a state file (tests/cilium_agent/
states.py) that ``cilium_agent_state`` rewrites; every answer is validated against Cilium's OpenAPI
specs before it is served.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cilium_agent import states

from . import fault

ROOT = Path(__file__).resolve().parents[3]
METRICS = "127.0.0.1:9962"
STATES = {
    "healthy": lambda s, **kw: s,
    "failing_controllers": states.failing_controllers,
    "component_failure": states.component_failure,
    "stale_probes": states.stale_probes,
    "ipam_exhausted": states.ipam_exhausted,
    "node_unreachable": states.node_unreachable,
    "endpoint_unreachable": states.endpoint_unreachable,
    "rate_limited": states.rate_limited,
    "dropping": states.dropping,
    "dropping_flows": states.dropping_flows,
    "agent_error": states.agent_error,
}


def paths(lab, node):
    node = lab.node(node)
    ndir = Path(lab.workdir) / "nodes" / node.name
    return {"run": ndir / "run" / "cilium", "agent": ndir / "run" / "cilium" / "cilium.sock",
            "health": ndir / "run" / "cilium" / "health.sock", "monitor": ndir / "run" / "cilium" / "monitor1_2.sock",
            "state": ndir / "cilium-agent-state.json",
            "pid": ndir / "cilium-agent.pid", "log": ndir / "log" / "cilium-agent.log"}


def health_nodes(lab):
    """(name, node IP, health endpoint IP) of every lab node: the endpoint is the .100 of its pod CIDR (its
    next-to-last address when the CIDR is smaller: a lab of 64 nodes or more)."""
    import ipaddress

    def endpoint(cidr):
        net = ipaddress.ip_network(cidr)
        return str(net[min(100, net.num_addresses - 2)])

    return tuple((n.name, n.ip, endpoint(n.pod_cidr)) for n in lab.nodes)


def _pid(lab, node):
    try:
        pid = int(paths(lab, node)["pid"].read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


@fault
def cilium_agent_state(lab, node, name="healthy", **kwargs):
    """Write the state the stand-in on ``node`` serves: healthy, or one of ``STATES`` applied to it."""
    node = lab.node(node)
    if name not in STATES:
        raise ValueError("unknown agent state %r; one of %s" % (name, ", ".join(STATES)))
    state = STATES[name](states.healthy(node.name, health_nodes(lab)), **kwargs)
    target = paths(lab, node)["state"]
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(target)
    return {"node": node.name, "state": name, "kwargs": kwargs}


@fault
def cilium_agent_start(lab, node, name="healthy"):
    """Start the stand-in agent on ``node`` (its sockets at /var/run/cilium, metrics on 127.0.0.1:9962)."""
    node = lab.node(node)
    p = paths(lab, node)
    cilium_agent_state(lab, node, name)
    if _pid(lab, node):
        return {"node": node.name, "pid": _pid(lab, node), "started": False}
    p["run"].mkdir(parents=True, exist_ok=True)
    with open(p["log"], "ab") as log:
        subprocess.Popen(
            ["ip", "netns", "exec", node.ns, sys.executable, "-m", "tests.cilium_agent", "serve", "--state", str(p["state"]),
             "--agent-socket", str(p["agent"]), "--health-socket", str(p["health"]),
             "--monitor-socket", str(p["monitor"]), "--metrics", METRICS,
             "--pidfile", str(p["pid"])],
            cwd=str(ROOT), stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 20
    while not (p["agent"].exists() and p["health"].exists() and _pid(lab, node)):
        if time.time() > deadline:
            raise RuntimeError("the stand-in agent on %s did not start; see %s" % (node.name, p["log"]))
        time.sleep(0.05)
    # the metrics port too (the sockets come first)
    while lab.ns_run(node, ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9962"], check=False).returncode != 0:
        if time.time() > deadline:
            raise RuntimeError("the stand-in agent on %s does not serve its metrics; see %s" % (node.name, p["log"]))
        time.sleep(0.05)
    return {"node": node.name, "pid": _pid(lab, node), "started": True}


@fault
def cilium_agent_stop(lab, node):
    """Stop the stand-in agent on ``node``; its sockets are removed."""
    node = lab.node(node)
    pid = _pid(lab, node)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 10
        while _pid(lab, node):
            if time.time() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.05)
    p = paths(lab, node)
    for path in (p["agent"], p["health"], p["monitor"], p["pid"]):
        if path.exists():
            path.unlink()
    return {"node": node.name, "stopped": bool(pid)}
