"""95 % intervals of one run's figures (``intervals``, ``steady_state.intervals``): how far a figure may be from the
truth, from this run alone (``aggregates/intervals.py`` names the method of each).

Stage: report.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import omitted


@dataclass(frozen=True)
class Interval:
    """A 95 % interval; a side is None when the run had too few values to bound it."""

    low: float | None = None
    """The lower bound."""
    high: float | None = None
    """The upper bound."""


@dataclass(frozen=True)
class PercentileIntervals:
    """Order-statistic intervals of a metric's percentiles (distribution-free), batch means of its mean."""

    p50: Interval | None = None
    """Of the median."""
    p90: Interval | None = None
    """Of the 90th percentile."""
    p99: Interval | None = None
    """Of the 99th percentile (None sides below a few hundred values)."""
    mean: Interval | None = omitted()
    """Of the mean (batch means; absent below 20 values)."""


@dataclass(frozen=True)
class Intervals:
    """``intervals`` (the whole run: from the first send to the last reply) and ``steady_state.intervals`` (its
    window), 95 %: rates and means by batch means, percentiles by order statistics (the ITL's by batch means).
    A figure the block has no point value for (the window's E2E and ITL) is absent."""

    batches: int = 0
    """Equal slices of the window (a rate's batches) and of its requests in send order (a mean's, a share's)."""
    decode_tok_s: Interval | None = omitted()
    """Decode tok/s."""
    prefill_tok_s: Interval | None = omitted()
    """Prefill tok/s."""
    requests_per_s: Interval | None = omitted()
    """Completed requests per second."""
    goodput_share: Interval | None = omitted()
    """The share of requests that met the SLO (with an SLO)."""
    ttft_ms: PercentileIntervals | None = omitted()
    """TTFT of the completed requests, ms."""
    tpot_ms: PercentileIntervals | None = omitted()
    """TPOT of the completed requests, ms."""
    e2e_ms: PercentileIntervals | None = omitted()
    """E2E of the completed requests, ms (the whole run)."""
    itl_ms: PercentileIntervals | None = omitted()
    """ITL, ms (the whole run): batch means of each batch's pooled percentiles."""
