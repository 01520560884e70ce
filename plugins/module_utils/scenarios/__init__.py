# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The node scenarios of the triage, one module each, named after the scenario.

A scenario module declares, once: its name, the scenario module that runs its check alone
(``MODULE``), the prefixes of its checks' ids (``PREFIXES``), node_triage's options for it with the
triage's defaults (``OPTIONS``) and their rules (``RULES``), the role variables that set them
(``ROLE_VARIABLES``), whether its check samples over a window (``SAMPLED``), names the node in its
findings (``NODE_NAMED``) and has its data read by the fleet's conclusions on the controller (``FLEET_DATA``:
the triage's record keeps the data of these only), and these functions:

- ``load()``: the check, ``node_check(params, runner) -> {data, findings}``, its code imported now;
- ``skip_reason(sub, params)``: on the node, before its code is loaded, why it does not apply there
  (None: it applies); ``sub`` is its own parameters, ``params`` node_triage's;
- ``applies(fleet)``: on the controller, why it does not apply to a host (None: it applies), from the
  variables and the fleet (plugin_utils/node_pass.Fleet); without it, the scenario runs on the hosts of
  triage_nodes_group (``Fleet.not_a_node``);
- ``needs(fleet, sub)``: on the controller, what its check needs from the fleet, added to ``sub``;
- ``details(data)``: the compact view of its data that the HTML report draws.

The registry is ``node_triage.REGISTRY``; everything else (node_triage's argument spec and rules, the
plan, the controller's parameters and applicability, the record's details) is derived from it.
A scenario module imports only its options at the top: its check's code is imported by ``load``,
and what the controller side needs inside ``needs``.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
