"""Every aggregate of a variant, computed here and only here (pandas over the run's files).

Stage: records → report. Imports: stdlib, numpy, pandas, ``locustfiles.records``,
``locustfiles.metrics``. Headline numbers come from ``requests.jsonl`` (exact floats);
``locust_crosscheck`` is derived from Locust's own stats files alone and never feeds them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from locustfiles.metrics import itl_gaps_ms
from locustfiles.records import CANCELLED, ERROR, METRIC, OK, REQUEST_NAME, REQUEST_TYPE

PERCENTILES = (50, 90, 99)


def load_records(path: Path) -> pd.DataFrame:
    """``requests.jsonl`` as a frame; a torn last line (a killed writer) is skipped, not fatal."""
    rows = []
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        pass
    return pd.DataFrame(rows)


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


def _stat(df: pd.DataFrame, column: str) -> dict[str, float] | None:
    if column not in df:
        return None
    return weighted_stats(df[column].dropna().to_numpy())


def itl_stats(ok: pd.DataFrame) -> dict[str, float] | None:
    """Pooled inter-chunk gaps, each weighted by its request's tokens per chunk."""
    gaps, weights = [], []
    for offsets, tpc in zip(ok.get("chunk_offsets_ms", []), ok.get("tokens_per_chunk", [])):
        g = itl_gaps_ms(offsets or [])
        gaps.extend(g)
        weights.extend([tpc if tpc and tpc == tpc else 1.0] * len(g))
    if not gaps:
        return None
    return weighted_stats(np.array(gaps), np.array(weights))


def _sum(df: pd.DataFrame, column: str) -> int | None:
    if column not in df or df[column].isna().all():
        return None
    return int(df[column].fillna(0).sum())


def summarize_records(df: pd.DataFrame) -> dict[str, Any]:
    """The headline block of ``summary.json`` from the per-request records."""
    if df.empty:
        return {"requests": {"sent": 0, "completed": 0, "errors": 0, "cancelled": 0, "errors_by_class": {}},
                "duration_s": 0.0, "tokens": {"prompt": 0, "cached": 0, "output": 0},
                "throughput": {"prefill_tok_s": None, "decode_tok_s": None, "requests_per_s": None},
                "latency_ms": {}, "server_timings": None, "speculative": None}
    ok = df[df["status"] == OK]
    errors = df[df["status"] == ERROR]
    ends = df["send_ts"] + df["e2e_ms"].fillna(0) / 1000.0
    duration = float(ends.max() - df["send_ts"].min())
    tokens = {"prompt": _sum(ok, "prompt_tokens") or 0, "cached": _sum(ok, "cached_tokens") or 0,
              "output": _sum(ok, "output_tokens") or 0}
    per_s = (lambda n: n / duration if duration > 0 else None)
    chunks = _sum(ok, "n_chunks")
    summary: dict[str, Any] = {
        "requests": {"sent": int(len(df)), "completed": int(len(ok)), "errors": int(len(errors)),
                     "cancelled": int((df["status"] == CANCELLED).sum()),
                     "errors_by_class": {str(k): int(v) for k, v in
                                         errors["error_class"].value_counts().sort_index().items()}},
        "duration_s": duration,
        "tokens": tokens,
        "throughput": {"prefill_tok_s": per_s(tokens["prompt"]), "decode_tok_s": per_s(tokens["output"]),
                       "requests_per_s": per_s(len(ok))},
        "latency_ms": {"ttft": _stat(ok, "ttft_ms"), "tpot": _stat(ok, "tpot_ms"), "itl": itl_stats(ok),
                       "e2e": _stat(ok, "e2e_ms")},
        "tokens_per_chunk": tokens["output"] / chunks if chunks else None,
        "output_tokens_source": sorted(ok["output_tokens_source"].dropna().unique().tolist())
        if "output_tokens_source" in ok else [],
        "server_timings": server_timings(ok),
        "speculative": speculative(ok),
    }
    return summary


