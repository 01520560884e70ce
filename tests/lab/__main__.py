"""Command line: python -m tests.lab {up,down,status,inject,list}."""

from __future__ import annotations

import argparse
import json
import sys

from .core import NODE_PYTHONS, Lab, LabError
from .faults import load_all


def _value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.lab", description=__doc__)
    parser.add_argument("--slot", type=int, default=None, help="lab slot 0..7 (default $K8SNET_LAB_SLOT or 0)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="build the lab (tears down leftovers of the slot first)")
    up.add_argument("--nodes", type=int, default=None)
    up.add_argument("--node-pythons", choices=NODE_PYTHONS, default="mixed",
                    help="mixed: three interpreters in turn, pyroute2 on a third of the nodes (the tests); system: "
                         "/usr/bin/python3 on every node, as on a fleet of one OS (the benchmarks)")
    up.add_argument("--kube", action="store_true",
                    help="also start a real control plane (etcd, kube-apiserver, kube-controller-manager) and kube-proxy "
                         "on every node, built by scripts/build-kubernetes; its kubeconfig is <lab>/kube/admin.kubeconfig")
    sub.add_parser("down", help="remove everything the lab made, also after a crash")
    sub.add_parser("status", help="print the lab's nodes")
    sub.add_parser("list", help="list the fault injectors")
    inject = sub.add_parser("inject", help="run a fault injector: inject NAME key=value ...")
    inject.add_argument("name")
    inject.add_argument("args", nargs="*")
    opts = parser.parse_args(argv)
    try:
        if opts.cmd == "up":
            lab = Lab(slot=opts.slot, nodes=opts.nodes, node_pythons=opts.node_pythons).up()
            print(f"lab slot {lab.slot} up: {len(lab.nodes)} nodes, inventory {lab.inventory_path}")
            if opts.kube:
                from .cluster import Cluster

                cluster = Cluster(lab).up()
                modes = ", ".join(f"{n.name} {cluster.proxy_mode(n)}" for n in lab.nodes)
                print(f"Kubernetes API {cluster.server} (kubeconfig {cluster.kubeconfig()}); kube-proxy: {modes}")
        elif opts.cmd == "down":
            Lab(slot=opts.slot).down()
        elif opts.cmd == "status":
            lab = Lab.load(slot=opts.slot)
            for n in lab.nodes:
                print(f"{n.name:8} {n.ip:15} {n.mac}  pods {n.pod_cidr:18} {','.join(n.groups[1:]) or '-':22} {n.python}")
        elif opts.cmd == "list":
            for name, func in sorted(load_all().items()):
                print(f"{name:28} {(func.__doc__ or '').strip().splitlines()[0]}")
        elif opts.cmd == "inject":
            registry = load_all()
            if opts.name not in registry:
                raise LabError(f"no injector {opts.name!r}; `python -m tests.lab list` shows them")
            kwargs = dict(arg.split("=", 1) for arg in opts.args)
            result = registry[opts.name](Lab.load(slot=opts.slot), **{k: _value(v) for k, v in kwargs.items()})
            print(json.dumps(result))
    except LabError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
