"""orchestrate/report/aggregates/servermetrics.py: the server's counters, memory peaks and rates from a
hand-written ``metrics.jsonl``, and how its token counts compare to the records'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.servermetrics import (
    counter_increase,
    load_metrics,
    metrics_timeline,
    server_metrics,
    summarize_metrics,
)
from orchestrate.report.console import server_metrics_line
from orchestrate.report.notes import notes
from orchestrate.report.schema.server import Comparison, Memory, ServerCounters, VsRecords
from orchestrate.report.schema.summary import Summary

GIB = 1024 ** 3
MIB = 1024 ** 2


def sample(t: float, metrics: dict[str, float] | None, memory: int | None = None, gpu: int | None = None,
           error: str | None = None) -> dict[str, Any]:
    return {"t": t, "elapsed_s": t - 1000.0, "server_memory_bytes": memory,
            "server_memory_source": "process_tree" if memory is not None else None,
            "gpu_memory_used_bytes": gpu, "gpu_memory_total_bytes": 128 * GIB if gpu is not None else None,
            "gpu_memory_source": "system" if gpu is not None else None, "metrics": metrics, "metrics_error": error}


def counters(prompt: float, cached: float, prompt_s: float, predicted: float, predicted_s: float, decodes: float,
             processing: float) -> dict[str, float]:
    return {"prompt_tokens_total": prompt, "prompt_tokens_cached_total": cached, "prompt_seconds_total": prompt_s,
            "tokens_predicted_total": predicted, "tokens_predicted_seconds_total": predicted_s,
            "n_decode_total": decodes, "spec_decode_num_draft_tokens_total": 0,
            "spec_decode_num_accepted_tokens_total": 0, "requests_processing": processing,
            "requests_deferred": 0}


def write_metrics(path: Path) -> Path:
    """Before the load (counters already non-zero from an earlier run), two seconds of load, a failed
    scrape, then after: deltas = 1000 prefill, 300 cached, 200 output, 150 decode calls."""
    rows = [sample(1000.0, counters(50, 10, 0.1, 20, 0.2, 15, 0), memory=400 * MIB, gpu=30 * GIB),
            sample(1001.0, counters(650, 110, 0.4, 100, 1.0, 85, 4), memory=900 * MIB, gpu=31 * GIB),
            sample(1002.0, None, memory=950 * MIB, gpu=32 * GIB, error="scrape_failed:ReadTimeout"),
            sample(1003.0, counters(1050, 310, 0.6, 220, 2.2, 165, 0), memory=800 * MIB, gpu=31 * GIB)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"t": 1004.0, "torn')
    return path


def test_summarize_metrics_exact_deltas_peaks_and_sources(tmp_path: Path) -> None:
    summary = summarize_metrics(load_metrics(write_metrics(tmp_path / "metrics.jsonl")))
    assert summary.samples == 4
    assert summary.memory == Memory(peak_bytes=950 * MIB, source="process_tree", gpu_peak_bytes=32 * GIB,
                                    gpu_source="system", gpu_total_bytes=128 * GIB)
    assert summary.server_counters == ServerCounters(prompt_tokens=1000, cached_tokens=300,
                                                     prompt_seconds=pytest.approx(0.5), predicted_tokens=200,
                                                     predicted_seconds=pytest.approx(2.0), decode_calls=150,
                                                     draft_tokens=0, accepted_tokens=0)
    assert summary.window_s == 3.0
    assert summary.server_prefill_tok_s == pytest.approx(2000.0)  # 1000 / 0.5 s
    assert summary.server_decode_tok_s == pytest.approx(100.0)    # 200 / 2.0 s
    assert summary.requests_processing_max == 4 and summary.metrics_unavailable is None


def test_summarize_metrics_of_a_run_without_the_file(tmp_path: Path) -> None:
    summary = summarize_metrics(load_metrics(tmp_path / "missing.jsonl"))
    assert summary.samples == 0 and summary.server_counters is None
    assert summary.memory == Memory(peak_bytes=None, source=None, gpu_peak_bytes=None, gpu_source=None,
                                    gpu_total_bytes=None)
    assert not notes(Summary(server_metrics=server_metrics(summary, pd.DataFrame())))


def test_counter_increase_survives_a_restart() -> None:
    assert counter_increase(pd.Series([10.0, 30.0, 5.0, 25.0])) == 20 + 5 + 20
    assert counter_increase(pd.Series([7.0])) == 0.0
    assert counter_increase(pd.Series([None, None])) is None


def test_metrics_timeline_rates_per_interval(tmp_path: Path) -> None:
    timeline = metrics_timeline(write_metrics(tmp_path / "metrics.jsonl"))
    assert timeline["elapsed_s"].tolist() == [0.0, 1.0, 2.0, 3.0]
    prefill = timeline["prefill_tok_s"].tolist()
    assert pd.isna(prefill[0]) and prefill[1] == 600.0 and pd.isna(prefill[2]) and prefill[3] == 200.0  # 400 / 2 s
    assert timeline["decode_tok_s"].tolist()[3] == 60.0  # 120 tokens / 2 s
    assert timeline["requests_processing"].tolist()[:2] == [0.0, 4.0]
    assert timeline["server_memory_bytes"].max() == 950 * MIB


def records(*rows: RequestRecord) -> pd.DataFrame:
    return pd.DataFrame([json.loads(r.to_json()) for r in rows])


def ok(i: int, prompt: int, cached: int, output: int) -> RequestRecord:
    return RequestRecord(request_id=f"r{i}", prompt_index=i, worker="local", send_ts=1000.0 + i, status=OK,
                         http_status=200, max_tokens=output, expected_prompt_tokens=prompt,
                         prompt_tokens=prompt, cached_tokens=cached, prefill_tokens=prompt - cached,
                         output_tokens=output)


# 3 completed: prefill 600 + 250 + 150 = 1000, cached 0 + 200 + 100 = 300, output 80 + 70 + 50 = 200
COMPLETED = (ok(0, 600, 0, 80), ok(1, 450, 200, 70), ok(2, 250, 100, 50))
REFUSED = RequestRecord(request_id="r3", prompt_index=3, worker="local", send_ts=1003.0, status=ERROR,
                        error_class="http_400:exceed_context_size_error", http_status=400,
                        max_tokens=100, expected_prompt_tokens=5000)


def test_server_counts_agree_exactly_with_completed_records(tmp_path: Path) -> None:
    metrics = summarize_metrics(load_metrics(write_metrics(tmp_path / "metrics.jsonl")))
    block = server_metrics(metrics, records(*COMPLETED, REFUSED))  # a refused request costs the server nothing
    assert block.vs_records == VsRecords(
        output_tokens=Comparison(server=200, records=200, diff=0, tolerance=0),
        prefill_tokens=Comparison(server=1000, records=1000, diff=0, tolerance=0),
        cached_tokens=Comparison(server=300, records=300, diff=0, tolerance=0))
    assert block.agrees_with_records is True and block.within_tolerance is True
    assert block.busy_prefill_tok_s == pytest.approx(2000.0) and block.window_s == 3.0
    assert not [n for n in notes(Summary(server_metrics=block)) if "/metrics" in n]


def test_incomplete_requests_explain_a_difference_up_to_a_bound(tmp_path: Path) -> None:
    metrics = summarize_metrics(load_metrics(write_metrics(tmp_path / "metrics.jsonl")))
    # the client saw 20 of a cancelled request's tokens and no timings; the server generated 30 of them
    cancelled = RequestRecord(request_id="r4", prompt_index=4, worker="local", send_ts=1004.0, status=CANCELLED,
                              error_class="cancelled", http_status=200, max_tokens=64,
                              expected_prompt_tokens=100, output_tokens=20)
    block = server_metrics(metrics, records(*COMPLETED[:2], cancelled))
    assert block.vs_records is not None
    assert block.vs_records.output_tokens == Comparison(server=200, records=170, diff=30, tolerance=64)
    assert block.vs_records.prefill_tokens == Comparison(server=1000, records=850, diff=150, tolerance=100)
    assert block.agrees_with_records is False and block.within_tolerance is False
    assert any("differ from the records by more than" in n for n in notes(Summary(server_metrics=block)))
    cancelled.expected_prompt_tokens = 300  # now the prompt explains it too
    block = server_metrics(metrics, records(*COMPLETED[:2], cancelled))
    assert block.agrees_with_records is False and block.within_tolerance is True
    assert "within what incomplete requests explain" in (server_metrics_line(block) or "")
