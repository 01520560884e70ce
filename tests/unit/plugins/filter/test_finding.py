# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""finding: a playbook's finding is built by the modules' constructor, and refused outside the contract."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.finding import finding
from ansible_collections.k8snet.triage.plugins.module_utils.core import findings


def test_the_same_finding_as_the_modules_build():
    got = finding("triage.check_failed", "warning", "control-plane", "node2", "the dns check could not run on node2: x",
                  {"scenario": "dns", "error": "x"}, "Run playbook k8snet.triage.dns alone with -v on this host to see why.")
    assert got == findings.finding("triage.check_failed", "warning", "control-plane", "node2",
                                   "the dns check could not run on node2: x", {"scenario": "dns", "error": "x"},
                                   "Run playbook k8snet.triage.dns alone with -v on this host to see why.")
    assert finding("triage.check_failed", "info", "L3", "n1", "s")["evidence"] == {}


@pytest.mark.parametrize("args, message", [
    (("Triage.Check", "warning", "L3", "n1", "s"), "must be <prefix>.<name>"),
    (("check_failed", "warning", "L3", "n1", "s"), "must be <prefix>.<name>"),
    (("triage.check_failed", "fatal", "L3", "n1", "s"), "severity 'fatal' is not one of ok, info, warning, critical"),
    (("triage.check_failed", "warning", "L9", "n1", "s"), "layer 'L9' is not one of"),
    (("triage.check_failed", "warning", "L3", 5, "s"), "subject must be text"),
    (("triage.check_failed", "warning", "L3", "n1", "s", ["e"]), "evidence must be a mapping"),
])
def test_outside_the_contract_is_refused(args, message):
    with pytest.raises(AnsibleFilterError) as caught:
        finding(*args)
    assert message in str(caught.value)
