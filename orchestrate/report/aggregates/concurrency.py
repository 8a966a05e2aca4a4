"""Requests in flight: when each one ended, and the most in flight at once.

Stage: report. A request is in flight from its send to its end (send + E2E): the summary's duration
ends at the last end; a ramp stage's ``peak_in_flight`` and vLLM's ``max_concurrent_requests`` are the
most in flight at once; the steady-state window is where ``in_flight`` stays near the users.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.stats import numeric_column


def request_ends(df: pd.DataFrame) -> pd.Series:
    """Each request's end, wall clock: its send time plus its E2E (a request without one ends at its send;
    the columns read as numbers, as records of older versions may lack or mistype them)."""
    return numeric_column(df, "send_ts") + numeric_column(df, "e2e_ms").fillna(0) / 1000.0


def in_flight(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every start and end in time order, and the requests in flight just after each (a request is in
    flight over [start, end); at equal times an end comes before a start). A start that is NaN (a record
    without a send time) leaves its request out."""
    keep = ~np.isnan(starts)
    events = np.concatenate([starts[keep], np.maximum(ends[keep], starts[keep])])
    steps = np.concatenate([np.ones(keep.sum()), -np.ones(keep.sum())])
    order = np.lexsort((steps, events))
    return events[order], np.cumsum(steps[order])


def peak_in_flight(starts: np.ndarray, ends: np.ndarray, lo: float = -np.inf, hi: float = np.inf) -> int:
    """The most requests in flight at once within [lo, hi) (a request is in flight over [send, end));
    at equal times an end comes before a start."""
    keep = (starts < hi) & (ends > lo)
    if not keep.any():
        return 0
    return int(in_flight(np.maximum(starts[keep], lo), np.minimum(ends[keep], hi))[1].max())
