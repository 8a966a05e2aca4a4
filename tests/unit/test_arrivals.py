"""locustfiles/arrivals.py: the open-loop schedule (seeded, the asked rate, vLLM's burstiness), the clock, the stamp."""

from __future__ import annotations

import statistics
import time

import gevent
import pytest

from locustfiles.arrivals import ArrivalClock, arrival_offsets, spawn_time_s
from locustfiles.metrics import stamp_schedule as stamp
from locustfiles.dataset import Prompt
from locustfiles.records import RequestRecord


def gaps(offsets: list[float]) -> list[float]:
    return [b - a for a, b in zip(offsets, offsets[1:])]


def test_the_schedule_is_fixed_by_its_seed() -> None:
    a = arrival_offsets(500, 20.0, "poisson", 1.0, seed=7)
    assert a == arrival_offsets(500, 20.0, "poisson", 1.0, seed=7)  # master and workers agree
    assert a != arrival_offsets(500, 20.0, "poisson", 1.0, seed=8)
    assert a[0] == 0.0 and a == sorted(a) and len(a) == 500


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_the_mean_rate_is_the_asked_rate(burstiness: float) -> None:
    offsets = arrival_offsets(20_000, 40.0, "poisson", burstiness, seed=1)
    rate = (len(offsets) - 1) / offsets[-1]
    assert rate == pytest.approx(40.0, rel=0.03)


def test_constant_arrivals_are_exactly_evenly_spaced() -> None:
    offsets = arrival_offsets(101, 8.0, "constant")
    assert offsets[-1] == pytest.approx(100 / 8.0)
    assert all(g == pytest.approx(0.125, abs=1e-12) for g in gaps(offsets))
    assert arrival_offsets(5, 8.0, "constant", seed=3) == arrival_offsets(5, 8.0, "constant", seed=4)


def test_burstiness_sets_the_variance_of_the_gaps() -> None:
    """Gamma of shape k and mean 1/r: coefficient of variation 1/sqrt(k) (1 for Poisson arrivals)."""
    cv = {}
    for k in (0.25, 1.0, 4.0):
        g = gaps(arrival_offsets(20_000, 10.0, "poisson", k, seed=2))
        cv[k] = statistics.pstdev(g) / statistics.fmean(g)
        assert cv[k] == pytest.approx(1 / k ** 0.5, rel=0.06), (k, cv[k])
    assert cv[0.25] > cv[1.0] > cv[4.0]


@pytest.mark.parametrize("args", [(0.0, "poisson", 1.0), (5.0, "uniform", 1.0), (5.0, "poisson", 0.0)])
def test_bad_parameters_are_refused(args: tuple[float, str, float]) -> None:
    with pytest.raises(ValueError):
        arrival_offsets(10, *args)


def prompt(index: int) -> Prompt:
    return Prompt(index=index, conversation_id=f"c{index}", messages=({"role": "user", "content": "q"},),
                  prompt_tokens=3, output_tokens=8)


def test_the_clock_sleeps_until_a_prompt_is_due_and_not_when_it_is_late() -> None:
    clock = ArrivalClock()
    now = time.time()
    clock.plan([prompt(5), prompt(6)], [0.0, 0.15], now - 0.5)  # 5 is overdue; 6 too
    t0 = time.perf_counter()
    assert clock.wait(5) == now - 0.5 and clock.wait(6) == pytest.approx(now - 0.35)
    assert time.perf_counter() - t0 < 0.05
    clock.plan([prompt(7)], [0.2], time.time())
    t0 = time.perf_counter()
    due = clock.wait(7)
    assert due is not None and time.time() >= due
    assert 0.19 <= time.perf_counter() - t0 < 0.3
    assert clock.wait(99) is None  # not scheduled: a closed-loop prompt goes at once


def test_a_worker_learns_due_times_from_the_master() -> None:
    clock = ArrivalClock()
    clock.learn([3, 4], [100.0, 101.5])
    assert clock.due == {3: 100.0, 4: 101.5}


def test_sleeping_users_stay_cooperative() -> None:
    """Many users waiting for their times do not block each other (gevent sleeps)."""
    clock = ArrivalClock()
    start = time.time()
    clock.plan([prompt(i) for i in range(20)], [0.01 * i for i in range(20)], start)
    woke: list[float] = []
    jobs = [gevent.spawn(lambda i=i: woke.append(time.time() - (clock.wait(i) or 0))) for i in range(20)]
    gevent.joinall(jobs, timeout=2)
    assert len(woke) == 20 and max(woke) < 0.02


def test_stamp_fills_delay_and_latencies_from_the_schedule() -> None:
    record = RequestRecord(request_id="r", prompt_index=0, worker="local", send_ts=100.25, ttft_ms=40.0, e2e_ms=300.0)
    stamp(record, 100.0)
    assert record.scheduled_ts == 100.0 and record.send_delay_ms == pytest.approx(250.0)
    assert record.ttft_from_schedule_ms == pytest.approx(290.0)
    assert record.e2e_from_schedule_ms == pytest.approx(550.0)
    early = RequestRecord(request_id="r", prompt_index=0, worker="local", send_ts=99.9999)
    stamp(early, 100.0)
    assert early.send_delay_ms == 0.0 and early.ttft_from_schedule_ms is None
    closed = RequestRecord(request_id="r", prompt_index=0, worker="local", send_ts=1.0)
    stamp(closed, None)
    assert closed.scheduled_ts is None and closed.send_delay_ms is None


def test_the_schedule_waits_for_locust_to_start_the_users() -> None:
    """Locust starts floor(spawn_rate) users at once, then the next batch a second later."""
    assert spawn_time_s(16, 16.0) == pytest.approx(0.016)
    assert spawn_time_s(32, 8.0) == pytest.approx(3.032)
    assert spawn_time_s(3, 0.5) == pytest.approx(4.003)  # one a batch, 2 s apart
