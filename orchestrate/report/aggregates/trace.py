"""A trace replay's figures (``summary.json``'s ``trace``), from ``trace.json``, the schedule and the records.

Stage: records → report. ``trace.json`` holds what was replayed and how it was transformed (written before the
load); the schedule is ``arrivals.json``'s; everything else comes from ``requests.jsonl``, so ``tokenswarm report``
rebuilds the block without a server.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.stats import numeric_column, value_stats
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.trace import ArrivalsPerSecond, InputBucket, Trace, TraceConditions
from orchestrate.results import VariantPaths, read_json

BUCKET_EDGES = (64, 256, 1024, 4096, 16384, 65536)
"""Prompt lengths (tokens) where a bucket of ``by_input_length`` ends: each four times the one before."""


def trace_block(paths: VariantPaths, records: pd.DataFrame, schedule: dict[str, Any] | None) -> Trace | None:
    """The ``trace`` block; None for a run that replayed no trace."""
    data = read_json(paths.trace_json)
    if not isinstance(data, dict):
        return None
    conditions = from_json(TraceConditions, data, str(paths.trace_json))
    return Trace(conditions=conditions,
                 ideal_prefix_reuse=conditions.blocks_seen_before / conditions.blocks if conditions.blocks else None,
                 ideal_cached_share=conditions.reusable_tokens / conditions.input_tokens
                 if conditions.blocks and conditions.input_tokens else None,
                 server_cached_share=server_cached_share(records), arrivals_per_s=per_second(records, schedule or {}),
                 by_input_length=by_input_length(records))


def server_cached_share(records: pd.DataFrame) -> float | None:
    """Cached ÷ prompt tokens of the completed requests whose server said how many were cached."""
    if records.empty:
        return None
    ok = records[(records["status"] == "ok") & numeric_column(records, "cached_tokens").notna()]
    prompt = numeric_column(ok, "prompt_tokens").sum()
    return float(numeric_column(ok, "cached_tokens").sum() / prompt) if len(ok) and prompt > 0 else None


def per_second(records: pd.DataFrame, schedule: dict[str, Any]) -> ArrivalsPerSecond:
    """Requests due and sent in each second after the schedule's start."""
    start, offsets = schedule.get("start_ts"), schedule.get("offsets_s") or []
    if start is None or not offsets:
        return ArrivalsPerSecond()
    due = np.floor(np.asarray(offsets, dtype=float)).astype(int)
    sent_at = numeric_column(records, "send_ts")[numeric_column(records, "scheduled_ts").notna()] - float(start) \
        if not records.empty else pd.Series(dtype=float)
    sent = np.floor(sent_at.dropna().clip(lower=0).to_numpy()).astype(int)
    length = int(max(due.max(initial=0), sent.max(initial=0))) + 1
    return ArrivalsPerSecond(scheduled=tuple(int(n) for n in np.bincount(due, minlength=length)),
                             sent=tuple(int(n) for n in np.bincount(sent, minlength=length)))


def by_input_length(records: pd.DataFrame) -> tuple[InputBucket, ...]:
    """Latency percentiles of the completed requests by prompt length (as measured before the load), in buckets
    four times longer each; empty buckets left out."""
    if records.empty:
        return ()
    length = numeric_column(records, "expected_prompt_tokens").fillna(numeric_column(records, "prompt_tokens"))
    out = []
    for low, high in zip((0, *BUCKET_EDGES), (*BUCKET_EDGES, None)):
        inside = (length >= low) & ((length < high) if high is not None else True)
        mine = records[inside]
        if mine.empty:
            continue
        ok = mine[mine["status"] == "ok"]
        out.append(InputBucket(low=low, high=high, requests=int(len(mine)), completed=int(len(ok)),
                               **{key: value_stats(numeric_column(ok, key).dropna().to_numpy())
                                  for key in ("ttft_ms", "tpot_ms", "e2e_ms")}))
    return tuple(out)
