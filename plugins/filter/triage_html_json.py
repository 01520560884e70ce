# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""JSON that is safe to embed in an HTML <script type="application/json"> element."""

from __future__ import annotations

DOCUMENTATION = """
name: triage_html_json
short_description: JSON safe to embed inside an HTML script element
version_added: 0.2.0
description:
  - Serialises the data as JSON and escapes C(<), C(>), C(&), U+2028 and U+2029 as C(\\\\u003c) and so on,
    so no string in the data (C(</script>), C(<!--<script>), C(]]>)) can end or change the script
    element it is embedded in. C(JSON.parse) returns the original strings.
options:
  _input:
    description: The data.
    type: raw
    required: true
"""

EXAMPLES = """
- name: Embed the report's data
  ansible.builtin.copy:
    content: '<script type="application/json" id="data">{{ report | k8snet.triage.triage_html_json }}</script>'
    dest: /tmp/report.html
    mode: "0644"
"""

RETURN = """
_value:
  description: The JSON text, with no C(<), C(>), C(&), U+2028 or U+2029 left in it.
  type: str
"""

from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.files import triage_html_json


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_html_json": triage_html_json})
