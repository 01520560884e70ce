# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes API layer of the controller-side modules: credentials (auth), the bounded transport, the client,
an error status in words (statuses), exec (pod_exec), the objects' accessors (objects), and the modules' shared main (module) and options (args).
Uses core only.

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
