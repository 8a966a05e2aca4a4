"""orchestrate/report/aggregates/stats.py: nearest-rank percentiles of exact values, weights repeating them."""

from __future__ import annotations

import numpy as np

from orchestrate.report.aggregates.stats import weighted_stats


def test_weighted_stats_nearest_rank_one_to_ten():
    # 10 values, weight 1: p is the smallest value whose cumulative weight reaches p% of 10
    stats = weighted_stats(np.array([7, 3, 10, 1, 5, 2, 9, 4, 8, 6], dtype=float))
    assert stats == {"p50": 5.0, "p90": 9.0, "p99": 10.0, "mean": 5.5, "min": 1.0, "max": 10.0}


def test_weighted_stats_weights_repeat_values():
    # 10 (weight 3) and 20 (weight 1): cum = [3, 4]; p50 target 2 → 10; p90 target 3.6 → 20; mean 50/4
    stats = weighted_stats(np.array([20.0, 10.0]), np.array([1.0, 3.0]))
    assert stats == {"p50": 10.0, "p90": 20.0, "p99": 20.0, "mean": 12.5, "min": 10.0, "max": 20.0}


def test_weighted_stats_of_nothing_is_none():
    assert weighted_stats(np.array([])) is None
