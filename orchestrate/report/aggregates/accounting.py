"""What became of every prompt asked for, the connections they used, and when the server went down.

Stage: records → report. The headline's counts must add up to the prompts asked:
completed + errors (by class, ``stream_cut`` among them) + cancelled + unsent. A prompt that was
never sent (the server was lost, the time cap came, the web UI stopped) is no error of the server,
so it is counted apart. When the server died or was lost, the moment it happened is the earliest
sign of it: the first stream it cut after the last one it completed, or the watch's first
unanswered probe (``liveness.py``), whichever came first.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from locustfiles.records import OK
from locustfiles.sse import CLOSED_BEFORE_RESPONSE
from orchestrate.report.aggregates.concurrency import request_ends
from orchestrate.report.aggregates.stats import numeric_column, value_stats
from orchestrate.report.schema.headline import Connections, LastMetricsSample, ServerDown

CUT = "stream_cut"


def unsent(planned: int | None, sent: int) -> int:
    """Requests planned and never sent (0 when the plan is unknown); ``sent`` counts those a lost
    worker took too (they went out, their records did not come back)."""
    return max(0, planned - sent) if planned else 0


def connections(records: pd.DataFrame) -> Connections | None:
    """Connections the users opened (each before its request's clock started) and how many of them were
    reopened mid-run after the server closed the last one; None for records that do not say."""
    if records.empty or "connect_ms" not in records:
        return None
    connect = numeric_column(records, "connect_ms").dropna()
    return Connections(opened=int(connect.size), reconnects=int(numeric_column(records, "reconnect").fillna(0).sum()),
                       connect_ms=value_stats(connect.to_numpy()),
                       refused_retries=int(numeric_column(records, "refused_retries").fillna(0).sum()))


def down_at(records: pd.DataFrame, watched_at: float | None) -> float | None:
    """Wall-clock time the server went down: its first cut stream after its last completed one, or
    ``watched_at`` (the liveness watch's own moment) if that is earlier; None if neither is known."""
    candidates = [watched_at] if watched_at is not None else []
    if not records.empty and "error_class" in records:
        ends = request_ends(records)
        ok_ends = ends[records["status"] == OK]
        last_ok = ok_ends.max() if not ok_ends.empty else float("-inf")
        cuts = ends[(records["error_class"] == CUT) & (ends > last_ok)]
        if not cuts.empty:
            candidates.append(float(cuts.min()))
    return min(candidates) if candidates else None


def server_down(records: pd.DataFrame, watched_at: float | None,
                samples: list[dict[str, Any]]) -> ServerDown | None:
    """``summary.json``'s ``server_down``: when (wall clock, and seconds after the first send), the
    streams it cut and the requests it dropped before answering, and the last metrics sample before it."""
    at = down_at(records, watched_at)
    if at is None:
        return None
    first_send = float(records["send_ts"].min()) if not records.empty else at
    before = [s for s in samples if s.get("t", float("inf")) <= at]
    last = before[-1] if before else None
    classes = records["error_class"] if "error_class" in records else pd.Series(dtype=object)
    cut, dropped = int((classes == CUT).sum()), int(classes.isin(CLOSED_BEFORE_RESPONSE).sum())
    return ServerDown(at_ts=at, at_s=round(at - first_send, 3), streams_cut=cut, dropped_before_response=dropped,
                      last_metrics_sample=None if last is None else LastMetricsSample(
                          t=last.get("t"), elapsed_s=last.get("elapsed_s"),
                          server_memory_bytes=last.get("server_memory_bytes"),
                          gpu_memory_used_bytes=last.get("gpu_memory_used_bytes"), metrics=_values(last.get("metrics"))))


def _values(metrics: dict[str, Any] | None) -> dict[str, float | None] | None:
    """A sample's ``/metrics`` values as the numbers they are (a counter written as ``64`` is ``64.0``)."""
    return None if metrics is None else {k: None if v is None else float(v) for k, v in metrics.items()}
