# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""egress: the source address pod traffic leaves with, and where the target's reply was last seen."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import egress

NODE, POD, TARGET = "198.18.160.12", "198.19.161.3", "198.18.160.100"


def capture(sources, to_node=0, to_pod=0):
    """Flows as packet_capture summarises a capture on ``any``: the pod's packets out, the replies in and on."""
    flows = [{"interface": "eth0", "direction": "out", "dst": TARGET, "proto": "tcp", "src": s, "packets": 2}
             for s in sources]
    if to_node:
        flows.append({"interface": "eth0", "direction": "in", "src": TARGET, "dst": NODE, "proto": "tcp",
                      "packets": to_node})
    if to_pod:
        flows.append({"interface": "veth1", "direction": "out", "src": TARGET, "dst": POD, "proto": "tcp",
                      "packets": to_pod})
    return {"flows": flows}


def probe(status):
    return {"targets": [{"address": TARGET, "tcp": {"port": 9, "status": status}}]}


@pytest.mark.parametrize("sources, check, severity", [
    ((POD,), "egress.no_snat", "critical"),
    ((NODE, POD), "egress.no_snat", "critical"),
    (("198.18.160.250",), "egress.unexpected_source", "warning"),
    ((), "egress.not_leaving", "warning"),
])
def test_the_source_address(sources, check, severity):
    [f] = egress.egress_snat(capture(sources), NODE, POD, TARGET)
    assert (f["check"], f["severity"]) == (check, severity)


@pytest.mark.parametrize("to_node, to_pod, status, check", [
    (2, 2, "refused", "egress.ok"),       # the target reset the connect: it answered
    (3, 3, "open", "egress.ok"),
    (2, 2, None, "egress.ok"),            # no probe given: the replies toward the pod tell
    (4, 0, "timeout", "egress.reply_not_delivered"),
    (4, 0, None, "egress.reply_not_delivered"),
    (0, 0, "timeout", "egress.no_reply"),
    (0, 0, None, "egress.no_reply"),
])
def test_masqueraded_traffic_is_judged_by_where_the_reply_was_last_seen(to_node, to_pod, status, check):
    [f] = egress.egress_snat(capture([NODE], to_node, to_pod), NODE, POD, TARGET, pod="default/web", node="node2",
                             probe=probe(status) if status else None)
    assert f["check"] == check, f
    assert f["evidence"]["replies"] == {"to_node": to_node, "to_pod": to_pod, "probe": status}
    assert "SNAT-ed to the node IP %s" % NODE in f["summary"]
    if check == "egress.no_reply":
        assert f["severity"] == "critical" and "lost beyond node2" in f["summary"]
        assert "routes its replies back" in f["remediation"]
    if check == "egress.reply_not_delivered":
        assert "%d packets to %s seen on node2" % (to_node, NODE) in f["summary"] and "conntrack -L -d" in f["remediation"]


def test_the_probe_of_another_target_is_not_taken_for_an_answer():
    other = {"targets": [{"address": "198.18.160.101", "tcp": {"port": 9, "status": "open"}}]}
    [f] = egress.egress_snat(capture([NODE]), NODE, POD, TARGET, probe=other)
    assert f["check"] == "egress.no_reply" and f["evidence"]["replies"]["probe"] is None


def test_the_pod_and_node_are_named():
    [f] = egress.egress_snat(capture([POD, POD]), NODE, POD, TARGET, pod="default/web-5d8f7-abcde", node="node2")
    assert f["check"] == "egress.no_snat" and f["subject"] == "default/web-5d8f7-abcde -> %s" % TARGET
    assert "pod default/web-5d8f7-abcde (%s)" % POD in f["summary"] and "leaves node2" in f["summary"]
    seen = (f["evidence"]["pod"], f["evidence"]["node"], f["evidence"]["source_seen"])
    assert seen == ("default/web-5d8f7-abcde", "node2", POD)
    [f] = egress.egress_snat(capture([NODE], 1, 1), NODE, POD, TARGET)
    assert "pod" not in f["evidence"] and f["evidence"]["source_seen"] == NODE
