# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The load-balancer domain: health checks of Services with externalTrafficPolicy Local (health, health_probes,
health_checks, health_remediation, health_options) and the Seesaw pair (seesaw).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
