"""locustfiles/sse.py beyond chat text: a ``/v1/completions`` stream, and streamed tool calls (``add_tool_calls``)."""

from __future__ import annotations

import json
from typing import Any

from locustfiles.sse import StreamResult, add_tool_calls, read_stream
from locustfiles.validity import ToolCall
from tests.unit.locustfiles.test_sse import reader

USAGE = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
DONE = b"data: [DONE]\n"


def event(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def text_event(text: str, finish: str | None = None) -> bytes:
    """A llama.cpp ``/v1/completions`` stream event: the text is the choice's own, there is no ``delta``."""
    return event({"choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
                  "object": "text_completion"})


def delta_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                  "object": "chat.completion.chunk"})


def tools_event(*pieces: dict[str, Any], finish: str | None = None) -> bytes:
    return delta_event({"tool_calls": list(pieces)}, finish)


def run(lines: list[bytes], collect_text: bool = False) -> StreamResult:
    recv, clock = reader(lines)
    return read_stream(recv, clock, collect_text=collect_text)


def test_the_example_event_is_llama_cpp_s_completions_event() -> None:
    assert text_event("Hi") == (b'data: {"choices":[{"text":"Hi","index":0,"logprobs":null,"finish_reason":null}],'
                                b'"object":"text_completion"}\n')


def test_a_completions_stream_times_each_text_chunk_and_keeps_its_usage() -> None:
    result = run([text_event("Hi"), b"\n", text_event(" there"), b"\n", text_event("!"), b"\n",
                  text_event("", "length"), b"\n", event({"choices": [], "usage": USAGE}), b"\n", DONE],
                 collect_text=True)
    assert result.done and result.error_class is None
    assert result.content_times == [1.0, 3.0, 5.0]  # the empty finishing text is not a chunk
    assert result.first_answer_time == 1.0 and result.reasoning_chunks == 0
    assert result.text == "Hi there!" and result.content == ["Hi", " there", "!"]
    assert result.finish_reason == "length" and result.usage == USAGE and result.end_time == 11.0
    assert result.tool_calls == []


def test_a_completions_stream_with_usage_on_its_last_text_event() -> None:
    last = event({"choices": [{"text": "b", "index": 0, "logprobs": None, "finish_reason": "stop"}],
                  "object": "text_completion", "usage": USAGE, "timings": {"predicted_n": 2}})
    result = run([text_event("a"), last, DONE])
    assert result.content_times == [1.0, 2.0] and result.finish_reason == "stop"
    assert result.usage == USAGE and result.timings == {"predicted_n": 2} and result.text is None


def test_a_completions_stream_cut_before_done_is_a_stream_cut() -> None:
    result = run([text_event("a"), text_event("b")])
    assert result.error_class == "stream_cut" and result.content_times == [1.0, 2.0]


