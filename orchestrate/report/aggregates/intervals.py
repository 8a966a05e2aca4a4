"""95 % intervals from one run: percentiles by order statistics, rates by batch means over the steady window.

Stage: records → report. Methods (``docs/metrics.md``):

- **A percentile** (p50, p90, p99 of TTFT, TPOT, E2E): the distribution-free interval between two order statistics.
  With n values, the count below the true q-quantile is Binomial(n, q); ranks l and u around its 2.5 % and
  97.5 % quantiles make [x₍ₗ₎, x₍ᵤ₎] cover the true percentile in about 95 % of runs (the pair nearest 95 % by the
  binomial's exact coverage), whatever the distribution. Exact binomial up to ``EXACT_UP_TO`` values, the normal
  approximation above. A bound whose rank
  falls outside 1..n is None: too few requests to bound that side (p99 needs a few hundred).
- **A rate** (decode and prefill tok/s, req/s; over the steady window, or the whole run for the headline):
  neighbouring requests share the server, so they are not independent and an i.i.d. bootstrap would be too
  narrow. The window is cut into ``BATCHES`` equal slices; the rate of each is one value, and the interval is
  their mean ± t₀.₉₇₅,ₖ₋₁ · s/√k.
- **A mean** (TTFT, TPOT, E2E) and **the ITL's percentiles**: batch means over the requests in send order, cut
  into ``BATCHES`` batches; each batch's mean (or pooled ITL percentile) is one value, and the interval is the
  run's figure ± t₀.₉₇₅,ₖ₋₁ · s/√k (an ITL's gaps within one request are far from independent, so its
  percentiles cannot take the order-statistic interval).
- **A share** (goodput's SLO attainment): the same batch means, widened to at least the Wilson score interval of
  the count (which assumes independence): a run whose batches all passed is still only as sure as its count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.chunks import itl_stats
from orchestrate.report.schema.intervals import Interval, PercentileIntervals

CONFIDENCE = 0.95
Z = 1.959963984540054
"""The standard normal's 97.5 % quantile."""
EXACT_UP_TO = 2000
MIN_COVERAGE = 0.94
"""A narrower pair of ranks is taken only when it still covers at least this."""
BATCHES = 10
MIN_PER_BATCH = 2
"""A mean's batch needs at least this many requests (so ``BATCHES`` × this in all)."""
ITL_PER_BATCH = 5000
"""An ITL batch's pooled percentiles come from at most this many of its requests, evenly spaced: a million
requests' 68 million gaps are not read ten times more. The spread between batches then also holds that
sampling's, which can only widen the interval."""
T_975 = {4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160,
         14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093}
"""Student's t, 97.5 % quantile, by degrees of freedom (batches - 1)."""


def _binomial_cdf(n: int, q: float) -> Callable[[int], float]:
    """k → P(Binomial(n, q) <= k): exact up to ``EXACT_UP_TO``, the normal approximation (continuity-corrected)
    above."""
    if n > EXACT_UP_TO:
        mean, sd = n * q, math.sqrt(n * q * (1 - q))
        return lambda k: 0.5 * math.erfc(-((k + 0.5 - mean) / sd) / math.sqrt(2))
    log_q, log_r, top = math.log(q), math.log1p(-q), math.lgamma(n + 1)
    cum = np.cumsum([math.exp(top - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q + (n - k) * log_r)
                     for k in range(n + 1)])
    return lambda k: 0.0 if k < 0 else 1.0 if k >= n else float(cum[k])


def _binomial_quantile(cdf: Callable[[int], float], n: int, p: float) -> int:
    """The smallest k with cdf(k) >= p (bisection)."""
    low, high = 0, n
    while low < high:
        mid = (low + high) // 2
        if cdf(mid) >= p - 1e-12:
            high = mid
        else:
            low = mid + 1
    return low


