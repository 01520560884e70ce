"""Calico BGP scenario: real BIRD 2 daemons peering between the node namespaces.

Every node that runs BIRD gets a config shaped like the one Calico's confd renders (one
``protocol bgp Mesh_<ip>`` per other node, ``passive on`` towards a peer whose address is
string-greater than ours, as Calico's template does), translated to BIRD 2 syntax
(formats.md section 3).  BIRD is started inside the node's own mount and network namespaces
(``lab.node_run``), so its control socket is at Calico's path ``/var/run/calico/bird.ctl``
for SSH sessions on that node only (each node has a private /run).

The default set-up (``bgp_mesh``) gives, on a 3-node lab:

* node1 <-> node2, node1 <-> node3: Established;
* node2 <-> node3: ``Bad peer AS`` (node2 believes node3 is in AS 64999, as after a node's
  ``projectcalico.org/ASNumber`` changed without the peers following);
* every node: ``Mesh_<lab>_10``, a peer for a node that no longer exists (an address of the
  lab /24 with no host behind it): ``Socket: No route to host``.

``bird_stop`` kills one node's BIRD (its peers then get ``Connection refused``, the node
itself has no socket any more: Calico's "Error querying BIRD"); ``bird_start`` brings it back.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import time

from . import fault
from ..core import LabError

BIRD = "/usr/sbin/bird"
BIRDC = "/usr/sbin/birdc"
SOCKET = "/var/run/calico/bird.ctl"
AS_NUMBER = 64512
WRONG_AS = 64999
# Short timers so that the lab converges in seconds (Calico keeps BIRD's defaults).
TIMERS = "    connect delay time 1;\n    connect retry time 2;\n    error wait time 1, 3;\n    hold time 9;\n"
# A large fleet's mesh (n * (n - 1) sessions): quick to connect, but BIRD's default hold time (240 s), so that
# the keepalives of 190 nodes' 35,000 sessions do not load the lab's 2 CPUs.
FLEET_TIMERS = "    connect delay time 1;\n    connect retry time 2;\n    error wait time 1, 3;\n"


def protocol_name(address, kind="Mesh"):
    """Calico's protocol name for a peer: ``Mesh_198_18_96_12`` (``:`` too becomes ``_``)."""
    return "%s_%s" % (kind, address.replace(".", "_").replace(":", "_"))


def stale_address(lab):
    """An address of the lab /24 with no host: a node that was decommissioned (.10)."""
    return str(lab.network[10])


def _paths(lab, node):
    node = lab.node(node)
    base = lab.workdir / "bgp"
    base.mkdir(parents=True, exist_ok=True)
    return {
        "config": base / ("%s.conf" % node.name),
        "log": base / ("%s.log" % node.name),
        "pid": base / ("%s.pid" % node.name),
        # The node's /run is workdir/nodes/<node>/run bind-mounted (tests/lab/core.py).
        "run_dir": lab.node_dir(node) / "run" / "calico",
        "socket_on_host": lab.node_dir(node) / "run" / "calico" / "bird.ctl",
    }


def render_config(lab, node, peers, wrong_as=(), log_path=None, timers=TIMERS):
    """The BIRD 2 config of ``node``: one Mesh protocol per peer address."""
    node = lab.node(node)
    lines = [
        "router id %s;" % node.ip,
        'log "%s" all;' % log_path if log_path else "",
        "protocol device { scan time 10; }",
        "",
    ]
    for address in peers:
        peer_as = WRONG_AS if address in wrong_as else AS_NUMBER
        lines += [
            "protocol bgp %s {" % protocol_name(address),
            "    description \"Connection to BGP peer\";",
            "    local %s as %d;" % (node.ip, AS_NUMBER),
            "    neighbor %s as %d;" % (address, peer_as),
            "    multihop;",
            # Calico: passive towards a peer whose address is string-greater than ours.
            "    passive on;" if address > node.ip else "",
            timers.rstrip("\n"),
            "    ipv4 { import all; export none; };",
            "}",
            "",
        ]
    return "\n".join(line for line in lines if line != "") + "\n"


def _pid(lab, node):
    pidfile = _paths(lab, node)["pid"]
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def birdc(lab, node, command):
    """``birdc -s /var/run/calico/bird.ctl <command>`` as an SSH session on the node sees it."""
    return lab.node_run(node, [BIRDC, "-s", SOCKET, *command.split()], check=False, timeout=20)


def protocols(lab, node):
    """{name: (state, info)} from ``birdc show protocols`` (the independent reader of tests)."""
    proc = birdc(lab, node, "show protocols")
    if proc.returncode != 0:
        raise LabError("birdc on %s failed: %s" % (lab.node(node).name, (proc.stderr or proc.stdout).strip()))
    rows = {}
    for line in proc.stdout.splitlines():
        fields = line.split(None, 5)
        if len(fields) >= 5 and fields[1] == "BGP":
            rows[fields[0]] = (fields[3], fields[5] if len(fields) > 5 else "")
    return rows


