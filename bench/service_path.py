"""Bench: ingress_path from a Service name beside the manual walk of the runbook, over a few injected faults.

Manual (what the runbook has an operator do, minus the typing): read the Service, its EndpointSlices and the
Nodes with kubectl (VIP, port, backends and their nodes), arping the VIP from the client and find which node
owns the answering MAC (its interfaces' MACs, read over SSH node after node), then tcpdump hop by hop over SSH
-- client, announcer, each backend's node, each pod's veth -- with one curl from the client per hop, stopping
at the first silent hop.  Ours: one run of ``ansible-playbook k8snet.triage.ingress_path -e
ingress_path_service=default/web`` (the stand-in API's kubeconfig, the client in group ingress_clients).

The lab: the VIP on node1, two backends (web on node2, web2 on node3) balanced round-robin by native nft on
node1, the stand-in serving Service default/web with both in its EndpointSlice.  Faults, each with the hop
that is to blame:

* ``healthy``: none (right: no hop blamed);
* ``vip_removed``: the VIP taken off node1 (right: the VIP is not announced);
* ``backend_route``: node3 loses its /32 route to web2 (right: a hop on node3, web2's node).

The manual walk is run twice: with one curl per hop (a round-robin balancer sends the next request to the
other backend, so the pod veth being watched may see nothing on a healthy path) and with three.

Both ways run against the same lab in the same process, one after the other; each fault ``repeat`` times.

    K8SNET_LAB_SLOT=5 .venv/bin/python bench/service_path.py [repeat]
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import ensure_collection_link  # noqa: E402
from tests.integration.conftest import Ansible  # noqa: E402
from tests.integration.test_service_path import lab_service_objects  # noqa: E402
from tests.kube_api import StandIn  # noqa: E402
from tests.kube_api.helpers import kubectl  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.faults import path as lab_path  # noqa: E402

RECORD = "k8snet.triage.ingress_path : Record the findings of this host"


def ssh(lab, address, command, **kwargs):
    return subprocess.run(["ssh", "-i", str(lab.ssh_key), "-o", "StrictHostKeyChecking=no", "-o",
                           "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
                           "root@" + address, command], capture_output=True, text=True, check=False, **kwargs)


def manual_walk(lab, lb, api, curls=1, window=3):
    """The runbook by hand, ``curls`` requests from the client while each hop's tcpdump runs.  Returns
    (blame, steps): blame is None (every hop saw packets), "vip_unannounced", or the first silent hop as
    "host dev"."""
    kc = api.kubeconfig()
    svc = kubectl(kc, "get", "svc", "-n", "default", "web")
    vip, port = svc["status"]["loadBalancer"]["ingress"][0]["ip"], svc["spec"]["ports"][0]["port"]
    slices = kubectl(kc, "get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=web")["items"]
    backends = [(e["addresses"][0], e["nodeName"]) for s in slices for e in s["endpoints"]
                if (e.get("conditions") or {}).get("ready")]
    nodes = dict((n["metadata"]["name"], next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"))
                 for n in kubectl(kc, "get", "nodes")["items"])
    out = lab.run(["ip", "netns", "exec", lb["client_ns"], "arping", "-0", "-r", "-c", "2", "-w", "2", "-i", "eth0", vip],
                  check=False).stdout
    macs = set(m.lower() for m in re.findall(r"\b([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5})\b", out))
    steps = [("kubectl: svc, endpointslices, nodes", len(backends)), ("arping " + vip, len(macs))]
    if not macs:
        return "vip_unannounced", steps
    announcer = None
    for name, ip in sorted(nodes.items()):  # which node owns the MAC? ask them one after the other
        if name not in [n.name for n in lab.nodes]:
            continue
        owned = set(ssh(lab, ip, "cat /sys/class/net/*/address").stdout.lower().split())
        steps.append(("ssh %s: its MACs" % name, len(owned & macs)))
        if owned & macs:
            announcer = name
            break
    hops = [("client", "eth0", lb["client"], vip), (announcer, "eth0", nodes[announcer], vip)]
    for pod_ip, node in backends:
        route = ssh(lab, nodes[node], "ip -o route get %s" % pod_ip).stdout
        device = route.split(" dev ")[-1].split()[0] if " dev " in route else None
        hops.append((node, "eth0", nodes[node], pod_ip))
        hops.append((node, device or "(no route)", nodes[node], pod_ip))
    for host, dev, address, watched in hops:
        if dev == "(no route)":
            steps.append(("%s %s" % (host, dev), 0))
            return "%s %s" % (host, dev), steps
        probe_from = lb["client"]
        dump = subprocess.Popen(["ssh", "-i", str(lab.ssh_key), "-o", "StrictHostKeyChecking=no", "-o",
                                 "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
                                 "root@" + address, "timeout %d tcpdump -i %s -nn -l -c 20 'tcp and host %s' 2>/dev/null"
                                 % (window, dev, watched)], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the operator waits for "listening on ..." before sending
        for dummy in range(curls):
            ssh(lab, probe_from, "curl -s -o /dev/null --connect-timeout 1 -m 1 http://%s:%d/" % (vip, port))
        lines = [line for line in dump.communicate()[0].splitlines() if line.strip()]
        steps.append(("tcpdump %s %s" % (host, dev), len(lines)))
        if not lines:
            return "%s %s" % (host, dev), steps
    return None, steps


def ours(ansible, lb, api):
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=lb["inventory"], extra_vars={
        "ingress_path_service": "default/web", "ingress_path_kubeconfig": str(api.kubeconfig())})
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    bad = [f for f in findings if f["severity"] in ("critical", "warning")]
    if not bad:
        return None, findings
    first = bad[0]
    if first["check"] == "ingress.vip_unannounced":
        return "vip_unannounced", findings
    backend = first["evidence"].get("backend") or {}
    return "%s %s" % (backend.get("host"), backend.get("pod")) if backend else first["check"], findings


def main():
    ensure_collection_link()
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    lab = Lab().up()
    api = None
    try:
        lb = lab_path.loadbalancer(lab)
        lb["inventory"] = lab_path.path_inventory(lab)["inventory"]
        setup = lab_path.two_backends(lab)
        b2 = setup["backends"][1]
        objects = lab_service_objects(lab, lb)
        for obj in objects:
            if obj["kind"] == "EndpointSlice":
                second = copy.deepcopy(obj["endpoints"][0])
                second["addresses"], second["nodeName"] = [b2["ip"]], b2["node"]
                second["targetRef"] = dict(second["targetRef"], name="web2")
                obj["endpoints"].append(second)
        api = StandIn(objects, lab.workdir / "kube-api-bench", lab.controller_ip).start()
        os.environ["PATH"] = str(ROOT / ".venv" / "bin") + os.pathsep + os.environ["PATH"]
        ansible = Ansible(lab)
        faults = [
            ("healthy", lambda: None, {None}, {None}),
            ("vip_removed", lambda: (lab.ns_run(lb["lb"], ["ip", "addr", "del", "%s/32" % lb["vip"], "dev", "eth0"]),
                                     lab.run(["ip", "-n", lb["client_ns"], "neigh", "flush", "to", lb["vip"]], check=False)),
             {"vip_unannounced"}, {"vip_unannounced"}),
            ("backend_route", lambda: lab_path.break_backend_route(lab, "web2"),
             "node3", {"%s web2" % b2["node"]}),
        ]
        rows = []
        for name, inject, right_manual, right_ours in faults:
            for dummy in range(repeat):
                inject()
                try:
                    manual = []
                    for curls in (1, 3):
                        started = time.time()
                        blame, steps = manual_walk(lab, lb, api, curls)
                        right = (blame or "").startswith(right_manual + " ") if isinstance(right_manual, str) \
                            else blame in right_manual
                        manual.append((time.time() - started, blame, right, steps))
                    started = time.time()
                    our_blame, findings = ours(ansible, lb, api)
                    ours_s = time.time() - started
                finally:
                    lab_path.path_repair(lab)
                rows.append((name, manual, ours_s, our_blame, our_blame in right_ours, [f["check"] for f in findings]))
        print("lab slot %d, load %.2f, %d run(s) per fault" % (lab.slot, os.getloadavg()[0], repeat))
        head = ("fault", "way", "wall s", "blames", "right")
        print("%-14s %-40s %7s %-28s %s" % head)
        for name, manual, ours_s, our_blame, our_right, checks in rows:
            for curls, (seconds, blame, right, steps) in zip((1, 3), manual):
                print("%-14s %-40s %7.1f %-28s %s" % (name, "manual, %d curl(s) per hop" % curls, seconds, blame, right))
            print("%-14s %-40s %7.1f %-28s %s" % (
                name, "ours: ingress_path_service=default/web", ours_s, our_blame, our_right))
        total = len(rows)
        for index, curls in enumerate((1, 3)):
            print("manual, %d curl(s) per hop: right %d/%d, mean %.1f s" % (
                curls, sum(r[1][index][2] for r in rows), total, sum(r[1][index][0] for r in rows) / total))
        print("ours: right %d/%d, mean %.1f s" % (sum(r[4] for r in rows), total, sum(r[2] for r in rows) / total))
        for row in rows:
            print("  %s: manual steps (3 curls) %s; ours %s" % (row[0], row[1][1][3], row[5]))
    finally:
        if api:
            api.stop()
        lab.down(quiet=True)


if __name__ == "__main__":
    main()
