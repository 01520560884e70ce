"""as_list: a role's list variable from a list or from survey text."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.filter.as_list import as_list


@pytest.mark.parametrize("value, expected", [
    ("10.0.0.100\n10.0.0.101", ["10.0.0.100", "10.0.0.101"]),       # AWX textarea
    ("10.0.0.100\r\n10.0.0.101\r\n", ["10.0.0.100", "10.0.0.101"]),  # a browser's line ends
    ("kube-system, calico-system", ["kube-system", "calico-system"]),
    ("  10.0.0.100  ", ["10.0.0.100"]),
    ("a,\n\n,b,", ["a", "b"]),
    ("", []),
    ("\n , \n", []),
    (None, []),
    (["10.0.0.100", "10.0.0.101"], ["10.0.0.100", "10.0.0.101"]),
    (["a,b"], ["a,b"]),                                            # list items are not split again
    (("x", "y"), ["x", "y"]),
    ([], []),
    ([{"address": "10.96.0.10"}], [{"address": "10.96.0.10"}]),
])
def test_lists_and_survey_text(value, expected):
    assert as_list(value) == expected


def test_result_is_a_new_list():
    given = ["a"]
    out = as_list(given)
    out.append("b")
    assert given == ["a"]


@pytest.mark.parametrize("value, shown", [
    (5, "an integer (5)"),
    (1.5, "a number (1.5)"),
    (True, "a boolean (True)"),
    ({"a": 1}, "a mapping"),
])
def test_other_types_fail_naming_the_variable(value, shown):
    with pytest.raises(AnsibleFilterError) as err:
        as_list(value, "stale_arp_vips")
    assert str(err.value) == ("stale_arp_vips must be a list, or a string of items separated by newlines or "
                              "commas; got %s" % shown)


@pytest.mark.parametrize("value, expected", [
    ("[]", []),                                   # -e triage_api_scenarios=[] gives the string "[]"
    ('["a", "b"]', ["a", "b"]),                   # -e 'x=["a","b"]'
    ('  ["198.18.96.200"]\n', ["198.18.96.200"]),
    ('[{"address": "10.96.0.10"}]', [{"address": "10.96.0.10"}]),
])
def test_json_text(value, expected):
    assert as_list(value, "x") == expected


@pytest.mark.parametrize("value, says", [
    ("[a, b", "stale_arp_vips looks like a JSON list but is not valid JSON"),
    ('["a", ', "stale_arp_vips looks like a JSON list but is not valid JSON"),
])
def test_bad_json_text_fails_naming_the_variable(value, says):
    with pytest.raises(AnsibleFilterError) as err:
        as_list(value, "stale_arp_vips")
    assert str(err.value).startswith(says)


@pytest.mark.parametrize("value, shown", [(5, "an integer (5)"), (2.5, "a number (2.5)"), (True, "a boolean (True)")])
def test_a_controller_value_is_shown_as_given_not_by_its_internal_class(value, shown):
    """ansible-core 2.19 holds variables in tagged copies (_AnsibleTaggedInt ...): the message shows the value."""
    from ansible._internal._datatag._tags import Origin  # pylint: disable=import-outside-toplevel
    given = Origin(path="/inventory/group_vars/all.yml").tag(value)
    with pytest.raises(AnsibleFilterError) as err:
        as_list(given, "stale_arp_vips")
    assert str(err.value).endswith("; got %s" % shown) and "_Ansible" not in str(err.value)
