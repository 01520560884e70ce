# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Values as a variable, ``-e`` or an AWX survey answer gives them (a survey's integer answer, like ``-e``,
arrives as text).  The callers name the variable and what it accepts in their own errors."""

from __future__ import annotations


def bounded_int(value, low, high):
    """``value`` as an int from ``low`` to ``high``: an int (not a bool) or its decimal digits as text, spaces
    around allowed (no sign, no decimal point, no exponent); None when it is anything else or out of range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if low <= number <= high else None
