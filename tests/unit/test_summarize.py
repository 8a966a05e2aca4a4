"""orchestrate/report/summarize.py: every aggregate of a variant, from hand-built records, hand-computed."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates import blockstats, chunkcolumn
from orchestrate.report.summarize import (crosscheck_agrees, itl_stats, load_records, locust_crosscheck,
                                          output_tokens_per_second, peak_in_flight, server_timings, speculative,
                                          summarize_records, tokens_received, weighted_stats)

T0 = 1000.0
CONTEXT_ERROR = "http_400:exceed_context_size_error"


def ok_record(i: int, send_ts: float, chunks: list[float], output: int, e2e: float, prompt: int, cached: int,
              prompt_ms: float, predicted_ms: float, **extra) -> RequestRecord:
    ttft = chunks[0]
    return RequestRecord(
        request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=send_ts, status=OK,
        ttft_ms=ttft, e2e_ms=e2e, tpot_ms=(e2e - ttft) / (output - 1), chunk_offsets_ms=chunks,
        n_chunks=len(chunks), tokens_per_chunk=output / len(chunks), prompt_tokens=prompt, cached_tokens=cached,
        prefill_tokens=prompt - cached, output_tokens=output, output_tokens_source="usage", finish_reason="length",
        prompt_ms=prompt_ms, predicted_ms=predicted_ms, **extra)


def study_records(drafts: list[tuple[int, int]] | None = None) -> list[RequestRecord]:
    """3 completed, 1 error (context too long, after a partial stream), 1 cancelled.

    ===  ======  =================  ===  ====  ======  ======  =========  =========  ============
    #    send    chunks (ms)        out  e2e   prompt  cached  prefill    prompt_ms  predicted_ms
    ===  ======  =================  ===  ====  ======  ======  =========  =========  ============
    r0   +0.0    100 150 250         3    300    50      10      40          20          200
    r1   +0.5    200 260             4    500    35       0      35          10          300
    r2   +1.0    400 500 550 700     4   1000    20       5      15          30          600
    ===  ======  =================  ===  ====  ======  ======  =========  =========  ============

    TTFT = first chunk: 100, 200, 400. TPOT = (e2e − ttft)/(out − 1): 200/2 = 100, 300/3 = 100,
    600/3 = 200. r1 carries 2 tokens per chunk (4 tokens in 2 chunks), as speculative decoding can.
    """
    drafts = drafts or [(None, None)] * 3
    return [
        ok_record(0, T0 + 0.0, [100.0, 150.0, 250.0], 3, 300.0, 50, 10, 20.0, 200.0,
                  draft_tokens=drafts[0][0], draft_accepted=drafts[0][1]),
        ok_record(1, T0 + 0.5, [200.0, 260.0], 4, 500.0, 35, 0, 10.0, 300.0,
                  draft_tokens=drafts[1][0], draft_accepted=drafts[1][1]),
        ok_record(2, T0 + 1.0, [400.0, 500.0, 550.0, 700.0], 4, 1000.0, 20, 5, 30.0, 600.0,
                  draft_tokens=drafts[2][0], draft_accepted=drafts[2][1]),
        # a stream cut by an error after one chunk: its TTFT (550) and tokens must not count
        RequestRecord(request_id="local-3", prompt_index=3, worker="local", send_ts=T0 + 1.2, status=ERROR,
                      error_class=CONTEXT_ERROR, http_status=400, ttft_ms=550.0, e2e_ms=600.0,
                      chunk_offsets_ms=[550.0], n_chunks=1, prompt_tokens=4000, output_tokens=1),
        # cut off by the stop: in the records, not an error, not completed
        RequestRecord(request_id="local-4", prompt_index=4, worker="local", send_ts=T0 + 1.5, status=CANCELLED,
                      error_class="cancelled", ttft_ms=100.0, chunk_offsets_ms=[100.0], n_chunks=1,
                      prompt_tokens=40, output_tokens=7),
    ]


def frame(records: list[RequestRecord]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in records])


@pytest.fixture
def summary() -> dict:
    return summarize_records(frame(study_records()))


# --- weighted_stats: nearest rank -----------------------------------------------------------------

def test_weighted_stats_nearest_rank_one_to_ten():
    # 10 values, weight 1: p is the smallest value whose cumulative weight reaches p% of 10
    stats = weighted_stats(np.array([7, 3, 10, 1, 5, 2, 9, 4, 8, 6], dtype=float))
    assert stats == {"p50": 5.0, "p90": 9.0, "p99": 10.0, "mean": 5.5, "min": 1.0, "max": 10.0}


def test_weighted_stats_weights_repeat_values():
    # 10 (weight 3) and 20 (weight 1): cum = [3, 4]; p50 target 2 → 10; p90 target 3.6 → 20; mean 50/4
    stats = weighted_stats(np.array([20.0, 10.0]), np.array([1.0, 3.0]))
    assert stats == {"p50": 10.0, "p90": 20.0, "p99": 20.0, "mean": 12.5, "min": 10.0, "max": 20.0}


def test_weighted_stats_of_nothing_is_none():
    assert weighted_stats(np.array([])) is None


# --- summarize_records ----------------------------------------------------------------------------

def test_request_counts(summary):
    assert summary["requests"] == {"sent": 5, "completed": 3, "errors": 1, "cancelled": 1, "no_content": 0,
                                   "errors_by_class": {CONTEXT_ERROR: 1}}


def test_completed_prompts_are_the_indices_of_completed_requests_only(summary):
    assert summary["completed_prompts"] == [0, 1, 2]  # r3 failed, r4 was cancelled


def eos_only_record(i: int, send_ts: float, prompt: int) -> RequestRecord:
    """A reply that is only EOS, as Gemma 3 270M gives about 2 % of the time: 1 output token, no chunk."""
    return RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=send_ts, status=OK,
                         ttft_ms=None, e2e_ms=80.0, tpot_ms=None, chunk_offsets_ms=[], n_chunks=0,
                         prompt_tokens=prompt, output_tokens=1, output_tokens_source="usage", finish_reason="stop")


def test_replies_without_content_are_counted_apart():
    summary = summarize_records(frame(study_records() + [eos_only_record(5, T0 + 1.6, 223)]))
    assert summary["requests"]["completed"] == 4 and summary["requests"]["no_content"] == 1
    # its prompt and its one output token count in the totals; TTFT/TPOT stay over the three with content
    assert summary["tokens"]["prompt"] == 105 + 223 and summary["tokens"]["output"] == 11 + 1
    assert summary["latency_ms"]["ttft"]["p50"] == 200.0


def test_errors_by_class_sorted_and_counted():
    records = study_records()
    records.append(RequestRecord(request_id="local-5", prompt_index=5, worker="local", send_ts=T0 + 1.3,
                                 status=ERROR, error_class="connection_reset", e2e_ms=1.0))
    records.append(RequestRecord(request_id="local-6", prompt_index=6, worker="local", send_ts=T0 + 1.4,
                                 status=ERROR, error_class=CONTEXT_ERROR, http_status=400, e2e_ms=1.0))
    by_class = summarize_records(frame(records))["requests"]["errors_by_class"]
    assert list(by_class.items()) == [("connection_reset", 1), (CONTEXT_ERROR, 2)]


def test_duration_first_send_to_last_end(summary):
    # ends: r0 1000.3, r1 1000.8, r2 1002.0, error 1001.8, cancelled (no e2e) 1001.5 → 1002.0 − 1000.0
    assert summary["duration_s"] == pytest.approx(2.0)


def test_tokens_over_completed_only(summary):
    # prompt 50+35+20, cached 10+0+5, output 3+4+4 (the error's 4000/1 and the cancelled 40/7 excluded)
    assert summary["tokens"] == {"prompt": 105, "cached": 15, "output": 11}


def test_throughput(summary):
    thr = summary["throughput"]
    assert thr["prefill_tok_s"] == pytest.approx(105 / 2.0)  # 52.5
    assert thr["decode_tok_s"] == pytest.approx(11 / 2.0)    # 5.5
    assert thr["requests_per_s"] == pytest.approx(3 / 2.0)   # 1.5


def test_ttft_tpot_e2e_percentiles(summary):
    lat = summary["latency_ms"]
    # TTFT [100, 200, 400]: cum [1,2,3]; p50 target 1.5 → 200; p90 2.7 → 400; p99 2.97 → 400
    assert lat["ttft"] == pytest.approx({"p50": 200.0, "p90": 400.0, "p99": 400.0, "mean": 700 / 3,
                                         "min": 100.0, "max": 400.0})
    # TPOT [100, 100, 200]: p50 → 100; p90, p99 → 200; mean 400/3
    assert lat["tpot"] == pytest.approx({"p50": 100.0, "p90": 200.0, "p99": 200.0, "mean": 400 / 3,
                                         "min": 100.0, "max": 200.0})
    # E2E [300, 500, 1000]: p50 → 500; p90, p99 → 1000; mean 600
    assert lat["e2e"] == pytest.approx({"p50": 500.0, "p90": 1000.0, "p99": 1000.0, "mean": 600.0,
                                        "min": 300.0, "max": 1000.0})


def test_itl_pooled_gaps_weighted_by_tokens_per_chunk(summary):
    # gaps: r0 [50, 100] (w 1), r1 [60] (w 2), r2 [100, 50, 150] (w 1)
    # sorted: 50 50 60 100 100 150, weights 1 1 2 1 1 1, cum 1 2 4 5 6 7 (total 7)
    # p50 target 3.5 → 60; p90 6.3 → 150; p99 6.93 → 150; mean (50+100+2·60+100+50+150)/7 = 570/7
    assert summary["latency_ms"]["itl"] == pytest.approx({"p50": 60.0, "p90": 150.0, "p99": 150.0,
                                                          "mean": 570 / 7, "min": 50.0, "max": 150.0})
    # tokens per chunk over completed requests: Σ output / Σ content chunks = 11 / 9
    assert summary["tokens_per_chunk"] == pytest.approx(11 / 9)


def test_itl_of_single_chunk_requests_is_none():
    records = [ok_record(0, T0, [100.0], 2, 300.0, 10, 0, 5.0, 50.0)]
    ok = frame(records)
    assert itl_stats(ok) is None


def test_output_tokens_source(summary):
    assert summary["output_tokens_source"] == ["usage"]


def test_server_timings(summary):
    # prefill: Σ prefill_tokens / Σ prompt_ms = (40+35+15) / (20+10+30) ms = 90/60 ms → 1500 tok/s
    # decode:  Σ output_tokens / Σ predicted_ms = 11 / (200+300+600) ms = 11/1100 ms → 10 tok/s
    assert summary["server_timings"] == pytest.approx({"prefill_tok_s": 1500.0, "decode_tok_s": 10.0})


def test_server_timings_none_without_timings():
    records = study_records()
    for r in records:
        r.prompt_ms = r.predicted_ms = None
    assert server_timings(frame(records)) is None


def test_speculative_none_without_draft_counts(summary):
    assert summary["speculative"] is None


def test_speculative_acceptance_exact():
    # drafted 4+6+0 = 10, accepted 2+6+0 = 8 → 0.8. Per request: 2/4 = 0.5, 6/6 = 1.0, 0/0 dropped
    summary = summarize_records(frame(study_records(drafts=[(4, 2), (6, 6), (0, 0)])))
    spec = summary["speculative"]
    assert spec["draft_tokens"] == 10
    assert spec["accepted_tokens"] == 8
    assert spec["acceptance_rate"] == pytest.approx(0.8)
    # [0.5, 1.0]: cum [1, 2]; p50 target 1 → 0.5; p90 1.8 → 1.0; mean 0.75
    assert spec["per_request_acceptance"] == pytest.approx({"p50": 0.5, "p90": 1.0, "p99": 1.0, "mean": 0.75,
                                                            "min": 0.5, "max": 1.0})


def test_speculative_all_zero_drafts_has_no_rate():
    spec = speculative(frame(study_records(drafts=[(0, 0)] * 3))[lambda df: df["status"] == OK])
    assert spec == {"draft_tokens": 0, "accepted_tokens": 0, "acceptance_rate": None,
                    "per_request_acceptance": None}


def test_empty_frame_summary():
    assert summarize_records(pd.DataFrame()) == {
        "requests": {"sent": 0, "completed": 0, "errors": 0, "cancelled": 0, "no_content": 0, "errors_by_class": {}},
        "duration_s": 0.0, "tokens": {"prompt": 0, "cached": 0, "output": 0},
        "throughput": {"prefill_tok_s": None, "decode_tok_s": None, "requests_per_s": None},
        "latency_ms": {}, "server_timings": None, "speculative": None, "completed_prompts": []}


def test_only_errors():
    records = [RequestRecord(request_id="local-0", prompt_index=0, worker="local", send_ts=T0, status=ERROR,
                             error_class=CONTEXT_ERROR, http_status=400, e2e_ms=4.0)]
    summary = summarize_records(frame(records))
    assert summary["requests"] == {"sent": 1, "completed": 0, "errors": 1, "cancelled": 0, "no_content": 0,
                                   "errors_by_class": {CONTEXT_ERROR: 1}}
    assert summary["duration_s"] == pytest.approx(0.004)
    assert summary["tokens"] == {"prompt": 0, "cached": 0, "output": 0}
    assert summary["latency_ms"] == {"ttft": None, "tpot": None, "itl": None, "e2e": None}
    assert summary["throughput"]["requests_per_s"] == 0.0


def test_summary_is_json_serialisable(summary):
    assert json.loads(json.dumps(summary)) == summary


# --- load_records ---------------------------------------------------------------------------------

def test_load_records_skips_a_torn_last_line(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    records = study_records()
    torn = records[2].to_json()[:40]  # the writer was killed mid-line
    path.write_text(records[0].to_json() + "\n" + records[1].to_json() + "\n" + torn)
    df = load_records(path)
    assert list(df["request_id"]) == ["local-0", "local-1"]
    assert df.loc[1, "chunk_offsets_ms"] == [200.0, 260.0]
    assert summarize_records(df)["requests"]["completed"] == 2


def test_load_records_round_trips_exact_floats(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    record = study_records()[1]
    record.tpot_ms = 100.00000000000001
    path.write_text(record.to_json() + "\n")
    assert load_records(path).loc[0, "tpot_ms"] == 100.00000000000001


def test_load_records_missing_file_is_empty(tmp_path: Path):
    df = load_records(tmp_path / "nope.jsonl")
    assert df.empty
    assert summarize_records(df)["requests"]["sent"] == 0


# --- Locust's own stats ---------------------------------------------------------------------------

def locust_row(method: str, name: str, num_requests: int, num_failures: int, total_content_length: int,
               start_time: float, last_request_timestamp: float | None) -> dict:
    """One entry of Locust's ``--json-file`` (``StatsEntryDict``)."""
    return {"name": name, "method": method, "last_request_timestamp": last_request_timestamp,
            "start_time": start_time, "num_requests": num_requests, "num_none_requests": 0,
            "num_failures": num_failures, "total_response_time": 1234, "max_response_time": 1000,
            "min_response_time": 300, "total_content_length": total_content_length,
            "response_times": {"300": 1, "500": 1, "1000": 1}, "num_reqs_per_sec": {"1000": 2, "1001": 2},
            "num_fail_per_sec": {"1001": 1}}


