"""Benchmark (not a test): lb_health and node_network_status beside the manual commands they replace.

Run as root from the checkout:  K8SNET_LAB_SLOT=N .venv/bin/python -m bench.lb_health [--nodes 3]

Brings up the lab, the stand-in API (fixtures with the lab's nodes) and kube-proxy-style health
endpoints on every node, then times, in the same run:

* manual LB triage: kubectl get svc / endpointslices / nodes, then curl of healthCheckNodePort on
  every node, as an operator does it (and then compares the answers by eye);
* ``ansible -m k8snet.triage.lb_health`` (one module call, the same facts, compared for you);
* manual CNI triage: kubectl get nodes -o json + kubectl get pods -n kube-system -o wide;
* ``ansible -m k8snet.triage.node_network_status``.
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

PORT = 31910


def timed(argv, env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, check=False)
    return time.perf_counter() - start, proc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    lab = Lab(nodes=args.nodes).up()
    server, endpoints = None, []
    try:
        server = kube_faults.start_api(lab, [FIXTURES / "cluster.yaml", FIXTURES / "cni.yaml", FIXTURES / "router.yaml"],
                                       name="kube-api-bench")
        kc = str(server.kubeconfig())
        for node in lab.nodes:
            endpoints.append(kube_faults.health_endpoint(lab, node, PORT, 1 if node.index <= 2 else 0, seconds=300))
        kubectl = ["kubectl", "--kubeconfig", kc]
        manual = [kubectl + ["get", "svc", "-A", "-o", "json"],
                  kubectl + ["get", "endpointslices", "-n", "openshift-ingress", "-l",
                             "kubernetes.io/service-name=router-default", "-o", "json"],
                  kubectl + ["get", "nodes", "-o", "wide"]]
        manual += [["curl", "-s", "-m", "2", "http://%s:%d/" % (n.ip, PORT)] for n in lab.nodes]
        manual_time = sum(timed(cmd)[0] for cmd in manual)
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH="%s:%s" % (ROOT / ".venv" / "bin", os.environ["PATH"]))
        ours_time, proc = timed(["ansible", "localhost", "-i", str(lab.inventory_path), "-m", "k8snet.triage.lb_health",
                                 "-a", json.dumps({"kubeconfig": kc}), "-o"], env=env)
        assert "lb.nodes_without_endpoints" in proc.stdout, proc.stdout + proc.stderr
        cni_manual = [kubectl + ["get", "nodes", "-o", "json"], kubectl + ["get", "pods", "-n", "kube-system", "-o", "wide"]]
        cni_manual_time = sum(timed(cmd)[0] for cmd in cni_manual)
        cni_time, proc = timed(["ansible", "localhost", "-i", str(lab.inventory_path), "-m",
                                "k8snet.triage.node_network_status", "-a", json.dumps({"kubeconfig": kc}), "-o"], env=env)
        assert "node.network_unavailable" in proc.stdout, proc.stdout + proc.stderr
        print("%-58s %8s %8s" % ("task (%d nodes, same run)" % len(lab.nodes), "manual", "ours"))
        print("%-58s %7.2fs %7.2fs" % ("LB health: %d commands + compare by eye / lb_health" % len(manual),
                                       manual_time, ours_time))
        print("%-58s %7.2fs %7.2fs" % ("CNI status: %d kubectl commands + read / node_network_status" % len(cni_manual),
                                       cni_manual_time, cni_time))
        print("API requests served to our modules and kubectl: %d" % len(server.requests))
    finally:
        if endpoints:
            kube_faults.stop_health_endpoints(lab, endpoints)
        if server:
            server.stop()
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
