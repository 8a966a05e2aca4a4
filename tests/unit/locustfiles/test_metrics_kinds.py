"""locustfiles/metrics.py for requests beyond chat text: image tokens, tool calls, one-body (embeddings, rerank)
records."""

from __future__ import annotations

import pytest

from locustfiles.endpoints import JsonReply
from locustfiles.metrics import build_json_record, build_record, image_tokens
from locustfiles.records import ERROR, OK, RequestRecord
from locustfiles.sse import StreamResult
from locustfiles.validity import ToolCall


def record(**fields: object) -> RequestRecord:
    return RequestRecord(request_id="local-1", prompt_index=0, worker="local", send_ts=1000.0, **fields)  # type: ignore[arg-type]


def test_no_image_tokens_without_images() -> None:
    assert image_tokens(record(prompt_tokens=300, expected_prompt_tokens=40)) is None
    assert image_tokens(record(images=0, prompt_tokens=300, expected_prompt_tokens=40)) is None


def test_image_tokens_are_the_server_s_prompt_less_the_text_s() -> None:
    assert image_tokens(record(images=2, prompt_tokens=300, expected_prompt_tokens=40)) == 260
    assert image_tokens(record(images=1, prompt_tokens=35, expected_prompt_tokens=40)) == -5  # as counted, not clipped


@pytest.mark.parametrize(("prompt", "expected"), [(None, 40), (300, None), (None, None)])
def test_no_image_tokens_without_both_counts(prompt: int | None, expected: int | None) -> None:
    assert image_tokens(record(images=1, prompt_tokens=prompt, expected_prompt_tokens=expected)) is None


def test_a_stream_s_record_counts_its_image_tokens_and_tool_calls() -> None:
    stream = StreamResult(content_times=[10.5, 10.6], end_time=10.7, done=True, finish_reason="tool_calls",
                          usage={"prompt_tokens": 1200, "completion_tokens": 2},
                          tool_calls=[ToolCall("f", ["{}"]), ToolCall("g", ["{}"])])
    rec = build_record(record(images=1, image_size="512x512", expected_prompt_tokens=200), 10.0, stream)
    assert rec.status == OK and rec.tool_calls == 2 and rec.image_tokens == 1000
    assert rec.ttft_ms == pytest.approx(500.0) and rec.output_tokens == 2


def test_a_stream_without_calls_or_images_has_neither() -> None:
    stream = StreamResult(content_times=[10.5], end_time=10.7, done=True, usage={"prompt_tokens": 12,
                                                                               "completion_tokens": 1})
    rec = build_record(record(expected_prompt_tokens=10), 10.0, stream)
    assert rec.tool_calls is None and rec.image_tokens is None


def test_image_tokens_from_llama_cpp_s_timings_when_there_is_no_usage() -> None:
    stream = StreamResult(content_times=[10.5], end_time=10.7, done=True,
                          timings={"prompt_n": 250, "cache_n": 10, "predicted_n": 1})
    rec = build_record(record(images=1, expected_prompt_tokens=60), 10.0, stream)
    assert rec.prompt_tokens == 260 and rec.image_tokens == 200


def test_a_one_body_reply_s_record() -> None:
    rec = build_json_record(record(endpoint="embeddings", inputs=4), 10.0, 10.125,
                            JsonReply(prompt_tokens=37, items=4))
    assert rec.status == OK and rec.error_class is None
    assert rec.e2e_ms == pytest.approx(125.0)
    assert rec.prompt_tokens == rec.prefill_tokens == 37  # no prompt cache: every token was processed
    assert (rec.output_tokens, rec.output_tokens_source) == (0, "usage")
    assert rec.ttft_ms is None and rec.tpot_ms is None and rec.n_chunks == 0 and rec.chunk_offsets_ms == []


def test_a_bad_one_body_reply_is_an_error_with_its_detail() -> None:
    reply = JsonReply(prompt_tokens=19, items=1, error_class="bad_reply", error_detail="1 scores for 4 documents")
    rec = build_json_record(record(endpoint="rerank", inputs=4), 5.0, 5.5, reply)
    assert (rec.status, rec.error_class, rec.error_detail) == (ERROR, "bad_reply", "1 scores for 4 documents")
    assert rec.e2e_ms == pytest.approx(500.0) and rec.prompt_tokens == 19 and rec.output_tokens == 0


def test_a_reply_without_usage_leaves_the_prompt_tokens_unknown() -> None:
    rec = build_json_record(record(prompt_tokens=99), 1.0, 1.01, JsonReply(items=1))
    assert rec.prompt_tokens is None and rec.prefill_tokens is None and rec.status == OK
