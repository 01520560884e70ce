# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""MAC addresses: the one place that parses, normalises and converts them (stdlib only).

The text form everywhere in results is lower-case, colon-separated: ``02:de:ad:00:be:ef``
(what ``ip -json`` prints).
"""

from __future__ import annotations

import os
import re

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

MAC_RE = re.compile(r"^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(\1[0-9a-f]{2}){4}$", re.IGNORECASE)


def normalize_mac(value):
    """'02-DE-AD-00-BE-EF' / '02dead00beef' -> '02:de:ad:00:be:ef'; raise InputError if malformed."""
    text = str(value).strip()
    if not MAC_RE.match(text):
        raise InputError("%r is not a MAC address (expected six hex pairs like 02:de:ad:00:be:ef)" % (value,))
    digits = re.sub(r"[^0-9a-f]", "", text.lower())
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def mac_bytes(mac):
    """'02:de:ad:00:be:ef' -> the six bytes (for a frame)."""
    return bytes(bytearray(int(part, 16) for part in mac.split(":")))


def mac_text(raw):
    """Six bytes of a frame -> '02:de:ad:00:be:ef'."""
    return ":".join("%02x" % b for b in bytearray(raw))


def is_locally_administered(mac):
    """True for a locally administered MAC (bit 1 of the first octet): no vendor registered it."""
    return bool(int(mac.split(":")[0], 16) & 0x02)


def random_local_mac():
    """A random locally administered unicast MAC."""
    raw = bytearray(os.urandom(6))
    raw[0] = (raw[0] & 0xFC) | 0x02
    return mac_text(bytes(raw))
