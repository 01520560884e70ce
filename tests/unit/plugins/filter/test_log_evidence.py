# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""log_evidence: log matches go under the findings they explain (same node), the rest stay findings."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.log_evidence import FilterModule, log_evidence
from ansible_collections.k8snet.triage.plugins.module_utils.logs import evidence as logs

CALICO = ('2026-01-01 11:54:02.131 [WARNING][9] startup/startup.go 1336: Failed to set NetworkUnavailable to False; '
          'will retry error=Patch "https://10.96.0.1:443/api/v1/nodes/node2/status?timeout=2s": net/http: request '
          'canceled (Client.Timeout exceeded while awaiting headers)')
COREDNS = "[ERROR] plugin/errors: 2 example.com. A: read udp 198.19.1.5:41234->198.18.0.53:53: i/o timeout"


def _found(check, subject):
    return {"check": check, "severity": "critical", "layer": "L3", "subject": subject, "summary": "s",
            "evidence": {"restarts": 14}, "remediation": ""}


def _matches():
    entries = [{"text": CALICO, "time": "2026-01-01T11:54:02.131Z", "subject": "node2/calico-node-m4q8z",
                "origin": "kube-system/calico-node-m4q8z calico-node previous"},
               {"text": COREDNS, "time": "2026-01-01T11:59:01Z", "subject": "node1/coredns-x", "origin": "p"}]
    groups = logs.match(entries)
    return [logs.group_data(g) for g in groups], logs.findings(groups)


def test_lines_go_under_the_findings_they_explain_and_the_rest_stay():
    matches, log_findings = _matches()
    findings = [_found("node.network_unavailable", "node2"), _found("node.cni_pod_crashloop", "node2/calico-node-m4q8z"),
                _found("node.network_unavailable", "node3")] + log_findings
    out = log_evidence(findings, matches)
    by = dict(((f["check"], f["subject"]), f) for f in out)
    for key in (("node.network_unavailable", "node2"), ("node.cni_pod_crashloop", "node2/calico-node-m4q8z")):
        logs_ = by[key]["evidence"]["logs"]
        assert [m["check"] for m in logs_] == ["log.calico_network_unavailable_update_failed"]
        assert logs_[0]["lines"][0]["time"] == "2026-01-01T11:54:02.131Z" and "Client.Timeout" in logs_[0]["lines"][0]["text"]
        assert by[key]["evidence"]["restarts"] == 14
    assert "logs" not in by[("node.network_unavailable", "node3")]["evidence"]  # another node
    # the calico line explained findings: its own finding is gone; the coredns line explained none: it stays
    assert ("log.calico_network_unavailable_update_failed", "node2/calico-node-m4q8z") not in by
    assert ("log.coredns_upstream_timeout", "node1/coredns-x") in by
    assert "logs" not in findings[0]["evidence"]  # the input is not changed


def test_bad_input_is_refused():
    with pytest.raises(AnsibleFilterError, match="as a list"):
        log_evidence("x", [])
    with pytest.raises(AnsibleFilterError, match="hold dicts"):
        log_evidence([], [None])
    assert "log_evidence" in FilterModule().filters()


# cilium/cilium pkg/datapath/linux/node.go's warning (upstream format; see fixtures/logs/signature_lines.yml)
CILIUM_ROUTE = ('level=warning msg="Unable to install direct node route {Ifindex: 0 Dst: 198.19.3.0/24 Src: <nil> Gw: '
                '198.18.0.13 Flags: [] Table: 0 Realm: 0}" error="route to destination 198.18.0.13 contains gateway '
                '198.18.0.1, must be directly reachable" subsys=linux-datapath')


def test_the_agents_route_error_goes_under_the_route_finding_of_its_node():
    groups = logs.match([{"text": CILIUM_ROUTE, "time": "2026-01-01T11:58:00Z", "subject": "node2/cilium-x7",
                          "origin": "kube-system/cilium-x7 cilium-agent"}])
    matches = [logs.group_data(g) for g in groups]
    found = [_found("route.missing", "node2 198.19.3.0/24"), _found("route.missing", "node3 198.19.3.0/24")]
    out = dict((f["subject"], f) for f in log_evidence(found + logs.findings(groups), matches))
    [explained] = out["node2 198.19.3.0/24"]["evidence"]["logs"]
    assert explained["check"] == "log.cilium_direct_route_failed" and "must be directly reachable" in explained["lines"][0]["text"]
    assert "logs" not in out["node3 198.19.3.0/24"]["evidence"]  # another node's agent explains nothing here
    assert "node2/cilium-x7" not in out  # the line is said once, under the finding it explains
