"""orchestrate/report/aggregates/intervals.py: order-statistic intervals of percentiles, batch means of rates,
means and shares."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrate.report.aggregates.intervals import (
    EXACT_UP_TO,
    _binomial_cdf,
    around,
    batch_means,
    mean_interval,
    order_statistic_ranks,
    percentile_interval,
    share_interval,
    slices,
)
from orchestrate.report.schema.intervals import Interval


def binomial_cdf(n: int, q: float, k: int) -> float:
    """Summed in log space (``math.comb`` of thousands overflows a float)."""
    return sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(q)
                        + (n - i) * math.log1p(-q)) for i in range(k + 1))


@pytest.mark.parametrize(("n", "q"), [(20, 0.5), (100, 0.5), (100, 0.9), (500, 0.99), (1000, 0.5), (1000, 0.99)])
def test_the_ranks_cover_about_95_percent_by_the_binomial(n: int, q: float) -> None:
    low, high = order_statistic_ranks(n, q)
    lo = 0 if low is None else low
    hi = n + 1 if high is None else high
    covered = binomial_cdf(n, q, hi - 1) - (binomial_cdf(n, q, lo - 1) if lo >= 1 else 0.0)
    assert covered >= 0.94 - 1e-9
    if low is not None and high is not None:  # bounded: no pair one rank inside is nearer 95 % and still >= 94 %
        for a, b in ((lo + 1, hi), (lo, hi - 1), (lo + 1, hi - 1)):
            inside = binomial_cdf(n, q, b - 1) - binomial_cdf(n, q, a - 1)
            assert inside < 0.94 or abs(inside - 0.95) >= abs(covered - 0.95) - 1e-12


def test_a_median_of_20_values_is_bounded_by_the_6th_and_15th() -> None:
    """The textbook case: n = 20, the median's 95 % interval is [x(6), x(15)] (coverage 95.9 %)."""
    assert order_statistic_ranks(20, 0.5) == (6, 15)
    assert percentile_interval(np.arange(20, 0, -1, dtype=float), 0.5) == Interval(6.0, 15.0)


def test_too_few_values_leave_a_side_unbounded() -> None:
    assert order_statistic_ranks(100, 0.99) == (97, None)  # a p99 of 100 values cannot be bounded from above
    assert percentile_interval(np.array([]), 0.5) is None


def test_the_normal_approximation_above_the_exact_limit_agrees_with_the_exact_binomial() -> None:
    n = EXACT_UP_TO + 1
    for q in (0.5, 0.9, 0.99):
        approx = _binomial_cdf(n, q)
        for k in (int(n * q) - 20, int(n * q), int(n * q) + 5):
            assert approx(k) == pytest.approx(binomial_cdf(n, q, k), abs=0.02)


def test_batch_means_use_student_s_t_and_never_go_below_zero() -> None:
    found = batch_means([10.0, 12.0, 8.0, 10.0, 11.0, 9.0, 10.0, 10.0, 12.0, 8.0])
    half = 2.262 * np.std([10.0, 12.0, 8.0, 10.0, 11.0, 9.0, 10.0, 10.0, 12.0, 8.0], ddof=1) / math.sqrt(10)
    assert found == Interval(pytest.approx(10.0 - half), pytest.approx(10.0 + half))
    assert batch_means([0.0, 0.0, 0.0, 5.0, 0.0]) .low == 0.0
    assert batch_means([1.0, 2.0]) is None
    assert slices(0.0, 10.0, 4) == [(0.0, 2.5), (2.5, 5.0), (5.0, 7.5), (7.5, 10.0)]


def test_a_mean_s_batches_are_neighbours_in_send_order() -> None:
    drifting = np.repeat(np.arange(10.0), 5)  # each batch of 5 one value: the batches differ, within none
    found = mean_interval(drifting)
    half = 2.262 * np.std(np.arange(10.0), ddof=1) / math.sqrt(10)
    assert found == Interval(pytest.approx(4.5 - half), pytest.approx(4.5 + half))
    assert mean_interval(np.ones(19)) is None  # fewer than 2 per batch
    assert around(1.0, [1.0] * 10, floor=None) == Interval(1.0, 1.0)


def test_a_share_is_never_narrower_than_wilson_s_interval_of_its_count() -> None:
    all_passed = share_interval(np.ones(30, dtype=bool))  # every batch 1.0: batch means alone would say [1, 1]
    assert all_passed is not None and all_passed.high == 1.0
    assert all_passed.low == pytest.approx(0.8865, abs=1e-3)  # Wilson, 30 of 30
    clustered = np.zeros(100, dtype=bool)
    clustered[:50] = True  # the misses all together: batch means are wider than Wilson's i.i.d. count
    found, wilson = share_interval(clustered), share_interval(np.arange(100) % 2 == 0)
    assert found is not None and wilson is not None
    assert found.low < wilson.low and found.high > wilson.high
    assert share_interval(np.zeros(0, dtype=bool)) is None
    none_passed = share_interval(np.zeros(30, dtype=bool))  # every batch 0.0: Wilson's [0, 0.114], not [0, 1]
    assert none_passed is not None and none_passed.low == 0.0 and none_passed.high == pytest.approx(0.1135, abs=1e-3)
