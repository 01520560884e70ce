"""The demo: one fault per scenario in the namespace lab, the triage, the report, remediation
in check mode, then for real, then the triage again showing the repaired faults gone.

Run through scripts/demo (which installs what is needed first). Everything it makes is
removed at the end, also on error. ``scripts/demo --ingress`` adds the one-line ingress_path from a
Service name (the lab's real control plane when built, else the stand-in API; a client outside the cluster, a broken
pod route), about 25 s more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.faults import firewall, load_all  # noqa: E402

BIN = Path(sys.executable).parent
OUT = Path(os.environ.get("K8SNET_DEMO_OUTPUT", ROOT / "demo-output"))
BOLD, RESET = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("", "")


def step(text):
    print("\n%s==== %s%s" % (BOLD, text, RESET), flush=True)


def playbook(lab, name, extra, check=False, show=("Summary", "Show the findings", "report:"), inventory=None):
    """Run a collection playbook; print only the findings, diffs, summary and recap."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory or lab.inventory_path), "k8snet.triage." + name,
            "-e", json.dumps(extra)]
    argv += ["--check", "--diff"] if check else []
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_DISPLAY_SKIPPED_HOSTS="false",
               ANSIBLE_DISPLAY_OK_HOSTS="true", PATH="%s:%s" % (BIN, os.environ["PATH"]))
    proc = subprocess.run(argv, cwd=OUT, env=env, capture_output=True, text=True, check=False)
    printing = False
    for line in proc.stdout.splitlines():
        if line.startswith("TASK ["):
            printing = any(marker in line for marker in show)
            continue
        if line.startswith(("---", "+++", "@@")) or (line[:1] in ("+", "-") and not line.startswith("- ")):
            print("    " + line)
        elif line.startswith("PLAY RECAP"):
            printing = True
        elif printing and line.strip():
            print("    " + line)
    return proc.returncode


def ingress_demo(lab, cluster=None):
    """The VIP on node1, DNAT to the web pod on node2, a client outside the cluster, and Service default/web (its
    VIP, EndpointSlice, Nodes, MetalLB's status) on the lab's real control plane (``cluster``, from api_demo), or on
    the stand-in API when the lab's Kubernetes is not built; node2 loses the pod's /32 route."""
    from tests.integration.test_service_path import lab_service_objects  # pylint: disable=import-outside-toplevel
    from tests.lab.faults import path as lab_path  # pylint: disable=import-outside-toplevel

    lb = lab_path.loadbalancer(lab, worker="node3")  # node2's pod CIDR is partly blackholed on node1 (above)
    inventory = lab_path.path_inventory(lab)["inventory"]
    objects = lab_service_objects(lab, lb)
    if cluster is not None:
        from tests.lab.cluster_objects import RealApi  # pylint: disable=import-outside-toplevel

        api = RealApi(cluster)
        api.loader.load(objects)
        kubeconfig, stop, source = api.kubeconfig(), None, "the real API server's"
    else:
        from tests.kube_api import StandIn  # pylint: disable=import-outside-toplevel

        server = StandIn(objects, lab.workdir / "kube-api-demo", lab.controller_ip, why="no-build").start()
        kubeconfig, stop, source = server.kubeconfig(), server.stop, "the stand-in API's (Kubernetes not built)"
    lab_path.break_pod_route(lab)
    print("  the VIP %s on node1 DNATs to pod web (%s) on node3; node3 has lost the pod's /32 route" % (
        lb["vip"], lb["pod_ip"]))
    return {"kubeconfig": kubeconfig, "stop": stop, "source": source, "inventory": inventory}


