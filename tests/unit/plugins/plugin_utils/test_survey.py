"""The one reading of a bounded whole number from a variable or a survey answer (report_history,
report_silence_max_days, triage_ssh_retries, the connectivity sample's limit)."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.plugin_utils.survey import bounded_int


@pytest.mark.parametrize("value,expected", [(0, 0), (5, 5), ("5", 5), (" 7 ", 7), ("0", 0), ("10", 10)])
def test_a_whole_number_or_its_text_in_range(value, expected):
    assert bounded_int(value, 0, 10) == expected


@pytest.mark.parametrize("value", [-1, 11, "11", "-1", "+5", "2.5", "1e3", "nan", "", " ", "ten", "\u00b2", "\u0663",
                                   True, False, None, 2.0, [1], {"a": 1}])
def test_anything_else_is_none(value):
    assert bounded_int(value, 0, 10) is None