def order_statistic_ranks(n: int, q: float) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the 95 % interval of the q-quantile of n values; None where outside 1..n.

    The equal-tailed ranks (l = the 2.5 % quantile of Binomial(n, q), u = its 97.5 % quantile + 1) cover at least
    95 %, by up to a few points more where the binomial's steps are coarse (a p99). Bounded on both sides, of them
    and the ranks one step inside, the pair whose exact coverage P(l <= B <= u - 1) is nearest 95 % (and at least
    ``MIN_COVERAGE``) is taken, so the interval is as wide as 95 % needs, not wider."""
    if n < 1:
        return None, None
    cdf = _binomial_cdf(n, q)
    low = _binomial_quantile(cdf, n, (1 - CONFIDENCE) / 2)
    high = _binomial_quantile(cdf, n, 1 - (1 - CONFIDENCE) / 2) + 1
    if 1 <= low and high <= n:  # bounded on both sides: the pair nearest 95 %, never below 94 %
        def covers(pair: tuple[int, int]) -> float:
            return cdf(pair[1] - 1) - cdf(pair[0] - 1)
        pairs = [(lo, hi) for lo in (low, low + 1) for hi in (high, high - 1) if lo < hi]
        low, high = min((p for p in pairs if covers(p) >= MIN_COVERAGE), key=lambda p: abs(covers(p) - CONFIDENCE))
    return (low if low >= 1 else None), (high if high <= n else None)


def relative_half_width(value: float | None, interval: Interval | None) -> float | None:
    """max(high − value, value − low) ÷ |value|: how far the truth may be from the figure, as a share of it; None
    without a figure, an interval bounded on both sides, or for 0."""
    if value is None or interval is None or interval.low is None or interval.high is None or value == 0:
        return None
    return max(interval.high - value, value - interval.low) / abs(value)


def percentile_interval(values: np.ndarray, q: float) -> Interval | None:
    """The order-statistic 95 % interval of the q-quantile of ``values``; None without values."""
    values = np.sort(np.asarray(values, dtype=float))
    if values.size == 0:
        return None
    low, high = order_statistic_ranks(int(values.size), q)
    return Interval(low=None if low is None else float(values[low - 1]),
                    high=None if high is None else float(values[high - 1]))


def percentile_intervals(values: np.ndarray) -> PercentileIntervals | None:
    """p50, p90 and p99 intervals of one metric (order statistics) and its mean's (batch means); None without
    values. ``values`` in send order: the mean's batches are neighbours."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    return PercentileIntervals(p50=percentile_interval(values, 0.50), p90=percentile_interval(values, 0.90),
                               p99=percentile_interval(values, 0.99), mean=mean_interval(values))


def around(figure: float, per_batch: Sequence[float], floor: float | None = 0.0) -> Interval | None:
    """``figure`` ± t · s/√k of k batch values; None for too few batches. Not below ``floor`` (a rate, a time)."""
    k = len(per_batch)
    if k - 1 not in T_975:
        return None
    half = T_975[k - 1] * float(np.std(np.asarray(per_batch, dtype=float), ddof=1)) / math.sqrt(k)
    return Interval(low=figure - half if floor is None else max(floor, figure - half), high=figure + half)


def _batches(n: int) -> list[np.ndarray]:
    """``BATCHES`` runs of neighbouring positions 0..n-1 (sizes differ by at most 1); none below
    ``MIN_PER_BATCH`` each."""
    return [] if n < BATCHES * MIN_PER_BATCH else np.array_split(np.arange(n), BATCHES)


def mean_interval(values: np.ndarray) -> Interval | None:
    """The mean of ``values`` (in send order) ± batch means; None below ``BATCHES`` × ``MIN_PER_BATCH``."""
    values = np.asarray(values, dtype=float)
    parts = _batches(values.size)
    return around(float(values.mean()), [float(values[part].mean()) for part in parts]) if parts else None


def share_interval(passed: np.ndarray) -> Interval | None:
    """A share of requests (in send order) that passed: batch means, widened to the Wilson score interval of the
    count; None without requests."""
    passed = np.asarray(passed, dtype=float)
    n = passed.size
    if n == 0:
        return None
    share = float(passed.mean())
    centre = (share + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(share * (1 - share) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    low, high = centre - half, centre + half
    parts = _batches(n)
    batched = around(share, [float(passed[part].mean()) for part in parts]) if parts else None
    if batched is not None and batched.low is not None and batched.high is not None:
        low, high = min(low, batched.low), max(high, batched.high)
    return Interval(low=max(0.0, low), high=min(1.0, high))


def itl_intervals(records: pd.DataFrame, order: np.ndarray, pooled: dict[str, float] | None) -> PercentileIntervals | None:
    """The ITL's p50/p90/p99 and mean: the run's pooled figure ± batch means of each batch's pooled figure.
    ``order``: the positions of the completed requests in send order, cut into ``BATCHES`` batches (each read
    through a mask: no copy of the frame); None without gaps or batches."""
    parts = _batches(order.size)
    if pooled is None or not parts:
        return None
    found = []
    for part in parts:
        rows = np.zeros(len(records), dtype=bool)
        rows[order[part][::max(1, -(-part.size // ITL_PER_BATCH))]] = True
        found.append(itl_stats(records, rows))
    if any(stats is None for stats in found):
        return None
    return PercentileIntervals(**{key: around(pooled[key], [stats[key] for stats in found if stats])
                                  for key in ("p50", "p90", "p99", "mean")})


def batch_means(per_batch: Sequence[float]) -> Interval | None:
    """mean ± t · s/√k of k batch rates (k in ``T_975``' range + 1), not below 0; None for too few batches."""
    return around(float(np.mean(per_batch)), per_batch) if len(per_batch) else None


def slices(start: float, end: float, k: int = BATCHES) -> list[tuple[float, float]]:
    """``k`` equal windows covering [start, end)."""
    edges = np.linspace(start, end, k + 1)
    return [(float(a), float(b)) for a, b in zip(edges, edges[1:])]
