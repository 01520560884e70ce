# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Find repair options set anywhere in the inventory or the extra vars (the triage refuses them)."""

from __future__ import annotations

DOCUMENTATION = """
name: triage_repair_requests
short_description: list every repair option that a host, a group or the extra vars turn on
version_added: 0.2.0
description:
  - Reads the variables of every host given (host and group variables, and the extra vars, which every
    host sees) and returns one line per repair option that is set to something other than its read-only
    value, naming the host, the variable and the value.
  - C(k8snet.triage.triage) refuses to start when this list is not empty, so no host of the inventory can
    turn a repair on, whatever play it is in, and also when the node group is empty.
  - A variable whose value cannot be evaluated is listed too (refused, not guessed).
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts whose variables are read (for example C(groups['all'] + ['localhost'])).
    type: list
    elements: str
    required: true
  options:
    description:
      - The repair options and their read-only values. A boolean option is read-only when false; a
        string option when it equals its read-only value (C(none)).
      - The default covers the repair options of the collection's roles.
    type: dict
"""

EXAMPLES = """
- name: Refuse repair options
  ansible.builtin.assert:
    that: __requests | length == 0
    fail_msg: "{{ __requests | join('; ') }}"
  vars:
    __requests: "{{ hostvars | k8snet.triage.triage_repair_requests(groups['all'] + ['localhost']) }}"
"""

RETURN = """
_value:
  description: "One line per repair option turned on, C(HOST: NAME=VALUE), sorted."
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

# The repair options of the roles and their read-only values.
REPAIR_OPTIONS = {
    "stale_arp_flush": False,
    "stale_arp_force": False,
    "cilium_maps_cleanup": False,
    "lb_health_remediate": "none",
}
FALSE_WORDS = ("", "false", "no", "off", "0", "n", "f")


def _is_read_only(value, safe):
    if value is None:
        return True
    if isinstance(safe, bool):
        if isinstance(value, bool):
            return value is False
        if isinstance(value, (int, float)):
            return value == 0
        return isinstance(value, str) and value.strip().lower() in FALSE_WORDS
    return isinstance(value, str) and value.strip().lower() in (str(safe).lower(), "")


def triage_repair_requests(hostvars, hosts, options=None):
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleFilterError("triage_repair_requests needs the list of hosts to read (inventory host names), got %r"
                                 % (hosts if not isinstance(hosts, list) else hosts[:3],))
    if not hasattr(hostvars, "__getitem__") or isinstance(hostvars, (str, bytes, list)):
        # a safety guard that cannot read the variables must not answer "nothing asks for a repair"
        raise AnsibleFilterError("triage_repair_requests needs hostvars (a mapping of host name to variables), got %s"
                                 % kind(hostvars))
    options = REPAIR_OPTIONS if options is None else options
    if not isinstance(options, dict):
        raise AnsibleFilterError("triage_repair_requests: options must be a dict of {name: read-only value}")
    found = set()
    for host in hosts:
        try:
            facts = hostvars[host]
        except Exception:  # pylint: disable=broad-except
            continue  # not in the inventory: it has no variables to set
        for name, safe in options.items():
            try:
                if name not in facts:
                    continue
                value = facts[name]
            except Exception as exc:  # pylint: disable=broad-except
                found.add("%s: %s cannot be evaluated (%s)" % (host, name, exc))
                continue
            if not _is_read_only(value, safe):
                found.add("%s: %s=%s" % (host, name, value))
    return sorted(found)


class FilterModule(object):
    def filters(self):
        return guard_all({"triage_repair_requests": triage_repair_requests})
