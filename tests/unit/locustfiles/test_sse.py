"""locustfiles/sse.py: the SSE reader and failure classes, on hand-written streams."""

import json
import socket
from collections.abc import Iterator

import pytest

from locustfiles.sse import classify_exception, classify_http_error, read_stream


def chunk(content: str | None = None, finish: str | None = None, **extra: object) -> bytes:
    delta = {} if content is None else {"content": content}
    event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + json.dumps(event).encode() + b"\n"


ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}\n'
TIMINGS = {"cache_n": 3, "prompt_n": 10, "prompt_ms": 5.0, "predicted_n": 2, "predicted_ms": 4.0}
USAGE = {"prompt_tokens": 13, "completion_tokens": 2, "total_tokens": 15}


def reader(lines: list[bytes], fail_with: BaseException | None = None):
    """recv() that hands out the given pieces (here: one line each), and a clock that ticks 1.0 per read."""
    it: Iterator[bytes] = iter(lines)
    clock_value = [0.0]

    def readline() -> bytes:
        try:
            line = next(it)
        except StopIteration:
            if fail_with is not None:
                raise fail_with
            return b""
        clock_value[0] += 1.0
        return line

    return readline, lambda: clock_value[0]


def run(lines: list[bytes], fail_with: BaseException | None = None):
    recv, clock = reader(lines, fail_with)
    return read_stream(recv, clock)


def test_complete_stream_with_usage_chunk_and_pings():
    result = run([b": ping\n", b"\n", ROLE, b"\n", chunk("Hello"), b"\n", chunk(" world"), b"\n",
                  chunk(None, "length"), b"\n",
                  b"data: " + json.dumps({"choices": [], "usage": USAGE, "timings": TIMINGS}).encode() + b"\n",
                  b"\n", b"data: [DONE]\n"])
    assert result.done and result.error_class is None
    assert result.content_times == [5.0, 7.0]  # the role chunk and pings are not content
    assert result.usage == USAGE and result.timings == TIMINGS
    assert result.finish_reason == "length"
    assert result.end_time == 13.0  # the [DONE] line is the 13th read


STREAM = [ROLE, b"\n", chunk("Hello"), b"\n", chunk(" world"), b"\n", chunk(None, "length"), b"\n",
          b"data: " + json.dumps({"choices": [], "usage": USAGE, "timings": TIMINGS}).encode() + b"\n", b"\n",
          b"data: [DONE]\n", b"\n"]


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
def test_pieces_of_any_size_give_the_same_events(size: int):
    body = b"".join(STREAM)
    result = run([body[i:i + size] for i in range(0, len(body), size)])
    assert result.done and result.error_class is None and result.usage == USAGE and result.timings == TIMINGS
    assert len(result.content_times) == 2 and result.finish_reason == "length"
    assert body.index(b"data: [DONE]\n") + 13 <= result.bytes_read <= len(body)  # stops at [DONE]


def test_events_in_one_read_share_its_arrival_time():
    """A read that brings several events stamps them all with its own time: when they were first seen."""
    first, rest = chunk("a"), chunk("b") + b"\n" + chunk("c") + b"\n" + b"data: [DONE]\n\n"
    result = run([ROLE + b"\n" + first[:10], first[10:] + b"\n", rest])
    assert result.content_times == [2.0, 3.0, 3.0] and result.end_time == 3.0


def test_a_last_line_without_its_newline_still_counts():
    assert run([ROLE, chunk("a"), b"data: [DONE]"]).done
    result = run([ROLE, chunk("a"), b"data: {not json"])
    assert result.error_class == "bad_chunk"


def test_timings_on_the_finish_chunk_without_usage():
    result = run([ROLE, chunk("a"), chunk(None, "stop", timings=TIMINGS), b"data: [DONE]\n"])
    assert result.timings == TIMINGS and result.usage is None and result.finish_reason == "stop"
    assert len(result.content_times) == 1


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_of_llama_cpp_and_vllm_is_output_but_not_the_answer(key: str):
    """Both servers' reasoning keys are output (TTFT), the first ``content`` is the answer (TTFO); an empty
    content is neither."""
    reasoning = b'data: {"choices":[{"delta":{"%s":"hm"}}]}\n' % key.encode()
    result = run([ROLE, chunk(""), reasoning, reasoning, chunk("x"), chunk("y"), b"data: [DONE]\n"])
    assert result.content_times == [3.0, 4.0, 5.0, 6.0]
    assert result.reasoning_chunks == 2 and result.first_answer_time == 5.0


