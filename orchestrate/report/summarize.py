"""A variant's aggregates (pandas over the run's files): the headline ones here, and the percentile and
weighting helpers every other aggregate of ``report/`` is built on (``goodput``, ``loadreport``, ``turns``,
``uisteps``, ``hostreport``, ``accounting``: one topic each). Aggregates live in ``report/`` and nowhere else.

Stage: records → report. Aggregates over chunk offsets (ITL, tokens per second) never hold one Python
list per record: a million records pool ~64 million gaps, handled a few million at a time. Headline
numbers come from ``requests.jsonl`` (exact floats); ``locust_crosscheck`` is derived from Locust's own
stats files alone and never feeds them, and neither do the server's own counters from ``metrics.jsonl``
(``server_metrics``): they are a second, independent count of the same tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from locustfiles.records import CANCELLED, ERROR, METRIC, NO_CONTENT, OK, REQUEST_NAME, REQUEST_TYPE
from orchestrate.report.aggregates.blockstats import Blocks, concatenated, fits, select
from orchestrate.report.aggregates.chunkcolumn import COLUMN, chunk_offsets, within_row_diffs
from orchestrate.report.aggregates.recordsfile import read_records as load_records  # noqa: F401 (the name callers use)
from orchestrate.results import SERVER_COUNTERS, read_json

PERCENTILES = (50, 90, 99)
_METRIC = "metric:"


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
    return weighted_stats(df[column].dropna().to_numpy()) if column in df else None


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


def _tokens_per_chunk(tpc: np.ndarray) -> np.ndarray:
    """``tokens_per_chunk`` as a weight: 1 where unknown or 0."""
    return np.where(np.isnan(tpc) | (tpc == 0), 1.0, tpc)


def chunk_tokens(df: pd.DataFrame) -> np.ndarray:
    """Per row, the tokens each of its chunks carried."""
    return _tokens_per_chunk(numeric_column(df, "tokens_per_chunk").to_numpy(dtype=float))


def gap_blocks(df: pd.DataFrame, weights: np.ndarray | None = None) -> tuple[Blocks, int]:
    """The inter-chunk gaps of ``df``'s rows (``itl_gaps_ms`` of each) in blocks, each gap weighted by
    its row's ``weights`` (None: 1 each), and how many there are. In row order while they fit in
    memory; past that in the order the rows' offsets lie in the buffer (read faster, and the order of
    pooled gaps changes no percentile)."""
    offsets = chunk_offsets(df)
    count = int(np.maximum(offsets.counts - 1, 0).sum())
    if not fits(count):
        order = np.argsort(offsets.starts, kind="stable")
        offsets = replace(offsets, starts=offsets.starts[order], counts=offsets.counts[order])
        weights = None if weights is None else weights[order]

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        for rows, flat, counts in offsets.blocks():
            gaps = within_row_diffs(flat, counts)
            yield gaps, None if weights is None else np.repeat(weights[rows], np.maximum(counts - 1, 0))
    return blocks, count


def itl_stats(ok: pd.DataFrame) -> dict[str, float] | None:
    """Pooled inter-chunk gaps, each weighted by its request's tokens per chunk."""
    return pooled_stats(*gap_blocks(ok, chunk_tokens(ok)))


def per_second(count: float, duration_s: float) -> float | None:
    """A count over the measured window (``duration_s``): every throughput and goodput rate; None for no window."""
    return count / duration_s if duration_s > 0 else None


def _sum(df: pd.DataFrame, column: str) -> int | None:
    if column not in df or df[column].isna().all():
        return None
    return int(df[column].fillna(0).sum())


_COMPLETED_FIELDS = frozenset({"prompt_index", "ttft_ms", "tpot_ms", "e2e_ms", COLUMN, "n_chunks", "tokens_per_chunk",
                               "prompt_tokens", "cached_tokens", "prefill_tokens", "output_tokens",
                               "output_tokens_source", "prompt_ms", "predicted_ms", "draft_tokens", "draft_accepted"})
"""What the headline block reads of the completed records (a copy of only these: a long run's frame is large)."""


