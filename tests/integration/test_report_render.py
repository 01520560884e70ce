"""The report role renders what scenarios publish: a controller-only play feeds it findings and
details as scenario roles would, and headless Chromium shows the result."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HOPS = [{"hop": "client_out", "host": "client", "packets": 3}, {"hop": "lb_in", "host": "node1", "packets": 3},
        {"hop": "lb_translated", "host": "node1", "packets": 0}, {"hop": "worker_in", "host": "node2", "packets": 0}]
FINDING = {"check": "ingress.nat", "severity": "critical", "layer": "L4", "subject": "198.18.0.202:80",
           "summary": "probes reach node1 but are not translated", "evidence": {"vanished_at": "lb_translated"},
           "remediation": "check kube-proxy / the dataplane NAT on node1"}
PLAY = """
- name: Feed the report as the triage records scenario outcomes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Publish coverage, findings and details
      ansible.builtin.set_fact:
        triage_host: {{status: controller, reason: ""}}
        triage_results:
          ingress_path: {{status: ran, reason: "", findings: {findings}, details: {{path_hops: {hops}}}}}
          cilium_maps:
            status: ran
            reason: ""
            findings: []
            details: {{map_fill: [{{name: cilium_lb4_backends_v3, entries: 64000, max_entries: 65536, ratio: 0.977}}]}}
- name: Report
  hosts: localhost
  gather_facts: false
  roles:
    - role: k8snet.triage.report
      vars:
        report_hosts: [localhost]
        report_output_dir: {out}
        report_fail_on_critical: false
"""
# strings that end or change a <script> element, or a JS string literal, when embedded carelessly
HOSTILE = ["<!--<script>", "</script><b>x</b>", "]]>", "line\u2028sep\u2029para", "</SCRIPT >", "<!-- -->", "&lt;&amp;"]


def play_report(tmp_path, text, inventory="localhost,", green=True):
    """Run the play ``text`` on the controller (every host local); the report it wrote (``green``: the run passed,
    else it failed)."""
    play = tmp_path / "play.yml"
    play.write_text(text)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH="%s:%s" % (BIN, os.environ["PATH"]))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", inventory, "-c", "local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable, str(play)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert (proc.returncode == 0) == green, proc.stdout[-3000:]
    return json.loads((tmp_path / "triage-report.json").read_text())


def run_report(tmp_path, findings):
    return play_report(tmp_path, PLAY.format(findings=json.dumps(findings), hops=json.dumps(HOPS), out=tmp_path))


def chromium_dom(tmp_path, fragment=""):
    """The page's DOM once its script ran, opened at ``fragment`` (such as #host-3) when given."""
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by scripts/bootstrap"
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--user-data-dir=%s" % (tmp_path / "profile"), "--dump-dom",
                           (tmp_path / "triage-report.html").as_uri() + fragment],
                          capture_output=True, text=True, timeout=120, check=True).stdout


@pytest.mark.parametrize("hostile", [HOSTILE[:1], HOSTILE], ids=["comment-script-alone", "all"])
def test_hostile_strings_in_findings_do_not_break_the_page(tmp_path, hostile):
    findings = [dict(FINDING, check="plain.before"), dict(FINDING, check="plain.after", subject="zzz")]
    for n, text in enumerate(hostile):
        findings.append(dict(FINDING, check="hostile.case%d" % n, summary="summary " + text, subject=text,
                             evidence={"raw": text, text: [text]}, remediation=text))
    run_report(tmp_path, findings)
    html = (tmp_path / "triage-report.html").read_text()
    data = html.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        assert char not in data  # escaped as \u003c ... inside the JSON
    dom = chromium_dom(tmp_path)
    # every row was built by the script: the page did not blank, whatever the strings held
    for n in range(len(hostile)):
        assert "<td>hostile.case%d</td>" % n in dom
    assert "<td>plain.before</td>" in dom and "<td>plain.after</td>" in dom
    assert dom.count('<tr class="row-critical">') == len(findings)
    assert "&lt;!--&lt;script&gt;" in dom  # shown as text, not parsed as markup
    assert "<b>x</b>" not in dom


