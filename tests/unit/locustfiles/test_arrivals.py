"""locustfiles/arrivals.py: the open-loop schedule (seeded, the asked rate, vLLM's burstiness) and the stamp.

The clock that sleeps until a prompt is due (``runstate.ArrivalClock``) is tested in test_runstate.py.
"""

from __future__ import annotations

import statistics

import pytest

from locustfiles.arrivals import arrival_offsets, spawn_time_s
from locustfiles.metrics import stamp_schedule as stamp
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


def test_a_trace_is_sent_at_its_own_times_scaled() -> None:
    from locustfiles.arrivals import trace_offsets
    from locustfiles.dataset import Prompt
    prompts = [Prompt(i, f"t{i}", ({"role": "user", "content": "x"},), 5, 4, at_s=at)
               for i, at in enumerate((3.0, 3.0, 4.5, 9.0))]
    assert trace_offsets(prompts, 1.0) == [0.0, 0.0, 1.5, 6.0]
    assert trace_offsets(prompts, 2.0) == [0.0, 0.0, 0.75, 3.0]
    with pytest.raises(ValueError, match="prompt 0 has no at_s"):
        trace_offsets([Prompt(0, "a", (), 1, 1)], 1.0)
