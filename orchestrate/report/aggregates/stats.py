"""The percentile and column helpers every aggregate of the report stage is built on.

Stage: report. ``weighted_stats`` gives exact nearest-rank percentiles of values (a weight repeats a
value), ``pooled_stats`` the same of values read in blocks (``blockstats``); ``as_stats`` is the one place
their dict becomes the schema's ``Stats`` (``value_stats``: both at once), which a block holds;
``numeric_column``, ``column_sum`` and ``per_second`` read a column of records or samples and turn a count
into a rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.blockstats import Blocks, concatenated, fits, select
from orchestrate.report.schema.common import Stats

PERCENTILES = (50, 90, 99)


def weighted_stats(values: np.ndarray, weights: np.ndarray | None = None) -> dict[str, float] | None:
    """p50/p90/p99/mean (and min/max) of exact values; weights repeat a value (tokens per chunk)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return None
    if weights is None:
        weights = np.ones_like(values)
    order = np.argsort(values, kind="stable")
    v, w = values[order], np.asarray(weights, dtype=float)[order]
    cum = np.cumsum(w)
    out = {f"p{p}": float(v[min(np.searchsorted(cum, p / 100 * cum[-1], side="left"), v.size - 1)])
           for p in PERCENTILES}
    out["mean"] = float(np.average(v, weights=w))
    out["min"], out["max"] = float(v[0]), float(v[-1])
    return out


def as_stats(found: dict[str, float] | None) -> Stats | None:
    """``weighted_stats``' (or ``pooled_stats``') dict as the schema's ``Stats``; None stays None."""
    return None if found is None else Stats(**found)


def value_stats(values: np.ndarray, weights: np.ndarray | None = None) -> Stats | None:
    """``weighted_stats`` of the values as the schema's ``Stats`` (None for no values)."""
    return as_stats(weighted_stats(values, weights))


def pooled_stats(blocks: Blocks, count: int) -> dict[str, float] | None:
    """``weighted_stats`` of the ``count`` values ``blocks`` yields: the same exact nearest-rank
    percentiles, without sorting them all at once when there are millions (the mean is then summed
    block by block, so its last digit may differ from one sum over all)."""
    if fits(count):
        return weighted_stats(*concatenated(blocks))
    found = select(blocks, lambda total: [p / 100 * total.weight for p in PERCENTILES])
    if found is None:
        return None
    total, values = found
    return {**{f"p{p}": v for p, v in zip(PERCENTILES, values)}, "mean": total.mean, "min": total.min,
            "max": total.max}


def numeric_column(df: pd.DataFrame, column: str) -> pd.Series:
    """``df[column]`` as numbers (unparsable → NaN), or all NaN when the column is absent: records and
    samples written by older or other versions lack the newer fields."""
    return pd.to_numeric(df[column], errors="coerce") if column in df else pd.Series(np.nan, index=df.index)


def column_sum(df: pd.DataFrame, column: str) -> int | None:
    """Σ of a column (missing as 0); None when the column is absent or all missing."""
    if column not in df or df[column].isna().all():
        return None
    return int(df[column].fillna(0).sum())


def per_second(count: float, duration_s: float) -> float | None:
    """A count over the measured window (``duration_s``): every throughput and goodput rate; None for no window."""
    return count / duration_s if duration_s > 0 else None
