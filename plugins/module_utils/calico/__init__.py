# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Calico BGP domain: BIRD's control socket (bird), its parsers and checks, the check's options, and the
fleet view of the sessions and Node resources (fleet).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