def locust_rows() -> list[dict]:
    """What Locust saw of the study: cancelled requests never fire, so 4 requests, 1 failure.

    The request row's length is output tokens (11); the TTFT row's length is prompt tokens (105).
    """
    return [
        locust_row("POST", "/v1/chat/completions", 4, 1, 11, T0 - 0.5, T0 + 2.0),
        locust_row("METRIC", "TTFT", 3, 0, 105, T0 - 0.5, T0 + 1.9),
        locust_row("METRIC", "TPOT", 3, 0, 11, T0 - 0.4, None),
    ]


def write_json(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "locust_stats.json"
    path.write_text(json.dumps(rows, indent=4))
    return path


def test_locust_crosscheck(tmp_path: Path):
    check = locust_crosscheck(write_json(tmp_path, locust_rows()))
    # duration: earliest start_time (999.5) to latest last_request_timestamp (1002.0) = 2.5 s
    csv = check.pop("csv")
    assert csv is None  # no CSV given
    assert check == pytest.approx({"requests": 4, "failures": 1, "no_content": 0, "prompt_tokens": 105,
                                   "output_tokens": 11, "duration_s": 2.5, "prefill_tok_s": 105 / 2.5,
                                   "decode_tok_s": 11 / 2.5})


def test_crosscheck_with_a_reply_without_content(tmp_path: Path):
    # the EOS-only reply's prompt tokens ride on the NO_CONTENT row: Locust's totals equal the records'
    summary = summarize_records(frame(study_records() + [eos_only_record(5, T0 + 1.6, 223)]))
    rows = locust_rows()
    rows[0].update(num_requests=5, total_content_length=12)
    rows.append(locust_row("METRIC", "NO_CONTENT", 1, 0, 223, T0 + 1.6, T0 + 1.7))
    check = locust_crosscheck(write_json(tmp_path, rows))
    assert check["prompt_tokens"] == 105 + 223 and check["no_content"] == 1
    assert crosscheck_agrees(summary, check) is True
    rows.pop()  # without that row, as before the fix: 223 prompt tokens short
    assert crosscheck_agrees(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


CSV_HEADER = "Type,Name,Request Count,Failure Count,Median Response Time\n"


@pytest.mark.parametrize("csv_requests, agrees", [(4, True), (3, False)], ids=["final", "missed-the-last"])
def test_crosscheck_reads_the_stats_csv(tmp_path: Path, summary, csv_requests: int, agrees: bool):
    csv = tmp_path / "locust_stats.csv"
    csv.write_text(CSV_HEADER + f"POST,/v1/chat/completions,{csv_requests},1,300\nMETRIC,TTFT,3,0,200\n"
                   ",Aggregated,10,1,200\n")
    check = locust_crosscheck(write_json(tmp_path, locust_rows()), csv)
    assert check["csv"] == {"requests": csv_requests, "failures": 1}
    assert crosscheck_agrees(summary, check) is agrees


def test_crosscheck_agrees_with_the_records(tmp_path: Path, summary):
    check = locust_crosscheck(write_json(tmp_path, locust_rows()))
    assert crosscheck_agrees(summary, check) is True


@pytest.mark.parametrize("field, value", [
    ("num_requests", 5),            # counted the cancelled request
    ("num_failures", 0),            # missed the error
    ("total_content_length", 12),   # one output token more than the records
])
def test_crosscheck_disagrees(tmp_path: Path, summary, field: str, value: int):
    rows = locust_rows()
    rows[0][field] = value
    assert crosscheck_agrees(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


def test_crosscheck_disagrees_on_prompt_tokens(tmp_path: Path, summary):
    rows = locust_rows()
    rows[1]["total_content_length"] = 100
    assert crosscheck_agrees(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


def test_crosscheck_without_a_chat_row(tmp_path: Path):
    check = locust_crosscheck(write_json(tmp_path, [locust_row("GET", "/health", 1, 0, 0, T0, T0)]))
    assert check == {"requests": 0, "failures": 0, "no_content": 0, "prompt_tokens": 0, "output_tokens": 0,
                     "duration_s": None, "prefill_tok_s": None, "decode_tok_s": None}


@pytest.mark.parametrize("content", [None, "", "[{\"method\": "], ids=["missing", "empty", "torn"])
def test_crosscheck_unreadable_file_is_none(tmp_path: Path, content: str | None):
    path = tmp_path / "locust_stats.json"
    if content is not None:
        path.write_text(content)
    assert locust_crosscheck(path) is None
    assert crosscheck_agrees({"requests": {}}, None) is None


def test_output_tokens_per_second_from_chunk_arrivals():
    # second 0: r0 chunks at 0.10 0.15 0.25 (1 token each) + r1 at 0.70 0.76 (2 each) = 3 + 4 = 7
    # second 1: r2 chunks at 1.40 1.50 1.55 1.70 = 4. Error and cancelled rows carry no tokens per chunk.
    per_s = output_tokens_per_second(frame(study_records()))
    assert per_s.to_dict() == {0: 7.0, 1: 4.0}
    assert per_s.sum() == summarize_records(frame(study_records()))["tokens"]["output"]


def test_output_tokens_per_second_of_nothing_is_empty():
    assert output_tokens_per_second(pd.DataFrame()).empty


# --- the columnar form (orchestrate.report.aggregates.recordsfile) ---------------------------------------

def columnar(tmp_path: Path, records: list[RequestRecord]) -> pd.DataFrame:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in records))
    return load_records(path)


def test_the_columnar_frame_summarizes_as_the_frame_of_lists(tmp_path: Path):
    records = study_records(drafts=[(4, 2), (6, 6), (0, 0)]) + [eos_only_record(5, T0 + 1.6, 223)]
    assert summarize_records(columnar(tmp_path, records)) == summarize_records(frame(records))


def test_pooled_itl_read_in_blocks_is_the_sorted_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(7)
    records = [ok_record(i, T0 + i, np.round(np.cumsum(rng.gamma(2.0, 5.0, 40)), 4).tolist(), int(k * 40), 5000.0,
                         10, 0, 1.0, 1.0) for i, k in enumerate(rng.choice([1, 2, 3], 60))]
    df = columnar(tmp_path, records)
    in_memory = itl_stats(df)
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 100)  # 2,340 gaps: selected by histograms
    monkeypatch.setattr(chunkcolumn, "BLOCK_VALUES", 256)
    blockwise = itl_stats(df)
    assert {k: blockwise[k] for k in ("p50", "p90", "p99", "min", "max")} == \
        {k: in_memory[k] for k in ("p50", "p90", "p99", "min", "max")}
    assert blockwise["mean"] == pytest.approx(in_memory["mean"], rel=1e-12)


def test_output_tokens_per_second_columnar_against_a_loop(tmp_path: Path):
    rng = np.random.default_rng(3)
    records = [ok_record(i, T0 + rng.uniform(0, 20), np.round(np.cumsum(rng.gamma(2.0, 80.0, 30)), 4).tolist(),
                         int(rng.choice([30, 60])), 9000.0, 10, 0, 1.0, 1.0) for i in range(40)]
    records += study_records()[3:]  # an error and a cancelled request with a chunk, no tokens per chunk: left out
    expected: dict[int, float] = {}
    t0 = min(r.send_ts for r in records)
    for r in records:
        for offset in (r.chunk_offsets_ms if r.tokens_per_chunk else []):
            second = math.floor(r.send_ts - t0 + offset / 1000)
            expected[second] = expected.get(second, 0.0) + r.tokens_per_chunk
    per_s = output_tokens_per_second(columnar(tmp_path, records))
    assert per_s.to_dict() == pytest.approx(expected)
    assert sorted(per_s.index) == sorted(expected)


def test_tokens_received_in_windows_counts_every_records_chunks(tmp_path: Path):
    # r0's chunks arrive at 1000.10 1000.15 1000.25, r1's (2 tokens each) at 1000.70 1000.76, r2's at
    # 1001.40 1001.50 1001.55 1001.70; the error's at 1001.75 and the cancelled one's at 1001.60 count 1 each
    df = columnar(tmp_path, study_records())
    assert tokens_received(df, [(T0, T0 + 0.2), (T0 + 0.2, T0 + 1.0), (T0 + 1.0, T0 + 5.0)]) == [2.0, 5.0, 6.0]


def test_peak_in_flight_ends_before_starts():
    starts, ends = np.array([0.0, 1.0, 1.0, 2.5]), np.array([1.0, 3.0, 2.0, 4.0])
    assert peak_in_flight(starts, ends) == 2  # [0,1) closes as two open at 1; at 2.5: [1,3) and [2.5,4)
    assert peak_in_flight(starts, ends, lo=3.0, hi=5.0) == 1
    assert peak_in_flight(starts, ends, lo=9.0, hi=10.0) == 0