def api_demo(lab):
    """The API half on a real control plane (kube-apiserver, kube-controller-manager, etcd and kube-proxy built from
    their Go modules): the OpenShift runbook's incident, a Service with externalTrafficPolicy Local whose pods run
    on node1 and node2 while node2's kube-proxy is dead; lb_health finds it, switches it in check mode, then for
    real, and the post-check sees every node forward the traffic."""
    from tests.lab import cluster as lab_cluster  # pylint: disable=import-outside-toplevel

    if not lab_cluster.built():
        print("  skipped: the lab's Kubernetes is not built. scripts/build-kubernetes builds kube-apiserver,\n"
              "  kube-controller-manager, kube-proxy, kubectl, the kubelet, etcd, CoreDNS, containerd and MetalLB from\n"
              "  their Go modules, about 20 min the first time on 2 cores (progress shown), then cached by version;\n"
              "  scripts/test builds it too.")
        return None
    started = time.time()
    cluster = lab_cluster.Cluster(lab).up()
    print("  Kubernetes API %s up in %.0f s (kube-proxy: %s)" % (cluster.server, time.time() - started, ", ".join(
        "%s %s" % (n.name, cluster.proxy_mode(n)) for n in lab.nodes)))
    web = cluster.web_service("web", "web-local", nodes=("node1", "node2"))
    cluster.stop_proxy("node2")
    print("  %s: LoadBalancer %s, policy Local, pods on node1 and node2; node2's kube-proxy is dead, so the load"
          "\n  balancer's health check of node2 (port %s) fails although node2 holds a ready pod" % (
              web["service"], web["vip"], web["health_check_node_port"]))
    kubeconfig = str(cluster.kubeconfig())
    shown = ("Show the LB health findings",)
    playbook(lab, "lb_health", {"lb_health_kubeconfig": kubeconfig}, show=shown)
    switch = {"lb_health_kubeconfig": kubeconfig, "lb_health_remediate": "cluster",
              "lb_health_remediate_services": [web["service"]]}
    print("  dry run of the switch to externalTrafficPolicy Cluster, then the switch (kube-proxy reprograms):")
    playbook(lab, "lb_health", switch, check=True, show=shown)
    playbook(lab, "lb_health", switch, show=shown)
    policy = cluster.kubectl_json("get", "svc", "-n", "web", "web-local")["spec"]["externalTrafficPolicy"]
    print("  kubectl get svc -n web web-local: externalTrafficPolicy %s" % policy)
    return cluster


