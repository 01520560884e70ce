"""node_pass tries a connection that got no answer again (triage_ssh_retries, default 1) and records how many it
took; ssh's refusals are the node's answer and are not tried again. The ssh texts are ansible-core's words as the
lab produced them (a node's eth0 set down; sshd stopped)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.k8snet.triage.plugins.action import node_pass as action
from ansible_collections.k8snet.triage.plugins.plugin_utils.node_pass import ParamsError, record, ssh_retries

TIMED_OUT = ('Data could not be sent to remote host "198.18.160.12". Make sure this host can be reached over ssh: '
             'ssh: connect to host 198.18.160.12 port 22: Connection timed out')
REFUSED = "Failed to connect to the host via ssh: ssh: connect to host 198.18.0.20 port 22: Connection refused"
RESET = "kex_exchange_identification: read: Connection reset by peer"


class Connection:
    def __init__(self):
        self.resets = 0
        self._shell = SimpleNamespace(tmpdir=None)

    def reset(self):
        self.resets += 1


def run(failures, retries, monkeypatch):
    """(the pass's result, the attempts made, the pauses, the connection) with the first connections failing
    with ``failures``' texts."""
    pauses = []
    monkeypatch.setattr(action.time, "sleep", pauses.append)
    left = list(failures)
    made = []

    def attempt(_args, _vars):
        made.append(1)
        if left:
            return None, AnsibleConnectionFailure(left.pop(0))
        return {"scenarios": {}, "timing": {}}, None

    fake = SimpleNamespace(_attempt=attempt, _connection=Connection(), _remove_tmp_path=lambda path: None)
    result = action.ActionModule._pass(fake, {}, {"inventory_hostname": "node3"}, retries)
    return result, len(made), pauses, fake._connection


def test_a_connect_that_timed_out_once_is_tried_again_and_the_record_says_so(monkeypatch):
    result, made, pauses, connection = run([TIMED_OUT], 1, monkeypatch)
    assert made == 2 and result["ssh_attempts"] == 2 and "unreachable" not in result
    assert pauses == [1] and connection.resets == 1  # a master connection that broke is not reused
    assert record(result, [])["host"]["ssh_attempts"] == 2


def test_a_node_that_never_answers_is_unreachable_after_the_retries_with_their_count(monkeypatch):
    result, made, pauses, _c = run([TIMED_OUT] * 5, 2, monkeypatch)
    assert made == 3 and pauses == [1, 2]
    assert result == {"unreachable": True, "msg": TIMED_OUT, "ssh_attempts": 3}
    assert record(result, ["cni"])["host"] == {"status": "unreachable", "reason": TIMED_OUT, "ssh_attempts": 3}


def test_a_refusal_is_the_nodes_answer_and_is_not_tried_again(monkeypatch):
    result, made, pauses, _c = run([REFUSED], 3, monkeypatch)
    assert made == 1 and pauses == [] and result["ssh_attempts"] == 1 and result["unreachable"]


def test_sshd_resetting_a_fleets_connections_is_tried_again(monkeypatch):
    result, made, _p, _c = run([RESET], 1, monkeypatch)
    assert made == 2 and "unreachable" not in result


def test_no_retry_when_asked_for_none(monkeypatch):
    result, made, pauses, _c = run([TIMED_OUT], 0, monkeypatch)
    assert made == 1 and pauses == [] and result["unreachable"]
    assert "ssh_attempts" not in record(result, ["cni"])["host"]  # one connection: nothing to say


@pytest.mark.parametrize("given, read", [(None, 1), ("", 1), ("0", 0), (0, 0), (2, 2), (" 3 ", 3), ("5", 5)])
def test_triage_ssh_retries_as_a_survey_or_e_gives_it(given, read):
    assert ssh_retries(given) == read


@pytest.mark.parametrize("given", ["-1", "6", "9999999999", "nan", "1e3", "1.5", True, "two", [1], "../1"])
def test_a_bad_triage_ssh_retries_names_the_variable_and_the_range(given):
    with pytest.raises(ParamsError, match=r"triage_ssh_retries=.* is not a number of SSH retries: give 0 to 5"):
        ssh_retries(given)
