# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where packets vanish: bounded captures (capture), the hop analysis (analysis), one Service's path from the
API (service), pod egress (egress) and a pod's network namespace found on its node (pod_netns).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
