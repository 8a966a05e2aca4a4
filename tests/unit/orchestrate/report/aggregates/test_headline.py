"""orchestrate/report/aggregates/headline.py: the headline block of a variant, from hand-built records,
hand-computed."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.headline import Headline, server_timings, speculative, summarize_records
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.headline import (
    LatencyMs,
    Requests,
    ServerTimings,
    Speculative,
    Throughput,
    Tokens,
    TokenSources,
)

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
def summary() -> Headline:
    return summarize_records(frame(study_records()))


# --- summarize_records ----------------------------------------------------------------------------

def test_request_counts(summary):
    assert summary.requests == Requests(sent=5, completed=3, errors=1, cancelled=1, no_content=0, short_replies=0,
                                        errors_by_class={CONTEXT_ERROR: 1})


def test_completed_prompts_are_the_indices_of_completed_requests_only(summary):
    assert summary.completed_prompts == (0, 1, 2)  # r3 failed, r4 was cancelled


def eos_only_record(i: int, send_ts: float, prompt: int) -> RequestRecord:
    """A reply that is only EOS, as Gemma 3 270M gives about 2 % of the time: 1 output token, no chunk."""
    return RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=send_ts, status=OK,
                         ttft_ms=None, e2e_ms=80.0, tpot_ms=None, chunk_offsets_ms=[], n_chunks=0,
                         prompt_tokens=prompt, output_tokens=1, output_tokens_source="usage", finish_reason="stop")


def test_replies_without_content_are_counted_apart():
    summary = summarize_records(frame(study_records() + [eos_only_record(5, T0 + 1.6, 223)]))
    assert summary.requests.completed == 4 and summary.requests.no_content == 1
    # its prompt and its one output token count in the totals; TTFT/TPOT stay over the three with content
    assert summary.tokens.prompt == 105 + 223 and summary.tokens.output == 11 + 1
    assert summary.latency_ms.ttft is not None and summary.latency_ms.ttft.p50 == 200.0


def test_errors_by_class_sorted_and_counted():
    records = study_records()
    records.append(RequestRecord(request_id="local-5", prompt_index=5, worker="local", send_ts=T0 + 1.3,
                                 status=ERROR, error_class="connection_reset", e2e_ms=1.0))
    records.append(RequestRecord(request_id="local-6", prompt_index=6, worker="local", send_ts=T0 + 1.4,
                                 status=ERROR, error_class=CONTEXT_ERROR, http_status=400, e2e_ms=1.0))
    by_class = summarize_records(frame(records)).requests.errors_by_class
    assert list(by_class.items()) == [("connection_reset", 1), (CONTEXT_ERROR, 2)]


def test_duration_first_send_to_last_end(summary):
    # ends: r0 1000.3, r1 1000.8, r2 1002.0, error 1001.8, cancelled (no e2e) 1001.5 → 1002.0 − 1000.0
    assert summary.duration_s == pytest.approx(2.0)


def test_tokens_over_completed_only(summary):
    # prompt 50+35+20, cached 10+0+5, output 3+4+4 (the error's 4000/1 and the cancelled 40/7 excluded)
    assert summary.tokens == Tokens(prompt=105, cached=15, output=11)


def test_throughput(summary):
    thr = summary.throughput
    assert thr.prefill_tok_s == pytest.approx(105 / 2.0)  # 52.5
    assert thr.decode_tok_s == pytest.approx(11 / 2.0)    # 5.5
    assert thr.requests_per_s == pytest.approx(3 / 2.0)   # 1.5


def test_ttft_tpot_e2e_percentiles(summary):
    lat = to_json(summary.latency_ms)
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
    assert to_json(summary.latency_ms.itl) == pytest.approx({"p50": 60.0, "p90": 150.0, "p99": 150.0,
                                                          "mean": 570 / 7, "min": 50.0, "max": 150.0})
    # tokens per chunk over completed requests: Σ output / Σ content chunks = 11 / 9
    assert summary.tokens_per_chunk == pytest.approx(11 / 9)


def test_output_tokens_source(summary):
    assert summary.output_tokens_source == ("usage",)


def test_server_timings(summary):
    # prefill: Σ prefill_tokens / Σ prompt_ms = (40+35+15) / (20+10+30) ms = 90/60 ms → 1500 tok/s
    # decode:  Σ output_tokens / Σ predicted_ms = 11 / (200+300+600) ms = 11/1100 ms → 10 tok/s
    assert summary.server_timings == ServerTimings(per_slot_prefill_tok_s=pytest.approx(1500.0),
                                                   per_slot_decode_tok_s=pytest.approx(10.0))


def test_server_timings_none_without_timings():
    records = study_records()
    for r in records:
        r.prompt_ms = r.predicted_ms = None
    assert server_timings(frame(records)) is None


def test_speculative_none_without_draft_counts(summary):
    assert summary.speculative is None


def test_speculative_acceptance_exact():
    # drafted 4+6+0 = 10, accepted 2+6+0 = 8 → 0.8. Per request: 2/4 = 0.5, 6/6 = 1.0, 0/0 dropped
    summary = summarize_records(frame(study_records(drafts=[(4, 2), (6, 6), (0, 0)])))
    spec = summary.speculative
    assert spec is not None
    assert spec.draft_tokens == 10
    assert spec.accepted_tokens == 8
    assert spec.acceptance_rate == pytest.approx(0.8)
    # [0.5, 1.0]: cum [1, 2]; p50 target 1 → 0.5; p90 1.8 → 1.0; mean 0.75
    assert to_json(spec.per_request_acceptance) == pytest.approx({"p50": 0.5, "p90": 1.0, "p99": 1.0, "mean": 0.75,
                                                            "min": 0.5, "max": 1.0})


def test_speculative_all_zero_drafts_has_no_rate():
    spec = speculative(frame(study_records(drafts=[(0, 0)] * 3))[lambda df: df["status"] == OK])
    assert spec == Speculative(draft_tokens=0, accepted_tokens=0, acceptance_rate=None, per_request_acceptance=None)


def test_empty_frame_summary():
    assert summarize_records(pd.DataFrame()) == Headline(
        requests=Requests(sent=0, completed=0, errors=0, cancelled=0, no_content=0, short_replies=0,
                          errors_by_class={}),
        duration_s=0.0, tokens=Tokens(prompt=0, cached=0, output=0),
        throughput=Throughput(prefill_tok_s=None, decode_tok_s=None, requests_per_s=None),
        latency_ms=LatencyMs(), reasoning=None, token_sources=TokenSources(), server_timings=None, speculative=None,
        completed_prompts=())


def test_only_errors():
    records = [RequestRecord(request_id="local-0", prompt_index=0, worker="local", send_ts=T0, status=ERROR,
                             error_class=CONTEXT_ERROR, http_status=400, e2e_ms=4.0)]
    summary = summarize_records(frame(records))
    assert summary.requests == Requests(sent=1, completed=0, errors=1, cancelled=0, no_content=0, short_replies=0,
                                        errors_by_class={CONTEXT_ERROR: 1})
    assert summary.duration_s == pytest.approx(0.004)
    assert summary.tokens == Tokens(prompt=0, cached=0, output=0)
    assert summary.latency_ms == LatencyMs(ttft=None, ttfo=None, tpot=None, itl=None, e2e=None)
    assert summary.throughput.requests_per_s == 0.0


def test_summary_is_json_serialisable(summary):
    """Plain Python numbers all the way down (a numpy integer would be written as a string)."""
    blocks = to_json(summary.blocks())
    assert json.loads(json.dumps(blocks)) == blocks


# --- the columnar form (orchestrate.report.aggregates.recordsfile) ---------------------------------------

def columnar(tmp_path: Path, records: list[RequestRecord]) -> pd.DataFrame:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in records))
    return read_records(path)


def test_the_columnar_frame_summarizes_as_the_frame_of_lists(tmp_path: Path):
    records = study_records(drafts=[(4, 2), (6, 6), (0, 0)]) + [eos_only_record(5, T0 + 1.6, 223)]
    assert summarize_records(columnar(tmp_path, records)) == summarize_records(frame(records))


def test_reasoning_replies_give_ttfo_the_answers_tpot_and_the_thinking_share() -> None:
    """r0 thought for 1 of its 3 tokens (llama.cpp: counted from its events), r2 for 2 of 4 (the server's count);
    r1 answered at once. TTFO = the first answer token; ``short_replies`` = fewer tokens than max_tokens."""
    records = study_records()
    records[0].ttfo_ms, records[0].reasoning_tokens, records[0].reasoning_tokens_source = 150.0, 1, "chunks"
    records[0].answer_tpot_ms = (300.0 - 150.0) / 1
    records[1].ttfo_ms = 200.0
    records[2].ttfo_ms, records[2].reasoning_tokens, records[2].reasoning_tokens_source = 550.0, 2, "usage"
    records[2].answer_tpot_ms = (1000.0 - 550.0) / 1
    for r, asked in zip(records, (3, 8, 4, 5, 9)):
        r.max_tokens = asked
    summary = summarize_records(frame(records))
    reasoning = summary.reasoning
    assert reasoning is not None and reasoning.ttfo_ms is not None and reasoning.answer_tpot_ms is not None
    assert (reasoning.requests, reasoning.tokens, reasoning.tokens_source) == (2, 3, ("chunks", "usage"))
    assert reasoning.share_of_output == pytest.approx(3 / 11)
    assert reasoning.ttfo_ms.p50 == 200.0 and reasoning.answer_tpot_ms.max == 450.0
    lat = to_json(summary.latency_ms)
    assert lat["ttfo"]["max"] == 550.0 and lat["ttft"]["max"] == 400.0
    assert summary.requests.short_replies == 1  # r1: 4 of 8; the error and the cancelled one do not count
    assert summary.token_sources == TokenSources(output=("usage",), cached=(), reasoning=("chunks", "usage"))
    assert summarize_records(frame(study_records())).reasoning is None


def test_each_error_class_keeps_the_first_message_its_requests_got() -> None:
    errors = [RequestRecord(f"e{i}", i, "w", 1.0 + i, status=ERROR, error_class=kind, error_detail=detail)
              for i, (kind, detail) in enumerate([("http_500:server_error", "first 500"), ("timeout", "slow"),
                                                  ("http_500:server_error", "second 500")])]
    head = summarize_records(pd.DataFrame([vars(r) for r in errors]))
    assert head.requests.first_error == {"http_500:server_error": "first 500", "timeout": "slow"}
    assert summarize_records(pd.DataFrame([vars(r) for r in study_records()])).requests.first_error == {}
