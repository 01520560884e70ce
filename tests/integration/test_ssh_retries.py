"""SSH under load: a node whose first connection gets no answer (its first SYNs lost, as when a loaded node or
network drops them) is tried again and reached, and the report says it needed a retry; without retries it is
unreachable with ssh's words read for the operator. The SYNs are dropped by nft on the node, and nft's own counter
confirms they were (an independent reader); each run gets its own ssh control directory, so no master connection
of an earlier test hides the drop."""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.conftest import ROOT
from tests.lab.faults import mtu, undone

# two SYNs (60 bytes each with their options): one connect attempt with a 2 s timeout sends two (the first and its
# retransmission after 1 s), both lost; the next attempt's SYN passes
FIRST_SYNS_LOST = "tcp dport 22 tcp flags & (syn | ack) == syn quota until 120 bytes counter drop"


@pytest.fixture
def inject(lab):
    with undone(lab, mtu.restore) as inject_:
        yield inject_
    for node in lab.nodes:
        assert mtu.NFT_TABLE not in lab.ns_run(node, ["nft", "list", "tables"]).stdout


def _triage(ansible, tmp_path, retries):
    out = tmp_path / ("report-%s" % retries)
    run = ansible.playbook(ROOT / "playbooks" / "triage.yml", extra_vars={
        "triage_scenarios": ["sysctl"], "triage_api_scenarios": [], "triage_ssh_retries": retries,
        "report_output_dir": str(out), "report_fail_on_critical": False,
        "ansible_control_path_dir": str(tmp_path / ("cp-%s" % retries)), "ansible_ssh_timeout": 2})
    assert run.rc == 0, run
    return json.loads((out / "triage-report.json").read_text()), run


def test_a_node_whose_first_connection_is_lost_is_reached_on_the_retry_and_the_report_says_so(
        lab, ansible, inject, tmp_path):
    inject(mtu.nft_table, node="node3", rules={"input": FIRST_SYNS_LOST})
    report, _run = _triage(ansible, tmp_path, "1")  # as a survey or -e gives it: text
    assert mtu.dropped_by_table(lab, "node3") >= 2  # nft's counter: the first connection's SYNs were lost there
    node3 = report["hosts"]["node3"]
    assert node3["status"] == "reached" and node3["ssh_retries"] == 1, node3
    assert node3["scenarios"]["sysctl"]["status"] == "ran"
    assert report["coverage"]["ssh_retries"] == {"node3": 1}
    assert all("ssh_retries" not in report["hosts"][h] for h in ("node1", "node2"))
    assert not [f for f in report["findings"] if f["check"] == "triage.host_unreachable"]


def test_without_retries_the_lost_connection_is_an_unreachable_node_said_plainly(lab, ansible, inject, tmp_path):
    inject(mtu.nft_table, node="node3", rules={"input": FIRST_SYNS_LOST})
    report, run = _triage(ansible, tmp_path, 0)
    assert mtu.dropped_by_table(lab, "node3") == 2
    assert report["hosts"]["node3"]["status"] == "unreachable" and "ssh_retries" not in report["hosts"]["node3"]
    [down] = [f for f in report["findings"] if f["check"] == "triage.host_unreachable"]
    assert down["subject"] == "node3" and down["evidence"]["ssh_failure"] == "no answer"
    assert re.search(r"node3 could not be reached over SSH \(the node does not answer \(the connection timed out\)",
                     down["summary"]), down["summary"]
    assert "SSH RETRIED" not in run.stdout
