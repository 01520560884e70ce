"""The filters' guard: an error Python raises about a controller value names its plain type, never the
class ansible-core holds it in."""

from __future__ import annotations

import pytest
from ansible._internal._datatag._tags import Origin
from ansible.errors import AnsibleFilterError

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guarded, plain_names


def test_python_s_own_words_about_a_tagged_value_name_the_plain_type():
    def compare(limit):
        return limit < 8

    with pytest.raises(AnsibleFilterError) as exc:
        guarded("peers", compare)(Origin(path="/vars.yml").tag("eight"))
    message = str(exc.value)
    assert "'<' not supported between instances of 'str' and 'int'" in message, message
    assert "_Ansible" not in message


@pytest.mark.parametrize("text, plain", [
    ("instances of '_AnsibleTaggedStr' and 'int'", "instances of 'str' and 'int'"),
    ("'_AnsibleTaggedDict' object has no attribute 'x'", "'dict' object has no attribute 'x'"),
    ("_AnsibleLazyTemplateList is not callable", "list is not callable"),
])
def test_plain_names(text, plain):
    assert plain_names(text) == plain
