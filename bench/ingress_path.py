"""Bench: wall time of the ingress-path bisection for one injected break, beside the manual walk.

Manual (what the runbook has an operator do, minus the typing): SSH to each hop in turn, start
tcpdump there, send a request from the client, read the output, and move to the next hop until
one shows nothing.  Ours: one run of playbook k8snet.triage.ingress_path, captures on every hop
at once.  Both run against the same lab in the same process, one after the other.

    K8SNET_LAB_SLOT=5 .venv/bin/python bench/ingress_path.py [break_between_nodes|break_arp|...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import ensure_collection_link  # noqa: E402
from tests.integration.conftest import Ansible  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.faults import path as lab_path  # noqa: E402


def manual_walk(lab, lb, window=3):
    """Sequential tcpdump per hop over SSH while curl runs on the client; stops at the first silent hop."""
    hops = [("client", "eth0", lb["client"]), (lb["lb"], "eth0", lab.node(lb["lb"]).ip),
            (lb["worker"], "eth0", lab.node(lb["worker"]).ip), (lb["worker"], lb["pod_device"], lab.node(lb["worker"]).ip)]
    ssh = ["ssh", "-i", str(lab.ssh_key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
           "-o", "LogLevel=ERROR", "-o", "BatchMode=yes"]
    walked = []
    for host, dev, address in hops:
        dump = subprocess.Popen(ssh + ["root@" + address, "timeout %d tcpdump -i %s -nn -l -c 20 'host %s or host %s' "
                                       "2>/dev/null" % (window, dev, lb["vip"], lb["pod_ip"])],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the operator waits for "listening on ..." before sending
        subprocess.run(ssh + ["root@" + lb["client"], "curl -s -o /dev/null --connect-timeout 1 -m 1 http://%s/"
                              % lb["vip"]], check=False)
        out = dump.communicate()[0]
        lines = [line for line in out.splitlines() if line.strip()]
        walked.append((host, dev, len(lines)))
        if not lines:
            break
    return walked


def main():
    ensure_collection_link()
    name = sys.argv[1] if len(sys.argv) > 1 else "break_between_nodes"
    lab = Lab().up()
    try:
        lb = lab_path.loadbalancer(lab)
        inventory = lab_path.path_inventory(lab)["inventory"]
        (lab.workdir / "pcaps").mkdir(exist_ok=True)
        getattr(lab_path, name)(lab)
        os.environ["PATH"] = str(ROOT / ".venv" / "bin") + os.pathsep + os.environ["PATH"]
        started = time.time()
        walked = manual_walk(lab, lb)
        manual = time.time() - started
        extra = {"ingress_path_hosts": "client:%s:%s" % (lb["lb"], lb["worker"]), "ingress_path_lb_nodes": [lb["lb"]],
                 "ingress_path_worker": lb["worker"], "ingress_path_vip": lb["vip"], "ingress_path_port": 80,
                 "ingress_path_pod_ip": lb["pod_ip"], "ingress_path_pod_port": lb["pod_port"],
                 "ingress_path_pcap_dir": str(lab.workdir / "pcaps")}
        started = time.time()
        run = Ansible(lab).playbook("k8snet.triage.ingress_path", extra_vars=extra, inventory=inventory)
        ours = time.time() - started
        bisect = run.result("k8snet.triage.ingress_path : Find the first hop where the probes vanished",
                            "client")["ansible_facts"]["__ingress_path_bisect"]
        print("break: %s   (lab slot %d, load %s)" % (name, lab.slot, os.getloadavg()[0]))
        print("%-58s %8s  %s" % ("method", "wall s", "result"))
        silent = "%s %s" % walked[-1][:2] if walked[-1][2] == 0 else "no silent hop"
        print("%-58s %8.1f  silent at %s" % ("manual: tcpdump per hop over SSH, one hop after another", manual, silent))
        verdict = "vanished_at=%s (%s)" % (bisect["vanished_at"], bisect["findings"][0]["check"])
        print("%-58s %8.1f  %s" % ("ours: ansible-playbook k8snet.triage.ingress_path", ours, verdict))
        print("hops (ours): %s" % json.dumps([(h["hop"], h["packets"]) for h in bisect["hops"]]))
        print("hops (manual): %s" % json.dumps(walked))
    finally:
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
