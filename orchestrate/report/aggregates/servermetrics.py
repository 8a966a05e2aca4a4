"""The server's own view from ``metrics.jsonl``: memory peaks, its counters' growth, their rates per
interval, and how its token counts compare to the records'.

Stage: report. The server's counters are a second, independent count of the tokens the records
carry; they never feed the headline (``headline``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from locustfiles.records import OK
from orchestrate.report.aggregates.stats import column_sum, numeric_column
from orchestrate.report.schema.server import Comparison, Memory, ServerCounters, ServerMetrics, VsRecords
from orchestrate.results import SERVER_COUNTERS

_METRIC = "metric:"


@dataclass(frozen=True)
class Metrics:
    """What ``metrics.jsonl`` says over a run (``summarize_metrics``): ``summary.json``'s ``memory``, and the
    server's own counters that ``server_metrics`` holds against the records."""

    samples: int = 0
    """Samples read."""
    memory: Memory = field(default_factory=Memory)
    """The memory peaks (``summary.json``'s ``memory``)."""
    server_counters: ServerCounters | None = None
    """Each counter's growth first → last; None when no sample carried ``/metrics`` values."""
    server_prefill_tok_s: float | None = None
    """Σ prompt tokens ÷ Σ prefill seconds the server counted (per slot)."""
    server_decode_tok_s: float | None = None
    """Σ generated tokens ÷ Σ generation seconds the server counted (per slot)."""
    window_s: float | None = None
    """First to last sample with ``/metrics`` values, s."""
    requests_processing_max: int | None = None
    """The ``requests_processing`` gauge's peak."""
    requests_deferred_max: int | None = None
    """The ``requests_deferred`` gauge's peak."""
    metrics_unavailable: str | None = None
    """Why no sample carried ``/metrics`` values (the last scrape error, ``no_samples``); None when some did."""


