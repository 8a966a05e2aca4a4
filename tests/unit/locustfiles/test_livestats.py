"""locustfiles/livestats.py: the web UI's live figures, from hand-made records and a hand-set clock.

Every expected number is worked out by hand in the comments; percentiles are also checked against
the report's own ``aggregates.stats.weighted_stats`` so that the live view and the report agree.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from locustfiles.livestats import (
    HISTORY_POINTS,
    MIN_COMPLETED,
    MIN_RATE_S,
    RATE_BINS,
    RATE_FIELDS,
    LiveStats,
    Timeline,
    percentiles,
    report_intervals,
)
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.intervals import BATCHES, batch_means, percentile_interval, slices
from orchestrate.report.aggregates.stats import weighted_stats


class Clock:
    """A wall clock the test sets by hand."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def ok(send_ts: float, prompt: int, output: int, ttft: float, gap: float, tpot: float | None = None,
       tokens_per_chunk: float = 1.0, draft: tuple[int, int] | None = None) -> RequestRecord:
    """A completed request whose chunks arrive ``gap`` ms apart from ``ttft`` on."""
    chunks = int(output / tokens_per_chunk)
    return RequestRecord(request_id=f"r{send_ts}", prompt_index=0, worker="local", send_ts=send_ts, status=OK,
                         ttft_ms=ttft, tpot_ms=tpot, e2e_ms=ttft + gap * (chunks - 1),
                         chunk_offsets_ms=[ttft + gap * i for i in range(chunks)], n_chunks=chunks,
                         tokens_per_chunk=tokens_per_chunk, prompt_tokens=prompt, output_tokens=output,
                         draft_tokens=draft[0] if draft else None, draft_accepted=draft[1] if draft else None)


def failed(send_ts: float, status: str = ERROR, error_class: str | None = "http_400:exceed_context_size_error") \
        -> RequestRecord:
    return RequestRecord(request_id=f"f{send_ts}", prompt_index=0, worker="local", send_ts=send_ts,
                         status=status, error_class=error_class, e2e_ms=3.0, prompt_tokens=999, output_tokens=0)


def add_at(stats: LiveStats, clock: Clock, t: float, record: RequestRecord) -> None:
    clock.t = t
    stats.add(record)


@pytest.fixture
def four_requests() -> tuple[LiveStats, Clock]:
    """Sent from t=100: two completed, one error, one cancelled, counted at t=101, 105, 106, 107."""
    clock = Clock()
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 3)
    add_at(stats, clock, 101.0, ok(100.0, prompt=100, output=10, ttft=50.0, gap=5.0, tpot=5.0))  # 9 gaps of 5
    add_at(stats, clock, 105.0, ok(101.0, prompt=200, output=20, ttft=30.0, gap=2.0, tpot=2.0))  # 19 gaps of 2
    add_at(stats, clock, 106.0, failed(105.5))
    add_at(stats, clock, 107.0, failed(106.0, status=CANCELLED, error_class="cancelled"))
    return stats, clock


def test_percentiles_are_nearest_rank() -> None:
    assert percentiles(range(1, 11)) == {"p50": 5, "p90": 9, "p99": 10}
    assert percentiles([7.0]) == {"p50": 7.0, "p90": 7.0, "p99": 7.0}
    assert percentiles([]) is None
    # Weights repeat values: [1, 2, 3, 3] → p50 is the 2nd (2), p90 the 4th (3).
    assert percentiles([3.0, 1.0, 2.0], [2.0, 1.0, 1.0]) == {"p50": 2.0, "p90": 3.0, "p99": 3.0}


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_match_the_report(seed: int) -> None:
    """The live view and ``summary.json`` use one definition (``aggregates.stats.weighted_stats``)."""
    rng = random.Random(seed)
    values = [rng.uniform(0, 100) for _ in range(rng.randint(1, 300))]
    weights = [rng.choice([1.0, 1.0, 2.0, 3.5]) for _ in values]
    report = weighted_stats(np.array(values), np.array(weights))
    assert report is not None
    assert percentiles(values, weights) == {k: report[k] for k in ("p50", "p90", "p99")}


def test_unweighted_percentiles_match_the_report_for_every_small_n() -> None:
    """All weights 1 take a shortcut (no cumulative sums); it must pick the same ranks."""
    for n in range(1, 202):
        values = [float((i * 37) % n) for i in range(n)]
        report = weighted_stats(np.array(values))
        assert report is not None
        expected = {k: report[k] for k in ("p50", "p90", "p99")}
        assert percentiles(values) == percentiles(values, [1.0] * n) == expected, n


