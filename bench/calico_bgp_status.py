"""Benchmark (not a test): calico_bgp_status beside the manual runbook it replaces.

Manual runbook: SSH to each node, run `birdc show protocols` (or `calicoctl node status`,
which is not installable here and fails on BIRD 2 anyway), then compare the peers with
`kubectl get nodes` by eye.  Ours: one ad-hoc module run over the fleet, and the playbook
with its fleet table.  Also the node-side cost of one read: `birdc` vs our socket client.

    K8SNET_LAB_SLOT=3 .venv/bin/python -m bench.calico_bgp_status [--nodes 3] [--runs 20]

Uses the lab of the slot if it is up (and leaves it), else builds one and removes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import BUILD  # noqa: E402  (makes ansible_collections importable)
from tests.lab import Lab  # noqa: E402
from tests.lab.core import LabError  # noqa: E402
from tests.lab.faults import bgp  # noqa: E402

sys.path.insert(0, str(BUILD))
from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird  # noqa: E402
from ansible_collections.k8snet.triage.plugins.module_utils.calico import parsers as bird_parsers  # noqa: E402


def timed(func):
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def env():
    environ = dict(os.environ)
    environ.update({"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PATH": "%s:%s" % (ROOT / ".venv" / "bin", environ["PATH"])})
    return environ


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    opts = parser.parse_args()
    try:
        lab, owned = Lab.load(), False
    except LabError:
        lab, owned = Lab(nodes=opts.nodes).up(), True
    try:
        mesh = bgp.bgp_mesh(lab)
        for node in lab.nodes:
            bgp.wait_for(lab, node, bgp.protocol_name(mesh["stale"]), lambda state, info: "No route to host" in info)
        inventory = str(lab.inventory_path)
        ips = ",".join('"%s"' % n.ip for n in lab.nodes)

        manual = timed(lambda: [lab.ssh(n, "birdc -s %s show protocols" % bgp.SOCKET) for n in lab.nodes])[0]
        baseline = timed(lambda: subprocess.run(
            ["ansible", "k8s_nodes", "-i", inventory, "-m", "ansible.builtin.ping"], cwd=ROOT, env=env(),
            capture_output=True, text=True, timeout=300, check=True))[0]
        module, proc = timed(lambda: subprocess.run(
            ["ansible", "k8s_nodes", "-i", inventory, "-m", "k8snet.triage.calico_bgp_status",
             "-a", '{"expected_peers": [%s]}' % ips], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300,
            check=False))
        playbook, pproc = timed(lambda: subprocess.run(
            ["ansible-playbook", "-i", inventory, "k8snet.triage.calico"], cwd=ROOT, env=env(),
            capture_output=True, text=True, timeout=300, check=False))
        if proc.returncode or pproc.returncode:
            print(proc.stdout[-2000:], pproc.stdout[-2000:], file=sys.stderr)
            raise SystemExit("the module or the playbook failed")

        node = lab.nodes[0]
        sock = str(bgp._paths(lab, node)["socket_on_host"])
        birdc_times = [timed(lambda: subprocess.run([bgp.BIRDC, "-s", sock, "show", "protocols", "all"],
                                                    capture_output=True, check=True))[0] for run in range(opts.runs)]
        ours_times = [timed(lambda: bird_parsers.bgp_peers(bird_parsers.parse_protocols(bird.BirdClient(sock).query("show protocols all"))))[0]
                      for run in range(opts.runs)]

        # parser on a large mesh: the captured node3 transcript's peer blocks repeated for 500 peers
        text = (ROOT / "tests/unit/plugins/module_utils/fixtures/bird/bird2_show_protocols_all_node3.raw").read_text()
        head, body = text.split("1002-Mesh_", 1)
        blocks = ("1002-Mesh_" + body).rsplit("0000 ", 1)[0]
        big = head + "".join(blocks.replace("198_18_96_", "10_%d_%d_" % (i // 250, i % 250)) for i in range(125)) + "0000 \n"
        parse_time, peers = timed(lambda: bird_parsers.bgp_peers(bird_parsers.parse_protocols(big)))

        n = len(lab.nodes)
        print("lab slot %d, %d nodes, BIRD %s, peers per node %d" % (lab.slot, n, "2.0.12", len(bgp.protocols(lab, node))))
        print("manual  ssh + birdc show protocols, node after node : %6.2f s  (then compare with kubectl get nodes by eye)" % manual)
        print("ours    calico_bgp_status on every node (ansible)    : %6.2f s  (states, causes, stale and missing peers)" % module)
        print("        ansible.builtin.ping on every node (overhead) : %6.2f s" % baseline)
        print("ours    playbook k8snet.triage.calico                : %6.2f s  (plus the fleet table and stale Node resources)" % playbook)
        print("node    birdc show protocols all, median of %d       : %6.2f ms" % (opts.runs, 1000 * statistics.median(birdc_times)))
        print("node    BirdClient query + parse, median of %d       : %6.2f ms  (no birdc/calicoctl needed)" % (
            opts.runs, 1000 * statistics.median(ours_times)))
        print("parse   show protocols all of %d peers               : %6.2f ms" % (len(peers), 1000 * parse_time))
    finally:
        bgp.bgp_down(lab)
        if owned:
            lab.down(quiet=True)


if __name__ == "__main__":
    main()
