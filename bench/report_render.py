"""Benchmark: the triage report at fleet size - how big triage-report.json and triage-report.html are, how long
the controller takes to build and write them, and how long Chromium takes to open the page - for fleets of
24, 200 and 500 nodes (or --nodes), beside an empty page opened the same way.

The fleet is synthetic but shaped as a triage leaves it: every node scenario of the registry ran on every node
(an ok finding each), with the details the scenarios publish at that size (the Calico scenario's view of a full
mesh, one BGP session per peer, built by its own details(); the path-MTU and firewall views), and the six faults of issue 28's healthy-fleet figure (a stale ARP
entry, a blackhole route, a DROP rule, a full map, a host that does not answer SSH, a node nobody reaches),
the last one seen from k = 8 probers as the pass's ring samples them. Nothing here touches a network.

The report is built by the same code as the report_write action (plugin_utils/report.triage_report,
report_json, triage_html_json and the role's template rendered by Jinja alone). Chromium is Debian's, run
headless with --dump-dom (the page's script builds its tables before the DOM is dumped); the figure is the
median of --runs openings less the median of the empty page's.

usage: python bench/report_render.py [--nodes 24,200,500] [--runs 3] [--template FILE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build"))

import jinja2  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import BY_NAME  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import SCENARIOS  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import build as report  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import files as report_files

TEMPLATE = ROOT / "roles" / "report" / "templates" / "triage-report.html.j2"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
PROBERS = 8


def item(check, severity, subject, summary, layer="L3", evidence=None):
    return {"check": check, "severity": severity, "layer": layer, "subject": subject, "summary": summary,
            "evidence": evidence or {}, "remediation": "see the runbook step for %s" % check}


def _details(host, names, index):
    """The details the scenarios publish on one node at this fleet size."""
    peers = [{"name": "Mesh_198_18_%d_%d" % (n // 250, n % 250 + 1), "type": "mesh",
              "address": "198.18.%d.%d" % (n // 250, n % 250 + 1), "port": None, "state": "up",
              "bgp_state": "Established", "since": "2026-12-01", "info": "Established", "last_error": "", "cause": ""}
             for n in range(len(names)) if names[n] != host]
    return {"calico": BY_NAME["calico"].details({"peers": peers}),
            "pmtu": {"peers": [{"name": names[(index + s) % len(names)], "pmtu": 1500, "status": "ok"}
                               for s in range(1, min(PROBERS, len(names) - 1) + 1)],
                     "interfaces": [{"name": "eth0", "mtu": 1500}]},
            "firewall_drops": {"drop_rates": []},
            "conntrack": {"usage": {"count": 1200, "max": 262144, "ratio": 0.005}, "window": {}},
            "sysctl": {"ip_forward": 1, "neigh": {"entries": len(names), "gc_thresh3": 1024}}}


def fleet(count):
    """hostvars of a triage over ``count`` nodes, with the six faults."""
    names = ["node%03d" % n for n in range(1, count + 1)]
    faults = {names[1]: ("stale_arp", item("arp.stale", "critical", "198.19.0.10", "198.19.0.10 is cached with MAC "
                                           "02:00:00:00:00:99, which no owner holds", "L2")),
              names[2]: ("pod_network", item("route.blackhole", "critical", "%s -> 10.244.3.0/24" % names[2],
                                             "10.244.3.0/24 (pods of %s) is a blackhole route" % names[3])),
              names[3]: ("firewall_drops", item("iptables.drops_growing", "critical", "%s filter/INPUT" % names[3],
                                                "a DROP rule matched 150 packets/s", "L4")),
              names[4]: ("cilium_maps", item("cilium.map_full", "critical", "cilium_lb4_services_v2",
                                             "the map is 100% full (65536 of 65536)", "L4"))}
    dead, isolated = names[5], names[6]
    hostvars = {}
    for index, host in enumerate(names):
        if host == dead:
            reason = "ssh: connect to host %s port 22: Connection timed out" % host
            hostvars[host] = {"triage_host": {"status": "unreachable", "reason": reason},
                              "triage_results": dict((name, {"status": "not run", "reason": "host unreachable",
                                                             "findings": [], "details": {}}) for name in SCENARIOS)}
            continue
        details = _details(host, names, index)
        results = {}
        for name in SCENARIOS:
            found = [item("%s.ok" % name, "ok", host, "%s: nothing wrong on %s" % (name, host))]
            if faults.get(host, (None,))[0] == name:
                found = [faults[host][1]]
            results[name] = {"status": "ran", "reason": "", "findings": found, "details": details.get(name, {})}
        # the isolated node, from the probers whose ring sample holds it
        if host != isolated and (names.index(isolated) - index) % count in range(1, PROBERS + 1):
            results["connectivity"]["findings"] = [item("reach.unreachable", "critical", isolated,
                                                        "%s does not answer ARP, ICMP or TCP from %s" % (isolated, host),
                                                        "L2", {"prober": host})]
        hostvars[host] = {"triage_host": {"status": "reached", "reason": ""}, "triage_results": results}
    return hostvars, names


def chromium_seconds(chromium, page, profile, runs):
    times = []
    for _run in range(runs):
        started = time.monotonic()
        subprocess.run([chromium] + CHROMIUM_FLAGS + ["--user-data-dir=%s" % profile, "--dump-dom", page.as_uri()],
                       capture_output=True, timeout=300, check=True)
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--nodes", default="24,200,500")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--template", type=Path, default=TEMPLATE,
                        help="the report role's template to render (another commit's, to compare two pages)")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    template = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined,
                                  keep_trailing_newline=True).from_string(args.template.read_text())
    with tempfile.TemporaryDirectory(prefix="k8snet-report-bench-") as tmp:
        tmp = Path(tmp)
        empty = tmp / "empty.html"
        empty.write_text("<!DOCTYPE html><html><body><p>empty</p></body></html>\n")
        baseline = chromium_seconds(chromium, empty, tmp / "profile", args.runs) if chromium else None
        print("%6s %9s %9s %10s %8s %8s %12s" % (
            "nodes", "findings", "JSON MB", "HTML MB", "build s", "write s", "chromium s"))
        for count in [int(n) for n in args.nodes.split(",")]:
            hostvars, names = fleet(count)
            started = time.monotonic()
            data = report.triage_report(hostvars, names)
            built = time.monotonic() - started
            started = time.monotonic()
            text = report_files.report_json(data)
            html = template.render(generated="2026-12-04 00:00:00 UTC", data_json=report_files.triage_html_json(data))
            written = time.monotonic() - started
            page = tmp / ("triage-report-%d.html" % count)
            page.write_text(html)
            opened = (chromium_seconds(chromium, page, tmp / "profile", args.runs) - baseline) if chromium else None
            print("%6d %9d %9.2f %10.2f %8.2f %8.2f %12s" % (
                count, len(data["findings"]), len(text.encode()) / 1e6, len(html.encode()) / 1e6, built, written,
                "%.2f" % opened if opened is not None else "no chromium"))
    if chromium:
        print("chromium: the median of %d openings less the empty page's (%.2f s)" % (args.runs, baseline))


if __name__ == "__main__":
    main()
