"""95 % intervals of one run's figures (``intervals``, ``steady_state.intervals``): how far a figure may be from the
truth, from this run alone (``aggregates/intervals.py`` names the method of each).

Stage: report.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A 95 % interval; a side is None when the run had too few values to bound it."""

    low: float | None = None
    """The lower bound."""
    high: float | None = None
    """The upper bound."""


@dataclass(frozen=True)
class PercentileIntervals:
    """Order-statistic intervals of a metric's percentiles (distribution-free)."""

    p50: Interval | None = None
    """Of the median."""
    p90: Interval | None = None
    """Of the 90th percentile."""
    p99: Interval | None = None
    """Of the 99th percentile (None sides below a few hundred values)."""


@dataclass(frozen=True)
class LatencyIntervals:
    """``intervals``: the headline latencies' percentiles over every completed request, 95 %."""

    ttft_ms: PercentileIntervals | None = None
    """TTFT, ms."""
    tpot_ms: PercentileIntervals | None = None
    """TPOT, ms."""
    e2e_ms: PercentileIntervals | None = None
    """E2E, ms."""


@dataclass(frozen=True)
class SteadyIntervals:
    """``steady_state.intervals``: the window's rates by batch means, its latencies by order statistics, 95 %."""

    batches: int = 0
    """Equal slices of the window; each one's rate is one value of the batch means."""
    decode_tok_s: Interval | None = None
    """Decode tok/s."""
    prefill_tok_s: Interval | None = None
    """Prefill tok/s."""
    requests_per_s: Interval | None = None
    """Completed requests per second."""
    ttft_ms: PercentileIntervals | None = None
    """TTFT of the window's completed requests, ms."""
    tpot_ms: PercentileIntervals | None = None
    """TPOT of the window's completed requests, ms."""
