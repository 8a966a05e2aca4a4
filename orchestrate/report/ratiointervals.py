"""One run each: an effect's ratio judged by the two runs' own 95 % intervals (``compare.json``'s ``interval``).

Stage: report. Repeats give an effect its min–max; a pair run once has only each figure's interval from its run
alone (``aggregates/intervals.py``: batch means, order statistics). Two independent runs' relative errors add in
quadrature (the delta method), so a ratio r = b / a has the interval r · (1 ± √(ε_a² + ε_b²)), and is within noise
where that holds 1.0. It cannot see what changed between the runs (a host that drifted): repeats can.
"""

from __future__ import annotations

import math
from typing import Any

from orchestrate.report.aggregates.intervals import relative_half_width
from orchestrate.report.schema.summary import Summary

STEADY = "steady_"
"""``formats.summary_numbers``' prefix of the figures inside the steady-state window."""


def precisions(summary: Summary) -> dict[str, float | None]:
    """The effect metrics' relative half widths (``intervals.relative_half_width``): the whole run's, and the
    steady window's as ``steady_<key>``; a metric without an interval is absent."""
    out: dict[str, float | None] = {}
    blocks: list[tuple[str, Any, float | None, Any, Any]] = [("", summary.intervals, summary.throughput.decode_tok_s, summary.latency_ms.ttft,
               summary.latency_ms.tpot)]
    steady = summary.steady_state
    if steady is not None and steady.found:
        blocks.append((STEADY, steady.intervals, steady.decode_tok_s, steady.ttft_ms, steady.tpot_ms))
    for prefix, found, decode, ttft, tpot in blocks:
        if found is None:
            continue
        out[prefix + "decode_tok_s"] = relative_half_width(decode, found.decode_tok_s)
        out[prefix + "ttft_p50_ms"] = relative_half_width(ttft.p50 if ttft else None,
                                                          found.ttft_ms.p50 if found.ttft_ms else None)
        out[prefix + "tpot_p50_ms"] = relative_half_width(tpot.p50 if tpot else None,
                                                          found.tpot_ms.p50 if found.tpot_ms else None)
    return out


def ratio_intervals(ratios: dict[str, float | None], a: dict[str, float | None],
                     b: dict[str, float | None]) -> dict[str, list[float]]:
    """A ratio b / a's 95 % interval from the two runs' own: r · (1 ± √(ε_a² + ε_b²)) with ε each figure's relative
    half width (the delta method: two independent runs' errors add in quadrature)."""
    out = {}
    for key, ratio in ratios.items():
        if ratio is not None and a.get(key) is not None and b.get(key) is not None:
            half = math.hypot(a[key] or 0.0, b[key] or 0.0)
            out[key] = [max(0.0, ratio * (1 - half)), ratio * (1 + half)]  # a ratio of rates: never below 0
    return out
