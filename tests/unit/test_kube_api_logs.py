"""The stand-in's container logs: fixtures checked against their pods, the query parameters read from the
client's generated schema, times moved to the present."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kube_api import FIXTURES, FixtureError, load_yaml
from tests.kube_api.store import load_logs, pod_log_parameters, shift_to_now

OBJECTS = load_yaml([FIXTURES / n for n in ("cluster.yaml", "cni.yaml", "events.yaml")])
LOGS = Path(__file__).resolve().parents[1] / "kube_api" / "logs" / "ibm_cycle.yaml"


def test_query_parameters_come_from_the_clients_schema():
    params = pod_log_parameters()
    assert params["tailLines"] is int and params["sinceSeconds"] is int and params["limitBytes"] is int
    assert params["previous"] is bool and params["timestamps"] is bool and params["container"] is str


def test_fixture_logs_load_and_events_validate():
    logs = load_logs([LOGS], OBJECTS)
    assert len(logs[("kube-system", "calico-node-m4q8z", "calico-node", True)]) == 7
    assert [o["reason"] for o in OBJECTS if o["kind"] == "Event"][0] == "FailedCreatePodSandBox"


@pytest.mark.parametrize("item, message", [
    ({"namespace": "kube-system", "pod": "nope", "container": "x", "lines": []}, "which no fixture defines"),
    ({"namespace": "kube-system", "pod": "calico-node-7xk2p", "container": "cilium-agent", "lines": []}, "has no container"),
    ({"namespace": "kube-system", "pod": "calico-node-7xk2p", "container": "calico-node", "previous": True, "lines": []},
     "no terminated lastState"),
    ({"namespace": "kube-system", "pod": "calico-node-7xk2p", "container": "calico-node", "lines": [["yesterday", "x"]]},
     "not an RFC 3339"),
])
def test_logs_the_api_server_would_never_serve_are_refused(tmp_path, item, message):
    import yaml

    path = tmp_path / "logs.yaml"
    path.write_text(yaml.safe_dump([item]))
    with pytest.raises(FixtureError, match=message):
        load_logs([path], OBJECTS)


def test_shift_to_now_keeps_order_and_spacing():
    logs = load_logs([LOGS], OBJECTS)
    objects, moved = shift_to_now(OBJECTS, logs, now=2000000000, gap=30)
    lines = moved[("kube-system", "calico-node-m4q8z", "calico-node", True)]
    assert lines[0][0] == "2033-05-18T03:27:10.120Z" and lines[-1][0] == "2033-05-18T03:27:41.000Z"
    newest = max(o["lastTimestamp"] for o in objects if o["kind"] == "Event")
    assert newest == "2033-05-18T03:32:50Z"  # 30 s before now: the newest time of all
