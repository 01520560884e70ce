# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet report on the controller: gathered from every host's records (build), pairwise findings folded
(fold), its files (files), over time (history), silenced (silences), queried (query), as OpenMetrics (metrics)
and as the terminal's summary (summary).

Internal to k8snet.triage (docs/developing.md, "Private code"): nothing here is a public interface.
"""