def test_report_renders_details_and_the_path_diagram(tmp_path):
    report = run_report(tmp_path, [FINDING])
    assert report["details"]["localhost"]["ingress_path"]["path_hops"] == HOPS
    assert report["counts"]["severity"]["critical"] == 1
    assert report["hosts"]["localhost"]["scenarios"]["ingress_path"]["status"] == "ran"
    dom = chromium_dom(tmp_path)
    # exactly one hop is the first silent one; the hops after it are greyed
    assert dom.count('class="hop silent"') == 1 and "lb_translated (node1): 0" in dom
    assert dom.count('class="hop after"') == 1
    assert "<td>ingress.nat</td>" in dom
    assert "98%" in dom  # the map fill bar's label


def test_a_long_report_is_paged_and_links_each_finding_to_its_hosts_card(tmp_path):
    """700 findings: the first 300 rows are built and a button offers the rest; a host's findings link to
    its card."""
    run_report(tmp_path, [dict(FINDING, check="bulk.case%03d" % n, subject="s%03d" % n) for n in range(700)])
    dom = chromium_dom(tmp_path)
    assert dom.count('<tr class="row-critical">') == 300
    assert "show 300 more of 400 findings not shown" in dom
    # the controller's findings are on the fleet's card
    assert '<a class="hostlink" href="#fleet" title="the fleet\'s card">localhost</a>' in dom
    assert 'id="fleet"' in dom and 'id="host-0"' not in dom


def test_a_next_step_command_is_shown_as_code(tmp_path):
    run_report(tmp_path, [dict(FINDING, remediation="run `kubectl get pods -n kube-system -o wide` then "
                                                    "`</script><b>y</b>`")])
    dom = chromium_dom(tmp_path)
    assert '<code title="click to copy">kubectl get pods -n kube-system -o wide</code>' in dom
    assert '<code title="click to copy">&lt;/script&gt;&lt;b&gt;y&lt;/b&gt;</code>' in dom and "<b>y</b>" not in dom


FLEET_PLAY = """
- name: Record four hosts as the triage does
  hosts: h1,h2,h3,h4
  gather_facts: false
  tasks:
    - name: Publish each host's record
      ansible.builtin.set_fact:
        triage_host: "{{{{ records[inventory_hostname].host }}}}"
        triage_results: "{{{{ records[inventory_hostname].results }}}}"
  vars:
    records: {records}
- name: Report
  hosts: localhost
  gather_facts: false
  roles:
    - role: k8snet.triage.report
      vars:
        report_hosts: [h1, h2, h3, h4]
        report_output_dir: {out}
        report_fail_on_critical: false
"""


def test_the_coverage_table_lists_what_did_not_run_and_folds_the_hosts_where_everything_ran(tmp_path):
    ran = {"status": "ran", "reason": "", "findings": [], "details": {}}
    records = {
        "h1": {"host": {"status": "reached", "reason": ""}, "results": {"dns": ran, "sysctl": ran}},
        "h2": {"host": {"status": "reached", "reason": ""}, "results": {"dns": ran, "sysctl": ran}},
        "h3": {"host": {"status": "reached", "reason": ""},
               "results": {"dns": dict(ran, status="skipped", reason="no DNS servers given"), "sysctl": ran}},
        "h4": {"host": {"status": "unreachable", "reason": "ssh timed out"},
               "results": {"dns": dict(ran, status="not run", reason="host unreachable")}},
    }
    play_report(tmp_path, FLEET_PLAY.format(records=json.dumps(records), out=tmp_path), "h1,h2,h3,h4,localhost,")
    dom = chromium_dom(tmp_path)
    table = dom.split('id="coveragetable"', 1)[1].split("</table>", 1)[0]
    rows = [[cell.split(">", 1)[1] for cell in row.split("</td>")[:-1]] for row in table.split("<tr>")[2:]]
    # h3's skipped scenario and the unreachable h4 each have their row; h1 and h2, where every scenario ran, one
    assert rows == [["h3", "reached", "dns", "skipped", "0", "no DNS servers given"],
                    ["h4", "unreachable", "dns", "not run", "0", "host unreachable"],
                    ["2 hosts", "reached", "every one", "ran", "0", "h1, h2"]], rows


