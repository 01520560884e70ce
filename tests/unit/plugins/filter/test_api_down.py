"""Filter api_down and the fleet's word on an API server found silent or refusing: the first API step that met it
holds the one finding (kube.api_unreachable / kube.api_unauthorized / kube.api_forbidden), a later step is
skipped naming it, and a step that failed for another reason stays triage.check_failed.  The results are the
registered results of the modules' failures as fail_from makes them (kube_client's error details)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.api_down import FilterModule
from ansible_collections.k8snet.triage.plugins.filter.node_pass_fleet import node_pass_fleet

api_down = FilterModule().filters()["api_down"]
SERVER = "https://198.18.0.1:6443"
# registered with failed_when: false: failed false, no findings
SILENT = {"changed": False, "failed": False, "cause": "deadline", "server": SERVER, "action": "list nodes",
          "deadline": 30.0, "msg": "the Kubernetes API at %s did not answer list nodes within 30 s (...)" % SERVER}
REFUSED = {"changed": False, "failed": False, "status": 401, "server": SERVER, "action": "list nodes",
           "msg": "the Kubernetes API at %s refused our credentials (401 Unauthorized) to list nodes" % SERVER}
FORBIDDEN = dict(REFUSED, status=403, action="list pods in namespace kube-system", msg="RBAC forbids us to ...")
CONNECT = {"failed": True, "cause": "unreachable", "server": SERVER, "action": "list nodes",
           "msg": "cannot reach the Kubernetes API at %s to list nodes: [Errno 111] Connection refused" % SERVER}
MALFORMED = {"failed": False, "cause": "malformed", "server": SERVER, "action": "list nodes", "msg": "malformed object"}
RAN = {"changed": False, "findings": [], "credential_source": "kubeconfig"}
SKIPPED_AFTER = {"changed": False, "skipped": True, "false_condition": "__node_pass_api_down | length == 0"}


@pytest.mark.parametrize("result, check, severity, said", [
    (SILENT, "kube.api_unreachable", "critical", "the Kubernetes API server at %s did not answer list nodes within 30 s"),
    (CONNECT, "kube.api_unreachable", "critical", "the Kubernetes API server at %s could not be reached to list nodes"),
    (REFUSED, "kube.api_unauthorized", "warning",
     "the Kubernetes API server at %s refused the triage's credentials (401 Unauthorized) to list nodes"),
    (FORBIDDEN, "kube.api_forbidden", "warning",
     "RBAC at the Kubernetes API server at %s forbids the triage to list pods in namespace kube-system (403 Forbidden)"),
])
def test_the_first_step_that_found_the_api_down_is_one_finding(result, check, severity, said):
    down = api_down([{}, {"skipped": True}, RAN, result, dict(SILENT, server="https://other:6443")])
    assert (down["check"], down["server"], down["request"]) == (check, SERVER, result["action"])
    assert down["said"] == said % SERVER
    assert down["reason"] == "not tried: %s (%s)" % (said % SERVER, check)
    found = down["finding"]
    shape = (found["check"], found["severity"], found["layer"], found["subject"])
    assert shape == (check, severity, "control-plane", SERVER)
    assert found["summary"].startswith(said % SERVER + ": the triage's later API steps were skipped")
    assert found["evidence"] == {"server": SERVER, "request": result["action"], "deadline": result.get("deadline"),
                                 "status": result.get("status"), "error": result["msg"]}


@pytest.mark.parametrize("results", [[], [{}], [RAN], [MALFORMED], [{"skipped": True}], [dict(SILENT, findings=[])],
                                     [{"failed": True, "msg": "missing kubernetes"}]])
def test_nothing_else_is_the_api_down(results):
    assert api_down(results) == {}


@pytest.mark.parametrize("value", [None, "x", {"a": 1}, [None], ["x"], [[]]])
def test_input_that_is_not_the_registered_results_is_refused(value):
    with pytest.raises(AnsibleFilterError, match="api_down"):
        api_down(value)


def test_the_fleet_holds_the_one_finding_and_the_later_reads_say_why_they_were_not_tried():
    down = api_down([SILENT])
    api = {"kube": SILENT, "cni": [SKIPPED_AFTER, SKIPPED_AFTER], "logs": SKIPPED_AFTER, "down": down,
           "dns_pod": {"ref": "default/client", "result": SKIPPED_AFTER, "wanted": True}}
    fleet = node_pass_fleet({"n1": {}, "n2": {}}, ["n1", "n2"], {}, api)
    assert fleet["kube"]["status"] == "failed"
    [found] = fleet["kube"]["findings"]
    assert found == dict(down["finding"], scope="fleet", hosts=["n1", "n2"])
    for name in ("cni", "logs"):
        assert (fleet[name]["status"], fleet[name]["reason"], fleet[name]["findings"]) == ("skipped", down["reason"], [])
    assert fleet["dns"]["status"] == "skipped" and down["reason"] in fleet["dns"]["reason"]
    every = [f["check"] for entry in fleet.values() for f in entry["findings"]]
    assert every == ["kube.api_unreachable"]


def test_without_a_down_api_a_failed_read_is_still_check_failed_and_a_skipped_one_left_out():
    fleet = node_pass_fleet({}, [], {}, {"kube": MALFORMED, "cni": SKIPPED_AFTER, "down": {}})
    assert [f["check"] for f in fleet["kube"]["findings"]] == ["triage.check_failed"]
    assert "cni" not in fleet


def test_the_fleet_refuses_a_down_that_is_not_api_downs_record():
    with pytest.raises(AnsibleFilterError, match="api_down"):
        node_pass_fleet({}, [], {}, {"down": {"check": "kube.api_unreachable"}})
