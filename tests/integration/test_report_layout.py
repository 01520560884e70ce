"""The HTML report in a browser window, filled with the longest evidence the collection writes: a triage run
against the lab with a path-MTU black hole (pmtu's per-peer table, a VXLAN tunnel, a pod veth named as Cilium
names it), kube-proxy's own iptables rule set refusing flows, a kubelet log line about a 63-character node name,
an external DNS name of 253 characters that no longer resolves, a VIP nobody owns and a
silence that is invalid (the fleet's findings). Headless Chromium opens every evidence and details element and
measures the page at 1400 and 1024 px: the page never scrolls sideways, an evidence that does not fit wraps or
scrolls inside its own cell, a card's tables inside the card; the screenshots go to tests/output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.integration.test_dns_check import servers
from tests.integration.test_iptables_kube_proxy import FIX, lab_addresses, rewrite, stop, tcp_start
from tests.integration.test_triage import CHROMIUM_FLAGS
from tests.lab.faults import arp, mtu, pods
from tests.lab.faults import dns as lab_dns
from tests.lab.faults import logs as log_faults

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
WIDTHS = (1400, 1024)
# the longest DNS name the dns check takes (253 characters, labels of 63) and a node name of 63
LONG_NAME = ".".join(["payments-ledger-reconciliation-batch-export-service-eu-west-1a1",
                      "team-payments-platform-production-eu-west-1-shared-services-ns1",
                      "objectstore-replication-endpoint-for-disaster-recovery-region-2",
                      "archive-bucket-0123456789abcdef0123456789abcdef.example-cloud"])
LONG_NODE = "gke-production-eu-west1-default-pool-highmem-32-4f9c2a1b-x7k2q1"
assert len(LONG_NAME) == 253 and max(len(label) for label in LONG_NAME.split(".")) == 63 and len(LONG_NODE) == 63
# Written into a copy of the page: opens every <details> (the evidence is built when opened), then measures.
PROBE = """<script>
window.addEventListener("load", function () {
  Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
  setTimeout(function () {
    var root = document.documentElement, view = root.clientWidth, out = {view: view, scroll: root.scrollWidth};
    function clipped(e) {
      for (var a = e.parentElement; a; a = a.parentElement) {
        var x = getComputedStyle(a).overflowX;
        if ((x === "auto" || x === "scroll") && a.getBoundingClientRect().right <= view + 1) { return true; }
      }
      return false;
    }
    out.beyond = Array.prototype.filter.call(document.querySelectorAll("body *"), function (e) {
      var r = e.getBoundingClientRect();
      return r.width > 0 && r.right > view + 1 && !clipped(e);
    }).slice(0, 20).map(function (e) { return e.tagName + "#" + e.id + "." + e.className; });
    // an opened evidence: its text fits its cell or scrolls there; its cell is inside the table
    var table = document.getElementById("findings").getBoundingClientRect();
    out.table = [Math.round(table.left), Math.round(table.right)];
    out.evidence = Array.prototype.map.call(document.querySelectorAll("#findings td.ev"), function (td) {
      var text = td.querySelector(".evtext"), r = td.getBoundingClientRect();
      var style = text ? getComputedStyle(text) : null;
      return {right: Math.round(r.right), chars: text ? text.textContent.length : 0,
              fits: !text || text.scrollWidth <= text.clientWidth + 1,
              scrolls: !!style && (style.overflowX === "auto" || style.overflowY === "auto")};
    });
    out.columns = Array.prototype.map.call(document.querySelectorAll("#findings thead th"), function (th) {
      return [th.textContent, Math.round(th.getBoundingClientRect().width), th.scrollWidth <= th.clientWidth + 1];
    });
    out.cards = Array.prototype.map.call(document.querySelectorAll(".host"), function (c) {
      var r = c.getBoundingClientRect();
      return {title: c.querySelector("h3").textContent, right: Math.round(r.right),
              inside: c.scrollWidth <= c.clientWidth + 1, tables: c.querySelectorAll(".scroll > table").length};
    });
    var pre = document.createElement("pre");
    pre.id = "measured";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 500);
});
</script>"""


def chromium(args, timeout=120):
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is installed by scripts/bootstrap"
    profile = tempfile.mkdtemp(prefix="chromium-")
    try:
        return subprocess.run([exe, *CHROMIUM_FLAGS, "--hide-scrollbars", "--user-data-dir=%s" % profile,
                               "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=timeout,
                              check=True).stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def measured(page, width):
    """What PROBE measured on ``page`` (a copy of the report with PROBE in it) in a window ``width`` px wide."""
    dom = chromium(["--window-size=%d,900" % width, "--dump-dom", page.as_uri()])
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    text = found.group(1)
    for entity, char in (("&quot;", '"'), ("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&")):
        text = text.replace(entity, char)
    return json.loads(text), dom


@pytest.fixture(scope="module")
def long_report(lab, ansible, tmp_path_factory):
    n1, n2, n3 = (n.name for n in lab.nodes[:3])
    out = tmp_path_factory.mktemp("layout")
    undo, procs = [], []
    vip = lab.vip(9)  # no node holds it: arp.vip_unowned, a fleet finding of the controller
    saved = lab.ns_run(n2, ["iptables-legacy-save", "-t", "filter"]).stdout
    try:
        info = lab_dns.dns_cluster(lab)
        lab_dns.dns_upstream_down(lab)  # cluster names resolve, external ones do not: dns.upstream names them
        pods.pod(lab, n1, "payments-ledger-7f9c8d6b5-x2x9q")
        for item in mtu.vxlan_overlay(lab, n1, n3)["nodes"]:
            undo.append(item)
        undo.append(mtu.lower_mtu(lab, n2, "eth0", 1400))
        # kube-proxy's own iptables-mode rules on node2 (its tests' fixture, moved into the lab), a pod's flows to
        # a ClusterIP without endpoints: REJECTed by a rule whose comment names the Service
        rules = rewrite((FIX / "iptables_cleanup_test_initial.rules").read_text(), lab_addresses(lab, n2))
        lab.ns_run(n2, ["iptables-legacy-restore", "-T", "filter"], input=rules)
        procs.append(tcp_start(lab, n2, lab.vip(46), 80, count=1200))
        stamp = time.strftime("%m%d %H:%M:%S.000000", time.gmtime(time.time() - 20))
        line = ('E%s   2150 kubelet_node_status.go:549] "Error updating node status, will retry" err="error getting '
                'node \\"%s\\": Get \\"https://%s:6443/api/v1/nodes/%s?resourceVersion=0&timeout=10s\\": net/http: '
                'TLS handshake timeout"' % (stamp, LONG_NODE, lab.vip(0), LONG_NODE))
        log_faults.node_log_file(lab, n3, "/var/log/kubelet.log", [line] * 3)
        arp.stale_neighbor(lab, n3, vip, "02:de:ad:00:be:ef")
        silences = out / "silences.yml"
        silences.write_text("- check: dns.*\n  subject: '%s'\n  reason: known, CHG-4711\n  created_by: oncall\n"
                            % LONG_NAME)  # no expiry: an invalid silence
        run = ansible.playbook("k8snet.triage.triage", extra_vars={
            "triage_scenarios": ["pmtu", "firewall_drops", "logs", "dns", "stale_arp", "pod_network", "sysctl"],
            "stale_arp_vips": [vip], "firewall_drops_interval": 3, "dns_servers": servers(info),
            "dns_names": ["kubernetes.default.svc.cluster.local", LONG_NAME], "dns_timeout": 1.0, "dns_retries": 0,
            "dns_resolv_conf": ["/run/systemd/resolve/resolv.conf"], "report_silences": str(silences),
            "report_output_dir": str(out), "report_fail_on_critical": False})
        assert run.rc == 0, run
    finally:
        stop(procs)
        lab.ns_run(n2, ["iptables-legacy-restore", "-T", "filter"], input=saved or "*filter\nCOMMIT\n")
        for item in reversed(undo):
            mtu.restore(lab, item)
        log_faults.clear_node_logs(lab, n3)
        lab.ns_run(n3, ["ip", "neigh", "del", vip, "dev", "eth0"], check=False)
        lab_dns.dns_repair(lab)
    report = json.loads((out / "triage-report.json").read_text())
    page = out / "measured.html"
    page.write_text((out / "triage-report.html").read_text().replace("</body>", PROBE + "</body>"))
    return {"out": out, "report": report, "page": page}


def test_the_report_holds_the_long_evidence(long_report):
    """Not green by omission: the long evidence this test is about is in the report."""
    report = long_report["report"]
    found = dict((f["check"], f) for f in report["findings"] if f["severity"] != "ok")
    blackhole = found["net.pmtu_blackhole"]
    assert {"probed_max", "probed_min", "probes", "seconds"} <= set(blackhole["evidence"])
    assert blackhole["evidence"]["interfaces"]["tunnels"][0]["ifname"] == mtu.VXLAN
    peers = report["details"]["node1"]["pmtu"]["peers"]
    assert {"probed_max", "probed_min", "probes", "seconds", "frag_needed"} <= set(peers[0])
    veths = report["details"]["node1"]["pmtu"]["interfaces"]["pod_veths"]["sample"]
    assert any(len(v["ifname"]) == 15 for v in veths), veths  # IFNAMSIZ - 1, the longest a kernel allows
    assert any("kube-system" in json.dumps(f) or "no endpoints" in json.dumps(f)
               for f in report["findings"] if f["check"].startswith("iptables.") and f["severity"] != "ok"), found
    assert LONG_NODE in json.dumps(found["log.apiserver_tls_handshake_timeout"]["evidence"])
    assert any(LONG_NAME in json.dumps(f) for f in report["findings"] if f["check"].startswith("dns."))
    fleet = [f for f in report["findings"] if f["host"] == "localhost" and f["scope"] == "fleet"]
    assert {"arp.vip_unowned"} <= set(f["check"] for f in fleet), fleet
    assert any(f["check"].startswith("triage.silence") for f in fleet), fleet


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_the_window_with_every_evidence_open(long_report, width):
    got, dom = measured(long_report["page"], width)
    assert got["view"] == width
    # nothing pushes the page wider than the window
    assert got["scroll"] <= got["view"], got
    assert got["beyond"] == [], got["beyond"]
    assert got["table"][1] <= width, got["table"]
    # every evidence was opened and built; an evidence that does not fit its cell scrolls there
    assert len(got["evidence"]) >= 10 and all(e["right"] <= width for e in got["evidence"]), got["evidence"]
    built = [e for e in got["evidence"] if e["chars"]]
    assert len(built) == len(got["evidence"]) - dom.count('<td class="ev">-</td>')
    assert all(e["fits"] or e["scrolls"] for e in built), built
    # readable: each column's header fits it, and the sentences get room
    columns = dict((name, (px, fits)) for name, px, fits in got["columns"])
    assert all(fits for px, fits in columns.values()), columns
    assert columns["summary"][0] >= 120 and columns["next step"][0] >= 120, columns
    # every card is inside the window, and its tables (pmtu's per-peer table) scroll inside it
    assert got["cards"] and all(c["right"] <= width and c["inside"] for c in got["cards"]), got["cards"]
    [node1] = [c for c in got["cards"] if c["title"].startswith("node1 — ")]
    assert node1["tables"] >= 1, node1
    assert "<th>probed_<wbr>max</th>" in dom and LONG_NAME in dom
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(long_report["out"] / "triage-report.html", OUTPUT / "triage-report-long.html")
    shot = OUTPUT / ("triage-report-%d.png" % width)
    chromium(["--window-size=%d,2400" % width, "--screenshot=%s" % shot, long_report["page"].as_uri()])
    assert shot.stat().st_size > 20_000
