"""locustfiles/metrics.py: per-request TTFT, TPOT, ITL and token counts, hand-computed."""

import pytest

from locustfiles.metrics import build_record, itl_gaps_ms, output_tokens, reasoning_tokens, tpot_ms, ttft_ms
from locustfiles.records import RequestRecord
from locustfiles.sse import StreamResult


def record() -> RequestRecord:
    return RequestRecord(request_id="local-1", prompt_index=0, worker="local", send_ts=1000.0)


def test_ttft_is_first_content_chunk():
    assert ttft_ms(10.0, [10.25, 10.5]) == pytest.approx(250.0)
    assert ttft_ms(10.0, []) is None


@pytest.mark.parametrize("ttft, e2e, n, expected", [
    (100.0, 1100.0, 11, 100.0),   # (1100 - 100) / (11 - 1)
    (100.0, 1100.0, 1, None),     # one token: no TPOT
    (None, 1100.0, 11, None),     # no content: no TPOT
    (50.0, 250.0, 0, None),
])
def test_tpot(ttft, e2e, n, expected):
    assert tpot_ms(ttft, e2e, n) == (pytest.approx(expected) if expected is not None else None)


def test_output_tokens_prefers_usage_then_timings_then_chunks():
    assert output_tokens({"completion_tokens": 7}, {"predicted_n": 6}, 5) == (7, "usage")
    assert output_tokens(None, {"predicted_n": 6}, 5) == (6, "timings")
    assert output_tokens(None, None, 5) == (5, "chunks")


def test_build_record_from_a_complete_stream():
    stream = StreamResult(content_times=[10.2, 10.3, 10.5], end_time=10.6, done=True,
                          usage={"prompt_tokens": 20, "completion_tokens": 3,
                                 "prompt_tokens_details": {"cached_tokens": 8}},
                          timings={"cache_n": 8, "prompt_n": 12, "prompt_ms": 40.0, "predicted_n": 3,
                                   "predicted_ms": 300.0, "draft_n": 4, "draft_n_accepted": 3},
                          finish_reason="length")
    r = build_record(record(), 10.0, stream)
    assert r.status == "ok" and r.error_class is None
    assert r.ttft_ms == pytest.approx(200.0) and r.e2e_ms == pytest.approx(600.0)
    assert r.tpot_ms == pytest.approx((600.0 - 200.0) / 2)
    assert r.chunk_offsets_ms == pytest.approx([200.0, 300.0, 500.0])
    assert itl_gaps_ms(r.chunk_offsets_ms) == pytest.approx([100.0, 200.0])
    assert (r.prompt_tokens, r.cached_tokens, r.prefill_tokens, r.output_tokens) == (20, 8, 12, 3)
    assert (r.draft_tokens, r.draft_accepted) == (4, 3)
    assert r.tokens_per_chunk == 1.0


def test_build_record_multi_token_chunks_and_timings_only():
    stream = StreamResult(content_times=[1.1, 1.2], end_time=1.3, done=True,
                          timings={"cache_n": 0, "prompt_n": 9, "predicted_n": 6})
    r = build_record(record(), 1.0, stream)
    assert r.output_tokens == 6 and r.output_tokens_source == "timings"
    assert r.tokens_per_chunk == 3.0
    assert r.prompt_tokens == 9 and r.cached_tokens == 0


def test_build_record_of_a_cut_stream_is_an_error():
    r = build_record(record(), 1.0, StreamResult(content_times=[1.5], end_time=2.0,
                                                 error_class="stream_cut", error_detail="x"))
    assert r.status == "error" and r.error_class == "stream_cut"
    assert r.ttft_ms == pytest.approx(500.0) and r.output_tokens == 1


def test_reasoning_tokens_prefer_the_servers_count_then_one_per_event():
    assert reasoning_tokens({"completion_tokens_details": {"reasoning_tokens": 9}}, 4) == (9, "usage")
    assert reasoning_tokens({"completion_tokens_details": {"reasoning_tokens": 0}}, 0) == (0, "usage")
    assert reasoning_tokens({"completion_tokens": 5}, 4) == (4, "chunks")
    assert reasoning_tokens(None, 0) == (None, None)


def test_a_reasoning_reply_has_ttft_at_its_thinking_ttfo_at_its_answer_and_the_answers_own_tpot():
    stream = StreamResult(content_times=[10.1, 10.2, 10.3, 10.5, 10.6], end_time=10.7, done=True,
                          first_answer_time=10.5, reasoning_chunks=3,
                          usage={"prompt_tokens": 20, "completion_tokens": 5})
    r = build_record(record(), 10.0, stream)
    assert r.ttft_ms == pytest.approx(100.0) and r.ttfo_ms == pytest.approx(500.0)
    assert (r.reasoning_tokens, r.reasoning_tokens_source) == (3, "chunks")
    assert r.tpot_ms == pytest.approx((700.0 - 100.0) / 4)
    assert r.answer_tpot_ms == pytest.approx((700.0 - 500.0) / 1)


def test_hidden_reasoning_counted_by_usage_and_cached_tokens_named_by_their_source():
    """OpenAI streams no reasoning: TTFT is the answer's first token, the count comes from usage; cached tokens
    come from usage's details before llama.cpp's timings, and say which."""
    stream = StreamResult(content_times=[10.4, 10.5, 10.6], end_time=10.6, done=True, first_answer_time=10.4,
                          usage={"prompt_tokens": 20, "completion_tokens": 9,
                                 "prompt_tokens_details": {"cached_tokens": 4},
                                 "completion_tokens_details": {"reasoning_tokens": 6}})
    r = build_record(record(), 10.0, stream)
    assert r.ttft_ms == r.ttfo_ms == pytest.approx(400.0)
    assert (r.reasoning_tokens, r.reasoning_tokens_source) == (6, "usage")
    assert r.answer_tpot_ms == pytest.approx(200.0 / 2)
    assert (r.cached_tokens, r.cached_tokens_source) == (4, "usage")
    timings_only = build_record(record(), 1.0, StreamResult(content_times=[1.1], end_time=1.2, done=True,
                                                             timings={"cache_n": 7, "prompt_n": 3}))
    assert (timings_only.cached_tokens, timings_only.cached_tokens_source) == (7, "timings")
    assert timings_only.ttfo_ms is None and timings_only.reasoning_tokens is None and timings_only.answer_tpot_ms is None
