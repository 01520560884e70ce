"""Bring up and tear down the namespace lab.

Layout for lab slot ``s`` (several labs can run side by side, one per slot):

* ``k8t<s>-sw``      switch namespace holding bridge ``br0``
* ``k8t<s>-<node>``  one namespace per node, ``eth0`` on the bridge
* ``k8t<s>ctl``      veth in the root namespace: the controller's way in

Addresses, all inside 198.18.0.0/15:

* node network   198.18.(32s).0/24: controller .1, node i at .(10+i), VIPs .200-.249; a lab of more than
                 189 nodes has the /23 (198.18.(32s+1).0 is free) and its nodes 190 and up at 198.18.(32s+1).(10+i-190)
* service range  198.18.(32s+16).0/20 (ClusterIPs, kube-dns at .10)
* pod CIDRs      carved from 198.19.(32s).0/19, one per node
* while up, the root namespace holds ``unreachable`` routes for 198.18.(32s).0/19 and 198.19.(32s).0/19 (metric
  4242): a packet to a lab address with nothing behind it fails at once ("No route to host") instead of leaving by
  the machine's default route; the controller's link route to the node network is more specific and wins

The kernel keeps one ARP table for every network namespace of the machine (``net.ipv4.neigh.default.gc_thresh3``,
1,024 entries by default).  A lab's nodes share it, so a lab of n nodes whose nodes all talk to each other needs
about n^2 entries: past about 30 nodes the table overflows ("neighbor table overflow!" in the kernel log) and
sends fail with ENOBUFS or "No route to host", which real nodes, each with its own kernel, never see.  ``up``
raises the thresholds for the lab's size when they are lower and ``down`` puts back the values it found.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LAB_SUPERNET = ipaddress.ip_network("198.18.0.0/15")
MAX_SLOT = 7
SMALL_LAB = 189  # nodes that fit in the first /24 below the VIPs
MAX_NODES = 400
DEFAULT_NODES = 3
SYSTEM_PYTHON = "/usr/bin/python3"
OLD_PYTHON = "/root/.pyenv/versions/3.9.18/bin/python3.9"
NODE_PYTHONS = ("mixed", "system")
SHELL_STARTUP_FILES = ("/root/.bashrc", "/root/.profile", "/root/.bash_profile", "/root/.bash_login")
NEIGH_THRESHOLDS = "/proc/sys/net/ipv4/neigh/default/gc_thresh%d"


class LabError(RuntimeError):
    """The lab could not be built or used; the message says what and why."""


@dataclass
class Node:
    name: str
    index: int
    ns: str
    ip: str
    mac: str
    pod_cidr: str
    python: str
    pyroute2: bool
    sshd_pid: int = 0
    groups: list = field(default_factory=list)


def _env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


class Lab:
    """One lab instance.  ``Lab.load()`` re-attaches to a lab that is up."""

    def __init__(self, slot=None, nodes=None, workdir=None, python=None, node_pythons="mixed"):
        self.slot = _env_int("K8SNET_LAB_SLOT", 0) if slot is None else int(slot)
        if not 0 <= self.slot <= MAX_SLOT:
            raise LabError(f"lab slot {self.slot} is out of range: use 0..{MAX_SLOT}")
        self.node_count = _env_int("K8SNET_LAB_NODES", DEFAULT_NODES) if nodes is None else int(nodes)
        if not 2 <= self.node_count <= MAX_NODES:
            raise LabError(f"{self.node_count} nodes asked for: the lab holds 2..{MAX_NODES}")
        self.workdir = Path(workdir or os.environ.get("K8SNET_LAB_DIR") or f"/tmp/k8snet-lab{self.slot}")
        self.python = python or sys.executable
        if node_pythons not in NODE_PYTHONS:
            raise LabError(f"node_pythons={node_pythons!r}: use one of {', '.join(NODE_PYTHONS)}")
        self.node_pythons = node_pythons
        self.prefix = f"k8t{self.slot}"
        self.switch_ns = f"{self.prefix}-sw"
        self.ctl_link = f"{self.prefix}ctl"
        base = self.slot * 32
        self.network = ipaddress.ip_network(f"198.18.{base}.0/{24 if self.node_count <= SMALL_LAB else 23}")
        self.controller_ip = str(self.network[1])
        self.service_network = ipaddress.ip_network(f"198.18.{base + 16}.0/20")
        self.pod_supernet = ipaddress.ip_network(f"198.19.{base}.0/19")
        # the whole range of this slot (node network, service range, pod CIDRs): while the lab is up, the root
        # namespace holds an unreachable route for each, so that a packet to a lab address with no lab host behind
        # it fails here instead of leaving by the machine's default route; the controller's link route (a /24 or
        # /23) is more specific and wins for the node network
        self.slot_ranges = (ipaddress.ip_network(f"198.18.{base}.0/19"), self.pod_supernet)
        self.nodes: list[Node] = []
        self.extra: dict = {}

    # ------------------------------------------------------------------ paths
    @property
    def state_file(self):
        return self.workdir / "state.json"

    @property
    def inventory_path(self):
        return self.workdir / "inventory.yml"

    @property
    def ssh_key(self):
        return self.workdir / "ssh" / "id_ed25519"

    def node_dir(self, node):
        return self.workdir / "nodes" / self.node(node).name

    # -------------------------------------------------------------- addresses
    def vip(self, n=0):
        """The n-th virtual IP of the node network (.200 + n)."""
        if not 0 <= n < 50:
            raise LabError("VIP index must be 0..49")
        return str(self.network[200 + n])

    def _node_ip(self, i):
        """Node i's address: .(10 + i) of the first /24, and in a lab of more than SMALL_LAB nodes, nodes past
        it at .(10 + i - SMALL_LAB - 1) of the second /24 (the VIPs keep .200 and up of the first)."""
        return str(self.network[10 + i] if i <= SMALL_LAB else self.network[256 + 10 + i - SMALL_LAB - 1])

    def service_ip(self, n):
        return str(self.service_network[n])

    def _pod_cidrs(self):
        prefix = 24
        while 2 ** (prefix - self.pod_supernet.prefixlen) < self.node_count:
            prefix += 1
        return [str(net) for net in self.pod_supernet.subnets(new_prefix=prefix)]

    def _pythons(self):
        """The nodes' interpreters: ``mixed`` (the tests) rotates the controller's Python with pyroute2, the
        system's and an older one, so that every code path runs; ``system`` gives every node the distribution's
        /usr/bin/python3, as a fleet of one OS has (the benchmarks: the pyenv-built interpreters of ``mixed``
        cost up to half again as much CPU per node pass)."""
        if self.node_pythons == "system":
            return [(SYSTEM_PYTHON, False)]
        choices = [(self.python, True), (SYSTEM_PYTHON, False)]
        if os.path.exists(OLD_PYTHON):
            choices.append((OLD_PYTHON, False))
        return choices

    # ----------------------------------------------------------------- access
    def node(self, name_or_node):
        if isinstance(name_or_node, Node):
            return name_or_node
        for node in self.nodes:
            if node.name == name_or_node:
                return node
        raise LabError(f"no lab node named {name_or_node!r}; nodes: {', '.join(n.name for n in self.nodes)}")

    def group(self, name):
        return [n for n in self.nodes if name in n.groups]

    @staticmethod
    def run(argv, check=True, input=None, timeout=60):
        proc = subprocess.run(
            [str(a) for a in argv], input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise LabError(f"command failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr.strip()}")
        return proc

    def ns_run(self, node, argv, **kw):
        """Run a command in a node's network namespace (its own mount view)."""
        return self.run(["ip", "netns", "exec", self.node(node).ns, *argv], **kw)

    def node_run(self, node, argv, **kw):
        """Run a command as an SSH session on the node would: its net and mount namespaces."""
        node = self.node(node)
        return self.run(["nsenter", "-t", node.sshd_pid, "-m", "-n", "--", *argv], **kw)

    def node_json(self, node, argv):
        return json.loads(self.ns_run(node, argv).stdout or "null")

    def ssh(self, node, command, check=True, timeout=60, options=()):
        """Run a shell command on the node over the lab's real SSH (``options``: more ``ssh`` options)."""
        node = self.node(node)
        return self.run(
            ["ssh", "-i", self.ssh_key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *options, f"root@{node.ip}", command],
            check=check, timeout=timeout,
        )

    def _answers_ssh(self, node):
        try:
            return self.ssh(node, "true", check=False, timeout=10).returncode == 0
        except subprocess.TimeoutExpired:  # a loaded machine: try again, the deadline decides
            return False

    # -------------------------------------------------------------- lifecycle
    def up(self):
        """Build the lab from scratch (tearing down leftovers of this slot first)."""
        for tool in ("ip", "nsenter", "ssh", "ssh-keygen", "/usr/sbin/sshd"):
            if not shutil.which(tool):
                raise LabError(f"{tool} is missing: run scripts/bootstrap to install the lab's packages")
        if os.geteuid() != 0:
            raise LabError("the lab needs root (network namespaces, sshd, bpffs)")
        self.down(quiet=True)
        (self.workdir / "ssh").mkdir(parents=True, exist_ok=True)
        self._make_keys()
        cidrs = self._pod_cidrs()
        pythons = self._pythons()
        cp_count = 1 if self.node_count <= 3 else 3
        admin_count = min(self.node_count - cp_count, 2 if self.node_count <= 3 else 3)
        self.nodes = []
        for i in range(1, self.node_count + 1):
            python, has_pyroute2 = pythons[(i - 1) % len(pythons)]
            groups = ["k8s_nodes"]
            if i <= cp_count:
                groups.append("control_plane")
            elif i <= cp_count + admin_count:
                groups.append("admin_control_plane")
            self.nodes.append(Node(
                name=f"node{i}", index=i, ns=f"{self.prefix}-node{i}", ip=self._node_ip(i),
                mac=f"02:18:{self.slot:02x}:00:{i // 256:02x}:{i % 256:02x}", pod_cidr=cidrs[i - 1],
                python=python, pyroute2=has_pyroute2, groups=groups,
            ))
        self._save()  # so that a crash half-way is still cleaned by down()
        self._size_neighbour_table()
        self._hold_range_routes()
        self._build_switch()
        for node in self.nodes:
            self._build_node(node)
        for node in self.nodes:
            self._start_sshd(node)
        self._save()
        self.write_inventory()
        self._wait_ssh()
        return self

    def down(self, quiet=False):
        """Remove every namespace, link, process and mount of this slot, state or not."""
        prefix = f"{self.prefix}-"
        listing = self.run(["ip", "netns", "list"], check=False).stdout.split("\n")
        namespaces = [line.split()[0] for line in listing if line.startswith(prefix)]
        for ns in namespaces:
            pids = self.run(["ip", "netns", "pids", ns], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        from .node_cgroups import cleanup  # a real kubelet's containers live in namespaces the lab did not name

        cleanup(self.prefix, self.workdir)
        for ns in namespaces:
            self.run(["ip", "netns", "del", ns], check=False)
        self.run(["ip", "link", "del", self.ctl_link], check=False)
        self._drop_range_routes()
        self._restore_neighbour_table()
        if self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)
        if not quiet:
            print(f"lab slot {self.slot}: removed {len(namespaces)} namespaces")

    @classmethod
    def load(cls, slot=None, workdir=None):
        probe = cls(slot=slot, nodes=DEFAULT_NODES, workdir=workdir)
        if not probe.state_file.exists():
            raise LabError(f"no lab is up in slot {probe.slot} ({probe.state_file} missing): run `lab up` first")
        state = json.loads(probe.state_file.read_text())
        lab = cls(slot=state["slot"], nodes=len(state["nodes"]), workdir=state["workdir"], python=state["python"])
        lab.nodes = [Node(**n) for n in state["nodes"]]
        lab.extra = state.get("extra", {})
        return lab

    def _save(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        state = {"slot": self.slot, "workdir": str(self.workdir), "python": self.python,
                 "nodes": [asdict(n) for n in self.nodes], "extra": self.extra}
        self.state_file.write_text(json.dumps(state, indent=1))

    def remember(self, key, value):
        """Keep a fact about injected state (for the CLI and later test steps)."""
        self.extra[key] = value
        self._save()

    # ------------------------------------------------------------------ build
    def _make_keys(self):
        key = self.ssh_key
        self.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"k8snet-lab{self.slot}", "-f", key])
        self.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "lab-host", "-f", self.workdir / "ssh" / "host_ed25519"])
        (self.workdir / "ssh" / "authorized_keys").write_text(Path(f"{key}.pub").read_text())

    @property
    def _neighbour_record(self):
        return self.workdir / "neigh-thresholds.json"

    def _size_neighbour_table(self):
        """Raise the machine's ARP table thresholds (one table for every namespace) to what n nodes that all
        talk to each other need, when they are lower; the values found are kept for ``down``."""
        n = self.node_count
        wanted = {2: 2 * n * (n + 2) + 512, 3: 4 * n * (n + 2) + 1024}
        changed = {}
        for index, value in sorted(wanted.items()):
            path = Path(NEIGH_THRESHOLDS % index)
            current = int(path.read_text())
            if current < value:
                path.write_text("%d\n" % value)
                changed[index] = {"was": current, "set": value}
        if changed:
            self._neighbour_record.write_text(json.dumps(changed))

    def _restore_neighbour_table(self):
        """Put back the thresholds ``up`` raised, unless something else changed them since."""
        try:
            changed = json.loads(self._neighbour_record.read_text())
        except (OSError, ValueError):
            return
        for index, values in sorted(changed.items(), reverse=True):
            path = Path(NEIGH_THRESHOLDS % int(index))
            if int(path.read_text()) == values["set"]:
                path.write_text("%d\n" % values["was"])

    def _hold_range_routes(self):
        """Unreachable routes for this slot's ranges in the root namespace: nothing addressed to the lab leaves the
        machine (the answer is an immediate "No route to host"), whatever the lab's hosts are."""
        for net in self.slot_ranges:
            self.run(["ip", "route", "replace", "unreachable", str(net), "proto", "static", "metric", "4242"])

    def _drop_range_routes(self):
        for net in self.slot_ranges:
            self.run(["ip", "route", "del", "unreachable", str(net), "proto", "static", "metric", "4242"], check=False)

    def _build_switch(self):
        sw = self.switch_ns
        self.run(["ip", "netns", "add", sw])
        self.run(["ip", "-n", sw, "link", "set", "lo", "up"])
        self.run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        self.run(["ip", "-n", sw, "link", "set", "br0", "up"])
        self.run(["ip", "link", "add", self.ctl_link, "type", "veth", "peer", "name", "vctl", "netns", sw])
        self.run(["ip", "-n", sw, "link", "set", "vctl", "master", "br0", "up"])
        self.run(["ip", "addr", "add", f"{self.controller_ip}/{self.network.prefixlen}", "dev", self.ctl_link])
        self.run(["ip", "link", "set", self.ctl_link, "up"])

    def _build_node(self, node):
        ns, sw = node.ns, self.switch_ns
        port = f"vn{node.index}"
        self.run(["ip", "netns", "add", ns])
        self.run(["ip", "link", "add", "eth0", "netns", ns, "address", node.mac, "type", "veth",
                  "peer", "name", port, "netns", sw])
        self.run(["ip", "-n", sw, "link", "set", port, "master", "br0", "up"])
        batch = "\n".join([
            "link set lo up",
            "link set eth0 up",
            f"addr add {node.ip}/{self.network.prefixlen} dev eth0",
        ]) + "\n"
        self.run(["ip", "-n", ns, "-batch", "-"], input=batch)
        # an hour before the kernel's GC may drop a STALE neighbour entry of eth0 (the default, 60 s, counts once the
        # machine's one table holds more than gc_thresh1 entries: with two labs up, a fault injected as a STALE entry
        # vanished between a test's runs)
        self.ns_run(node, ["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.neigh.eth0.gc_stale_time=3600"])
        ndir = self.workdir / "nodes" / node.name
        for sub in ("run", "log"):
            (ndir / sub).mkdir(parents=True, exist_ok=True)

    def _start_sshd(self, node):
        ndir = self.workdir / "nodes" / node.name
        ssh_dir = self.workdir / "ssh"
        config = ndir / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress {node.ip}",
            "Port 22",
            f"HostKey {ssh_dir / 'host_ed25519'}",
            f"PidFile {ndir / 'sshd.pid'}",
            f"AuthorizedKeysFile {ssh_dir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "MaxStartups 200",
            "MaxSessions 200",
            "AcceptEnv LANG LC_*",
            "Subsystem sftp internal-sftp",
            "",
        ]))
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation dir sshd insists on
        self.ns_run(node, ["/usr/sbin/sshd", "-f", config, "-E", ndir / "log" / "sshd.log"])
        pidfile = ndir / "sshd.pid"
        for dummy in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.05)
        else:
            raise LabError(f"sshd of {node.name} did not start; see {ndir / 'log' / 'sshd.log'}")
        node.sshd_pid = int(pidfile.read_text().strip())
        # The node's own mount namespace: a bpffs of its own, a private /run
        # (so /var/run/calico, /run/systemd/... are per node).
        run_dir = ndir / "run"
        (run_dir / "sshd").mkdir(exist_ok=True)
        self.node_run(node, ["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"])
        self.node_run(node, ["mount", "--bind", run_dir, "/run"])
        # A node is its own machine: SSH sessions must not run this controller's shell start-up
        # files (here they run `pyenv init`, whose rehash lock made concurrent sessions queue for
        # up to a minute). Empty files are bound over them inside the node's mount namespace.
        empty = ndir / "empty-rc"
        empty.write_text("")
        for name in SHELL_STARTUP_FILES:
            if Path(name).exists():
                self.node_run(node, ["mount", "--bind", empty, name])

    def _wait_ssh(self, timeout=120):
        deadline = time.time() + timeout
        pending = list(self.nodes)
        while pending and time.time() < deadline:
            pending = [n for n in pending if not self._answers_ssh(n)]
            if pending:
                time.sleep(0.2)
        if pending:
            raise LabError(f"SSH to {', '.join(n.name for n in pending)} failed; see the sshd logs under {self.workdir}/nodes")

    # -------------------------------------------------------------- inventory
    def write_inventory(self):
        """Write the generated inventory (DESIGN.md section 3 groups)."""
        common_args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        hosts = {}
        for n in self.nodes:
            hosts[n.name] = {
                "ansible_host": n.ip,
                "ansible_python_interpreter": n.python,
                "k8s_pod_cidr": n.pod_cidr,
                "lab_pyroute2": n.pyroute2,
                "lab_mac": n.mac,
            }
        children = {"k8s_nodes": {"hosts": hosts}}
        for group in ("control_plane", "admin_control_plane"):
            children[group] = {"hosts": {n.name: {} for n in self.group(group)}}
        children[f"cluster_lab{self.slot}"] = {"children": {"k8s_nodes": {}}}
        inventory = {
            "all": {
                "vars": {
                    "ansible_user": "root",
                    "ansible_ssh_private_key_file": str(self.ssh_key),
                    "ansible_ssh_common_args": common_args,
                    "lab_slot": self.slot,
                    "lab_network": str(self.network),
                    "lab_controller_ip": self.controller_ip,
                    "lab_vip": self.vip(0),
                },
                "hosts": {
                    "localhost": {"ansible_connection": "local", "ansible_python_interpreter": self.python},
                },
                "children": children,
            }
        }
        # JSON is valid YAML and needs no third-party module here.
        self.inventory_path.write_text(json.dumps(inventory, indent=2) + "\n")
        return self.inventory_path

    # -------------------------------------------------------------- neighbors
    def neighbors(self, node, address=None):
        """The node's neighbor table read with ``ip -j neigh`` (independent of our modules)."""
        argv = ["ip", "-j", "neigh", "show"]
        if address:
            argv += ["to", address]
        return self.node_json(node, argv) or []

    def ping(self, node, address, count=1, timeout=1):
        return self.ns_run(node, ["ping", "-n", "-q", "-c", count, "-W", timeout, address], check=False)