def test_window_and_since_start(four_requests: tuple[LiveStats, Clock]) -> None:
    stats, clock = four_requests
    clock.t = 110.0  # everything counted within the last 10 s; 10 s since the first send
    snap = stats.snapshot()
    assert (snap["elapsed_s"], snap["span_s"], snap["in_flight"]) == (10.0, 10.0, 3)
    now, run = snap["now"], snap["run"]
    assert now["decode_tok_s"] == run["decode_tok_s"] == 3.0  # (10 + 20) output tokens / 10 s
    assert now["prefill_tok_s"] == run["prefill_tok_s"] == 30.0  # (100 + 200) / 10 s: the error's 999 do not count
    assert now["requests_per_s"] == 0.2
    assert (run["completed"], run["errors"], run["cancelled"]) == (2, 1, 1)
    assert run["errors_by_class"] == {"http_400:exceed_context_size_error": 1}

    clock.t = 112.0  # the first request (counted at 101) has left the window
    snap = stats.snapshot()
    now, run = snap["now"], snap["run"]
    assert now["decode_tok_s"] == 2.0 and now["prefill_tok_s"] == 20.0  # 20 and 200 tokens / 10 s
    assert run["decode_tok_s"] == 2.5 and run["prefill_tok_s"] == 25.0  # 30 and 300 tokens / 12 s
    assert now["completed"] == 1 and now["errors"] == 1 and now["cancelled"] == 1
    assert now["ttft_ms"] == {"p50": 30.0, "p90": 30.0, "p99": 30.0}
    assert run["ttft_ms"] == {"p50": 30.0, "p90": 50.0, "p99": 50.0}  # [30, 50]: ranks 1, 2, 2
    assert run["tpot_ms"] == {"p50": 2.0, "p90": 5.0, "p99": 5.0}
    # 19 gaps of 2 ms and 9 of 5 ms: rank 14 of 28 is 2, ranks 26 and 28 are 5.
    assert run["itl_ms"] == {"p50": 2.0, "p90": 5.0, "p99": 5.0}
    assert now["itl_ms"] == {"p50": 2.0, "p90": 2.0, "p99": 2.0}
    assert run["output_tokens_mean"] == 15.0 and run["output_tokens_p50"] == 10
    assert run["acceptance"] is None  # no drafter


def test_stop_freezes_since_start_and_the_window_empties(four_requests: tuple[LiveStats, Clock]) -> None:
    stats, clock = four_requests
    clock.t = 115.0
    stats.stop()
    clock.t = 130.0
    snap = stats.snapshot()
    assert snap["elapsed_s"] == 15.0 and snap["run"]["decode_tok_s"] == 2.0  # 30 tokens / (115 − 100) s
    assert snap["now"]["decode_tok_s"] == 0.0 and snap["now"]["ttft_ms"] is None and snap["now"]["completed"] == 0


def test_a_young_run_divides_by_its_age() -> None:
    clock = Clock()
    stats = LiveStats(clock=clock, window_s=10.0)
    assert stats.snapshot()["now"]["decode_tok_s"] == 0.0 and stats.snapshot()["run"]["decode_tok_s"] is None
    add_at(stats, clock, 102.0, ok(100.0, prompt=40, output=10, ttft=5.0, gap=1.0))
    snap = stats.snapshot()
    assert snap["span_s"] == 2.0 and snap["now"]["decode_tok_s"] == 5.0 and snap["run"]["decode_tok_s"] == 5.0


def test_acceptance_and_weighted_itl() -> None:
    clock = Clock(50.0)
    stats = LiveStats(clock=clock)
    stats.add(ok(49.0, prompt=10, output=8, ttft=4.0, gap=3.0, tokens_per_chunk=2.0, draft=(10, 7)))  # 3 gaps, weight 2
    stats.add(ok(49.0, prompt=10, output=4, ttft=4.0, gap=1.0, draft=(20, 8)))  # 3 gaps of 1, weight 1
    stats.add(failed(49.5))
    run = stats.snapshot()["run"]
    assert run["acceptance"] == 0.5  # (7 + 8) / (10 + 20)
    # Weights: 1, 1, 1 (1 ms) then 2, 2, 2 (3 ms), total 9: p50 → 4.5th → 3 ms; a 1-ms rank only up to 3/9.
    assert run["itl_ms"] == {"p50": 3.0, "p90": 3.0, "p99": 3.0}
    assert run["output_tokens"] == 12 and run["prompt_tokens"] == 20


def test_memory_is_bounded_but_totals_are_exact() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, keep=5)
    for i in range(1, 9):
        stats.add(ok(99.0, prompt=1, output=2, ttft=float(i), gap=float(i)))
    run = stats.snapshot()["run"]
    assert run["completed"] == 8 and run["output_tokens"] == 16
    assert run["ttft_ms"] == {"p50": 6.0, "p90": 8.0, "p99": 8.0}  # over the last 5: 4..8
    assert len(stats.run.itl) == 5 and len(stats.run.ttft_ms) == 5


