"""Benchmark (not a test): kube_network_info beside the kubectl commands it replaces.

Run as root from the checkout:  K8SNET_LAB_SLOT=N .venv/bin/python -m bench.kube_network_info [--nodes 3]

Brings up the lab and the stand-in API (cluster.yaml + network.yaml with the lab's nodes), then
times, in the same run:

* manual: kubectl get nodes / svc -A / svc kube-dns / coredns pods -o json, the lists an operator
  (or three roles) would read and then turn into frontends, BGP peers and DNS servers by hand;
* ``ansible -m k8snet.triage.kube_network_info``: one module call, one read of each list,
  everything already in the formats bpf_map_usage, calico_bgp_status and dns_check take.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kube_api import FIXTURES  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.faults import kube as kube_faults  # noqa: E402


def timed(argv, env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, check=False)
    return time.perf_counter() - start, proc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    lab = Lab(nodes=args.nodes).up()
    server = None
    try:
        server = kube_faults.start_api(lab, [FIXTURES / "cluster.yaml", FIXTURES / "network.yaml"], name="kube-api-bench-facts")
        kc = str(server.kubeconfig())
        kubectl = ["kubectl", "--kubeconfig", kc]
        manual = [kubectl + ["get", "nodes", "-o", "json"], kubectl + ["get", "svc", "-A", "-o", "json"],
                  kubectl + ["get", "svc", "-n", "kube-system", "kube-dns", "-o", "json"],
                  kubectl + ["get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", "json"]]
        before = len(server.requests)
        manual_time = sum(timed(cmd)[0] for cmd in manual)
        manual_requests = len(server.requests) - before
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH="%s:%s" % (ROOT / ".venv" / "bin", os.environ["PATH"]))
        before = len(server.requests)
        ours_time, proc = timed(["ansible", "localhost", "-i", str(lab.inventory_path), "-m", "k8snet.triage.kube_network_info",
                                 "-a", json.dumps({"kubeconfig": kc}), "-o"], env=env)
        ours_requests = len(server.requests) - before
        result = json.loads(proc.stdout.split(" => ", 1)[1])
        print("%-62s %8s %8s" % ("task (%d nodes, same run)" % len(lab.nodes), "manual", "ours"))
        print("%-62s %7.2fs %7.2fs" % ("frontends + peers + DNS servers: %d kubectl commands / 1 module" % len(manual),
                                       manual_time, ours_time))
        print("%-62s %8d %8d" % ("API requests", manual_requests, ours_requests))
        print("result: %d frontends, %d nodes, %d DNS servers, findings %s" % (
            len(result["service_frontends"]), len(result["nodes"]), len(result["dns_servers"]),
            [f["check"] for f in result["findings"]]))
    finally:
        if server:
            server.stop()
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
