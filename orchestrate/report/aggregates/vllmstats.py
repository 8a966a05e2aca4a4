"""vLLM's own estimators, for ``vllm_bench.json`` only (``report/vllm_format.py`` writes that file).

Stage: report. The numbers are what vLLM would print for the same per-request values:
``mean``/``median``/``std`` (numpy, population std) and ``pXX`` (``np.percentile``,
linear interpolation) over completed requests; ``summary.json``'s percentiles are nearest-rank
instead, so a median here can lie between two measured values where ``p50`` there is one of them.
An empty list gives 0.0, as vLLM's ``np.mean(x or 0)`` does. Percentiles: p50, p90, p95 and p99
(vLLM's ``--metric-percentiles 50,90,95,99``) for ttft, tpot, itl and e2el (its
``--percentile-metrics ttft,tpot,itl,e2el``), as the flat keys vLLM writes (``p99_ttft_ms``) and also
as ``percentiles_ttft_ms``: ``[[99.0, ms], ...]``, the shape of vLLM's ``BenchmarkMetrics``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.blockstats import Blocks, concatenated, fits, select
from orchestrate.report.aggregates.stats import numeric_column

PERCENTILES = (50, 90, 95, 99)
"""vLLM's ``--metric-percentiles 50,90,95,99``."""


def _lerp(a: float, b: float, t: float) -> float:
    """numpy's linear interpolation, operation for operation (``np.percentile``'s default)."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def vllm_stats(name: str, blocks: Blocks, count: int) -> dict[str, Any]:
    """vLLM's ``mean_/median_/std_/pXX_<name>_ms`` (0.0 for no values) and ``percentiles_<name>_ms``:
    numpy's ``mean``, ``median``, ``std`` and ``percentile`` of the ``count`` values ``blocks`` yields.
    Past ``SORT_AT_MOST`` values (the pooled ITL gaps of a long run) the order statistics they need
    are selected exactly from the blocks and interpolated as numpy does; the mean and std are then
    summed block by block."""
    if fits(count):
        values = concatenated(blocks)[0]
        arr = values if values.size else np.zeros(1)
        mean, median, std = float(np.mean(arr)), float(np.median(arr)), float(np.std(arr))
        pairs = [[float(p), float(np.percentile(arr, p))] for p in PERCENTILES]
    else:  # the k-th smallest value is the first whose count of values at or below it reaches k + 1
        virtual = [(count - 1) * (p / 100) for p in PERCENTILES]  # np.percentile's index, then its neighbour
        ranks = sorted({count // 2 - 1, count // 2} | {min(math.floor(v) + k, count - 1)
                                                         for v in virtual for k in (0, 1)})
        found = select(blocks, lambda _: [r + 1.0 for r in ranks])
        assert found is not None  # count > 0 values
        total, at = found[0], dict(zip(ranks, found[1]))
        mean, std = total.mean, math.sqrt(total.m2 / count)
        median = at[count // 2] if count % 2 else (at[count // 2 - 1] + at[count // 2]) / 2
        pairs = [[float(p), at[count - 1] if v >= count - 1 else _lerp(at[math.floor(v)], at[math.floor(v) + 1],
                                                                         v - math.floor(v))]
                 for p, v in zip(PERCENTILES, virtual)]
    out: dict[str, Any] = {f"mean_{name}_ms": mean, f"median_{name}_ms": median, f"std_{name}_ms": std}
    out.update({f"p{int(p)}_{name}_ms": value for p, value in pairs})
    out[f"percentiles_{name}_ms"] = pairs
    return out


def column_blocks(df: pd.DataFrame, column: str) -> tuple[Blocks, int]:
    """A column's values (missing ones left out) as one block, and how many there are."""
    values = numeric_column(df, column).dropna().to_numpy(dtype=float)
    return (lambda: [(values, None)]), values.size
