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

Its fleet half, when it has one, is declared here too:

- ``API_READS``: the reads of the fleet the controller makes once before the pass that it needs, by name
  (``kube_network_info``, ``node_network_status``, ``webhook_deadlock``, ``kube_logs``, ``dns_pod``: the API
  reads of roles/node_pass/tasks/api_reads.yml; ``vip_owners``: the VIP owners' pre-read in its main.yml); the
  role makes a read when a wanted scenario needs it (``node_triage.READS``, the lookup
  ``k8snet.triage.node_scenarios`` with ``reads=``);
- ``FLEET_VARIABLES``: the variables its controller side (``applies``, ``needs``, ``fleet``) reads besides its
  ``ROLE_VARIABLES`` (the node_pass action hands over these, templated), and ``FLEET_LISTS``, those of them that
  hold lists (a survey gives them as text);
- ``fleet(context)``: on the controller, once after the pass, its conclusion over the fleet, a fleet record or
  None (plugin_utils/fleet_results.Context: the hosts' records, the VIP owners, the API reads' entries).
  plugin_utils exists on the controller only, so its code is imported inside this function, never at the
  top: the node's AnsiballZ payload holds module_utils only (ansible-core's module_common leaves imports of
  other collection packages out), and the node never calls it.

The registry is ``node_triage.REGISTRY``; everything else (node_triage's argument spec and rules, the
plan, the controller's parameters and applicability, the record's details, the role's reads, the variables
the action hands over, the fleet's conclusions) is derived from it.
A scenario module imports only its options at the top: its check's code is imported by ``load``,
and what the controller side needs inside ``needs`` and ``fleet``.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