def test_the_coverage_says_when_no_node_was_checked(tmp_path):
    """Issue 47: the API's side alone (the controller's record, no host in the nodes group): the page's coverage
    line says no node was checked and why, and the run is not green."""
    play = PLAY.replace("        report_fail_on_critical: false\n",
                        "        report_fail_on_critical: false\n        report_nodes_group: k8s_nodes\n")
    assert "report_nodes_group" in play
    report = play_report(tmp_path, play.format(findings="[]", hops=json.dumps(HOPS), out=tmp_path), green=False)
    assert report["coverage"]["nodes"]["reason"] == "the inventory has no group k8s_nodes"
    dom = chromium_dom(tmp_path)
    line = dom.split('id="coverage"', 1)[1].split("</p>", 1)[0]
    assert ("nodes of k8s_nodes: 0 of 0 checked - NO NODE CHECKED: the inventory has no group k8s_nodes "
            "(the Kubernetes API's side only)") in line.replace("&#39;", "'"), line


def test_an_observers_card_shows_the_folded_finding_it_counts(tmp_path):
    """h1, h2 and h3 miss h4's pod CIDR: the three pairs fold into one finding held by h4. Each card counts it and
    lists it (before the fold's recount, h1's card said critical over "no problems found")."""
    def missing(host):
        item = {"check": "route.missing", "severity": "critical", "layer": "L3", "subject": "h4 198.19.4.0/24",
                "summary": "no route for 198.19.4.0/24 (pods of h4) on %s" % host, "remediation": "add the route",
                "evidence": {"cidr": "198.19.4.0/24", "peer": "h4", "expected": "198.19.4.0/24 via x", "found": None}}
        return {"status": "ran", "reason": "", "findings": [item], "details": {}}
    records = dict((h, {"host": {"status": "reached", "reason": ""}, "results": {"pod_network": missing(h)}})
                   for h in ("h1", "h2", "h3"))
    records["h4"] = {"host": {"status": "reached", "reason": ""},
                     "results": {"pod_network": {"status": "ran", "reason": "", "findings": [], "details": {}}}}
    report = play_report(tmp_path, FLEET_PLAY.format(records=json.dumps(records), out=tmp_path), "h1,h2,h3,h4,localhost,")
    assert [(x["check"], x["host"]) for x in report["findings"] if x["severity"] == "critical"] == [("route.missing", "h4")]
    assert all(report["hosts"][h]["verdict"] == "critical" for h in ("h1", "h2", "h3", "h4"))
    dom = chromium_dom(tmp_path)
    cards = re.findall(r'<div class="host w-[a-z ]*" id="host-\d+">(.*?)</ul>', dom)
    assert len(cards) == 4, dom[-3000:]
    for card in cards:
        assert "route.missing — h4 198.19.4.0/24" in card and "no problems found" not in card, card


def test_a_large_fleets_healthy_cards_build_their_details_when_opened(tmp_path):
    """Past 50 hosts a healthy host's card keeps its scenarios' details closed and unbuilt (hundreds of cards'
    tables at once made the 500-node page slow to open); a host with a problem shows its details at once, and a page
    opened at a card's link (#host-N) shows that card's details."""
    names = ["h%02d" % n for n in range(60)]
    sick = {"h03": "critical", "h41": "warning"}

    def record(n, name):
        findings = [dict(FINDING, severity=sick[name], subject=name)] if name in sick else []
        fill = {"name": "cilium_ct4_global", "entries": 7000 + n, "max_entries": 65536, "ratio": 0.1}
        return {"host": {"status": "reached", "reason": ""},
                "results": {"cilium_maps": {"status": "ran", "reason": "", "findings": findings,
                                            "details": {"map_fill": [fill]}}}}
    records = dict((name, record(n, name)) for n, name in enumerate(names))
    play = FLEET_PLAY.replace("h1,h2,h3,h4", ",".join(names)).replace("[h1, h2, h3, h4]", json.dumps(names))
    report = play_report(tmp_path, play.format(records=json.dumps(records), out=tmp_path), ",".join(names) + ",localhost,")
    assert sorted(report["hosts"]) == names and report["hosts"]["h07"]["verdict"] == "ok"
    assert report["details"]["h07"]["cilium_maps"]["map_fill"][0]["entries"] == 7007

    def built(dom):
        """The hosts whose map-fill table the page built (each host's entries figure is its own)."""
        return sorted(names[int(n) - 7000] for n in re.findall(r"<td>(70\d\d)</td>", dom))
    dom = chromium_dom(tmp_path)
    cards = re.findall(r'<div class="host w-([a-z ]*)" id="host-(\d+)"><h3>(h\d\d) ', dom)
    assert len(cards) == 60, dom[-3000:]
    assert built(dom) == ["h03", "h41"]
    assert dom.count('<details class="hostdetails"><summary>details (1)</summary></details>') == 58
    [card] = [c[1] for c in cards if c[2] == "h07"]
    opened = chromium_dom(tmp_path, "#host-" + card)
    assert built(opened) == ["h03", "h07", "h41"]
    assert '<details class="hostdetails" open=""><summary>details (1)</summary><div>cilium_maps: map_fill</div>' in opened


