"""The kernel's neighbour notifications: the bytes of RTM_NEWNEIGH/RTM_DELNEIGH (linux/neighbour.h layouts)."""

from __future__ import annotations

import struct

from ansible_collections.k8snet.triage.plugins.module_utils.arp import events as ne

STALE = {"address": "198.18.0.201", "family": 4, "mac": "02:de:ad:00:be:ef", "state": ["STALE"], "flags": []}
OTHER = dict(STALE, mac="02:0a:0b:0c:0d:0e", state=["PERMANENT"])


def message(entry, ifindex, kind):
    data = ne.new_neighbor_request(entry, ifindex)
    return data[:4] + struct.pack("=H", kind) + data[6:]


def test_a_request_reads_back_as_the_entry_it_writes():
    [(kind, flags, payload)] = ne.parse_messages(ne.new_neighbor_request(OTHER, 2))
    assert kind == ne.RTM_NEWNEIGH and flags & ne.NLM_F_REPLACE and flags & ne.NLM_F_CREATE
    assert ne.parse_neighbor(payload) == dict(OTHER, ifindex=2)
    six = dict(OTHER, address="fd00::1", family=6, state=["NOARP"], mac=None, flags=["extern_learn"])
    assert ne.parse_neighbor(ne.parse_messages(ne.new_neighbor_request(six, 7))[0][2]) == dict(six, ifindex=7)


def events():
    watcher = ne.NeighborEvents.__new__(ne.NeighborEvents)
    watcher.wait, watcher.latest, watcher.dels = 0.1, {}, set()
    return watcher


def test_what_was_deleted_is_the_last_entry_the_kernel_showed_before_its_delete():
    watcher = events()
    failed = dict(STALE, mac=None, state=["FAILED"])
    # a writer replaced the entry after the re-read, then the delete: FAILED without lladdr, then deleted
    watcher.take(message(OTHER, 2, ne.RTM_NEWNEIGH) + message(failed, 2, ne.RTM_NEWNEIGH)
                 + message(failed, 2, ne.RTM_DELNEIGH) + message(STALE, 3, ne.RTM_DELNEIGH))
    assert watcher.deleted(STALE["address"], 2, dict(STALE, interface="eth0")) == dict(OTHER, ifindex=2)
    # nothing changed since the re-read: the re-read is what was deleted
    assert watcher.deleted(STALE["address"], 3, dict(STALE, interface="eth1")) == dict(STALE, interface="eth1", ifindex=3)
