"""Serve fixtures for a demo: ``python -m tests.kube_api --bind 198.18.0.1 [--port 6443] [FILE...]``.

Writes a kubeconfig under --workdir and prints its path; stops on Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys

from . import FIXTURES, StandIn, load_yaml


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.kube_api")
    parser.add_argument("files", nargs="*", help="YAML fixtures (default: tests/kube_api/fixtures/*.yaml)")
    parser.add_argument("--bind", required=True, help="address to listen on (a lab address, 198.18.0.0/15)")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--workdir", default="/tmp/k8snet-kube-api")
    args = parser.parse_args(argv)
    files = args.files or sorted(str(p) for p in FIXTURES.glob("*.yaml"))
    server = StandIn(load_yaml(files), args.workdir, args.bind, args.port).start()
    print("serving %d objects at %s; kubeconfig: %s" % (len(server.store.objects), server.url, server.kubeconfig()))
    sys.stdout.flush()
    signal.sigwait([signal.SIGINT, signal.SIGTERM])
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