def test_chart_points_only_while_the_test_runs() -> None:
    clock = Clock(10.0)
    stats = LiveStats(clock=clock)
    assert stats.sample(users=0) is None  # the test has not started: nothing to draw
    first = stats.sample(users=4)  # users run, nothing has ended yet: the ramp is drawn from now on
    assert first is not None and (first["t"], first["users"], first["decode_tok_s"], first["ttft_p50_ms"]) == \
        (0.0, 4, 0.0, None)
    add_at(stats, clock, 12.0, ok(10.0, prompt=30, output=20, ttft=8.0, gap=1.0))
    clock.t = 14.0
    point = stats.sample(users=4)
    assert point is not None and point["t"] == 4.0 and point["users"] == 4
    assert point["decode_tok_s"] == 5.0 and point["ttft_p50_ms"] == 8.0  # 20 tokens / 4 s
    stats.stop()
    assert stats.sample(users=4) is None and len(stats.history) == 2
    number = stats.test_number
    stats.reset()
    assert stats.test_number == number + 1 and not stats.history and stats.snapshot()["run"]["completed"] == 0
    assert stats.history.maxlen == HISTORY_POINTS


def under(users: int, record: RequestRecord) -> RequestRecord:
    record.target_users = users
    return record


def test_this_user_level_holds_the_requests_sent_under_the_count_set_now() -> None:
    """8 users set at t=100, 4 at t=110 (each seen by the sampler): a request sent under 8 that ends after the
    change stays out of the 4 level; the level's rates run from its own first send, as the report's step."""
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    stats.sample(users=8, target=8)
    add_at(stats, clock, 104.0, under(8, ok(100.5, prompt=100, output=10, ttft=50.0, gap=5.0, tpot=5.0)))
    assert stats.snapshot()["level"]["completed"] == 1 and stats.snapshot()["level"]["users"] == 8
    clock.t = 110.0
    stats.sample(users=8, target=4)  # Edit: the count is 4 from now on, the users are still winding down
    add_at(stats, clock, 111.0, under(8, ok(109.0, prompt=100, output=10, ttft=70.0, gap=5.0, tpot=5.0)))
    add_at(stats, clock, 112.0, under(4, ok(110.2, prompt=100, output=20, ttft=20.0, gap=5.0, tpot=5.0)))
    level = stats.snapshot()["level"]
    assert (level["users"], level["completed"], level["output_tokens"]) == (4, 1, 20)
    assert level["ttft_ms"]["p50"] == 20.0 and level["set_s_ago"] == 2.0
    assert level["decode_tok_s"] == pytest.approx(20 / (112.0 - 110.2))  # since its first send
    stats.sample(users=4, target=4)  # the same count again: the same level
    assert stats.snapshot()["level"]["completed"] == 1
    assert stats.snapshot()["run"]["completed"] == 3


def level_of(stats: LiveStats, users: int = 8) -> None:
    """The sampler sees ``users`` set now: a level begins."""
    stats.sample(users=users, target=users)


def test_the_level_s_percentile_intervals_are_the_report_s() -> None:
    """The level's intervals are ``aggregates.intervals.percentile_interval`` of its own values, nothing copied."""
    rng = random.Random(7)
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0)
    level_of(stats, users=4)  # a level before, whose slow request is in the run's figures, not in the 8's
    add_at(stats, clock, 100.0, under(4, ok(99.0, prompt=10, output=10, ttft=5000.0, gap=1.0, tpot=50.0)))
    level_of(stats)
    records = [under(8, ok(100.1 + i / 10, prompt=10, output=10, ttft=rng.uniform(20, 400), gap=5.0,
                           tpot=rng.uniform(1, 9))) for i in range(150)]
    for i, record in enumerate(records):
        add_at(stats, clock, 101.0 + i / 10, record)
    level = stats.snapshot()["level"]
    for metric in ("ttft_ms", "tpot_ms", "e2e_ms"):
        values = np.array([getattr(r, metric) for r in records])
        for p in ("p50", "p90", "p99"):
            expected = percentile_interval(values, int(p[1:]) / 100)
            assert expected is not None
            assert level["intervals"][metric][p] == {"low": expected.low, "high": expected.high}, (metric, p)
        median = level["intervals"][metric]["p50"]
        assert median["low"] < level[metric]["p50"] < median["high"]  # the shown percentile lies inside
    assert level["intervals"]["ttft_ms"]["p99"]["high"] is None  # 150 values cannot bound a p99 from above
    assert level["completed"] == 150 and stats.snapshot()["run"]["completed"] == 151