def jsonl_rows(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file; a torn last line (a killed writer) is skipped, not fatal."""
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
    return rows


def load_metrics(path: Path) -> pd.DataFrame:
    """``metrics.jsonl`` as a frame, one row per sample; each ``/metrics`` value is a ``metric:NAME`` column."""
    rows = []
    for sample in jsonl_rows(path):
        metrics = sample.pop("metrics", None) or {}
        sample.update({_METRIC + name: value for name, value in metrics.items()})
        rows.append(sample)
    return pd.DataFrame(rows)


def counter_increase(values: pd.Series) -> float | None:
    """How much a counter grew from its first to its last sample (Prometheus ``increase``).

    A drop means the server restarted and its counters began again at 0: the new value is the
    growth of that interval. None when the counter was never seen.
    """
    v = pd.to_numeric(values, errors="coerce").dropna()
    if v.empty:
        return None
    steps = v.diff().iloc[1:]
    return float(steps.where(steps >= 0, v.iloc[1:]).sum())


def _peak(df: pd.DataFrame, column: str) -> int | None:
    values = numeric_column(df, column).dropna()
    return int(values.max()) if not values.empty else None


def _source(df: pd.DataFrame, column: str) -> str | None:
    """The most frequent source of a value (they do not change within a run)."""
    values = df[column].dropna() if column in df else pd.Series(dtype=object)
    return str(values.mode().iloc[0]) if not values.empty else None


def summarize_metrics(df: pd.DataFrame) -> Metrics:
    """Peaks of memory and first→last deltas of llama.cpp's counters from ``metrics.jsonl`` (``load_metrics``).

    ``server_counters`` is None when no sample carried ``/metrics`` values (``metrics_unavailable``
    says why). ``server_prefill_tok_s``/``server_decode_tok_s`` are Σ tokens / Σ seconds the server
    counted, summed over slots: a per-slot speed, not the aggregate. The decode one equals
    ``server_timings``'s (Σ predicted_n / Σ predicted_ms); the prefill one does not: in the embedded
    build ``prompt_seconds_total`` grows less than Σ ``timings.prompt_ms`` (0.72 s vs 3.73 s for the
    same 10,146 tokens at 32 users; 4.5 vs 5.4 ms for one lone request), so it reads faster.
    """
    memory = Memory(peak_bytes=_peak(df, "server_memory_bytes"), source=_source(df, "server_memory_source"),
                    gpu_peak_bytes=_peak(df, "gpu_memory_used_bytes"), gpu_source=_source(df, "gpu_memory_source"),
                    gpu_total_bytes=_peak(df, "gpu_memory_total_bytes"))
    out = Metrics(samples=int(len(df)), memory=memory,
                  requests_processing_max=_peak(df, _METRIC + "requests_processing"),
                  requests_deferred_max=_peak(df, _METRIC + "requests_deferred"))
    metric_columns = [c for c in df if c.startswith(_METRIC)]
    scraped = df.dropna(subset=metric_columns, how="all") if metric_columns else df.iloc[0:0]
    if scraped.empty:
        errors = df["metrics_error"].dropna() if "metrics_error" in df else pd.Series(dtype=object)
        return replace(out, metrics_unavailable=str(errors.iloc[-1]) if not errors.empty
                       else ("no_samples" if df.empty else None))
    counters: dict[str, Any] = {}
    for key, name in SERVER_COUNTERS.items():
        value = counter_increase(scraped[_METRIC + name]) if _METRIC + name in scraped else None
        counters[key] = value if value is None or key.endswith("_seconds") else int(round(value))
    return replace(out, server_counters=ServerCounters(**counters),
                   window_s=float(scraped["t"].iloc[-1] - scraped["t"].iloc[0]),
                   server_prefill_tok_s=_rate(counters["prompt_tokens"], counters["prompt_seconds"]),
                   server_decode_tok_s=_rate(counters["predicted_tokens"], counters["predicted_seconds"]))


def _rate(tokens: float | None, seconds: float | None) -> float | None:
    return float(tokens / seconds) if tokens is not None and seconds else None


def metrics_timeline(path: Path) -> pd.DataFrame:
    """Per sample: its wall clock ``t``, the server's prefill/decode tok/s over the interval that ends there
    (counter deltas / wall seconds: the aggregate over slots), requests processing/deferred, memory in
    bytes and the machine's power in watts; from any server's ``/metrics``: running, waiting, KV use and its
    generated tokens/s over the interval (``server_generation_tok_s``).

    llama.cpp adds a request's prompt tokens when its prefill ends but its generated tokens only when
    the request ends, so decode tok/s here lags and bunches up at request ends.
    """
    df = load_metrics(path)
    out = pd.DataFrame({"t": numeric_column(df, "t"), "elapsed_s": numeric_column(df, "elapsed_s")})
    for key, name in (("prefill_tok_s", "prompt_tokens_total"), ("decode_tok_s", "tokens_predicted_total")):
        counter = numeric_column(df, _METRIC + name).dropna()
        seconds = numeric_column(df, "t")[counter.index].diff()
        out[key] = (counter.diff() / seconds).where(counter.diff() >= 0)
    for column in (_METRIC + "requests_processing", _METRIC + "requests_deferred",
                   "server_memory_bytes", "gpu_memory_used_bytes", "power_watts"):
        out[column.removeprefix(_METRIC)] = numeric_column(df, column)
    readings = df["server"] if "server" in df else pd.Series([None] * len(df), index=df.index)
    for key in ("running", "waiting", "kv_usage"):  # any server's, in the report's names (load/prometheus.py)
        out[f"server_{key}"] = [r["series"].get(key) if isinstance(r, dict) else None for r in readings]
    generated = pd.to_numeric(pd.Series([r["series"].get("generation_tokens") if isinstance(r, dict) else None
                                         for r in readings], index=df.index, dtype=object), errors="coerce").dropna()
    step = generated.diff()  # per scrape interval; a drop (a restart) is no rate
    out["server_generation_tok_s"] = (step / numeric_column(df, "t")[generated.index].diff()).where(step >= 0)
    states = df["gpus"] if "gpus" in df else pd.Series([None] * len(df), index=df.index)
    for key, name, pick in (("gpu_util_pct", "util_pct", lambda v: sum(v) / len(v)),
                             ("gpu_temperature_c", "temperature_c", max), ("gpu_sm_clock_mhz", "sm_clock_mhz", min)):
        out[key] = [_across(found, name, pick) for found in states]  # the mean, the hottest, the slowest GPU
    return out


def _across(states: Any, field: str, pick: Any) -> float | None:
    """One sample's ``field`` across its GPUs (``pick``: mean, max or min); None without a reading."""
    values = [float(s[field]) for s in states or () if isinstance(s, dict) and isinstance(s.get(field), (int, float))]
    return pick(values) if values else None


def server_metrics(metrics: Metrics, records: pd.DataFrame) -> ServerMetrics:
    """``summary.json``'s ``server_metrics``: the server's counters and how they compare to the records.

    The server counts every token it processed, also for requests the client saw fail or cancelled,
    so each comparison sums ALL records (None as 0): ``output_tokens`` vs ``tokens_predicted_total``,
    ``prefill_tokens`` (``timings.prompt_n``) vs ``prompt_tokens_total`` (which excludes cached
    tokens) and ``cached_tokens`` vs ``prompt_tokens_cached_total``. A completed request's numbers
    come from the same slot counters on both sides, so they must agree exactly
    (``agrees_with_records``). A request left incomplete (cancelled, timed out, stream cut; not one
    refused with HTTP ≥ 400, which the server never processed) may have been counted by the server
    in full, in part, or not yet at the last sample, while the client has at most a partial count:
    ``tolerance`` is what those can explain (Σ max(requested max_tokens, counted) for output, Σ the
    expected prompt length for prompt tokens), and ``within_tolerance`` is false only when the
    difference is larger (another client on the same server, a restarted server).
    """
    counters = metrics.server_counters
    out = ServerMetrics(available=counters is not None, unavailable_reason=metrics.metrics_unavailable,
                        samples=metrics.samples, window_s=metrics.window_s, counters=counters,
                        busy_prefill_tok_s=metrics.server_prefill_tok_s, busy_decode_tok_s=metrics.server_decode_tok_s,
                        requests_processing_max=metrics.requests_processing_max,
                        requests_deferred_max=metrics.requests_deferred_max)
    if counters is None or records.empty:
        return out
    http = pd.to_numeric(records.get("http_status", pd.Series(np.nan, index=records.index)), errors="coerce")
    incomplete = records[(records["status"] != OK) & ~(http >= 400)]
    comparisons: dict[str, Comparison] = {}
    for key, counter, bound in (("output_tokens", "predicted_tokens", "max_tokens"),
                                ("prefill_tokens", "prompt_tokens", "expected_prompt_tokens"),
                                ("cached_tokens", "cached_tokens", "expected_prompt_tokens")):
        server = getattr(counters, counter)
        if server is None:
            continue
        client = column_sum(records, key) or 0
        comparisons[key] = Comparison(server=server, records=client, diff=server - client,
                                      tolerance=_incomplete_bound(incomplete, key, bound))
    found = comparisons.values()
    return replace(out, vs_records=VsRecords(**comparisons), agrees_with_records=all(c.diff == 0 for c in found),
                   within_tolerance=None if any(c.tolerance is None for c in found) else
                   all(abs(c.diff) <= (c.tolerance or 0) for c in found))


def _incomplete_bound(incomplete: pd.DataFrame, column: str, bound: str) -> int | None:
    """Σ over incomplete requests of the most tokens each can add to one side; None if unknowable."""
    if incomplete.empty:
        return 0
    limit = numeric_column(incomplete, bound)
    if limit.isna().any():
        return None
    counted = numeric_column(incomplete, column).fillna(0)
    return int(np.maximum(limit, counted).sum())