def server_timings(ok: pd.DataFrame) -> dict[str, float | None] | None:
    """llama.cpp's own view: Σ prompt_n / Σ prompt_ms and Σ predicted_n / Σ predicted_ms.

    These are per-slot speeds (what one request saw), not the aggregate over parallel slots.
    """
    if "prompt_ms" not in ok or ok["prompt_ms"].isna().all():
        return None
    timed = ok.dropna(subset=["prompt_ms", "predicted_ms"])
    prompt_ms, predicted_ms = timed["prompt_ms"].sum(), timed["predicted_ms"].sum()
    return {"prefill_tok_s": float(timed["prefill_tokens"].sum() / prompt_ms * 1000) if prompt_ms else None,
            "decode_tok_s": float(timed["output_tokens"].sum() / predicted_ms * 1000) if predicted_ms else None}


def speculative(ok: pd.DataFrame) -> dict[str, Any] | None:
    """Σ draft_n_accepted / Σ draft_n; None when no request carried draft counts (no drafter)."""
    if "draft_tokens" not in ok or ok["draft_tokens"].isna().all():
        return None
    drafted, accepted = int(ok["draft_tokens"].fillna(0).sum()), int(ok["draft_accepted"].fillna(0).sum())
    per_request = (ok["draft_accepted"] / ok["draft_tokens"]).replace([np.inf], np.nan).dropna()
    return {"draft_tokens": drafted, "accepted_tokens": accepted,
            "acceptance_rate": accepted / drafted if drafted else None,
            "per_request_acceptance": weighted_stats(per_request.to_numpy())}


def output_tokens_per_second(records: pd.DataFrame) -> pd.Series:
    """Output tokens received in each whole second since the first send (from chunk arrivals)."""
    if records.empty or "chunk_offsets_ms" not in records:
        return pd.Series(dtype=float)
    t0 = records["send_ts"].min()
    rows = records[["send_ts", "chunk_offsets_ms", "tokens_per_chunk"]].explode("chunk_offsets_ms").dropna()
    if rows.empty:
        return pd.Series(dtype=float)
    second = (rows["send_ts"] - t0 + rows["chunk_offsets_ms"].astype(float) / 1000).floordiv(1).astype(int)
    return rows["tokens_per_chunk"].astype(float).groupby(second).sum()


def locust_crosscheck(stats_json: Path) -> dict[str, Any] | None:
    """Requests, failures and token totals from Locust's ``--json-file`` output alone."""
    try:
        rows = json.loads(stats_json.read_text())
    except (FileNotFoundError, ValueError):
        return None
    by_key = {(r["method"], r["name"]): r for r in rows}
    chat = by_key.get((REQUEST_TYPE, REQUEST_NAME))
    if chat is None:
        return {"requests": 0, "failures": 0, "prompt_tokens": 0, "output_tokens": 0, "duration_s": None,
                "prefill_tok_s": None, "decode_tok_s": None}
    ttft = by_key.get((METRIC, "TTFT"), {})
    start = min(r["start_time"] for r in rows)
    end = max(r["last_request_timestamp"] or start for r in rows)
    duration = end - start
    prompt, output = int(ttft.get("total_content_length", 0)), int(chat["total_content_length"])
    return {"requests": int(chat["num_requests"]), "failures": int(chat["num_failures"]),
            "prompt_tokens": prompt, "output_tokens": output, "duration_s": duration,
            "prefill_tok_s": prompt / duration if duration > 0 else None,
            "decode_tok_s": output / duration if duration > 0 else None}


def crosscheck_agrees(summary: dict[str, Any], check: dict[str, Any] | None) -> bool | None:
    """Locust's counts equal the records' (requests, failures, token totals)."""
    if check is None:
        return None
    req = summary["requests"]
    return (check["requests"] == req["sent"] - req["cancelled"] and check["failures"] == req["errors"]
            and check["prompt_tokens"] == summary["tokens"]["prompt"]
            and check["output_tokens"] == summary["tokens"]["output"])
