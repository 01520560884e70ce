"""The one part of a node the lab still plays: the kubelet's heartbeat. For each node named, renew its Lease in
``kube-node-lease`` every ``--interval`` seconds (creating it first), as a kubelet does, so that the real
kube-controller-manager's node lifecycle controller sees the node alive. A node whose name is listed in the file
``<lab>/kube/stopped-heartbeats`` is skipped: its Lease expires and the controller marks it as it would a node
whose kubelet died. A node listed in ``<lab>/kube/real-kubelets`` runs a real kubelet (``tests/lab/node_agent.py``)
that renews its own Lease: skipped too. Started by ``tests.lab.cluster.Cluster.up`` in the API's namespace; ends with
the lab."""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

LEASE_SECONDS = 40


def micro_now():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def call(server, ctx, method, path, body=None, content_type="application/json"):
    url = urlsplit(server)
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=10)
    try:
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                     headers={"Content-Type": content_type})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def renew(server, ctx, node):
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node
    status = call(server, ctx, "PATCH", path, {"spec": {"renewTime": micro_now()}}, "application/merge-patch+json")
    if status == 404:
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": node, "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": node, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": micro_now()}}
        status = call(server, ctx, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease)
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.lab.kubelet", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--stopped", default=None, help="file listing nodes whose heartbeat stopped, one a line")
    parser.add_argument("nodes", nargs="+")
    opts = parser.parse_args(argv)
    ctx = ssl.create_default_context(cafile=opts.ca)
    ctx.load_cert_chain(opts.cert, opts.key)
    stopped_file = Path(opts.stopped or Path(opts.ca).parent.parent / "stopped-heartbeats")
    real_file = stopped_file.parent / "real-kubelets"
    while True:
        stopped = set()
        for listing in (stopped_file, real_file):
            stopped |= set(listing.read_text().split()) if listing.exists() else set()
        for node in opts.nodes:
            if node in stopped:
                continue
            try:
                status = renew(opts.server, ctx, node)
                if status >= 400:
                    print("lease of %s: HTTP %d" % (node, status), flush=True)
            except OSError as exc:
                print("lease of %s: %s" % (node, exc), flush=True)
        time.sleep(opts.interval)


if __name__ == "__main__":
    sys.exit(main())
