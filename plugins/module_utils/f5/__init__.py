# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The F5 BIG-IP Controller (CIS) domain: the ConfigMap audit (configmaps), its parsers against the vendored CIS
schemas (schema), the controller and mode (controller), and the audit cluster by cluster (cluster,
cluster_options).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
