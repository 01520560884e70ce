# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""network_layer: real client error texts (cases in network_layer_cases.yml) -> layer."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.network_layer import FilterModule, RULES, network_layer

CASES = yaml.safe_load((Path(__file__).parent / "network_layer_cases.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=["%s-%s-%d" % (c["source"], c["category"], i) for i, c in enumerate(CASES)])
def test_real_error_texts(case):
    got = network_layer(case["text"])
    assert (got["layer"], got["category"]) == (case["layer"], case["category"]), got


def test_every_rule_is_exercised_by_a_real_text():
    corpus = yaml.safe_load((Path(__file__).parent / "network_layer_corpus.yml").read_text())
    seen = {network_layer(c["text"])["category"] for c in CASES + corpus}
    assert {rule[0] for rule in RULES} <= seen


def test_list_in_list_out_and_next_check_named():
    got = network_layer(["dial tcp 198.18.160.13:10250: connect: no route to host", "java.net.ConnectException: Connection refused"])
    assert [g["layer"] for g in got] == ["L3", "L4"]
    assert "k8snet.triage.route_check" in got[0]["next_check"] and got[0]["also"] == ["L2"]
    assert got[0]["matched"] == "no route to host"


def test_none_is_unknown_and_bad_type_is_refused():
    assert network_layer(None)["layer"] == "unknown"
    with pytest.raises(AnsibleFilterError, match="got a mapping"):
        network_layer({"msg": "x"})


def test_registered_under_its_name():
    assert FilterModule().filters()["network_layer"].__wrapped__ is network_layer