def main():
    lab = Lab(nodes=int(os.environ.get("K8SNET_DEMO_NODES", "3")))
    traffic = None
    faults = load_all()
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        step("Building the lab: %d nodes as network namespaces, each with its own sshd" % lab.node_count)
        lab.up()
        for n in lab.nodes:
            print("  %-6s %-15s %s  python %s" % (n.name, n.ip, ",".join(n.groups), n.python))

        step("Injecting one fault per scenario")
        vip = lab.vip(0)
        print("  stale ARP:   ", faults["bind_vip"](lab, "node1", vip), faults["stale_neighbor"](lab, "node3", vip))
        faults["learn_neighbor"](lab, "node2", vip)
        print("  Calico BGP:  ", "mesh with a bad peer AS and a peer of a decommissioned node",
              faults["bgp_mesh"](lab).get("stale", ""))
        print("  eBPF maps:   ", "node1: Cilium LB maps with 500 orphan backends beside 20 live services;",
              "node2: a full backends map")
        # orphans are 80 % of node1's entries: below the sweep's guard (max_orphan_share, 95 %), which refuses a
        # live set so far from the maps that it is more likely wrong than the maps
        faults["cilium_lb_maps"](lab, "node1", services=20, backends_per_service=5, orphans=500)
        faults["full_map"](lab, "node2")
        faults["cilium_agent_start"](lab, "node1")
        faults["cilium_agent_start"](lab, "node2", "rate_limited")
        print("  Cilium agent:", "node1's answers healthy; node2's API rate limiter refuses endpoint creation "
              "(HTTP 429)")
        print("  CNI:         ", "node3 has no CNI configuration (node1, node2 do)")
        conflist = {"name": "k8s-pod-network", "cniVersion": "0.3.1", "plugins": [
            {"type": "calico", "ipam": {"type": "calico-ipam"}}, {"type": "bandwidth"}, {"type": "portmap"}]}
        faults["cni_files"](lab, "node1", config=conflist)
        faults["cni_files"](lab, "node2", config=conflist)
        dns = faults["dns_cluster"](lab)
        print("  DNS:         ", "coredns-b answers REFUSED, coredns-c is reachable only from its own node")
        faults["route_blackhole"](lab, "node1", "node2")
        print("  pod network: ", "node1 has a blackhole route over part of node2's pod CIDR")
        faults["drop_rule"](lab, "node3", "nft", lab.node("node1").ip)
        traffic = firewall.traffic_start(lab, "node1", lab.node("node3").ip, seconds=540, rate=20)
        print("  firewall:    ", "node3 drops node1's ICMP in an iptables-nft rule, under real traffic (20 pkt/s)")
        servers = [{"address": dns["kube_dns"], "role": "service"}] + [
            {"address": p["ip"], "name": name, "node": p["node"]} for name, p in sorted(dns["pods"].items())]
        triage_vars = {"stale_arp_vips": [vip], "dns_servers": servers, "dns_names": dns["cluster_names"][:1],
                       "report_output_dir": str(OUT), "report_fail_on_critical": False,
                       # the lab runs no kubelet: probe nodes with ICMP and ARP, not TCP 10250
                       "connectivity_probes": ["icmp", "arp"]}

        step("Triage: every scenario that fits the inventory, read-only (the fleet summary)")
        playbook(lab, "triage", triage_vars, show=("Summary",))
        html = OUT / "triage-report.html"
        print("  report: %s (and triage-report.json)" % html)
        chromium = shutil.which("chromium")
        if chromium and html.exists():
            shot = OUT / "triage-report.png"
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            "--user-data-dir=%s" % (OUT / ".chromium"), "--window-size=1400,1600",
                            "--screenshot=%s" % shot, html.as_uri()], capture_output=True, timeout=120, check=False)
            print("  screenshot: %s" % shot)

        step("Remediation, dry run (--check --diff): what would change")
        playbook(lab, "stale_arp", {"stale_arp_vips": [vip], "stale_arp_flush": True}, check=True)
        playbook(lab, "cilium_maps", {"cilium_maps_cleanup": True}, check=True)

        step("Remediation for real: targeted, in serial ramps, each host re-checked")
        playbook(lab, "stale_arp", {"stale_arp_vips": [vip], "stale_arp_flush": True})
        playbook(lab, "cilium_maps", {"cilium_maps_cleanup": True})

        step("Triage again: the stale ARP entry and the orphaned map entries are gone")
        faults["learn_neighbor"](lab, "node3", vip)
        playbook(lab, "triage", triage_vars, show=("Summary",))
        print("\n  What remains needs an operator, and the summary says what to run next for each: the blackhole"
              " route,\n  the dropping firewall rule, the Calico peer AS and the decommissioned node's peer, the full"
              " map,\n  node2's rate-limited Cilium agent, node3's CNI config, and the DNS pods.")

        step("The API half on a real control plane: the OpenShift LB health-check incident")
        cluster = api_demo(lab)

        if "--ingress" not in sys.argv[1:]:
            print("\n  From what the operator sees, a Service whose VIP does not answer, one line follows the whole"
                  " path:\n    ansible-playbook k8snet.triage.ingress_path -e ingress_path_service=default/web\n"
                  "  (scripts/demo --ingress runs it here against a broken pod route, about 25 s more)")
            return
        step("Start from what the operator sees: Service default/web does not answer on its VIP")
        api = ingress_demo(lab, cluster)
        try:
            print("  $ ansible-playbook k8snet.triage.ingress_path -e ingress_path_service=default/web")
            print("    (the client in group ingress_clients; %s kubeconfig as ingress_path_kubeconfig)" % api["source"])
            started = time.time()
            playbook(lab, "ingress_path", {"ingress_path_service": "default/web",
                                           "ingress_path_kubeconfig": str(api["kubeconfig"])},
                     show=("Show the findings",), inventory=api["inventory"])
            print("  (%.0f s: the API read, ARP for the VIP, captures on every hop at once, the bisection)"
                  % (time.time() - started))
        finally:
            if api["stop"]:
                api["stop"]()
    finally:
        if traffic is not None:
            firewall.traffic_stop(traffic, now=True)
        step("Tearing the lab down")
        lab.down()


if __name__ == "__main__":
    main()
