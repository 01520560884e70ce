from __future__ import annotations

import copy

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import restart as cilium_restart
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError

from tests.kube_api import fixture_objects as objects, of_kind

AGENT = copy.deepcopy(of_kind(objects("anetd.yaml"), "Pod")[0])
AGENT["metadata"]["uid"] = "5dc73f31-032e-4b11-9b5c-39098fb1d5a9"
PARAMS = {"kubeconfig": "/nonexistent/kubeconfig", "pod": "kube-system/anetd-5kx8w", "node": "node1"}


class Kube(object):
    """The two reads and the delete the restart makes, over a dict of pods."""

    def __init__(self, pods):
        self.by_name = dict((p["metadata"]["name"], p) for p in pods)
        self.deleted = []

    def get(self, plural, name, namespace=None):
        assert plural == "pods"
        return self.by_name.get(name)

    def pods(self, namespace=None):
        return list(self.by_name.values())

    def delete(self, plural, name, namespace, uid):
        self.deleted.append((name, uid))
        pod = copy.deepcopy(self.by_name[name])
        pod["metadata"]["deletionTimestamp"] = "2026-12-06T11:00:30Z"
        return pod


def test_a_ready_agent_is_deleted_once_with_its_uid():
    kube = Kube([AGENT])
    done = cilium_restart.restart(dict(PARAMS), lambda params: kube)
    assert done["changed"] and kube.deleted == [("anetd-5kx8w", AGENT["metadata"]["uid"])]
    assert done["findings"][0]["evidence"]["deletion"] == "2026-12-06T11:00:30Z"


@pytest.mark.parametrize("check_mode", [True, False])
def test_a_pod_already_being_deleted_is_refused(check_mode):
    """A real API server keeps a gracefully deleted pod (Terminating) until its kubelet confirms: not a second
    restart."""
    terminating = copy.deepcopy(AGENT)
    terminating["metadata"]["deletionTimestamp"] = "2026-12-06T11:00:30Z"
    kube = Kube([terminating])
    with pytest.raises(ChangeError) as refused:
        cilium_restart.restart(dict(PARAMS), lambda params: kube, check_mode=check_mode)
    assert "kube-system/anetd-5kx8w is already being deleted (deletionTimestamp 2026-12-06T11:00:30Z" in str(
        refused.value)
    assert refused.value.details == {"changed": False, "deletion": "2026-12-06T11:00:30Z"}
    assert kube.deleted == []
