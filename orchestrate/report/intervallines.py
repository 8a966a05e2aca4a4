"""``summary.md``'s 95 % intervals of the whole run: each headline figure ± its half width (a percentile's
interval, rarely symmetric, as its two ends); and the line that says whether ``load.until``'s precision held.

Stage: report. The intervals are ``summary.intervals`` (``aggregates/intervals.py`` computes them); this only
writes them for people.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrate.report.formats import fmt_interval, fmt_ms, fmt_num
from orchestrate.report.schema import Summary
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.intervals import Interval, PercentileIntervals
from orchestrate.report.schema.until import Until, UntilTarget

SYMMETRIC = 1e-6
"""An interval whose two sides differ by less than this share of the figure is written ± one half width."""


def fmt_pm(value: float | None, interval: Interval | None, fmt: Callable[[float], str]) -> str:
    """``94.3 ± 3.1`` when the interval is symmetric about the figure, ``94.3 [91.0–97.9]`` when not (a rate
    clamped at 0, a percentile), the figure alone without an interval."""
    if value is None:
        return "–"
    beside = interval_text(value, interval, fmt)
    return f"{fmt(value)} {beside}" if beside else fmt(value)


def interval_text(value: float, interval: Interval | None, fmt: Callable[[float], str]) -> str:
    """What follows a figure: ``± 3.1``, ``[91.0–97.9]`` (``?`` for a side it cannot bound), or "" without one."""
    if interval is None:
        return ""
    if interval.low is not None and interval.high is not None:
        above, below = interval.high - value, value - interval.low
        if abs(above - below) <= SYMMETRIC * max(abs(value), 1.0):
            return f"± {fmt(above)}"
    return fmt_interval(interval, fmt).strip()


def _latency_rows(label: str, stats: Percentiles | None, block: PercentileIntervals | None) -> list[str]:
    if stats is None or block is None:
        return []
    return [f"| {label} {stat} | {fmt_pm(getattr(stats, stat), getattr(block, stat), fmt_ms)} |"
            for stat in ("p50", "p99", "mean")]


def intervals_section(summary: Summary) -> list[str]:
    """The table, with how each interval was found; none without intervals."""
    found = summary.intervals
    if found is None:
        return []
    thr, lat, good = summary.throughput, summary.latency_ms, summary.goodput
    rows = [f"| decode tok/s | {fmt_pm(thr.decode_tok_s, found.decode_tok_s, fmt_num)} |",
            f"| prefill tok/s | {fmt_pm(thr.prefill_tok_s, found.prefill_tok_s, fmt_num)} |",
            f"| req/s | {fmt_pm(thr.requests_per_s, found.requests_per_s, lambda x: fmt_num(x, 2))} |"]
    if good is not None and good.share is not None:
        rows.append(f"| requests meeting the SLO | "
                    f"{fmt_pm(good.share, found.goodput_share, lambda x: f'{100 * x:.1f} %')} |")
    for label, stats, block in (("TTFT", lat.ttft, found.ttft_ms), ("TPOT", lat.tpot, found.tpot_ms),
                                ("ITL", lat.itl, found.itl_ms), ("E2E", lat.e2e, found.e2e_ms)):
        rows += _latency_rows(label, stats, block)
    return ["## 95 % intervals (whole run)", "", "| figure | value |", "|---|---|", *rows, "",
            f"From this run alone: rates by batch means over {found.batches} equal slices of the run, means and the "
            "ITL by batch means over its requests in send order, percentiles by order statistics, the SLO share "
            "by batch means widened to Wilson's interval (docs/metrics.md); `?`: too few requests to bound that "
            "side.", ""]


def _target(target: UntilTarget) -> str:
    reached = "no bounded interval" if target.reached is None else f"±{100 * target.reached:.1f} %"
    when = f", held at {target.held_at_s:.1f} s" if target.held_at_s is not None else ""
    return f"{target.figure} {reached} (asked ±{100 * target.asked:g} %{when})"


def until_line(until: Until | None) -> str | None:
    """``until: stopped at the precision asked (4 checks): ttft_ms.p99 ±4.1 % (asked ±5 %, held at 12.3 s)``, or
    why not; None without targets."""
    if until is None:
        return None
    targets = ", ".join(_target(t) for t in until.targets)
    if until.stopped:
        lead = "stopped at the precision asked" if until.held else \
            "stopped when every target held at a check; the final window, to the stop, differs a little"
        return f"until: {lead} ({until.checks} checks): {targets}"
    return f"until: {until.reason or 'not every target held'}: {targets}"
