"""orchestrate/report/aggregates/series.py: report.html's curves from the records (study_records of
test_headline: 3 completed, 1 error, 1 cancelled)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrate.report.aggregates import series
from orchestrate.report.aggregates.headline import summarize_records
from tests.unit.orchestrate.report.aggregates.test_headline import T0, frame, ok_record, study_records


def test_a_distribution_passes_through_the_summarys_nearest_rank_percentiles() -> None:
    rng = np.random.default_rng(5)
    values = pd.Series(rng.gamma(2.0, 50.0, 1001))
    x, pct = series.distribution(values, points=200)
    assert len(x) == 200 and pct[-1] == 100.0 and x == sorted(x)
    ranked = np.sort(values.to_numpy())
    for p in (50.0, 90.0, 99.0):
        assert x[pct.index(p)] == ranked[int(np.ceil(p / 100 * len(ranked))) - 1]
    few_x, few_pct = series.distribution(pd.Series([3.0, 1.0, None, 2.0]))
    assert few_x == [1.0, 2.0, 3.0] and few_pct == pytest.approx([100 / 3, 200 / 3, 100.0])


def test_decode_per_second_adds_up_to_the_completed_output_with_empty_bins_at_zero() -> None:
    records = frame(study_records())
    x, rate = series.decode_per_second(records, 0.2)
    # completed chunks arrive at +0.10 .15 .25 (1 token each), +0.70 .76 (2 each), +1.40 1.50 1.55 1.70
    assert x == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6])
    assert rate == pytest.approx([10.0, 5.0, 0.0, 20.0, 0.0, 0.0, 0.0, 15.0, 5.0])
    assert sum(rate) * 0.2 == pytest.approx(summarize_records(records).tokens.output)


def test_prefill_per_second_spreads_each_prompt_over_its_prefill() -> None:
    records = frame(study_records())  # prompts of 50, 35 and 20 tokens, prefills 0–0.1, 0.5–0.7, 1.0–1.4 s
    x, rate = series.prefill_per_second(records, 0.5)
    assert x == [0.0, 0.5, 1.0, 1.5]
    assert rate == pytest.approx([100.0, 70.0, 40.0, 0.0])
    assert sum(rate) * 0.5 == pytest.approx(summarize_records(records).tokens.prompt)


def test_in_flight_over_time_counts_each_request_from_send_to_end_and_keeps_the_peak_when_thinned() -> None:
    records = frame(study_records())
    x, n = series.in_flight_over_time(records)
    assert max(n) == 2 and n[-1] == 0 and x[0] == 0.0
    many = frame([ok_record(i, T0 + i * 0.01, [5.0, 6.0], 2, 50.0 if i != 500 else 400.0, 10, 0, 1.0, 1.0)
                  for i in range(2000)])
    x, n = series.in_flight_over_time(many, points=100)
    assert len(x) <= 100 and max(n) == 6  # 5 each, and the long one beside them


def test_the_bins_span_two_decode_steps_and_at_most_max_bins() -> None:
    assert series.bin_width(frame(study_records())) == 0.2  # TPOT median 100 ms: bins of ≥ 200 ms
    long = frame([ok_record(i, T0 + i, [100.0, 110.0], 2, 110.0, 10, 0, 1.0, 1.0) for i in range(1000)])
    assert series.bin_width(long) == 5.0  # 1,000 s in at most 200 bins
    assert series.bin_width(pd.DataFrame()) == 1.0


def test_thin_drops_gaps_and_keeps_the_last_sample() -> None:
    t = pd.Series(np.arange(1000, dtype=float))
    v = pd.Series(np.where(np.arange(1000) == 3, np.nan, 1.0))
    x, y = series.thin(t, v, points=100)
    assert len(x) <= 101 and x[-1] == 999.0 and 3.0 not in x


def test_the_request_timeline_keeps_every_kth_request_beyond_its_limit() -> None:
    records = pd.DataFrame({"send_ts": [10.0 + i for i in range(10)][::-1], "ttft_ms": [100.0] * 9 + [None],
                            "e2e_ms": [500.0] * 10, "status": ["ok"] * 9 + ["error"]})
    spans = series.request_spans(records, most=4)
    assert (spans["every"], spans["of"]) == (3, 10)
    assert spans["send"] == [0.0, 3.0, 6.0, 9.0] and spans["end"] == [0.5, 3.5, 6.5, 9.5]
    assert spans["first"] == [None, 3.1, 6.1, 9.1] and spans["status"] == ["error", "ok", "ok", "ok"]
    assert series.request_spans(records.iloc[0:0]) == {}