def test_a_level_with_few_requests_or_seconds_has_no_interval() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0)
    level_of(stats)
    for i in range(MIN_COMPLETED - 1):
        add_at(stats, clock, 101.0 + i, under(8, ok(100.0 + i, prompt=10, output=10, ttft=50.0 + i, gap=5.0)))
    clock.t = 130.0  # held 30 s, but only 9 requests completed
    intervals = stats.snapshot()["level"]["intervals"]
    assert intervals["ttft_ms"] is None and intervals["decode_tok_s"] is None and intervals["tpot_ms"] is None
    add_at(stats, clock, 130.0, under(8, ok(129.0, prompt=10, output=10, ttft=50.0, gap=5.0)))
    intervals = stats.snapshot()["level"]["intervals"]
    assert intervals["ttft_ms"] is not None and intervals["decode_tok_s"] is not None  # the 10th

    young = LiveStats(clock=clock, window_s=10.0)
    level_of(young)
    for i in range(40):  # 40 requests, but the level is 4 s old: percentiles yes, rates not yet
        add_at(young, clock, 130.0 + i / 10, under(8, ok(130.0, prompt=10, output=10, ttft=50.0 + i, gap=5.0)))
    intervals = young.snapshot()["level"]["intervals"]
    assert intervals["ttft_ms"] is not None and young.snapshot()["level"]["seconds"] < MIN_RATE_S
    assert all(intervals[key] is None for key in RATE_FIELDS)


def test_a_steady_feed_s_rate_interval_is_batch_means_of_its_slices_and_holds_its_rate() -> None:
    """Requests counted once a second (at x.5 s, away from the slices' edges) for 60 s, 10 to 30 output tokens
    each: the interval is ``batch_means`` of the 10 slices' rates worked out from the raw times, and holds the
    level's rate (their mean)."""
    rng = random.Random(3)
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0)
    level_of(stats)
    counted = []
    for i in range(60):
        output = rng.randint(10, 30)
        add_at(stats, clock, 100.5 + i, under(8, ok(100.0 + i, prompt=100, output=output, ttft=50.0, gap=1.0)))
        counted.append((100.5 + i, output))
    clock.t = 160.0
    level = stats.snapshot()["level"]
    windows = slices(100.0, 160.0)
    width = 60.0 / BATCHES
    per_slice = [sum(n for t, n in counted if a <= t < b) / width for a, b in windows]
    expected = batch_means(per_slice)
    assert expected is not None and expected.low is not None and expected.high is not None
    assert level["intervals"]["decode_tok_s"] == {"low": pytest.approx(expected.low),
                                                  "high": pytest.approx(expected.high)}
    assert expected.low < level["decode_tok_s"] < expected.high
    assert level["decode_tok_s"] == pytest.approx(sum(n for _, n in counted) / 60.0)
    rps = level["intervals"]["requests_per_s"]  # one a second in every slice: no spread at all
    assert rps == {"low": pytest.approx(1.0), "high": pytest.approx(1.0)} and level["requests_per_s"] == 1.0
    assert level["intervals"]["prefill_tok_s"] == {"low": pytest.approx(100.0), "high": pytest.approx(100.0)}


def test_a_level_s_timeline_stays_small_and_keeps_every_sum() -> None:
    """Three hours at ten requests a second: the bins merge, never past ``RATE_BINS``, and every token stays."""
    timeline = Timeline()
    for i in range(108_000):
        timeline.add(1000.0 + i / 10, (2, 1, 1, 0))
    assert len(timeline.bins) <= RATE_BINS and timeline.width > 10.0
    sums = timeline.within(slices(1000.0, 1000.0 + 10_800.0))
    assert [sum(s[k] for s in sums) for k in range(4)] == [216_000, 108_000, 108_000, 0]
    assert max(s[2] for s in sums) - min(s[2] for s in sums) <= 0.05 * 10_800  # about even slices
    late = timeline.within(slices(1000.0, 2000.0))  # the test stopped at 2000 s: what came later goes to the last
    assert sum(s[2] for s in late) == 108_000 and late[-1][2] > late[0][2]


def test_without_the_report_s_functions_there_are_no_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host with ``locustfiles/`` alone cannot import them: the figures stand, without intervals."""
    monkeypatch.setitem(sys.modules, "orchestrate.report.aggregates", None)
    assert report_intervals() is None
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0)
    level_of(stats)
    for i in range(20):
        add_at(stats, clock, 101.0 + i, under(8, ok(100.0 + i, prompt=10, output=10, ttft=50.0, gap=5.0)))
    level = stats.snapshot()["level"]
    assert level["intervals"] is None and level["completed"] == 20
