"""A real kubelet and containerd on a lab node: what a user's node runs, in the node's network and mount namespaces.

``NodeAgent(cluster, "node1").start()`` gives the node, under ``<lab>/kube/nodes/<node>``:

* the cgroup v1 hierarchies mounted in the node's mount namespace (``ip netns exec`` gave it a sysfs of its own,
  without them), the kubelet's and containerd's cgroups under ``/<lab prefix>-<node>`` of each (``cgroupRoot``,
  cgroupfs driver), so that nodes sharing one kernel stay apart and teardown finds them by name;
* the three kernel settings the kubelet insists on (``vm.overcommit_memory=1``, ``kernel.panic=10``,
  ``kernel.panic_on_oops=1``) shown to it by files bound over ``/proc/sys`` in the node's mount namespace, and
  ``protectKernelDefaults: true``, so that it fails rather than change the shared kernel's;
* containerd (``build/kubernetes/bin``; Debian's runc) with its root, state and socket under the node's directory,
  the CRI plugin's CNI config directory ``cni/net.d`` holding a bridge + host-local config for the upper half of
  the node's podCIDR (the lower half is the lab's own pod namespaces', ``tests/lab/faults/pods.py``);
* the images ``registry.k8s.io/pause:<pause>`` (Kubernetes' pause.c) and ``lab.k8snet/busybox:1`` (Debian's
  busybox-static), imported with ``ctr -n k8s.io images import``: no registry is reachable;
* the kubelet, registered as the node with a client certificate of the lab's CA (``system:node:<node>``), its API
  on ``<node ip>:10250`` for the API server's logs and exec; the lab's Lease heartbeat skips the node
  (``<lab>/kube/real-kubelets``).

``stop()`` (and ``cleanup(lab)`` from ``Lab.down``, also after a crash) kills the containers' processes, the
shims, containerd and the kubelet, and removes the cgroups; the mounts go with the node's mount namespace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.kube_api.certs import write_private

from .cluster import binary
from .core import LabError
from .node_cgroups import CGROUP_V1, kill_cgroup, kill_shims, remove_cgroup
from .oci_image import layer, write_image

KERNEL_SETTINGS = {"vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1"}
RUNC = "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"
BUSYBOX = "/bin/busybox"
BUSYBOX_IMAGE = "lab.k8snet/busybox:1"
KUBELET_PORT = 10250


def pause_image():
    info = json.loads((Path(binary("pause")).parent.parent / "build-info.json").read_text())
    return f"registry.k8s.io/pause:{info['pause']}"


class NodeAgent:
    """The kubelet and containerd of one lab node (see the module's docstring)."""

    def __init__(self, cluster, node):
        self.cluster = cluster
        self.lab = cluster.lab
        self.node = self.lab.node(node)
        self.dir = cluster.dir / "nodes" / self.node.name
        self.cgroup = "/" + self.node.ns  # k8t<slot>-<node>: unique per slot and node
        self.socket = self.dir / "containerd" / "containerd.sock"

    # ------------------------------------------------------------------ facts
    @property
    def cni_dir(self):
        return self.dir / "cni" / "net.d"

    def ctr(self, *args, timeout=120):
        """``ctr`` against this node's containerd (namespace k8s.io, the CRI's), in the node's namespaces."""
        return self.lab.node_run(self.node, [binary("ctr"), "--address", self.socket, "-n", "k8s.io", *args],
                                 timeout=timeout)

    # ------------------------------------------------------------- lifecycle
    def start(self, timeout=180):
        needed = (RUNC, f"{CNI_BIN}/bridge", f"{CNI_BIN}/host-local", BUSYBOX)
        for missing in (p for p in needed if not Path(p).exists()):
            raise LabError(f"{missing} is missing: scripts/bootstrap installs runc, containernetworking-plugins and "
                           f"busybox-static from Debian")
        t0 = time.monotonic()
        for sub in ("containerd/root", "containerd/state", "kubelet", "pod-logs", "cni/net.d", "cni/networks",
                    "images", "sys"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._mount_cgroups()
        self._kernel_settings()
        self.write_cni_config()
        self._mark_real()
        self.cluster._spawn(f"containerd-{self.node.name}",
                            [binary("containerd"), "--config", self._containerd_config()], node=self.node)
        self.cluster.wait_for(f"containerd of {self.node.name}", self._containerd_up, timeout=60)
        self._import_images()
        self.cluster._spawn(f"kubelet-{self.node.name}", self._kubelet_argv(), node=self.node)
        self.cluster.wait_for(f"the kubelet of {self.node.name} posting Ready", self.ready,
                              timeout=max(10, timeout - (time.monotonic() - t0)))
        return self

    def ready(self):
        node = self.cluster.request("GET", f"/api/v1/nodes/{self.node.name}")
        real = node["status"].get("nodeInfo", {}).get("kubeletVersion", "").startswith("v1.")
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        return real and ready and ready[0]["status"] == "True" and node

    def stop(self):
        for name in (f"kubelet-{self.node.name}",):
            self._kill(name)
        kill_cgroup(self.cgroup)
        self._kill(f"containerd-{self.node.name}")
        kill_shims(self.dir)
        remove_cgroup(self.cgroup)
        self._mark_real(remove=True)

    def _kill(self, name):
        pid = self.lab.extra.get("cluster_pids", {}).get(name)
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # ---------------------------------------------------------------- pieces
    def _mount_cgroups(self):
        lines = ["set -e", "mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup"]
        for sub in CGROUP_V1:
            lines.append(f"mkdir -p /sys/fs/cgroup/{sub}; mountpoint -q /sys/fs/cgroup/{sub} || "
                         f"mount -t cgroup -o {sub} cgroup /sys/fs/cgroup/{sub}")
        lines.append("mkdir -p /sys/fs/cgroup/systemd; mountpoint -q /sys/fs/cgroup/systemd || "
                     "mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd")
        self.lab.node_run(self.node, ["sh", "-c", "\n".join(lines)])
        for sub in (*CGROUP_V1, "systemd"):
            path = Path("/sys/fs/cgroup", sub, self.cgroup.lstrip("/"))
            path.mkdir(exist_ok=True)
            if sub == "cpuset":  # a v1 cpuset takes no task until it has CPUs and memory nodes
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (path / f).write_text(Path("/sys/fs/cgroup/cpuset", f).read_text())

    def _kernel_settings(self):
        for key, value in KERNEL_SETTINGS.items():
            shown = self.dir / "sys" / key.replace("/", ".")
            shown.write_text(value + "\n")
            self.lab.node_run(self.node, ["sh", "-c", f"mountpoint -q /proc/sys/{key} || mount --bind {shown} "
                                                      f"/proc/sys/{key}"])

    def _mark_real(self, remove=False):
        path = self.cluster.dir / "real-kubelets"
        names = set(path.read_text().split()) if path.exists() else set()
        names = names - {self.node.name} if remove else names | {self.node.name}
        path.write_text("".join(n + "\n" for n in sorted(names)))

    def cni_config(self):
        net = self.node.pod_cidr
        base, prefix = net.split("/")
        octets = base.split(".")
        half = int(prefix) + 1
        upper = f"{'.'.join(octets[:3])}.{int(octets[3]) + 2 ** (32 - half)}/{half}"
        return {"cniVersion": "1.0.0", "name": "lab-bridge", "plugins": [
            {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "dataDir": str(self.dir / "cni" / "networks"),
                      "ranges": [[{"subnet": upper}]], "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}}]}

    def write_cni_config(self):
        path = self.cni_dir / "10-lab-bridge.conflist"
        path.write_text(json.dumps(self.cni_config(), indent=1))
        return path

    def remove_cni_config(self):
        for path in self.cni_dir.glob("*"):
            path.unlink()

    def _containerd_config(self):
        d = self.dir / "containerd"
        text = f"""version = 3
root = "{d / 'root'}"
state = "{d / 'state'}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{self.socket}"
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / 'opt'}"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{pause_image()}"
[plugins."io.containerd.cri.v1.runtime"]
  # the lab runs without CAP_SYS_RESOURCE: runc cannot lower the pause container's oom_score_adj to -998
  # ("failed to update /proc/self/oom_score_adj: Permission denied"); keep every score at containerd's or above
  restrict_oom_score_adj = true
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["{CNI_BIN}"]
  conf_dir = "{self.cni_dir}"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "{RUNC}"
  SystemdCgroup = false
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""
        path = d / "config.toml"
        path.write_text(text)
        return path

    def _containerd_up(self):
        return self.socket.exists() and self.ctr("version", timeout=30).returncode == 0

    def _import_images(self):
        images = self.dir / "images"
        pause = write_image(images / "pause.tar", pause_image(),
                            layer({"pause": (binary("pause"), 0o755)}), entrypoint=["/pause"])
        applets = subprocess.run([BUSYBOX, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
        box = layer({"bin/busybox": (BUSYBOX, 0o755), "etc/passwd": (b"root:x:0:0:root:/root:/bin/sh\n", 0o644)},
                    symlinks={a: "/bin/busybox" for a in applets if a != "bin/busybox"}, dirs=("tmp", "root"))
        busybox = write_image(images / "busybox.tar", BUSYBOX_IMAGE, box, cmd=["sh"])
        for tar in (pause, busybox):
            self.import_image(tar)

    def busybox_layer_files(self):
        """busybox and its applets, as the lab's busybox image has them (for a test's own image)."""
        applets = subprocess.run([BUSYBOX, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
        return {"bin/busybox": (BUSYBOX, 0o755)}, {a: "/bin/busybox" for a in applets if a != "bin/busybox"}

    def import_image(self, tar):
        """``ctr images import`` of an OCI layout tarball (tests.lab.oci_image) into the CRI's namespace."""
        result = self.ctr("images", "import", tar, timeout=120)
        if result.returncode != 0:
            raise LabError(f"ctr images import {tar} on {self.node.name}: {result.stderr.strip()}")
        return tar

    def _credentials(self):
        ca = self.cluster.ca
        if ca is None:
            raise LabError("the kubelet's certificate is signed by the cluster's CA: start the agent from the process "
                           "that ran Cluster.up()")
        cert, key = ca.issue(f"system:node:{self.node.name}", organizations=["system:nodes"], client=True)
        (self.dir / "kubelet.crt").write_bytes(cert)
        write_private(self.dir / "kubelet.key", key)
        from .cluster import kubeconfig_data
        path = self.dir / "kubelet.kubeconfig"
        write_private(path, json.dumps(kubeconfig_data(self.cluster.server, ca.pem, f"system:node:{self.node.name}",
                                                       cert, key)).encode())
        return path

    def _kubelet_argv(self):
        resolv = self.dir / "resolv.conf"
        resolv.write_text(f"nameserver {self.lab.controller_ip}\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "cgroupDriver": "cgroupfs", "cgroupRoot": self.cgroup,
            "protectKernelDefaults": True, "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": self.node.ip, "port": KUBELET_PORT, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": str(self.cluster.ca_file)}},
            "authorization": {"mode": "Webhook"},
            "podLogsDir": str(self.dir / "pod-logs"), "resolvConf": str(resolv),
            "staticPodPath": "", "serializeImagePulls": False,
            # a shared machine: evict nothing, collect no image (the imported ones cannot be pulled again)
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "nodeStatusUpdateFrequency": "10s", "syncFrequency": "10s",
            "maxPods": 30, "podPidsLimit": 1024, "enableControllerAttachDetach": True,
        }
        path = self.dir / "kubelet-config.json"
        path.write_text(json.dumps(config, indent=1))
        return [binary("kubelet"), "--config", path, "--kubeconfig", self._credentials(),
                "--root-dir", self.dir / "kubelet", "--hostname-override", self.node.name,
                "--node-ip", self.node.ip, "--v=2"]
