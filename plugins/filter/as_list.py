# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A role's list variable as a list, also when it arrives as text (an AWX survey answer)."""

from __future__ import annotations

DOCUMENTATION = """
name: as_list
short_description: a list variable as a list, also from newline- or comma-separated text
version_added: 0.1.0
description:
  - Returns a list unchanged, and splits a string on newlines and commas, stripping white space
    around every item and dropping empty items. An AWX survey textarea or text answer arrives as
    one string (C("10.0.0.100\\n10.0.0.101")); with this filter the roles take it like a list.
  - C(null) and the empty string give an empty list. Any other type (a number, a mapping) fails
    with a message naming the variable, so that a wrong value is never taken as one item.
  - Items of a list are not split again, so a list item that contains a comma stays one item.
  - A string that starts with C([) is read as JSON text, as C(-e 'x=["a","b"]') and C(-e x=[]) give
    strings; it must be a JSON list, else the filter fails naming the variable.
options:
  _input:
    description: A list, or a string of items separated by newlines or commas.
    type: raw
    required: true
  name:
    description: The variable's name, for the error message.
    type: str
    default: value
"""

EXAMPLES = """
- name: Check the VIPs, given as a list or as survey text
  k8snet.triage.arp_check:
    addresses: "{{ stale_arp_vips | k8snet.triage.as_list('stale_arp_vips') }}"

# "10.0.0.100\\n10.0.0.101" -> ["10.0.0.100", "10.0.0.101"]
# "kube-system, calico-system" -> ["kube-system", "calico-system"]
# ["a,b"] -> ["a,b"]
# '["a", "b"]' (JSON text, as -e key=value gives it) -> ["a", "b"]; "[]" -> []
"""

RETURN = """
_value:
  description: The items.
  type: list
  elements: raw
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.lists import as_list


class FilterModule(object):
    def filters(self):
        return guard_all({"as_list": as_list})