@pytest.mark.parametrize("controller", [True, False], ids=["controller-in-the-report", "controller-not-in-the-report"])
def test_fleet_findings_link_to_the_fleets_card(tmp_path, controller):
    """The controller's findings (the API's, the silences') and the fleet conclusions it holds are on a card of their
    own, #fleet, linked from the findings table as each node's findings link to the node's card; without the
    controller in report_hosts the silences' finding (held by no host) still has it. Hostile text stays text."""
    hostile = "</script><b>x</b>"
    silences = tmp_path / "silences.yml"
    silences.write_text("- check: dns.*\n  reason: '%s'\n  created_by: oncall\n" % hostile)  # no expiry: invalid
    api = dict(FINDING, check="lb.no_local_endpoint", severity="warning", layer="L4", subject="default/web " + hostile,
               summary="no local endpoint on h1, h2", scope="fleet", hosts=["h1", "h2"])
    ran = {"status": "ran", "reason": "", "findings": [], "details": {}}
    records = {"h1": {"host": {"status": "reached", "reason": ""},
                      "results": {"dns": dict(ran, findings=[dict(FINDING, check="dns.timeout", subject="h1")])}},
               "h2": {"host": {"status": "reached", "reason": ""}, "results": {"dns": ran}},
               "localhost": {"host": {"status": "controller", "reason": ""},
                             "results": {"lb_health": dict(ran, findings=[api])}}}
    names = ["h1", "h2"] + (["localhost"] if controller else [])
    play = FLEET_PLAY.replace("h1,h2,h3,h4", "h1,h2,localhost").replace("[h1, h2, h3, h4]", json.dumps(names))
    play = play.replace("report_fail_on_critical: false", "report_fail_on_critical: false\n        report_silences: %s"
                        % silences)
    report = play_report(tmp_path, play.format(records=json.dumps(records), out=tmp_path), "h1,h2,localhost,")
    [bad] = [f for f in report["findings"] if f["check"].startswith("triage.silence")]
    assert bad["host"] == ("localhost" if controller else None) and bad["scope"] == "fleet"
    dom = chromium_dom(tmp_path)
    rows = dom.split('<table id="findings"', 1)[1].split("</table>", 1)[0].split("<tr")[2:]
    link = '<a class="hostlink" href="#fleet" title="the fleet\'s card">fleet</a>'
    [silence_row] = [r for r in rows if "<td>%s</td>" % bad["check"] in r]
    assert link in silence_row
    [node_row] = [r for r in rows if "<td>dns.timeout</td>" in r]
    assert '<a class="hostlink" href="#host-0" title="this host\'s card">h1</a>' in node_row
    cards = dict(re.findall(r'<div class="host w-[a-z ]*" id="([a-z0-9-]+)"><h3>([^<]*)</h3>', dom))
    assert cards["host-0"] == "h1 — critical" and cards["host-1"].startswith("h2 — ")
    fleet_card = dom.split('id="fleet">', 1)[1].split("</ul>", 1)[0]
    assert bad["check"] + " — " in fleet_card and "dns.timeout" not in fleet_card
    if controller:
        # the API's fleet conclusion: its row links to the fleet's card and names the hosts it concerns
        [api_row] = [r for r in rows if "<td>lb.no_local_endpoint</td>" in r]
        assert link + ": h1, h2</td>" in api_row
        assert "lb.no_local_endpoint — default/web &lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in fleet_card
        assert cards["fleet"] == "fleet — warning" and "localhost" not in cards.values()
        assert len(cards) == 3
    else:
        assert "lb.no_local_endpoint" not in dom and len(cards) == 3
    assert "<b>x</b>" not in dom
    # a page opened at the fleet's card scrolls to it: the anchor is an element's id, once
    assert dom.count('id="fleet"') == 1