def test_stream_ending_without_done_is_cut():
    result = run([ROLE, chunk("a"), chunk("b")])
    assert not result.done and result.error_class == "stream_cut"
    assert len(result.content_times) == 2


def test_connection_reset_mid_stream_is_stream_cut():
    result = run([ROLE, chunk("a")], fail_with=ConnectionResetError(104, "reset"))
    assert result.error_class == "stream_cut" and "ConnectionResetError" in result.error_detail


def test_timeout_mid_stream():
    result = run([ROLE, chunk("a")], fail_with=socket.timeout("timed out"))
    assert result.error_class == "timeout"


def test_unparsable_chunk_and_chunk_without_choices():
    assert run([ROLE, b"data: {not json\n"]).error_class == "bad_chunk"
    assert run([ROLE, b'data: {"object":"x"}\n']).error_class == "bad_chunk"


@pytest.mark.parametrize("exc, expected", [
    (ConnectionRefusedError(111, "refused"), "connection_refused"),
    (ConnectionResetError(104, "reset"), "connection_reset"),
    (socket.timeout("x"), "timeout"),
    (RuntimeError("x"), "client_error"),
])
def test_classify_exception(exc, expected):
    assert classify_exception(exc) == expected


def test_incomplete_chunked_body_is_the_servers_cut_not_a_client_error():
    """geventhttpclient's HTTPParseError when the connection ends inside a chunked body (a killed server)."""
    from geventhttpclient.response import HTTPParseError
    result = run([ROLE, chunk("a")], fail_with=HTTPParseError("Incomplete response."))
    assert result.error_class == "stream_cut" and "Incomplete response" in result.error_detail
    assert result.bytes_read > 0 and len(result.content_times) == 1


def test_headers_then_close_is_stream_cut():
    from geventhttpclient.response import HTTPConnectionClosed
    assert run([], fail_with=HTTPConnectionClosed("connection closed.")).error_class == "stream_cut"


def test_a_bug_while_reading_stays_a_client_error():
    assert run([ROLE], fail_with=RuntimeError("bug")).error_class == "client_error"


def test_classify_http_error_bodies():
    body = json.dumps({"error": {"code": 400, "message": "too long", "type": "exceed_context_size_error",
                                 "n_prompt_tokens": 5000, "n_ctx": 2048}}).encode()
    assert classify_http_error(400, body) == ("http_400:exceed_context_size_error", "too long")
    assert classify_http_error(502, b"<html>Bad gateway</html>") == ("http_502", "<html>Bad gateway</html>")
    assert classify_http_error(401, b'{"error": {"message": "Invalid API Key", "type": "authentication_error"}}')[0] \
        == "http_401:authentication_error"


def test_a_503_while_loading_is_a_class_of_its_own():
    loading = json.dumps({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
    busy = json.dumps({"error": {"code": 503, "message": "no slot available", "type": "unavailable_error"}})
    assert classify_http_error(503, loading.encode())[0] == "http_503:loading_model"
    assert classify_http_error(503, busy.encode())[0] == "http_503:unavailable_error"


def test_reply_text_is_collected_only_when_asked():
    lines = [ROLE, chunk("Hello"), chunk(""), chunk(" world"), b'data: {"choices":[{"index":0,"delta":'
             b'{"reasoning_content":"hmm"},"finish_reason":null}]}\n', chunk(finish="length"), b"data: [DONE]\n"]
    recv, clock = reader(lines)
    assert read_stream(recv, clock).content is None  # off by default: the per-chunk path keeps nothing
    recv, clock = reader(lines)
    result = read_stream(recv, clock, collect_text=True)
    assert result.content == ["Hello", " world"] and result.text == "Hello world"  # reasoning is not the reply
    assert len(result.content_times) == 3
