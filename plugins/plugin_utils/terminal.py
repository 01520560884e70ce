# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Text for a terminal: what findings carry (log lines, names read from the cluster) is shown, never obeyed.

A finding's summary or subject can hold bytes an attacker or a broken component wrote: ESC starts a
terminal control sequence (colours, cursor moves, a window title, OSC 8 links), CR overwrites the
line already printed, a newline forges a line of its own, and Unicode's bidirectional overrides
reorder what the reader sees.  ``terminal_text`` replaces every such character with a visible
escape (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``) and leaves all other text, non-ASCII letters included,
as it is.  Every filter that renders lines for a terminal uses it.
"""

from __future__ import annotations

import unicodedata

# Characters that are neither control (Cc) nor format (Cf) but still move or hide text on a terminal.
_SEPARATORS = ("\u2028", "\u2029")


def _escape(char):
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if code < 0x100:
        return "\\x%02x" % code
    return "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def _hostile(char):
    return char in _SEPARATORS or unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co")


def terminal_text(value):
    """``value`` as text safe to print: C0/C1 controls, DEL, format characters (bidi overrides and
    isolates, zero-width characters), line/paragraph separators, surrogates and private-use characters
    shown as visible escapes; a backslash stays a backslash.  Not a string: its ``str()``."""
    text = value if isinstance(value, str) else str(value)
    if all(" " <= c < "\x7f" for c in text):
        return text  # plain ASCII: nothing to do
    return "".join(_escape(c) if _hostile(c) else c for c in text)