def summarize_records(df: pd.DataFrame) -> dict[str, Any]:
    """The headline block of ``summary.json`` from the per-request records."""
    if df.empty:
        return {"requests": {"sent": 0, "completed": 0, "errors": 0, "cancelled": 0, "no_content": 0,
                             "errors_by_class": {}},
                "duration_s": 0.0, "tokens": {"prompt": 0, "cached": 0, "output": 0},
                "throughput": {"prefill_tok_s": None, "decode_tok_s": None, "requests_per_s": None},
                "latency_ms": {}, "server_timings": None, "speculative": None, "completed_prompts": []}
    ok = df.loc[df["status"] == OK, [c for c in df if c in _COMPLETED_FIELDS]]
    errors = df.loc[df["status"] == ERROR, ["error_class"]]
    duration = float(request_ends(df).max() - df["send_ts"].min())
    tokens = {"prompt": _sum(ok, "prompt_tokens") or 0, "cached": _sum(ok, "cached_tokens") or 0,
              "output": _sum(ok, "output_tokens") or 0}
    per_s = (lambda n: per_second(n, duration))
    chunks = _sum(ok, "n_chunks")
    summary: dict[str, Any] = {
        "requests": {"sent": int(len(df)), "completed": int(len(ok)), "errors": int(len(errors)),
                     "cancelled": int((df["status"] == CANCELLED).sum()),
                     "no_content": int(numeric_column(ok, "ttft_ms").isna().sum()),
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
        "completed_prompts": sorted({int(i) for i in numeric_column(ok, "prompt_index").dropna()}),
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


def _arrivals(records: pd.DataFrame, t0: float = 0.0, rows: np.ndarray | None = None
              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every chunk's arrival (wall clock, s after ``t0``; NaN for a record without ``send_ts``) and its
    row's ``tokens_per_chunk`` (NaN where none), a block at a time; only the chunks of ``rows`` if given."""
    base = numeric_column(records, "send_ts").to_numpy(dtype=float) - t0
    tpc = numeric_column(records, "tokens_per_chunk").to_numpy(dtype=float)
    offsets = chunk_offsets(records)
    if rows is not None:
        offsets = replace(offsets, counts=np.where(rows, offsets.counts, 0))
    for block, flat, counts in offsets.blocks():
        yield np.repeat(base[block], counts) + flat / 1000, np.repeat(tpc[block], counts)


def output_tokens_per_second(records: pd.DataFrame) -> pd.Series:
    """Output tokens received in each whole second since the first send (from chunk arrivals); a
    chunk of a record without ``tokens_per_chunk`` (failed, cancelled) is left out."""
    if records.empty or COLUMN not in records:
        return pd.Series(dtype=float)
    send = numeric_column(records, "send_ts")
    counted = (send.notna() & numeric_column(records, "tokens_per_chunk").notna()).to_numpy()
    lows, sums, seen = [], [], []
    for arrival, tpc in _arrivals(records, send.min(), counted):
        if np.isnan(arrival).any():  # a null among a record's offsets
            arrival, tpc = arrival[~np.isnan(arrival)], tpc[~np.isnan(arrival)]
        second = np.floor(arrival).astype(np.int64)
        if second.size:
            lows.append(int(second.min()))
            sums.append(np.bincount(second - lows[-1], weights=tpc))
            seen.append(np.bincount(second - lows[-1]))
    if not lows:
        return pd.Series(dtype=float)
    low = min(lows)
    total = np.zeros(max(lo + s.size for lo, s in zip(lows, sums)) - low)
    count = np.zeros(total.size, dtype=np.int64)
    for lo, s, n in zip(lows, sums, seen):
        total[lo - low:lo - low + s.size] += s
        count[lo - low:lo - low + n.size] += n
    return pd.Series(total[count > 0], index=np.flatnonzero(count) + low)


def tokens_received(records: pd.DataFrame, windows: list[tuple[float, float]]) -> list[float]:
    """Tokens in the chunks that arrived (wall clock) within each [start, end), over every record: a
    failed or cancelled request's chunks arrived too, and one of unknown size counts 1 token."""
    sums = np.zeros(len(windows))
    for arrival, tpc in _arrivals(records):
        tokens = _tokens_per_chunk(tpc)
        for i, (start, end) in enumerate(windows):
            sums[i] += tokens[(arrival >= start) & (arrival < end)].sum()
    return sums.tolist()


def peak_in_flight(starts: np.ndarray, ends: np.ndarray, lo: float = -np.inf, hi: float = np.inf) -> int:
    """The most requests in flight at once within [lo, hi) (a request is in flight over [send, end));
    at equal times an end comes before a start."""
    keep = (starts < hi) & (ends > lo)
    if not keep.any():
        return 0
    events = np.concatenate([np.maximum(starts[keep], lo), np.minimum(ends[keep], hi)])
    steps = np.concatenate([np.ones(keep.sum()), -np.ones(keep.sum())])
    order = np.lexsort((steps, events))
    return int(np.cumsum(steps[order]).max())


SATURATION_LAG_P99_MS = 5.0
"""Loop lag p99 above this: the client's own delay may add this much to TTFT/ITL (a quarter of a
20 ms token gap; calibration shows chunk timing errors grow past it once a worker is busy). An idle
worker's p99 is well under 1 ms."""
SATURATION_CPU_PCT = 90.0
"""A load generator process this close to a full core cannot keep up with its streams."""


def summarize_client(reports: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The load generators' self-check: the worst process's loop lag, the busiest one's CPU.

    ``saturated``: the client's own work made it late (the part of the lag it spent running, p99,
    passes the threshold) or a process used nearly a core: add workers. ``host_busy``: late as much,
    but waiting for a core that other processes held (a busy host): more workers would not help.
    Either way the timings are inflated by about the lag.
    """
    if not reports:
        return None
    lag = max((r["loop_lag_ms"] for r in reports), key=lambda lag: lag["p99"])
    own_p99 = max(r["loop_lag_ms"].get("own_p99", r["loop_lag_ms"]["p99"]) for r in reports)
    cpu = max((r["cpu_pct"] or 0.0 for r in reports), default=0.0)
    saturated = own_p99 > SATURATION_LAG_P99_MS or cpu >= SATURATION_CPU_PCT
    return {"loop_lag_ms": {"p50": lag["p50"], "p99": lag["p99"], "max": lag["max"], "own_p99": own_p99},
            "cpu_pct": cpu, "workers": len(reports), "saturated": saturated,
            "host_busy": not saturated and lag["p99"] > SATURATION_LAG_P99_MS}


def locust_csv_counts(stats_csv: Path) -> dict[str, int] | None:
    """The chat row's request and failure counts in Locust's ``_stats.csv`` (None without the file)."""
    try:
        table = pd.read_csv(stats_csv)
    except (OSError, ValueError):
        return None
    chat = table[(table["Type"] == REQUEST_TYPE) & (table["Name"] == REQUEST_NAME)]
    if chat.empty:
        return {"requests": 0, "failures": 0}
    return {"requests": int(chat["Request Count"].iloc[0]), "failures": int(chat["Failure Count"].iloc[0])}


def locust_crosscheck(stats_json: Path, stats_csv: Path | None = None) -> dict[str, Any] | None:
    """Requests, failures and token totals from Locust's ``--json-file`` output alone (prompt
    tokens ride on the TTFT rows, and on the NO_CONTENT rows of replies without content)."""
    rows = read_json(stats_json)
    if rows is None:
        return None
    by_key = {(r["method"], r["name"]): r for r in rows}
    chat = by_key.get((REQUEST_TYPE, REQUEST_NAME))
    if chat is None:
        return {"requests": 0, "failures": 0, "no_content": 0, "prompt_tokens": 0, "output_tokens": 0,
                "duration_s": None, "prefill_tok_s": None, "decode_tok_s": None}
    ttft, no_content = by_key.get((METRIC, "TTFT"), {}), by_key.get((METRIC, NO_CONTENT), {})
    start = min(r["start_time"] for r in rows)
    end = max(r["last_request_timestamp"] or start for r in rows)
    duration = end - start
    prompt = int(ttft.get("total_content_length", 0)) + int(no_content.get("total_content_length", 0))
    output = int(chat["total_content_length"])
    return {"requests": int(chat["num_requests"]), "failures": int(chat["num_failures"]),
            "no_content": int(no_content.get("num_requests", 0)),
            "prompt_tokens": prompt, "output_tokens": output, "duration_s": duration,
            "prefill_tok_s": prompt / duration if duration > 0 else None,
            "decode_tok_s": output / duration if duration > 0 else None,
            "csv": locust_csv_counts(stats_csv) if stats_csv is not None else None}


def crosscheck_agrees(summary: dict[str, Any], check: dict[str, Any] | None) -> bool | None:
    """Locust's counts equal the records' (requests, failures, replies without content, token totals)."""
    if check is None:
        return None
    req = summary["requests"]
    return (check["requests"] == req["sent"] - req["cancelled"] and check["failures"] == req["errors"]
            and check.get("no_content", 0) == req.get("no_content", 0)
            and check.get("csv") in (None, {"requests": check["requests"], "failures": check["failures"]})
            and check["prompt_tokens"] == summary["tokens"]["prompt"]
            and check["output_tokens"] == summary["tokens"]["output"])


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


def request_ends(df: pd.DataFrame) -> pd.Series:
    """Each request's end, wall clock: its send time plus its E2E (a request without one ends at its send)."""
    return df["send_ts"] + df["e2e_ms"].fillna(0) / 1000.0


def numeric_column(df: pd.DataFrame, column: str) -> pd.Series:
    """``df[column]`` as numbers (unparsable → NaN), or all NaN when the column is absent: records and
    samples written by older or other versions lack the newer fields."""
    return pd.to_numeric(df[column], errors="coerce") if column in df else pd.Series(np.nan, index=df.index)


def _peak(df: pd.DataFrame, column: str) -> int | None:
    values = numeric_column(df, column).dropna()
    return int(values.max()) if not values.empty else None


def _source(df: pd.DataFrame, column: str) -> str | None:
    """The most frequent source of a value (they do not change within a run)."""
    values = df[column].dropna() if column in df else pd.Series(dtype=object)
    return str(values.mode().iloc[0]) if not values.empty else None


def summarize_metrics(path: Path) -> dict[str, Any]:
    """Peaks of memory and first→last deltas of llama.cpp's counters from ``metrics.jsonl``.

    ``server_counters`` is None when no sample carried ``/metrics`` values (``metrics_unavailable``
    says why). ``server_prefill_tok_s``/``server_decode_tok_s`` are Σ tokens / Σ seconds the server
    counted, summed over slots: a per-slot speed, not the aggregate. The decode one equals
    ``server_timings``'s (Σ predicted_n / Σ predicted_ms); the prefill one does not: in the embedded
    build ``prompt_seconds_total`` grows less than Σ ``timings.prompt_ms`` (0.72 s vs 3.73 s for the
    same 10,146 tokens at 32 users; 4.5 vs 5.4 ms for one lone request), so it reads faster.
    """
    df = load_metrics(path)
    memory = {"peak_bytes": _peak(df, "server_memory_bytes"), "source": _source(df, "server_memory_source"),
              "gpu_peak_bytes": _peak(df, "gpu_memory_used_bytes"), "gpu_source": _source(df, "gpu_memory_source"),
              "gpu_total_bytes": _peak(df, "gpu_memory_total_bytes")}
    out: dict[str, Any] = {"samples": int(len(df)), "memory": memory, "server_counters": None,
                           "server_prefill_tok_s": None, "server_decode_tok_s": None, "window_s": None,
                           "requests_processing_max": _peak(df, _METRIC + "requests_processing"),
                           "requests_deferred_max": _peak(df, _METRIC + "requests_deferred"),
                           "metrics_unavailable": None}
    metric_columns = [c for c in df if c.startswith(_METRIC)]
    scraped = df.dropna(subset=metric_columns, how="all") if metric_columns else df.iloc[0:0]
    if scraped.empty:
        errors = df["metrics_error"].dropna() if "metrics_error" in df else pd.Series(dtype=object)
        out["metrics_unavailable"] = str(errors.iloc[-1]) if not errors.empty else ("no_samples" if df.empty else None)
        return out
    counters: dict[str, float | int | None] = {}
    for key, name in SERVER_COUNTERS.items():
        value = counter_increase(scraped[_METRIC + name]) if _METRIC + name in scraped else None
        counters[key] = value if value is None or key.endswith("_seconds") else int(round(value))
    out["server_counters"] = counters
    out["window_s"] = float(scraped["t"].iloc[-1] - scraped["t"].iloc[0])
    out["server_prefill_tok_s"] = _rate(counters["prompt_tokens"], counters["prompt_seconds"])
    out["server_decode_tok_s"] = _rate(counters["predicted_tokens"], counters["predicted_seconds"])
    return out


def _rate(tokens: float | None, seconds: float | None) -> float | None:
    return float(tokens / seconds) if tokens is not None and seconds else None


def metrics_timeline(path: Path) -> pd.DataFrame:
    """Per sample: the server's prefill/decode tok/s over the interval that ends there (counter deltas /
    wall seconds: the aggregate over slots), requests processing/deferred, and memory in bytes.

    llama.cpp adds a request's prompt tokens when its prefill ends but its generated tokens only when
    the request ends, so decode tok/s here lags and bunches up at request ends.
    """
    df = load_metrics(path)
    out = pd.DataFrame({"elapsed_s": numeric_column(df, "elapsed_s")})
    for key, name in (("prefill_tok_s", "prompt_tokens_total"), ("decode_tok_s", "tokens_predicted_total")):
        counter = numeric_column(df, _METRIC + name).dropna()
        seconds = numeric_column(df, "t")[counter.index].diff()
        out[key] = (counter.diff() / seconds).where(counter.diff() >= 0)
    for column in (_METRIC + "requests_processing", _METRIC + "requests_deferred",
                   "server_memory_bytes", "gpu_memory_used_bytes"):
        out[column.removeprefix(_METRIC)] = numeric_column(df, column)
    return out


def server_metrics(metrics: dict[str, Any], records: pd.DataFrame) -> dict[str, Any]:
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
    counters = metrics.get("server_counters")
    out: dict[str, Any] = {"available": counters is not None, "unavailable_reason": metrics.get("metrics_unavailable"),
                           "samples": metrics.get("samples", 0), "window_s": metrics.get("window_s"),
                           "counters": counters, "prefill_tok_s": metrics.get("server_prefill_tok_s"),
                           "decode_tok_s": metrics.get("server_decode_tok_s"),
                           "requests_processing_max": metrics.get("requests_processing_max"),
                           "requests_deferred_max": metrics.get("requests_deferred_max"),
                           "vs_records": None, "agrees_with_records": None, "within_tolerance": None}
    if counters is None or records.empty:
        return out
    http = pd.to_numeric(records.get("http_status", pd.Series(np.nan, index=records.index)), errors="coerce")
    incomplete = records[(records["status"] != OK) & ~(http >= 400)]
    comparisons: dict[str, dict[str, int | None]] = {}
    for key, counter, bound in (("output_tokens", "predicted_tokens", "requested_max_tokens"),
                                ("prefill_tokens", "prompt_tokens", "expected_prompt_tokens"),
                                ("cached_tokens", "cached_tokens", "expected_prompt_tokens")):
        if counters.get(counter) is None:
            continue
        client = _sum(records, key) or 0
        tolerance = _incomplete_bound(incomplete, key, bound)
        comparisons[key] = {"server": counters[counter], "records": client, "diff": counters[counter] - client,
                            "tolerance": tolerance}
    out["vs_records"] = comparisons
    out["agrees_with_records"] = all(c["diff"] == 0 for c in comparisons.values())
    out["within_tolerance"] = (None if any(c["tolerance"] is None for c in comparisons.values()) else
                               all(abs(c["diff"] or 0) <= (c["tolerance"] or 0) for c in comparisons.values()))
    return out


def _incomplete_bound(incomplete: pd.DataFrame, column: str, bound: str) -> int | None:
    """Σ over incomplete requests of the most tokens each can add to one side; None if unknowable."""
    if incomplete.empty:
        return 0
    limit = numeric_column(incomplete, bound)
    if limit.isna().any():
        return None
    counted = numeric_column(incomplete, column).fillna(0)
    return int(np.maximum(limit, counted).sum())
