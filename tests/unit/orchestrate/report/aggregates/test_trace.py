"""orchestrate/report/aggregates/trace.py: the trace block from trace.json, the schedule and the records."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from orchestrate.report.aggregates.trace import by_input_length, per_second, server_cached_share, trace_block
from orchestrate.results import VariantPaths
from orchestrate.scenario.trace import TraceConditions


def frame(*rows: dict) -> pd.DataFrame:  # type: ignore[type-arg]
    return pd.DataFrame(list(rows))


def test_cached_share_counts_completed_requests_whose_server_said() -> None:
    records = frame({"status": "ok", "prompt_tokens": 100, "cached_tokens": 40},
                    {"status": "ok", "prompt_tokens": 300, "cached_tokens": 0},
                    {"status": "ok", "prompt_tokens": 500, "cached_tokens": None},
                    {"status": "error", "prompt_tokens": 100, "cached_tokens": 100})
    assert server_cached_share(records) == 40 / 400
    assert server_cached_share(frame({"status": "ok", "prompt_tokens": 10, "cached_tokens": None})) is None


def test_arrivals_per_second_as_due_and_as_sent() -> None:
    records = frame({"send_ts": 100.2, "scheduled_ts": 100.1}, {"send_ts": 101.9, "scheduled_ts": 100.5},
                    {"send_ts": 103.5, "scheduled_ts": None})  # a session's later turn: not on the clock
    block = per_second(records, {"start_ts": 100.0, "offsets_s": [0.1, 0.5, 2.2]})
    assert (block.scheduled, block.sent) == ((2, 0, 1), (1, 1, 0))


def test_latency_by_prompt_length_in_buckets_four_times_longer() -> None:
    records = frame(*({"status": "ok", "expected_prompt_tokens": n, "prompt_tokens": n, "ttft_ms": t, "tpot_ms": 5.0,
                       "e2e_ms": t + 50} for n, t in ((30, 10.0), (40, 12.0), (3000, 400.0), (70000, 9000.0))),
                    {"status": "error", "expected_prompt_tokens": 3500, "prompt_tokens": None, "ttft_ms": None,
                     "tpot_ms": None, "e2e_ms": None})
    buckets = by_input_length(records)
    assert [(b.low, b.high, b.requests, b.completed) for b in buckets] == [
        (0, 64, 2, 2), (1024, 4096, 2, 1), (65536, None, 1, 1)]
    assert buckets[0].ttft_ms is not None and buckets[0].ttft_ms.max == 12.0
    assert buckets[1].e2e_ms is not None and buckets[1].e2e_ms.p50 == 450.0


def test_the_block_reads_trace_json_and_is_absent_without_it(tmp_path: Path) -> None:
    paths = VariantPaths(tmp_path)
    records = frame({"status": "ok", "prompt_tokens": 100, "cached_tokens": 30, "expected_prompt_tokens": 100,
                     "send_ts": 1.0, "scheduled_ts": 1.0, "ttft_ms": 5.0, "tpot_ms": 1.0, "e2e_ms": 9.0})
    assert trace_block(paths, records, None) is None
    paths.trace_json.write_text(json.dumps(asdict(TraceConditions(path="t", format="mooncake", requests=1, blocks=8,
                                                                  blocks_seen_before=2, reusable_tokens=25,
                                                                  input_tokens=100))))
    block = trace_block(paths, records, None)
    assert block is not None and (block.ideal_prefix_reuse, block.ideal_cached_share) == (0.25, 0.25)
    assert block.server_cached_share == 0.3 and block.arrivals_per_s.scheduled == ()
