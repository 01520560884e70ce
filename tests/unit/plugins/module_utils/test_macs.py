"""macs.py: the one MAC parser/converter, used by neighbors, arp_probe, reachability and capture."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core import macs
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


@pytest.mark.parametrize("value, normal", [
    ("02:DE:AD:00:BE:EF", "02:de:ad:00:be:ef"), ("02-de-ad-00-be-ef", "02:de:ad:00:be:ef"),
    ("02dead00beef", "02:de:ad:00:be:ef"), (" 02:de:ad:00:be:ef ", "02:de:ad:00:be:ef"),
])
def test_mac_forms_accepted(value, normal):
    assert macs.normalize_mac(value) == normal


@pytest.mark.parametrize("value", ["02:de:ad:00:be", "02:de:ad:00:be:zz", "02:de-ad:00:be:ef", "", None, 12,
                                   "02:de:ad:00:be:ef:00", "02.de.ad.00.be.ef"])
def test_malformed_mac_is_an_input_error_naming_it(value):
    with pytest.raises(InputError) as err:
        macs.normalize_mac(value)
    assert repr(value) in err.value.message and "six hex pairs" in err.value.message


def test_bytes_and_text_round_trip():
    raw = b"\x02\xde\xad\x00\xbe\xef"
    assert macs.mac_bytes("02:de:ad:00:be:ef") == raw
    assert macs.mac_text(raw) == "02:de:ad:00:be:ef"
    assert macs.mac_text(bytearray(raw)) == "02:de:ad:00:be:ef"
    assert macs.mac_bytes(macs.mac_text(b"\xff" * 6)) == b"\xff" * 6


@pytest.mark.parametrize("mac, local", [("02:18:00:00:00:01", True), ("00:1b:21:00:00:01", False),
                                        ("0a:11:22:33:44:55", True), ("fc:00:00:00:00:00", False)])
def test_locally_administered_bit(mac, local):
    assert macs.is_locally_administered(mac) is local


def test_random_local_mac_is_local_unicast_and_well_formed():
    seen = set()
    for dummy in range(50):
        mac = macs.random_local_mac()
        first = int(mac[:2], 16)
        assert first & 0x02 and not first & 0x01
        assert macs.normalize_mac(mac) == mac
        seen.add(mac)
    assert len(seen) > 45