def wait_for(lab, node, name, predicate, timeout=30.0):
    """Poll ``birdc show protocols`` until ``predicate(state, info)`` holds for ``name``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = protocols(lab, node).get(name)
        if last is not None and predicate(*last):
            return last
        time.sleep(0.5)
    raise LabError("%s on %s did not reach the expected state in %ss; last seen %r"
                   % (name, lab.node(node).name, timeout, last))


@fault
def bird_start(lab, node, peers=None, wrong_as=None, timers=TIMERS):
    """Start BIRD 2 on ``node`` with Calico's mesh (peers: addresses, default every other node + the stale one)."""
    node = lab.node(node)
    if _pid(lab, node):
        return {"node": node.name, "pid": _pid(lab, node), "started": False}
    settings = lab.extra.get("bgp", {}).get(node.name, {})
    peers = list(peers if peers is not None else settings.get("peers", []))
    wrong_as = list(wrong_as if wrong_as is not None else settings.get("wrong_as", []))
    paths = _paths(lab, node)
    paths["run_dir"].mkdir(parents=True, exist_ok=True)
    paths["config"].write_text(render_config(lab, node, peers, wrong_as, log_path=paths["log"], timers=timers))
    lab.node_run(node, [BIRD, "-c", paths["config"], "-s", SOCKET, "-P", paths["pid"]])
    deadline = time.monotonic() + 10
    while not (paths["socket_on_host"].exists() and _pid(lab, node)):
        if time.monotonic() > deadline:
            raise LabError("BIRD on %s did not start; see %s" % (node.name, paths["log"]))
        time.sleep(0.1)
    bgp = lab.extra.setdefault("bgp", {})
    bgp[node.name] = {"peers": peers, "wrong_as": wrong_as, "running": True}
    lab.remember("bgp", bgp)
    return {"node": node.name, "pid": _pid(lab, node), "peers": peers, "wrong_as": wrong_as, "started": True}


@fault
def bird_stop(lab, node):
    """Kill BIRD on ``node``: its socket disappears, and its peers get ``Connection refused``."""
    node = lab.node(node)
    pid = _pid(lab, node)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _pid(lab, node):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
    paths = _paths(lab, node)
    # BIRD may remove its socket itself as it exits: no exists()-then-unlink() race
    paths["socket_on_host"].unlink(missing_ok=True)
    bgp = lab.extra.setdefault("bgp", {})
    bgp.setdefault(node.name, {})["running"] = False
    lab.remember("bgp", bgp)
    return {"node": node.name, "stopped": bool(pid)}


@fault
def bgp_mesh(lab, bad_as=None, stale=None, nodes=None):
    """Calico's node-to-node mesh on every node: Established, Bad peer AS and a stale peer.

    ``bad_as`` is ``"nodeA:nodeB"`` (default: the last two nodes): nodeA is configured with
    the wrong AS for nodeB.  ``stale`` is the address of a node that no longer exists.
    """
    members = [lab.node(n) for n in (nodes.split(",") if isinstance(nodes, str) else nodes or [])] or list(lab.nodes)
    if len(members) < 3:
        raise LabError("the BGP mesh needs 3 nodes or more")
    stale = stale or stale_address(lab)
    if ipaddress.ip_address(stale) not in lab.network or any(n.ip == stale for n in lab.nodes):
        raise LabError("stale peer %s must be an unused address of %s" % (stale, lab.network))
    if bad_as is None:
        bad_as = "%s:%s" % (members[-2].name, members[-1].name)
    wrong_node, wrong_peer = (lab.node(n) for n in bad_as.split(":"))
    started = []
    for node in members:
        peers = [p.ip for p in members if p is not node] + [stale]
        wrong = [wrong_peer.ip] if node is wrong_node else []
        bird_stop(lab, node)
        started.append(bird_start(lab, node, peers=peers, wrong_as=wrong))
    info = {"nodes": [n.name for n in members], "stale": stale, "bad_as": [wrong_node.name, wrong_peer.name],
            "established": [[a.name, b.name] for i, a in enumerate(members) for b in members[i + 1:]
                            if {a.name, b.name} != {wrong_node.name, wrong_peer.name}]}
    lab.remember("bgp_mesh", info)
    return info


@fault
def bgp_down(lab):
    """Stop every BIRD of the lab (the integration tests' clean-up)."""
    stopped = [bird_stop(lab, node)["node"] for node in lab.nodes if _pid(lab, node)]
    return {"stopped": stopped}
