"""The Kubernetes side of the lab: the API stand-in, kube-proxy-style health endpoints on the
nodes, and per-node CNI files.

* ``start_api(lab, files)``: the stand-in API (tests/kube_api) on the controller address,
  serving the fixtures with each lab node's name, InternalIP and podCIDR.  It runs as a thread of
  the calling process (tests); for a demo use ``python -m tests.kube_api``.
* ``health_endpoint``: a tiny HTTP server inside a node's namespace on the Service's
  healthCheckNodePort answering as kube-proxy does (200/503, JSON with localEndpoints); it exits
  by itself after ``seconds`` and lab.down() kills it with the namespace.
* ``cni_files``: /etc/cni/net.d and /opt/cni/bin for one node only.  Lab nodes share the host's
  root filesystem, so the node's mount namespace (the one its sshd and SSH sessions use) gets an
  overlay on /etc and on /opt whose writable layer is a tmpfs: the node sees the host's files
  plus its own CNI files, and nothing is written to the host.  ``clear_cni_files`` lazily
  unmounts them again.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

from . import fault

ROOT = Path(__file__).resolve().parents[3]

HEALTH_SERVER = r"""
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
address, port, namespace, name, count, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"service": {"namespace": namespace, "name": name}, "localEndpoints": count,
                           "serviceProxyHealthy": True}).encode()
        self.send_response(200 if count > 0 else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
server = HTTPServer((address, port), H)
server.timeout = 0.5
deadline = time.time() + seconds
print("ready", flush=True)
while time.time() < deadline:
    server.handle_request()
"""


# An address of lab slot 0's ranges (198.18.0.0/19: node network and service range; 198.19.0.0/19: pod CIDRs), as
# the stock fixtures are written, anywhere in a string (a field, a CIDR, JSON inside a ConfigMap).
SLOT0_ADDRESS = re.compile(r"(?<![\d.])198\.(18|19)\.(\d{1,3})\.(\d{1,3})(?![\d])")


def lab_address(lab, text):
    """``text`` with every address of lab slot 0's ranges moved to the same place in ``lab``'s slot (198.18.0.11 is
    node1 of slot 0; in slot s it is 198.18.(32s).11), so that a fixture never points at another slot's lab or
    outside any lab."""
    def move(match):
        third = int(match.group(2))
        if third >= 32 or int(match.group(3)) > 255:
            return match.group(0)
        return "198.%s.%d.%s" % (match.group(1), lab.slot * 32 + third, match.group(3))
    return SLOT0_ADDRESS.sub(move, text)


def _lab_addresses(lab, value):
    """``value`` (a fixture object or part of one) with ``lab_address`` applied to every string in it."""
    if isinstance(value, str):
        return lab_address(lab, value)
    if isinstance(value, list):
        return [_lab_addresses(lab, item) for item in value]
    if isinstance(value, dict):
        return dict((key, _lab_addresses(lab, item)) for key, item in value.items())
    return value


def lab_objects(lab, objects):
    """The fixture objects in ``lab``'s addresses: every address of slot 0's ranges moved into the lab's slot
    (``lab_address``: Nodes the lab does not have, Services, pods, ConfigMaps), then each lab node's InternalIP and
    podCIDR (matched by name)."""
    nodes = {n.name: n for n in lab.nodes}
    out = []
    for obj in objects:
        obj = _lab_addresses(lab, copy.deepcopy(obj))
        node = nodes.get(obj["metadata"]["name"]) if obj["kind"] == "Node" else None
        if node:
            for address in obj["status"].get("addresses", []):
                if address["type"] == "InternalIP":
                    address["address"] = node.ip
            obj["spec"]["podCIDR"] = node.pod_cidr
            obj["spec"]["podCIDRs"] = [node.pod_cidr]
            if "projectcalico.org/IPv4Address" in obj["metadata"].get("annotations", {}):
                obj["metadata"]["annotations"]["projectcalico.org/IPv4Address"] = "%s/%d" % (node.ip, lab.network.prefixlen)
        out.append(obj)
    return out


def start_api(lab, files, name="kube-api", tokens=None, why=None):
    """Start the stand-in API on the controller address; returns the running StandIn (``why``: a key of
    tests.kube_api.WHY)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.kube_api import StandIn, load_yaml

    objects = lab_objects(lab, load_yaml(files))
    return StandIn(objects, lab.workdir / name, lab.controller_ip, tokens=tokens, why=why).start()


@fault
def health_endpoint(lab, node, port, local_endpoints, namespace="openshift-ingress", name="router-default", seconds=600):
    """Serve kube-proxy's health check JSON on <node IP>:<port> from inside the node."""
    node = lab.node(node)
    log = lab.node_dir(node) / "log" / ("health-%s.log" % port)
    proc = subprocess.Popen(
        ["ip", "netns", "exec", node.ns, lab.python, "-c", HEALTH_SERVER, node.ip, str(port), namespace, name,
         str(int(local_endpoints)), str(float(seconds))],
        stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError("health endpoint on %s:%s did not start; see %s" % (node.name, port, log))
    servers = lab.extra.setdefault("health_endpoints", [])
    servers.append({"node": node.name, "port": int(port), "pid": proc.pid})
    lab.remember("health_endpoints", servers)
    return {"node": node.name, "address": node.ip, "port": int(port), "pid": proc.pid, "process": proc}


def stop_health_endpoints(lab, endpoints):
    for endpoint in endpoints:
        proc = endpoint["process"]
        proc.kill()
        proc.wait(timeout=5)
    remaining = [e for e in lab.extra.get("health_endpoints", []) if e["pid"] not in {x["pid"] for x in endpoints}]
    lab.remember("health_endpoints", remaining)


def _overlay(lab, node, target, layer):
    lab.node_run(node, ["mkdir", "-p", f"{layer}/upper", f"{layer}/work"])
    lab.node_run(node, ["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={target},upperdir={layer}/upper,workdir={layer}/work", target])


@fault
def cni_files(lab, node, config=None, config_name="10-calico.conflist", binaries=("calico", "calico-ipam", "bandwidth", "portmap")):
    """Give ``node`` its own /etc/cni/net.d and /opt/cni/bin (overlays on a per-node tmpfs)."""
    node = lab.node(node)
    base = lab.node_dir(node) / "cni"
    base.mkdir(parents=True, exist_ok=True)
    mounted = lab.node_run(node, ["findmnt", "-n", "-o", "FSTYPE", "/etc"], check=False).stdout.strip()
    if mounted != "overlay":
        lab.node_run(node, ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(base)])
        _overlay(lab, node, "/etc", f"{base}/etc")
        _overlay(lab, node, "/opt", f"{base}/opt")
    lab.node_run(node, ["mkdir", "-p", "/etc/cni/net.d", "/opt/cni/bin"])
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config, indent=2)
        lab.node_run(node, ["sh", "-c", 'cat > "$1"', "sh", f"/etc/cni/net.d/{config_name}"], input=text)
    for binary in binaries:
        lab.node_run(node, ["install", "-m", "0755", "/bin/true", f"/opt/cni/bin/{binary}"])
    return {"node": node.name, "config": config_name if config is not None else None, "binaries": list(binaries)}


@fault
def clear_cni_files(lab, node):
    """Remove the node's CNI overlays (its SSH sessions see the host's /etc and /opt again)."""
    node = lab.node(node)
    base = lab.node_dir(node) / "cni"
    for target in ("/opt", "/etc", str(base)):
        lab.node_run(node, ["umount", "-l", target], check=False)
    return {"node": node.name}
