"""The client side's own view: the load generators' self-check (loop lag, CPU), and Locust's own
count of the requests and tokens, checked against the records'.

Stage: report. ``locust_crosscheck`` is derived from Locust's stats files alone and never feeds the
headline (``headline``); ``crosscheck_agrees`` says whether the two counts are the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from locustfiles.endpoints import PATHS
from locustfiles.records import INPUT, METRIC, NO_CONTENT, REQUEST_TYPE
from orchestrate.report.schema.headline import Requests, Tokens
from orchestrate.report.schema.machine import Client, LocustCrosscheck, LocustCsv, LoopLag
from orchestrate.results import read_json

SATURATION_LAG_P99_MS = 5.0
"""Loop lag p99 above this: the client's own delay may add this much to TTFT/ITL (a quarter of a
20 ms token gap; calibration shows chunk timing errors grow past it once a worker is busy). An idle
worker's p99 is well under 1 ms."""
SATURATION_CPU_PCT = 90.0
"""A load generator process this close to a full core cannot keep up with its streams."""


def summarize_client(reports: list[dict[str, Any]] | None) -> Client | None:
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
    return Client(loop_lag_ms=LoopLag(p50=lag["p50"], p99=lag["p99"], max=lag["max"], own_p99=own_p99),
                  cpu_pct=cpu, workers=len(reports), saturated=saturated,
                  host_busy=not saturated and lag["p99"] > SATURATION_LAG_P99_MS)


def locust_csv_counts(stats_csv: Path) -> LocustCsv | None:
    """The requests row's request and failure counts in Locust's ``_stats.csv`` (None without the file)."""
    try:
        table = pd.read_csv(stats_csv)
    except (OSError, ValueError):
        return None
    chat = table[(table["Type"] == REQUEST_TYPE) & table["Name"].isin(PATHS)]
    if chat.empty:
        return LocustCsv(requests=0, failures=0)
    return LocustCsv(requests=int(chat["Request Count"].iloc[0]), failures=int(chat["Failure Count"].iloc[0]))


def locust_crosscheck(stats_json: Path, stats_csv: Path | None = None) -> LocustCrosscheck | None:
    """Requests, failures and token totals from Locust's ``--json-file`` output alone (prompt
    tokens ride on the TTFT rows, on the NO_CONTENT rows of replies without content, on the INPUT rows of
    one-body replies)."""
    rows = read_json(stats_json)
    if rows is None:
        return None
    by_key = {(r["method"], r["name"]): r for r in rows}
    chat = next((r for (method, name), r in by_key.items() if method == REQUEST_TYPE and name in PATHS), None)
    if chat is None:
        return LocustCrosscheck()
    ttft, no_content = by_key.get((METRIC, "TTFT"), {}), by_key.get((METRIC, NO_CONTENT), {})
    inputs = by_key.get((METRIC, INPUT), {})
    start = min(r["start_time"] for r in rows)
    end = max(r["last_request_timestamp"] or start for r in rows)
    duration = end - start
    prompt = sum(int(row.get("total_content_length", 0)) for row in (ttft, no_content, inputs))
    output = int(chat["total_content_length"])
    return LocustCrosscheck(requests=int(chat["num_requests"]), failures=int(chat["num_failures"]),
                            no_content=int(no_content.get("num_requests", 0)),
                            prompt_tokens=prompt, output_tokens=output, duration_s=duration,
                            prefill_tok_s=prompt / duration if duration > 0 else None,
                            decode_tok_s=output / duration if duration > 0 else None,
                            csv=locust_csv_counts(stats_csv) if stats_csv is not None else None)


def crosscheck_agrees(requests: Requests, tokens: Tokens, check: LocustCrosscheck | None) -> bool | None:
    """Locust's counts equal the records' (requests, failures, replies without content, token totals)."""
    if check is None:
        return None
    return (check.requests == requests.sent - requests.cancelled and check.failures == requests.errors
            and check.no_content == requests.no_content
            and check.csv in (None, LocustCsv(requests=check.requests, failures=check.failures))
            and check.prompt_tokens == tokens.prompt and check.output_tokens == tokens.output)