ROLE = delta_event({"role": "assistant", "content": None})
WEATHER_CALL = [
    tools_event({"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}),
    tools_event({"index": 0, "function": {"arguments": '{"city":'}}),
    tools_event({"index": 0, "function": {"arguments": '"Paris"}'}}),
]


def test_a_streamed_tool_call_is_timed_like_tokens_and_joined() -> None:
    result = run([ROLE, *WEATHER_CALL, delta_event({}, "tool_calls"), event({"choices": [], "usage": USAGE}), DONE])
    assert result.done and result.error_class is None
    assert result.content_times == [2.0, 3.0, 4.0]  # one per tool delta; the role event is not output
    assert result.first_answer_time == 2.0  # TTFT: the first delta of any kind, the call's name here
    assert result.finish_reason == "tool_calls" and result.usage == USAGE
    assert len(result.tool_calls) == 1
    (only,) = result.tool_calls
    assert only.name == "get_weather" and "".join(only.arguments) == '{"city":"Paris"}'
    assert only.arguments == ['{"city":', '"Paris"}']  # the empty first piece adds nothing
    assert json.loads("".join(only.arguments)) == {"city": "Paris"}


def test_text_before_a_tool_call_keeps_the_first_answer_time_of_the_text() -> None:
    result = run([delta_event({"content": "Let me check."}), *WEATHER_CALL, DONE], collect_text=True)
    assert result.content_times == [1.0, 2.0, 3.0, 4.0] and result.first_answer_time == 1.0
    assert result.text == "Let me check." and result.tool_calls[0].name == "get_weather"


def test_reasoning_then_a_tool_call() -> None:
    result = run([delta_event({"reasoning_content": "hmm"}), *WEATHER_CALL, DONE])
    assert result.content_times == [1.0, 2.0, 3.0, 4.0] and result.reasoning_chunks == 1
    assert result.first_answer_time == 2.0  # the call is the answer


def test_two_calls_streamed_interleaved_are_kept_apart_by_index() -> None:
    result = run([
        tools_event({"index": 0, "id": "a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}),
        tools_event({"index": 1, "id": "b", "type": "function", "function": {"name": "get_time", "arguments": ""}}),
        tools_event({"index": 0, "function": {"arguments": '{"city":'}}),
        tools_event({"index": 1, "function": {"arguments": '{"zone":'}}),
        tools_event({"index": 0, "function": {"arguments": '"Oslo"}'}}),
        tools_event({"index": 1, "function": {"arguments": '"UTC"}'}}, finish="tool_calls"),
        DONE])
    assert [c.name for c in result.tool_calls] == ["get_weather", "get_time"]
    assert ["".join(c.arguments) for c in result.tool_calls] == ['{"city":"Oslo"}', '{"zone":"UTC"}']
    assert len(result.content_times) == 6 and result.finish_reason == "tool_calls"


def test_two_calls_in_one_event() -> None:
    result = run([tools_event({"index": 0, "function": {"name": "f", "arguments": "{}"}},
                              {"index": 1, "function": {"name": "g", "arguments": "[]"}}), DONE])
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("f", ["{}"]), ("g", ["[]"])]
    assert result.content_times == [1.0]  # one event, one arrival


def test_add_tool_calls_folds_pieces_by_index() -> None:
    calls: list[ToolCall] = []
    add_tool_calls(calls, [{"index": 1, "function": {"name": "second", "arguments": "{"}}])
    assert [c.name for c in calls] == ["", "second"]  # a call seen by a later index first leaves room for index 0
    add_tool_calls(calls, [{"index": 0, "function": {"name": "first"}}, {"index": 1, "function": {"arguments": "}"}}])
    assert [(c.name, c.arguments) for c in calls] == [("first", []), ("second", ["{", "}"])]


def test_a_piece_without_an_index_continues_the_last_call() -> None:
    calls: list[ToolCall] = []
    add_tool_calls(calls, [{"function": {"name": "f", "arguments": '{"a":'}}])
    add_tool_calls(calls, [{"function": {"arguments": "1}"}}])
    assert len(calls) == 1 and calls[0].name == "f" and "".join(calls[0].arguments) == '{"a":1}'


def test_a_piece_without_a_function_adds_a_call_with_nothing_in_it() -> None:
    calls: list[ToolCall] = []
    add_tool_calls(calls, [{"index": 0, "id": "x", "type": "function"}])
    assert calls == [ToolCall()]
    add_tool_calls(calls, [{"index": 0, "function": None}])
    assert calls == [ToolCall()]


def test_a_delta_with_content_and_a_tool_call_keeps_both_and_is_timed_once() -> None:
    both = delta_event({"content": "Let me look.", "tool_calls": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]})
    result = run([both, b"data: [DONE]\n"], collect_text=True)
    assert len(result.content_times) == 1 and result.text == "Let me look."
    assert [(c.name, "".join(c.arguments)) for c in result.tool_calls] == [("get_weather", "{}")]
