# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Logs and events as evidence: bounded readers and the signature matcher (evidence), the signature table
(signatures), the node log check's options, and pod logs and events through the API (kube_logs).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
