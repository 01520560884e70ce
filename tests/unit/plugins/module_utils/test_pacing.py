"""pacing.Pacer: a node's probe budget, shared by every probe thread of one check."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core import pacing
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


class Clock(object):
    """A clock that only moves when something sleeps (what each wait asked for is kept)."""

    def __init__(self):
        self.now, self.slept = 100.0, []
        self.lock = threading.Lock()

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        with self.lock:
            self.slept.append(seconds)


def test_each_packet_waits_for_its_slot_one_interval_after_the_previous():
    clock = Clock()
    pacer = pacing.Pacer(4.0, clock=clock, sleep=clock.sleep)
    for dummy in range(5):
        pacer.wait()
    # the first goes at once; the clock did not move, so the k-th waits k intervals of 0.25 s
    assert clock.slept == [0.25, 0.5, 0.75, 1.0]
    assert pacer.waited == pytest.approx(2.5)


def test_a_quiet_spell_gives_no_burst_credit():
    clock = Clock()
    pacer = pacing.Pacer(10.0, clock=clock, sleep=clock.sleep)
    pacer.wait()
    clock.now += 5  # five seconds without a packet: the next one goes at once, the one after waits a slot
    pacer.wait()
    pacer.wait()
    assert clock.slept == [pytest.approx(0.1)]


def test_the_threads_of_one_check_share_the_slots():
    clock = Clock()
    pacer = pacing.Pacer(100.0, clock=clock, sleep=clock.sleep)
    threads = [threading.Thread(target=lambda: [pacer.wait() for dummy in range(10)]) for dummy in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 80 packets at 100 a second: slots 0.01 s apart, every one taken once whatever thread asked
    assert sorted(round(s, 6) for s in clock.slept) == [round(0.01 * k, 6) for k in range(1, 80)]


def test_rate_zero_sends_without_waiting():
    clock = Clock()
    pacer = pacing.Pacer(0, clock=clock, sleep=clock.sleep)
    for dummy in range(100):
        pacer.wait()
    assert clock.slept == [] and pacer.waited == 0


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), 10 ** 9, "fast", True])
def test_a_rate_that_is_not_a_rate_is_refused_with_the_range(value):
    with pytest.raises(InputError, match="packets a second"):
        pacing.rate_rule("rate", value)
    assert pacing.rate_rule("rate", 0) == 0 and pacing.rate_rule("rate", 200.0) == 200.0
