"""orchestrate/report/aggregates/pacing_figures.py: the ``arrivals`` and ``stages`` blocks from records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from locustfiles.metrics import stamp_schedule as stamp
from locustfiles.records import RequestRecord
from orchestrate.report.aggregates import pacing_figures
from orchestrate.report.aggregates.recordsfile import read_records

T0 = 1_000_000.0


def rec(index: int, send: float, status: str = "ok", e2e: float | None = 500.0, ttft: float | None = 100.0,
        scheduled: float | None = None, tpot: float | None = 20.0, chunks: int = 5) -> dict[str, Any]:
    record = RequestRecord(request_id=f"r{index}", prompt_index=index, worker="local", send_ts=send, status=status,
                           error_class="http_500" if status == "error" else None, ttft_ms=ttft, e2e_ms=e2e,
                           tpot_ms=tpot, tokens_per_chunk=1.0, n_chunks=chunks if ttft is not None else 0,
                           chunk_offsets_ms=[ttft + 100.0 * k for k in range(chunks)] if ttft is not None else [],
                           output_tokens=chunks, output_tokens_source="usage", prompt_tokens=10)
    stamp(record, scheduled)
    return vars(record)


def arrivals_info(n: int, rate: float, start: float = T0, end: float | None = None, users: int = 2) -> dict[str, Any]:
    return {"arrival": "constant", "rate": rate, "burstiness": None, "late_ms": 10.0, "users": users, "seed": 0,
            "scheduled": n, "start_ts": start, "end_ts": end, "prompt_indices": list(range(n)),
            "offsets_s": [k / rate for k in range(n)], "handed_out": n}


def stages_info(starts: list[float], end: float | None) -> dict[str, Any]:
    return {"stages": [{"duration_s": 2.0, "users": 1, "spawn_rate": 1.0},
                       {"duration_s": 2.0, "users": 3, "spawn_rate": 3.0},
                       {"duration_s": 2.0, "users": 2, "spawn_rate": 2.0}],
            "start_ts": T0, "stage_starts": starts, "end_ts": end, "ended_by": "stages"}


def test_a_lost_workers_requests_are_not_unsent() -> None:
    records = pd.DataFrame([rec(0, T0, scheduled=T0)])
    arr = pacing_figures.summarize_arrivals(records, arrivals_info(3, 10.0, end=T0 + 5), lost={2})
    assert (arr.sent, arr.unsent, arr.unsent_overdue) == (1, 1, 1)


def test_requests_cancelled_by_a_ramp_down_end_there() -> None:
    """Stage 2 (3 users) → stage 3 (2 users): Locust stops a user at once; its request has no end of its own."""
    cancelled = [rec(k, T0 + 3.9, status="cancelled", e2e=None, ttft=None) for k in range(3)]
    kept = [rec(3 + k, T0 + 4.2 + 0.5 * j) for j in range(2) for k in range(2)]
    stages = pacing_figures.summarize_stages(pd.DataFrame(cancelled + kept),
                                         stages_info([T0, T0 + 2.05, T0 + 4.1], T0 + 6.2))
    assert [s.requests for s in stages] == [0, 3, 4] and stages[1].cancelled == 3
    assert stages[1].peak_in_flight == 3 and stages[2].peak_in_flight == 2


def test_the_columnar_frame_gives_the_same_blocks(tmp_path: Path) -> None:
    """``tokenswarm report`` reads records columnar (``orchestrate.report.aggregates.recordsfile``): stages and
    arrivals as from lists."""
    one = [rec(k, T0 + 0.5 * k, scheduled=T0 + 0.5 * k) for k in range(4)]
    three = [rec(4 + k, T0 + 2.1 + 0.3 * k, status="error" if k == 2 else "ok", ttft=150.0, chunks=3 + k % 4)
             for k in range(9)]
    cancelled = [rec(20, T0 + 3.9, status="cancelled", e2e=None, ttft=None)]
    rows = one + three + cancelled
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    info = stages_info([T0, T0 + 2.05, T0 + 4.1], T0 + 6.2)
    lists, columnar = pd.DataFrame(rows), read_records(path)
    assert pacing_figures.summarize_stages(columnar, info) == pacing_figures.summarize_stages(lists, info)
    arrivals = arrivals_info(4, 2.0, end=T0 + 5)
    assert pacing_figures.summarize_arrivals(columnar, arrivals) == pacing_figures.summarize_arrivals(lists, arrivals)
