"""orchestrate/report/aggregates/blockstats.py: the value at a cumulative weight, exactly, from values read in blocks.

The reference is the definition written out in plain Python: sort, add up the weights, take the first
value whose running total reaches the target. The radix path is forced with a small ``SORT_AT_MOST``.
"""

from __future__ import annotations

import numpy as np
import pytest

from orchestrate.report.aggregates import blockstats
from orchestrate.report.aggregates.blockstats import concatenated, select


def reference(values: list[float], weights: list[float], target: float) -> float:
    running = 0.0
    pairs = sorted(zip(values, weights), key=lambda p: p[0])
    for value, weight in pairs:
        running += weight
        if running >= target:
            return value
    return pairs[-1][0]


def in_blocks(values: np.ndarray, weights: np.ndarray | None, n_blocks: int) -> blockstats.Blocks:
    parts = np.array_split(np.arange(values.size), n_blocks)
    return lambda: ((values[p], None if weights is None else weights[p]) for p in parts)


SAMPLES = {
    "normal": lambda rng, n: rng.normal(20.0, 5.0, n),
    "rounded_with_zeros": lambda rng, n: np.round(rng.gamma(4.0, 3.5, n) * (rng.random(n) > 0.2), 4),
    "few_distinct": lambda rng, n: rng.choice([-3.5, 0.0, 1e-300, 2.0, 1e150], n),
    "one_value_mostly": lambda rng, n: np.where(rng.random(n) < 0.95, 7.25, rng.normal(7.0, 1.0, n)),
}


@pytest.mark.parametrize("sample", SAMPLES)
@pytest.mark.parametrize("weighted", [False, True])
def test_radix_selection_matches_the_definition(monkeypatch: pytest.MonkeyPatch, sample: str, weighted: bool) -> None:
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 16)  # narrow by histograms down to 16 values or one pattern
    rng = np.random.default_rng(len(sample))
    values = SAMPLES[sample](rng, 5000)
    weights = rng.choice([1.0, 2.0, 3.0], values.size) if weighted else None
    w = weights.tolist() if weighted else [1.0] * values.size
    total = sum(w)
    targets = [p / 100 * total for p in (1, 50, 90, 99, 99.9, 100)] + [1.0, total * (1 + 1e-15)]
    found = select(in_blocks(values, weights, 7), lambda t: targets)
    assert found is not None
    assert found[1] == [reference(values.tolist(), w, t) for t in targets]


def test_many_copies_of_one_value_are_found_without_sorting_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 4)
    values = np.full(1000, 12.5)
    values[:3] = [1.0, 2.0, 3.0]
    found = select(in_blocks(values, None, 3), lambda t: [2.0, 4.0, 500.0, 1000.0])
    assert found is not None and found[1] == [2.0, 12.5, 12.5, 12.5]


def test_totals_and_concatenation() -> None:
    values, weights = np.array([3.0, -1.0, 2.0, 10.0]), np.array([1.0, 2.0, 1.0, 4.0])
    found = select(in_blocks(values, weights, 3), lambda t: [])
    assert found is not None
    t = found[0]
    assert (t.count, t.weight, t.weighted_sum, t.min, t.max) == (4, 8.0, 3 - 2 + 2 + 40, -1.0, 10.0)
    # Σ w (v − mean)², mean 43/8, merged over three blocks as over one
    assert t.m2 == pytest.approx(float((weights * (values - 43 / 8) ** 2).sum()), rel=1e-12)
    assert select(in_blocks(np.empty(0), None, 1), lambda t: [1.0]) is None
    joined, joined_weights = concatenated(in_blocks(values, None, 2))
    assert joined.tolist() == values.tolist() and joined_weights is None
